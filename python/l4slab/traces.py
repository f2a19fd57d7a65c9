"""Mahimahi trace generator: constant, rate steps, on/off and a synthetic cellular model, so
users can make their own link traces (`l4slab trace ...`). Also the traces and scenarios
shipped with the package (`l4slab scenarios list|copy`).

A trace is one integer millisecond per line, non-decreasing; each line is one delivery
opportunity of 1504 bytes (DESIGN.md "Link models"), so a rate of r Mb/s is r / 12.032
opportunities per millisecond. Every random choice comes from the seed (numpy PCG64).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["OPPORTUNITY_BITS", "constant", "steps", "on_off", "cellular", "write_trace",
           "trace_rate_mbps", "data_dir"]

#: Bits per delivery opportunity (one 1504-byte packet).
OPPORTUNITY_BITS = 1504 * 8


class TraceError(ValueError):
    """A trace parameter out of range; the message names it and the allowed range."""


def _check(name: str, value: float, lo: float, hi: float) -> None:
    if not (math.isfinite(value) and lo <= value <= hi):
        raise TraceError(f"{name} = {value:g}: expected {lo:g} ≤ {name} ≤ {hi:g}")


def _even(rate_mbps: float, start_ms: int, end_ms: int) -> np.ndarray:
    """Opportunities of a constant rate spread evenly over [start, end): the k-th at
    start + ceil(k·12.032/r) ms, so any window holds the rate to within one opportunity."""
    if rate_mbps <= 0 or end_ms <= start_ms:
        return np.zeros(0, dtype=np.int64)
    per_ms = rate_mbps * 1e3 / OPPORTUNITY_BITS
    n = int(math.floor(per_ms * (end_ms - start_ms) + 1e-9))
    k = np.arange(1, n + 1)
    return start_ms + np.ceil(k / per_ms - 1e-9).astype(np.int64)


def constant(rate_mbps: float, period_ms: int = 1000) -> np.ndarray:
    """A constant rate over one period (the trace loops)."""
    _check("rate_mbps", rate_mbps, 0.01, 100_000)
    _check("period_ms", period_ms, 1, 3_600_000)
    return _even(rate_mbps, 0, int(period_ms))


def steps(segments: Sequence[tuple[int, float]]) -> np.ndarray:
    """Rate steps: `[(duration_ms, rate_mbps), ...]` played one after the other (rate 0 is
    an outage)."""
    if not segments:
        raise TraceError("steps: give at least one duration_ms:rate_mbps segment")
    out, t = [], 0
    for i, (dur, rate) in enumerate(segments):
        _check(f"segment {i} duration_ms", dur, 1, 3_600_000)
        _check(f"segment {i} rate_mbps", rate, 0, 100_000)
        out.append(_even(rate, t, t + int(dur)))
        t += int(dur)
    trace = np.concatenate(out)
    if not trace.size:
        raise TraceError("steps: every segment has rate 0; a trace needs opportunities")
    return trace


def on_off(rate_mbps: float, on_ms: int, off_ms: int, cycles: int = 1) -> np.ndarray:
    """`rate_mbps` for `on_ms`, nothing for `off_ms`, repeated `cycles` times."""
    _check("on_ms", on_ms, 1, 3_600_000)
    _check("off_ms", off_ms, 0, 3_600_000)
    _check("cycles", cycles, 1, 10_000)
    trace = steps([(on_ms, rate_mbps), (off_ms, 0.0)] * int(cycles) if off_ms else
                  [(on_ms, rate_mbps)] * int(cycles))
    if off_ms:  # end the period after the last off time, so the loop keeps the gap
        trace = np.append(trace, int(cycles) * (on_ms + off_ms))
    return trace


def cellular(mean_mbps: float, duration_ms: int, seed: int = 1, sigma: float = 0.6,
             coherence_ms: float = 500.0, outage_prob: float = 0.0) -> np.ndarray:
    """A synthetic cellular downlink: the log-rate is an AR(1) (Ornstein–Uhlenbeck) process
    with stationary standard deviation `sigma` and correlation time `coherence_ms`, scaled so
    the mean rate is `mean_mbps`; each millisecond draws Poisson(rate/12.032) opportunities
    (the bursty grants of a cellular scheduler); with `outage_prob` per 100 ms block the link
    is silent for that block. Same seed, same trace."""
    _check("mean_mbps", mean_mbps, 0.01, 100_000)
    _check("duration_ms", duration_ms, 1, 3_600_000)
    _check("sigma", sigma, 0.0, 3.0)
    _check("coherence_ms", coherence_ms, 1.0, 3_600_000)
    _check("outage_prob", outage_prob, 0.0, 0.9)
    rng = np.random.Generator(np.random.PCG64(seed))
    n = int(duration_ms)
    phi = math.exp(-1.0 / coherence_ms)
    noise = rng.normal(scale=sigma * math.sqrt(1 - phi * phi), size=n)
    x = np.empty(n)
    x[0] = rng.normal(scale=sigma)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + noise[i]
    # E[exp(x)] = exp(sigma²/2) for x ~ N(0, sigma²): divide it out so the mean is mean_mbps.
    rate = mean_mbps * np.exp(x - sigma * sigma / 2)
    if outage_prob > 0:
        blocks = rng.random(-(-n // 100)) < outage_prob
        rate[np.repeat(blocks, 100)[:n]] = 0.0
    counts = rng.poisson(rate * 1e3 / OPPORTUNITY_BITS)
    trace = np.repeat(np.arange(1, n + 1), counts)
    if not trace.size:
        raise TraceError("cellular: the trace has no opportunities; raise mean_mbps")
    return trace


def trace_rate_mbps(trace: np.ndarray) -> float:
    """Mean rate of one period of a trace (opportunities × 12032 bits / last timestamp)."""
    return float(trace.size * OPPORTUNITY_BITS / max(int(trace[-1]), 1) / 1e3)


def write_trace(trace: np.ndarray, path: str | Path) -> Path:
    """One millisecond per line; the last timestamp must be > 0 for a looping trace."""
    p = Path(path)
    if not trace.size or int(trace[-1]) <= 0:
        raise TraceError("the trace must end after 0 ms")
    p.write_text("\n".join(map(str, trace.tolist())) + "\n")
    return p


def data_dir() -> Path:
    """The package's data folder (shipped traces; scenarios when installed from a wheel)."""
    return Path(__file__).resolve().parent / "data"

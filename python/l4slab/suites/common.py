"""Helpers the suite definitions share: per-run metrics from a run directory, renaming swept
parameter columns, scalar validation of two groups of runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from l4slab.columnar import read_parquet
from l4slab.suites.core import mean_ci


def warmup_of(summary: dict[str, Any]) -> float:
    """The run's warm-up in seconds (0 when absent)."""
    return float(summary.get("warmup_s") or 0.0)


def read_summary(run_dir: Path) -> dict[str, Any]:
    """A run directory's summary.json."""
    return json.loads((run_dir / "summary.json").read_text())


def queue_occupancy(run_dir: Path, warmup_s: float) -> dict[str, float]:
    """Mean backlog in packets after the warm-up: total over queues (``backlog_pkts``) and per
    queue (``backlog_<q>_pkts``), from samples.parquet (one row per queue per sample)."""
    s = read_parquet(run_dir / "samples.parquet", columns=["t_s", "queue", "backlog_pkts"])
    s = s[s["t_s"] >= warmup_s]
    out = {"backlog_pkts": float(s.groupby("t_s")["backlog_pkts"].sum().mean())
           if len(s) else float("nan")}
    for q, g in s.groupby("queue", observed=True):
        out[f"backlog_{q}_pkts"] = float(g["backlog_pkts"].mean())
    return out


def totals(summary: dict[str, Any]) -> dict[str, float]:
    """Sums over flows and queues of one summary.json: throughput, CE marks, AQM drops."""
    flows = summary.get("flows") or []
    queues = summary.get("queues") or []
    return {"tput_mbps": float(sum(f.get("tput_mbps") or 0.0 for f in flows)),
            "marks": float(sum(q.get("marks") or 0 for q in queues)),
            "drops": float(sum(q.get("drops") or 0 for q in queues))}


def rename_params(runs: pd.DataFrame) -> pd.DataFrame:
    """Swept dotted keys as short column names (``aqm.step_thresh`` -> ``step_thresh``)."""
    mapping = {"link.model": "link_model", "aqm.step_thresh": "step_thresh",
               "aqm.target": "target", "link.loss": "loss", "link.jitter": "jitter",
               "aqm.limit": "limit"}
    return runs.rename(columns={k: v for k, v in mapping.items() if k in runs.columns})


def _f(v: Any) -> float:
    return float(v) if v is not None else float("nan")


#: Bins per run for series validation: DTW costs O(n²) per pair and a full bdp-regimes study
#: compares ~20 000 pairs per metric per test, so each run is cut into this many bins of its
#: measured interval (1 s bins for a 30 s run with 5 s warm-up).
SERIES_BINS = 25


def binned_series(run_dir: Path, bins: int = SERIES_BINS) -> dict[str, np.ndarray]:
    """A run's time series after its warm-up in `bins` equal bins: total throughput [Mb/s]
    and total backlog [pkts] (bin means), CE marks and AQM drops per second (bin sums over
    the bin width), from flows.parquet and samples.parquet."""
    s = read_summary(run_dir)
    t0, t1 = warmup_of(s), float(s.get("duration_s") or 0.0)
    width = (t1 - t0) / bins if t1 > t0 else 0.0
    out: dict[str, np.ndarray] = {}
    if width <= 0:
        return out

    def per_bin(t: np.ndarray, x: np.ndarray, how: str) -> np.ndarray:
        # A sample at t covers (t - interval, t]: one ending on a bin edge belongs to the bin
        # before it. Sample times and edges are decimal seconds in binary floating point, so
        # "on the edge" is decided within 1 ns.
        pos = (t - t0) / width
        b = np.clip(np.ceil(pos - 1e-9 / width).astype(np.int64) - 1, 0, bins - 1)
        keep = (t > t0 + 1e-9) & (t <= t1 + 1e-9)
        sums = np.bincount(b[keep], weights=x[keep], minlength=bins)
        if how == "rate":
            return sums / width
        n = np.bincount(b[keep], minlength=bins)
        return np.divide(sums, n, out=np.zeros(bins), where=n > 0)

    f = read_parquet(run_dir / "flows.parquet", columns=["t_s", "tput_mbps"])
    ft = f.groupby("t_s", sort=True)["tput_mbps"].sum()
    out["tput_mbps"] = per_bin(ft.index.to_numpy(float), ft.to_numpy(float), "mean")
    q = read_parquet(run_dir / "samples.parquet",
                        columns=["t_s", "backlog_pkts", "marks", "drops"])
    qt = q.groupby("t_s", sort=True)[["backlog_pkts", "marks", "drops"]].sum()
    t = qt.index.to_numpy(float)
    out["backlog_pkts"] = per_bin(t, qt["backlog_pkts"].to_numpy(float), "mean")
    out["marks"] = per_bin(t, qt["marks"].to_numpy(float), "rate")
    out["drops"] = per_bin(t, qt["drops"].to_numpy(float), "rate")
    return out


def series_validation(a: list[dict[str, np.ndarray]], b: list[dict[str, np.ndarray]],
                      metrics: list[str], values_a: pd.DataFrame, values_b: pd.DataFrame,
                      bootstrap: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """The validation toolkit's test on time series (normalised DTW distances, p̂_max with
    its bootstrap 95 % CI, the permutation test's p-value and the verdict) between two groups
    of `binned_series`: one row per metric, with both groups' means of the per-run scalar of
    the same name (`values_a`/`values_b`, the numbers of the results table). Groups of fewer
    than two runs get no test (NaN)."""
    from l4slab.validation import Run, validate_groups

    rows = []
    for m in metrics:
        xa = [r[m] for r in a if m in r]
        xb = [r[m] for r in b if m in r]
        ma = values_a[m].to_numpy(dtype=float)
        mb = values_b[m].to_numpy(dtype=float)
        row: dict[str, Any] = {"metric": m, "mean_a": mean_ci(ma)[0], "mean_b": mean_ci(mb)[0],
                               "n_a": len(xa), "n_b": len(xb)}
        row["difference"] = row["mean_b"] - row["mean_a"]
        row.update(p_hat_max=np.nan, ci_low=np.nan, ci_high=np.nan, similar=None,
                   perm_p=np.nan, verdict="too few runs")
        finite = all(np.isfinite(x).all() for x in xa + xb)
        if len(xa) >= 2 and len(xb) >= 2 and finite:
            ra = [Run(Path(f"a{i}"), {m: x}) for i, x in enumerate(xa)]
            rb = [Run(Path(f"b{i}"), {m: x}) for i, x in enumerate(xb)]
            # p̂_max alone sits near 5 % for identical groups by construction: the verdict
            # comes from the permutation test beside it (validation/interpret.py).
            res = validate_groups(ra, rb, [m], bootstrap=bootstrap, seed=seed)[0]
            row.update(p_hat_max=_f(res.p_hat), ci_low=_f(res.ci_low), ci_high=_f(res.ci_high),
                       similar=res.similar, kind=res.kind)
            if res.interp is not None:
                row.update(perm_p=res.interp.perm_p, verdict=res.interp.verdict)
        rows.append(row)
    return rows

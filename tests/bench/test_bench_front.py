"""Benchmarks (run by `make bench`, skipped by `make test`): one default run through the Python
binding, a 20-run sweep on all cores, and DTW throughput in cells per second."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import l4slab
from l4slab import _core

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "scenarios" / "prague_vs_cubic_50M_40ms.toml"


def test_bench_default_run(benchmark):
    text = DEFAULT.read_text()
    out = benchmark(_core.run_scenario, text, "toml", str(DEFAULT.parent))
    secs = benchmark.stats.stats.mean
    rate = out["events"] / secs / 1e6
    print(f"\ndefault 30 s run: {out['events']} events, {rate:.1f} M events/s, "
          f"{30.0 / secs:.0f} simulated s per wall s")


def test_bench_sweep_20_runs(benchmark, tmp_path):
    plan = {
        "base": str(DEFAULT),
        "replications": 10,
        "seed": 1,
        "grid": {"aqm.step_thresh": ["1ms", "5ms"]},
    }
    counter = iter(range(1000))

    def once():
        return l4slab.sweep(plan, out_dir=tmp_path / f"s{next(counter)}", resume=False)

    res = benchmark.pedantic(once, rounds=2, iterations=1)
    assert not res.failed
    print(f"\n20-run sweep: {benchmark.stats.stats.mean:.2f} s wall")


@pytest.mark.parametrize("n", [1900])
def test_bench_dtw_cells_per_second(benchmark, n):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=n), rng.normal(size=n)
    benchmark(_core.dtw_distance, x.tolist(), y.tolist())
    secs = benchmark.stats.stats.mean
    print(f"\nDTW {n}x{n}: {n * n / secs / 1e9:.2f} G cells/s on one core; "
          f"100x100 runs need {19900 * n * n / (n * n / secs) / 2:.0f} s on 2 cores (estimate)")


"""Compare two runs or two groups of runs (`l4slab compare A B`, `l4slab.compare`): load
them, validate them metric by metric (core.py) and print or write the results (report.py)."""

from __future__ import annotations

from pathlib import Path

from l4slab.validation.core import (
    ALPHA,
    DEFAULT_BOOTSTRAP,
    MetricResult,
    distance_sets,
    validate_groups,
)
from l4slab.validation.io import common_metrics, load_group
from l4slab.validation.report import print_results, write_outputs


def compare_runs(
    dir_a: str | Path,
    dir_b: str | Path,
    metrics: list[str] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    band: int | None = None,
    out_dir: str | Path | None = None,
    warmup_s: float = 0.0,
    alpha: float = ALPHA,
    console=None,
) -> list[MetricResult]:
    """Compare two runs or two groups of runs (what ``l4slab compare A B`` calls).

    Each of ``dir_a`` / ``dir_b`` is a run directory, a CSV trace, a directory of those, or a
    glob. Two single runs: per-metric distances only (DTW / |x - y|), no test. Two groups of
    >= 2 runs: the full validation (:func:`validate_groups`). With ``out_dir`` the results are
    written there (validation.csv, validation.md, histograms); with a rich ``console`` the table
    is printed. Raises :class:`ValidationInputError` on bad input."""
    runs_a = load_group("A", dir_a, warmup_s)
    runs_b = load_group("B", dir_b, warmup_s)
    if len(runs_a) == 1 and len(runs_b) == 1:
        if not metrics:
            metrics = common_metrics({"A": runs_a, "B": runs_b})
        results = []
        for m in metrics:
            kind, wa, wb, cross = distance_sets(runs_a, runs_b, m, band)
            results.append(MetricResult(m, kind, 1, 1, wa, wb, cross, band=band, seed=seed))
    else:
        results = validate_groups(runs_a, runs_b, metrics, bootstrap, seed, band, alpha)
    if console is not None:
        print_results(results, console, str(dir_a), str(dir_b))
    if out_dir is not None:
        write_outputs(results, Path(out_dir), str(dir_a), str(dir_b))
    return results

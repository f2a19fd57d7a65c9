"""The statistical validation of two groups of runs, metric by metric.

Follows DESIGN.md "Validation" (the published framework): pairwise distances (normalised DTW
with L1 cost for series, |x - y| for scalars) within each group (i < j) and across groups;
eps_max = max of the two within-group 95th percentiles (numpy "linear"); p_hat_max =
(#{cross > eps_max} + 1) / (n_cross + 1); "similar" when p_hat_max < alpha (0.05). A bootstrap
over runs (B = 2000, seeded) gives a 95 % percentile CI of p_hat_max; "significant" when the CI's
upper end < alpha. Distances and the bootstrap run in Rust (``l4slab._core``); the bootstrap
only indexes the precomputed distance sets. Beside them, interpret.py says what p̂_max means at
these n (its value under identical groups, a permutation test, effect sizes) and words the
verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from l4slab import _core
from l4slab.validation.interpret import Interpretation, interp_row, interpret
from l4slab.validation.io import (
    Run,
    ValidationInputError,
    common_metrics,
    metric_values,
)

ALPHA = 0.05
LEVEL = 0.95
DEFAULT_BOOTSTRAP = 2000


def min_attainable_p_hat(n_a: int, n_b: int) -> float:
    """The smallest p_hat_max the test can give: (0 + 1) / (n_a·n_b + 1), no cross distance
    above eps_max. When it is >= alpha, "similar" is impossible whatever the data."""
    return 1.0 / (n_a * n_b + 1)


def runs_needed(alpha: float = ALPHA) -> int:
    """Smallest equal group size n with 1 / (n² + 1) < alpha (5 runs per group at 0.05)."""
    n = 2
    while min_attainable_p_hat(n, n) >= alpha:
        n += 1
    return n


@dataclass
class MetricResult:
    """Outcome for one metric. Test fields are None when a group has a single run (then only
    the cross distance is meaningful: ``compare_runs`` of two single runs)."""

    metric: str
    kind: str  # "dtw" | "scalar"
    n_a: int
    n_b: int
    within_a: np.ndarray
    within_b: np.ndarray
    cross: np.ndarray
    p95_a: float | None = None
    p95_b: float | None = None
    eps_max: float | None = None
    n_exceed: int | None = None
    p_hat: float | None = None
    similar: bool | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    upper: float | None = None
    significant: bool | None = None
    bootstrap: int = 0
    seed: int = 0
    band: int | None = None
    boot_p_hat: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: Smallest attainable p_hat_max at these group sizes, and whether it is >= alpha (then
    #: neither "similar" nor "significant" can be decided and both are None).
    min_p_hat: float | None = None
    undecidable: bool = False
    needed: int | None = None
    #: What the p̂_max means at these n: null p̂_max, permutation test, effect sizes, verdict
    #: (validation/interpret.py); None for two single runs.
    interp: Interpretation | None = None

    @property
    def copies(self) -> list[str]:
        """The groups ("A", "B") whose runs are identical in this metric: every within-group
        distance is 0, so the group is one run repeated (e.g. seeds that change nothing)."""
        return [g for g, w in (("A", self.within_a), ("B", self.within_b))
                if w.size and not np.any(w)]

    @property
    def n_cross(self) -> int:
        """Number of cross-group distances (n_a·n_b)."""
        return int(self.cross.size)

    def row(self) -> dict[str, object]:
        """Flat record for validation.csv."""
        return {
            "metric": self.metric,
            "distance": self.kind,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "p95_within_a": self.p95_a,
            "p95_within_b": self.p95_b,
            "eps_max": self.eps_max,
            "n_cross": self.n_cross,
            "n_exceed": self.n_exceed,
            "p_hat_max": self.p_hat,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "upper_one_sided": self.upper,
            "similar": "undecidable" if self.undecidable else self.similar,
            "significant": "undecidable" if self.undecidable else self.significant,
            "min_p_hat_attainable": self.min_p_hat,
            "runs_needed_per_group": self.needed,
            "mean_cross_distance": float(np.mean(self.cross)) if self.cross.size else None,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "band": self.band,
            **(interp_row(self.interp) if self.interp is not None else {}),
            "identical_runs": "+".join(self.copies) or None,
        }


def _core_call(fn, *args, **kwargs):
    """Rust errors (ValueError) become ValidationInputError with the same message."""
    try:
        return fn(*args, **kwargs)
    except ValueError as e:
        raise ValidationInputError(str(e)) from None


def distance_sets(
    runs_a: list[Run], runs_b: list[Run], metric: str, band: int | None = None
) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """(kind, within_a, within_b, cross) of one metric; within sets in pdist order, cross
    row-major (A index major)."""
    va = [metric_values(r, metric, "A") for r in runs_a]
    vb = [metric_values(r, metric, "B") for r in runs_b]
    scalar = {s for _, s in va + vb}
    kind = "scalar" if scalar == {True} else "dtw"
    ga = [x.tolist() for x, _ in va]
    gb = [x.tolist() for x, _ in vb]
    if len(ga) >= 2 and len(gb) >= 2:
        wa, wb, cross = _core_call(_core.distance_sets, ga, gb, kind == "scalar", band)
    else:
        wa = wb = []
        cross = [
            abs(x[0] - y[0]) if kind == "scalar" else _core_call(_core.dtw_distance, x, y, band)
            for x in ga
            for y in gb
        ]
    return kind, np.asarray(wa), np.asarray(wb), np.asarray(cross)


def _check_sizes(runs_a: list[Run], runs_b: list[Run]) -> None:
    for name, runs in (("A", runs_a), ("B", runs_b)):
        if len(runs) == 0:
            raise ValidationInputError(f"group {name}: empty group")
        if len(runs) < 2:
            raise ValidationInputError(
                f"group {name} has {len(runs)} run ({runs[0].source}); at least 2 runs per "
                "group are needed for within-group pairs"
            )


def validate_groups(
    runs_a: list[Run],
    runs_b: list[Run],
    metrics: list[str] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    band: int | None = None,
    alpha: float = ALPHA,
    level: float = LEVEL,
    interpretation: bool = True,
) -> list[MetricResult]:
    """Exceedance test and bootstrap CI per metric for groups A and B (each >= 2 runs).
    ``metrics`` None: every metric the runs share (mismatch is an error). ``interpretation``
    adds the null p̂_max, permutation test, effect sizes and verdict (interpret.py); a caller
    that reports only p̂_max may skip their cost (permutations of the pooled runs)."""
    _check_sizes(runs_a, runs_b)
    if not metrics:
        metrics = common_metrics({"A": runs_a, "B": runs_b})
    results = []
    for metric in metrics:
        kind, wa, wb, cross = distance_sets(runs_a, runs_b, metric, band)
        na, nb = len(runs_a), len(runs_b)
        e = _core_call(_core.exceedance, wa.tolist(), wb.tolist(), cross.tolist(), na, nb, alpha)
        bs = _core_call(
            _core.bootstrap,
            wa.tolist(),
            wb.tolist(),
            cross.tolist(),
            na,
            nb,
            replicates=bootstrap,
            seed=seed,
            level=level,
            alpha=alpha,
        )
        min_p = min_attainable_p_hat(na, nb)
        undecidable = min_p >= alpha
        interp = None
        if interpretation:
            values = ([np.concatenate([metric_values(r, metric, g)[0] for r in runs])
                       for g, runs in (("A", runs_a), ("B", runs_b))] if kind == "scalar"
                      else [None, None])
            interp = interpret(wa, wb, cross, na, nb, alpha, seed, values[0], values[1])
        results.append(
            MetricResult(
                metric=metric,
                kind=kind,
                n_a=na,
                n_b=nb,
                within_a=wa,
                within_b=wb,
                cross=cross,
                p95_a=e["p95_a"],
                p95_b=e["p95_b"],
                eps_max=e["eps_max"],
                n_exceed=e["n_exceed"],
                p_hat=e["p_hat"],
                similar=None if undecidable else e["similar"],
                ci_low=bs["ci_low"],
                ci_high=bs["ci_high"],
                upper=bs["upper"],
                significant=None if undecidable else bs["significant"],
                bootstrap=bootstrap,
                seed=seed,
                band=band,
                boot_p_hat=np.asarray(bs["p_hat"]),
                min_p_hat=min_p,
                undecidable=undecidable,
                needed=runs_needed(alpha),
                interp=interp,
            )
        )
    return results


def copy_groups(results: list[MetricResult]) -> list[str]:
    """Groups whose runs are identical in every metric: copies, not independent samples."""
    return [g for g in ("A", "B") if results and all(g in r.copies for r in results)]


def improved(before: MetricResult, after: MetricResult) -> bool:
    """Configuration ``after`` improves on ``before`` (both validated against the same
    reference) when its p_hat_max CI lies wholly below: after.ci_high < before.ci_low."""
    if None in (before.ci_low, after.ci_high):
        raise ValidationInputError("improved() needs bootstrap CIs on both results")
    return bool(after.ci_high < before.ci_low)

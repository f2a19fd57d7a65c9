"""What a validation's p̂_max means at the group sizes it had: the p̂_max identical groups give
(a label-permutation null of the pooled runs), a permutation test of cross- vs within-group
distances, effect sizes, and the verdict worded from all of them.

The published exceedance test (core.py) sits near 5 % for identical groups by construction:
ε_max is a 95th percentile of within-group distances, so about 5 % of cross distances exceed
it when nothing differs. Its value alone cannot separate "same" from "different"; this module
adds what can. Permutation test: Fisher–Pitman label permutation of the pooled runs, statistic
the energy distance of Székely & Rizzo (2004) on the precomputed distances,
T = mean(cross) − (mean(within A) + mean(within B)) / 2, one-sided (a difference makes cross
distances larger). Exact over every split when there are at most EXACT_LIMIT of them, else
PERMUTATIONS random splits drawn from the validation's seed; p = (#{T_perm ≥ T} + 1) / (K + 1).
Under "the groups are the same", the runs are exchangeable and P(p < α) ≤ α exactly.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

#: Random label permutations when the splits are too many to enumerate.
PERMUTATIONS = 999
#: Enumerate every split up to this many.
EXACT_LIMIT = 5000


@dataclass
class Interpretation:
    """The interpretation of one metric's validation (see the module doc)."""

    #: p̂_max over the null (label-permuted) splits: median and 95th percentile.
    null_p_hat_median: float
    null_p_hat_p95: float
    #: Energy statistic of the observed split and its permutation p-value.
    stat: float
    perm_p: float
    #: Smallest p-value these group sizes allow; number of splits used; enumerated or drawn.
    perm_min_p: float
    permutations: int
    exact: bool
    #: median(cross) / median(within A ∪ within B); 1 when both are 0 (identical runs).
    ratio: float
    #: Scalars: group means, B − A and its Welch 95 % CI (None for series).
    mean_a: float | None = None
    mean_b: float | None = None
    diff: float | None = None
    diff_ci: tuple[float, float] | None = None
    verdict: str = ""


def pooled_matrix(within_a: np.ndarray, within_b: np.ndarray, cross: np.ndarray, n_a: int,
                  n_b: int) -> np.ndarray:
    """The (n_a + n_b)² distance matrix of the pooled runs (A first) from the three sets
    (within sets in pdist order, i < j row-major; cross row-major, A index major)."""
    n = n_a + n_b
    d = np.zeros((n, n))
    ia = np.triu_indices(n_a, 1)
    d[ia] = within_a
    ib = np.triu_indices(n_b, 1)
    d[n_a + ib[0], n_a + ib[1]] = within_b
    d[:n_a, n_a:] = np.asarray(cross, dtype=float).reshape(n_a, n_b)
    return d + d.T


def _splits(n: int, n_a: int, seed: int) -> tuple[np.ndarray, bool]:
    """Permutations of range(n) whose first n_a entries form group A: every split (exact) or
    PERMUTATIONS random ones plus the observed split first."""
    total = math.comb(n, n_a)
    if total <= EXACT_LIMIT:
        rows = []
        for a in itertools.combinations(range(n), n_a):
            sa = set(a)
            rows.append(list(a) + [i for i in range(n) if i not in sa])
        return np.asarray(rows, dtype=np.intp), True
    rng = np.random.default_rng(seed)
    perms = np.stack([np.arange(n)] + [rng.permutation(n) for _ in range(PERMUTATIONS)])
    return perms, False


def _stats(d: np.ndarray, perms: np.ndarray, n_a: int, alpha_pct: float = 95.0
           ) -> tuple[np.ndarray, np.ndarray]:
    """(p̂_max, energy statistic) of each split: the published formulas on permuted labels."""
    n = d.shape[0]
    n_b = n - n_a
    sub = d[perms[:, :, None], perms[:, None, :]]  # K × n × n
    ia = np.triu_indices(n_a, 1)
    ib = np.triu_indices(n_b, 1)
    wa = sub[:, :n_a, :n_a][:, ia[0], ia[1]]
    wb = sub[:, n_a:, n_a:][:, ib[0], ib[1]]
    cross = sub[:, :n_a, n_a:].reshape(len(perms), -1)
    eps = np.maximum(np.percentile(wa, alpha_pct, axis=1), np.percentile(wb, alpha_pct, axis=1))
    p_hat = ((cross > eps[:, None]).sum(axis=1) + 1) / (cross.shape[1] + 1)
    stat = cross.mean(axis=1) - (wa.mean(axis=1) + wb.mean(axis=1)) / 2
    return p_hat, stat


def runs_needed_for_permutation(alpha: float) -> int:
    """Smallest equal group size whose exact permutation test can reach p < alpha (with equal
    groups a split and its mirror give the same statistic: min p = 2 / C(2n, n))."""
    n = 2
    while 2 / math.comb(2 * n, n) >= alpha:
        n += 1
    return n


def interpret(within_a: np.ndarray, within_b: np.ndarray, cross: np.ndarray, n_a: int,
              n_b: int, alpha: float, seed: int, values_a: np.ndarray | None = None,
              values_b: np.ndarray | None = None) -> Interpretation:
    """Null p̂_max, permutation test, effect sizes and the verdict of one metric (groups of
    >= 2 runs). `values_a`/`values_b`: the scalar metric's values (for the mean difference)."""
    d = pooled_matrix(within_a, within_b, cross, n_a, n_b)
    perms, exact = _splits(n_a + n_b, n_a, seed)
    # In chunks of about 2 M matrix entries (groups of 100 runs: 50 splits at a time).
    chunk = max(1, 2_000_000 // d.size)
    parts = [_stats(d, perms[i:i + chunk], n_a) for i in range(0, len(perms), chunk)]
    p_hats = np.concatenate([p for p, _ in parts])
    stats = np.concatenate([t for _, t in parts])
    t_obs = float(stats[0])  # row 0 is the observed split (A = the first n_a runs)
    # Ties within float noise count as "as extreme" (the observed split ties itself).
    tol = 1e-9 * max(1.0, abs(t_obs))
    ge = int((stats >= t_obs - tol).sum())
    if exact:
        perm_p = ge / len(perms)
        mirror = 2 if n_a == n_b else 1
        min_p = mirror / len(perms)
    else:
        perm_p = ge / len(perms)  # the observed split is row 0: (#{T_k ≥ T} + 1) / (K + 1)
        min_p = 1 / len(perms)
    within = np.concatenate([within_a, within_b])
    med_w = float(np.median(within)) if within.size else 0.0
    med_c = float(np.median(cross)) if np.size(cross) else 0.0
    ratio = 1.0 if med_w == 0 and med_c == 0 else (math.inf if med_w == 0 else med_c / med_w)
    out = Interpretation(
        null_p_hat_median=float(np.median(p_hats)),
        null_p_hat_p95=float(np.percentile(p_hats, 95)),
        stat=t_obs, perm_p=float(perm_p), perm_min_p=float(min_p),
        permutations=len(perms), exact=exact, ratio=ratio)
    if values_a is not None and values_b is not None:
        out.mean_a, out.mean_b = float(np.mean(values_a)), float(np.mean(values_b))
        out.diff = out.mean_b - out.mean_a
        out.diff_ci = welch_ci(values_a, values_b, 1 - alpha)
    out.verdict = verdict(out, alpha, n_a, n_b)
    return out


def welch_ci(a: np.ndarray, b: np.ndarray, level: float) -> tuple[float, float]:
    """Welch's CI of mean(b) − mean(a) (Satterthwaite degrees of freedom); a point when both
    groups have no spread."""
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = float(b.mean() - a.mean())
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    q = float(stats.t.ppf(0.5 + level / 2, dof))
    return diff - q * se, diff + q * se


def verdict(i: Interpretation, alpha: float, n_a: int, n_b: int) -> str:
    """The reading of one metric: too few runs, different, or indistinguishable at this n."""
    if i.perm_min_p >= alpha:
        return (f"too few runs (n = {n_a}/{n_b}: the permutation test cannot reach "
                f"p < {alpha:g}; need ≥ {runs_needed_for_permutation(alpha)} per group)")
    if i.perm_p < alpha:
        return "different"
    return "indistinguishable at this n"


def effect_text(i: Interpretation, kind: str, unit: str = "") -> str:
    """The effect size as one cell: the distance ratio, and for scalars B − A with its CI."""
    ratio = "identical runs" if i.ratio == 1.0 and i.stat == 0 else (
        "cross/within ∞" if math.isinf(i.ratio) else f"cross/within {i.ratio:.3g}")
    if kind == "scalar" and i.diff is not None and i.diff_ci is not None:
        lo, hi = i.diff_ci
        u = f" {unit}" if unit else ""
        if lo == hi:
            return f"{ratio}; B−A {i.diff:.4g}{u} (no spread)"
        return f"{ratio}; B−A {i.diff:.4g}{u} [{lo:.3g}, {hi:.3g}]"
    return ratio


def interp_row(i: Interpretation) -> dict[str, object]:
    """The interpretation's columns of validation.csv."""
    lo, hi = i.diff_ci if i.diff_ci is not None else (None, None)
    return {
        "null_p_hat_median": i.null_p_hat_median,
        "null_p_hat_p95": i.null_p_hat_p95,
        "perm_stat": i.stat,
        "perm_p": i.perm_p,
        "perm_min_p": i.perm_min_p,
        "permutations": i.permutations,
        "permutations_exact": i.exact,
        "distance_ratio": i.ratio,
        "mean_a": i.mean_a,
        "mean_b": i.mean_b,
        "diff_b_minus_a": i.diff,
        "diff_ci_low": lo,
        "diff_ci_high": hi,
        "verdict": i.verdict,
    }

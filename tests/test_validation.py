"""Validation maths: normalised DTW, distance sets, exceedance test and bootstrap (l4slab._core
and l4slab.validation.core), against hand-worked values, an independent reference DTW,
dtaidistance, and numpy's percentile."""

from pathlib import Path

import numpy as np
import pytest
from dtaidistance import dtw as dtai

from l4slab import _core
from l4slab.validation.core import MetricResult, improved, validate_groups
from l4slab.validation.io import Run, ValidationInputError


def reference_dtw(x, y):
    """Independent O(n·m) DTW with L1 cost: full matrix of (cost, path length) pairs, each cell
    taking the lexicographic minimum of its three predecessors (smallest cost, then shortest
    path) — the documented rule, written as plainly as possible."""
    n, m = len(x), len(y)
    inf = (np.inf, 0)
    d = [[inf] * m for _ in range(n)]
    for i in range(n):
        for j in range(m):
            if i == 0 and j == 0:
                best = (0.0, 0)
            else:
                cands = []
                if i > 0 and j > 0:
                    cands.append(d[i - 1][j - 1])
                if i > 0:
                    cands.append(d[i - 1][j])
                if j > 0:
                    cands.append(d[i][j - 1])
                best = min(cands)  # tuples compare lexicographically: (cost, length)
            d[i][j] = (abs(x[i] - y[j]) + best[0], best[1] + 1)
    return d[n - 1][m - 1]


def test_hand_worked_three_by_two():
    # x = [0,1,2], y = [0,2]; cell costs |x_i - y_j|: row0: 0 2 / row1: 1 1 / row2: 2 0.
    # D(0,0)=(0,1) D(0,1)=(2,2) D(1,0)=(1,2) D(1,1)=1+D(0,0)=(1,2) D(2,0)=2+D(1,0)=(3,3)
    # D(2,1)=0+min{D(1,0)=(1,2), D(1,1)=(1,2), D(2,0)=(3,3)}=(1,3) -> distance 1/3.
    assert _core.dtw([0, 1, 2], [0, 2]) == (1.0, 3)
    assert _core.dtw_distance([0, 1, 2], [0, 2]) == 1.0 / 3.0
    cost, length, path = _core.dtw_path([0, 1, 2], [0, 2])
    assert (cost, length) == (1.0, 3)
    # Full tie between (1,0) and (1,1) at D(2,1): the diagonal predecessor is preferred.
    assert path == [(0, 0), (1, 0), (2, 1)]


def test_cost_ties_go_to_the_shorter_path():
    # x = [1,0,1], y = [1,1]: costs row0: 0 0 / row1: 1 1 / row2: 0 0. Cost-1 paths of 3 cells
    # ((0,0)(1,0)(2,1)) and of 4 cells ((0,0)(0,1)(1,1)(2,1)); shorter wins: 1/3, not 1/4.
    assert _core.dtw([1, 0, 1], [1, 1]) == (1.0, 3)
    assert reference_dtw([1, 0, 1], [1, 1]) == (1.0, 3)


def test_identity_and_symmetry():
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.normal(size=rng.integers(1, 50)).tolist()
        y = rng.normal(size=rng.integers(1, 50)).tolist()
        assert _core.dtw(x, x) == (0.0, len(x))  # the diagonal: zero cost, n cells
        assert _core.dtw(x, y) == _core.dtw(y, x)  # bit for bit


def test_time_shifted_copy_is_closer_than_pointwise_l1():
    t = np.arange(200)
    x = np.sin(2 * np.pi * t / 50.0)
    y = np.sin(2 * np.pi * (t - 7) / 50.0)  # same wave, 7 samples late
    l1_per_point = float(np.mean(np.abs(x - y)))
    d = _core.dtw_distance(x.tolist(), y.tolist())
    # Pointwise L1 of a 7/50-period shift: mean |2 sin(pi·7/50) cos(.)| = (4/pi) sin(0.44) ≈ 0.54.
    assert l1_per_point == pytest.approx(4 / np.pi * np.sin(np.pi * 7 / 50), rel=0.02)
    # DTW only pays at the 7-sample edges (the start of y has no partner in x): far smaller.
    assert d < 0.1 * l1_per_point


@pytest.mark.parametrize("integers", [False, True])
def test_matches_independent_reference_and_dtaidistance(integers):
    # Reference: the plain-Python lexicographic DP above (cost AND path length). dtaidistance
    # with inner_dist="euclidean" accumulates |x - y| (its default squares), so its total cost
    # must equal ours; its path length can differ on ties (other tie rule), so only the cost
    # is compared with it. Integer-valued series make exact cost ties frequent.
    rng = np.random.default_rng(11 if integers else 12)
    for _ in range(40):
        n, m = rng.integers(1, 35, size=2)
        if integers:
            x, y = rng.integers(-3, 4, n).astype(float), rng.integers(-3, 4, m).astype(float)
        else:
            x, y = rng.normal(size=n), rng.normal(size=m)
        cost, length = _core.dtw(x.tolist(), y.tolist())
        ref_cost, ref_len = reference_dtw(x.tolist(), y.tolist())
        assert length == ref_len
        assert cost == pytest.approx(ref_cost, rel=1e-12, abs=1e-12)
        assert cost == pytest.approx(dtai.distance(x, y, inner_dist="euclidean"), rel=1e-9)
        pcost, plen, path = _core.dtw_path(x.tolist(), y.tolist())
        assert (pcost, plen) == (cost, length) and len(path) == length
        assert sum(abs(x[i] - y[j]) for i, j in path) == pytest.approx(cost, rel=1e-12)


def test_band_and_bad_inputs():
    x = [0, 0, 0, 1, 1, 1, 1, 1]
    y = [0, 0, 0, 0, 0, 1, 1, 1]
    assert _core.dtw(x, y)[0] == 0.0  # the 2-sample shift is absorbed unbanded
    assert _core.dtw(x, y, band=1)[0] == 1.0  # a band of 1 leaves one mismatched sample
    assert _core.dtw(x, y, band=2)[0] == 0.0
    with pytest.raises(ValueError, match="empty series"):
        _core.dtw([], [1.0])
    with pytest.raises(ValueError, match="non-finite value NaN at index 2"):
        _core.dtw([1.0], [0.0, 1.0, float("nan")])
    with pytest.raises(ValueError, match="band"):
        _core.dtw(x, y, band=0)
    assert _core.difference([1.0, 4.0, 4.0, 10.0]) == [3.0, 0.0, 6.0]


def test_percentile_matches_numpy_linear_exactly():
    rng = np.random.default_rng(5)
    for n in [1, 2, 3, 7, 20, 101, 4950]:
        v = rng.exponential(size=n)
        for q in [0, 2.5, 50, 95, 97.5, 100]:
            assert _core.percentile(v.tolist(), q) == np.percentile(v, q)


def test_exceedance_matches_its_definition():
    rng = np.random.default_rng(6)
    groups = [[rng.normal(size=rng.integers(30, 60)).tolist() for _ in range(k)] for k in (7, 9)]
    wa, wb, cross = _core.distance_sets(groups[0], groups[1])
    assert len(wa) == 21 and len(wb) == 36 and len(cross) == 63
    assert wa[0] == _core.dtw_distance(groups[0][0], groups[0][1])
    assert cross[2 * 9 + 5] == _core.dtw_distance(groups[0][2], groups[1][5])
    e = _core.exceedance(wa, wb, cross, 7, 9)
    eps = max(np.percentile(wa, 95), np.percentile(wb, 95))
    assert e["eps_max"] == eps
    n_exceed = int(np.sum(np.asarray(cross) > eps))
    assert e["n_exceed"] == n_exceed
    assert e["p_hat"] == (n_exceed + 1) / (63 + 1)
    assert e["similar"] == (e["p_hat"] < 0.05)


def ar1_runs(rng, runs, points, level, phi=0.9, sigma=1.0):
    """Runs of an AR(1) process around ``level`` (a stand-in for a throughput trace)."""
    out = []
    for _ in range(runs):
        v = np.empty(points)
        x = level
        for k in range(points):
            x = phi * x + (1 - phi) * level + sigma * rng.normal()
            v[k] = x
        out.append(Run(source=Path(f"run{len(out)}"), metrics={"m": v}))
    return out


def test_same_distribution_is_similar_different_is_not():
    # One distribution: cross pairs are distributed like within pairs, so the fraction of cross
    # distances above the larger within-group P95 is about 5 % or a little less (the max of two
    # P95 estimates is biased upward): p_hat sits just under the 0.05 threshold on average and
    # each single validation lands on either side of it. Checked over 10 independent group
    # pairs: median below 0.05, none far above; different groups give exactly 1.
    p_same = []
    for s in range(10):
        rng = np.random.default_rng(s)
        a, b = ar1_runs(rng, 25, 100, 10.0), ar1_runs(rng, 25, 100, 10.0)
        r = validate_groups(a, b, ["m"], bootstrap=200, seed=1)[0]
        assert r.n_cross == 625
        assert r.ci_low <= r.p_hat <= r.ci_high  # the CI brackets the point estimate
        p_same.append(r.p_hat)
    assert np.median(p_same) < 0.05
    assert max(p_same) < 0.1
    rng = np.random.default_rng(99)
    a, c = ar1_runs(rng, 25, 100, 10.0), ar1_runs(rng, 25, 100, 20.0)
    diff = validate_groups(a, c, ["m"], bootstrap=200, seed=1)[0]
    # A 10-unit level shift (stationary sd of the AR(1) is 1/sqrt(1-0.81) ≈ 2.3): every cross
    # distance is > eps_max -> p_hat = (625+1)/(625+1) = 1.
    assert diff.n_exceed == 625 and diff.p_hat == 1.0 and not diff.similar
    assert diff.ci_low == 1.0 and not diff.significant


def test_bootstrap_ci_narrows_with_more_runs_and_is_seeded():
    rng = np.random.default_rng(77)
    big_a, big_b = ar1_runs(rng, 40, 80, 10.0), ar1_runs(rng, 40, 80, 10.0)
    small = validate_groups(big_a[:8], big_b[:8], ["m"], bootstrap=1000, seed=3)[0]
    large = validate_groups(big_a, big_b, ["m"], bootstrap=1000, seed=3)[0]
    assert large.ci_high - large.ci_low < small.ci_high - small.ci_low
    again = validate_groups(big_a[:8], big_b[:8], ["m"], bootstrap=1000, seed=3)[0]
    assert np.array_equal(again.boot_p_hat, small.boot_p_hat)
    other = validate_groups(big_a[:8], big_b[:8], ["m"], bootstrap=1000, seed=4)[0]
    assert not np.array_equal(other.boot_p_hat, small.boot_p_hat)
    # p_hat of a replicate is in [1/(n_cross+1), 1] (n_cross = 8·8 = 64).
    assert small.boot_p_hat.min() >= 1 / 65 and small.boot_p_hat.max() <= 1.0


def test_improved_compares_cis():
    def res(lo, hi):
        z = np.zeros(1)
        return MetricResult("m", "dtw", 2, 2, z, z, z, ci_low=lo, ci_high=hi)

    assert improved(res(0.5, 0.9), res(0.01, 0.3))  # B wholly below A
    assert not improved(res(0.5, 0.9), res(0.2, 0.6))  # overlap
    with pytest.raises(ValidationInputError):
        improved(res(None, None), res(0.1, 0.2))


def test_scalar_metrics_use_absolute_difference():
    runs_a = [
        Run(Path(f"a{i}"), {"m": np.array(v)})
        for i, v in enumerate([[1.0, 3.0], [2.0, 2.0], [5.0, 5.0]])
    ]
    runs_b = [
        Run(Path(f"b{i}"), {"m": np.array(v)}) for i, v in enumerate([[2.0, 4.0], [0.0, 0.0]])
    ]
    r = validate_groups(runs_a, runs_b, ["mean:m"], bootstrap=100)[0]
    # Means A = [2, 2, 5], B = [3, 0]: within A = |2-2|, |2-5|, |2-5| = [0, 3, 3];
    # cross row-major = [1, 2, 1, 2, 2, 5].
    assert r.kind == "scalar"
    assert r.within_a.tolist() == [0.0, 3.0, 3.0]
    assert r.within_b.tolist() == [3.0]
    assert r.cross.tolist() == [1.0, 2.0, 1.0, 2.0, 2.0, 5.0]

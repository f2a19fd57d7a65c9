"""Verdicts a user can read: beside the published p̂_max, the p̂_max identical groups give at
these n, a permutation test with its p-value, effect sizes, and a verdict worded from them;
checked on synthetic groups of known difference."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from l4slab.validation import Run, validate_groups
from l4slab.validation.cli import validate_cmd
from l4slab.validation.interpret import pooled_matrix

ALPHA = 0.05


def _binom_tail(n: int, p: float, k: int) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def _scalar_runs(n: int, level: float, rng: np.random.Generator, tag: str) -> list[Run]:
    # One value per run (the metric is read as "mean:m").
    return [Run(Path(f"{tag}{i}"), {"m": np.array([level + rng.normal()])}) for i in range(n)]


def _series_runs(n: int, level: float, rng: np.random.Generator, tag: str) -> list[Run]:
    # Each run: its own offset (run-to-run spread σ = 1) plus sample noise.
    return [Run(Path(f"{tag}{i}"), {"m": level + rng.normal() + 0.3 * rng.normal(size=30)})
            for i in range(n)]


def test_identical_groups_are_called_different_at_most_at_the_nominal_rate():
    """Under identical groups the runs are exchangeable, so the exact permutation test has
    P(p < 0.05) <= 0.05. 200 seeded trials at n = 6 per group (every one of the 924 splits
    enumerated): if the rate were the nominal 5 %, more than 20 "different" verdicts would
    happen with probability < 0.2 %; far more would mean the test is anti-conservative."""
    trials, bound = 200, 20
    assert _binom_tail(trials, ALPHA, bound + 1) < 0.002
    called = 0
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        a, b = _scalar_runs(6, 10.0, rng, "a"), _scalar_runs(6, 10.0, rng, "b")
        r = validate_groups(a, b, ["mean:m"], bootstrap=10, seed=seed)[0]
        assert r.interp.exact and r.interp.permutations == math.comb(12, 6)
        called += r.interp.verdict == "different"
    assert called <= bound, called
    assert called > 0  # the test can reject at all (else it would be vacuous)


def test_identical_series_groups_are_rarely_called_different():
    trials, bound = 60, 8
    assert _binom_tail(trials, ALPHA, bound + 1) < 0.005
    called = 0
    for seed in range(trials):
        rng = np.random.default_rng(1000 + seed)
        a, b = _series_runs(6, 10.0, rng, "a"), _series_runs(6, 10.0, rng, "b")
        r = validate_groups(a, b, ["m"], bootstrap=10, seed=seed)[0]
        called += r.interp.verdict == "different"
    assert called <= bound, called


@pytest.mark.parametrize("seed", range(5))
def test_a_two_sigma_shift_is_detected_at_n30(seed):
    """A 2σ shift at n = 30 per group: the energy-distance test's power is ~1 (the two-sample
    t-test's alone is > 0.999), so every seed must say "different"; the Welch CI of B − A must
    cover the true shift 2 and exclude 0; the published p̂_max is still reported as is."""
    rng = np.random.default_rng(seed)
    a, b = _scalar_runs(30, 0.0, rng, "a"), _scalar_runs(30, 2.0, rng, "b")
    r = validate_groups(a, b, ["mean:m"], bootstrap=50, seed=seed)[0]
    i = r.interp
    assert i.verdict == "different" and i.perm_p < ALPHA
    assert not i.exact and i.permutations == 1000
    lo, hi = i.diff_ci
    assert lo > 0 and lo < 2 < hi
    assert i.ratio > 1.5  # cross distances clearly larger than within
    # Series: the same run-level shift is found through DTW distances.
    a, b = _series_runs(30, 0.0, rng, "a"), _series_runs(30, 2.0, rng, "b")
    r = validate_groups(a, b, ["m"], bootstrap=50, seed=seed)[0]
    assert r.interp.verdict == "different" and r.interp.diff is None


def test_null_p_hat_is_the_published_formula_on_permuted_labels():
    """The pooled matrix rebuilt from the three distance sets gives back the published p̂_max
    on the observed split; identical groups give a null p̂_max near 0.05."""
    rng = np.random.default_rng(3)
    a, b = _series_runs(12, 0.0, rng, "a"), _series_runs(12, 0.0, rng, "b")
    r = validate_groups(a, b, ["m"], bootstrap=10, seed=1)[0]
    from l4slab.validation.interpret import _stats

    d = pooled_matrix(r.within_a, r.within_b, r.cross, 12, 12)
    p_hat, _ = _stats(d, np.arange(24)[None], 12)
    assert p_hat[0] == pytest.approx(r.p_hat)
    # ~5 % of cross distances exceed a 95th percentile when nothing differs.
    assert 0.02 < r.interp.null_p_hat_median < 0.09
    assert r.interp.null_p_hat_p95 >= r.interp.null_p_hat_median


def test_too_few_runs_is_said_so():
    rng = np.random.default_rng(0)
    a, b = _scalar_runs(3, 0.0, rng, "a"), _scalar_runs(3, 5.0, rng, "b")
    r = validate_groups(a, b, ["mean:m"], bootstrap=10)[0]
    # C(6, 3) = 20 splits, each with its mirror: p >= 2/20 = 0.1.
    assert r.interp.perm_min_p == pytest.approx(0.1)
    assert r.interp.verdict.startswith("too few runs") and "≥ 4 per group" in r.interp.verdict


def _csv_group(d: Path, n: int, seed: int) -> Path:
    d.mkdir()
    rng = np.random.default_rng(seed)
    t = np.arange(40) * 0.1
    for i in range(n):
        pd.DataFrame({"t_s": t, "tput": 10 + rng.normal() + 0.2 * rng.normal(size=40),
                      "sojourn": 1 + 0.1 * rng.normal(size=40)}).to_csv(d / f"r{i}.csv",
                                                                        index=False)
    return d


def test_validate_a_group_against_itself_is_indistinguishable(tmp_path):
    """`validate G G` (n = 5) used to print "similar: no" on every metric and nothing else."""
    g = _csv_group(tmp_path / "g", 5, 1)
    out = tmp_path / "out"
    res = CliRunner().invoke(validate_cmd, [str(g), str(g), "-o", str(out), "--bootstrap", "50"],
                             terminal_width=250)
    assert res.exit_code == 0, res.output
    table = pd.read_csv(out / "validation.csv")
    assert set(table["verdict"]) == {"indistinguishable at this n"}, table
    assert (table["perm_p"] > 0.5).all()  # cross distances (incl. zeros) are no larger
    assert "indistinguishable at this n" in res.output
    md = (out / "validation.md").read_text()
    assert "indistinguishable at this n" in md and "null p̂_max" in md

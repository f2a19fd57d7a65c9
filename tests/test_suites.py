"""Study suites in their quick form: every table is checked against the runs it came from."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from l4slab.cli import main


def _suite(out: Path, name: str, *extra: str) -> object:
    return CliRunner().invoke(main, ["suite", name, "--quick", "-o", str(out), "-j", "2",
                                     *extra])


def _quick_suite(factory: pytest.TempPathFactory, dirname: str, name: str) -> Path:
    """Run suite `name` in its quick form into a fresh directory; it must succeed."""
    out = factory.mktemp("suites") / dirname
    r = _suite(out, name)
    assert r.exit_code == 0, r.output
    return out


def _summaries(out: Path, part: str, run_dirs: list[str]) -> list[dict]:
    return [json.loads((out / "parts" / part / rd / "summary.json").read_text())
            for rd in run_dirs]


def _run_dirs(out: Path, part: str, **params: str) -> list[str]:
    idx = pd.read_parquet(out / "parts" / part / "sweep.parquet")
    for k, v in params.items():
        idx = idx[idx[k] == v]
    assert (idx["status"] == "ok").all()
    return list(idx["run_dir"])


@pytest.fixture(scope="module")
def bdp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _quick_suite(tmp_path_factory, "bdp", "bdp-regimes")


def test_bdp_results_cell_is_the_mean_of_its_runs(bdp: Path) -> None:
    res = pd.read_csv(bdp / "tables" / "results.csv")
    # 3 links x 3 traffic mixes x 2 link models x 2 step_thresh x 2 target, 3 runs each.
    assert len(res) == 72 and (res["n"] == 3).all()
    row = res[(res["link"] == "50 Mb/s 40 ms") & (res["traffic"] == "Prague+Cubic")
              & (res["link_model"] == "txop1ms") & (res["step_thresh"] == "5ms")
              & (res["target"] == "30ms")].iloc[0]
    dirs = _run_dirs(bdp, "50M40ms-mixed", **{"link.model": "txop1ms",
                                              "aqm.step_thresh": "5ms", "aqm.target": "30ms"})
    sums = _summaries(bdp, "50M40ms-mixed", dirs)
    tput = [sum(f["tput_mbps"] for f in s["flows"]) for s in sums]
    assert row["tput_mbps"] == pytest.approx(np.mean(tput), rel=1e-12)
    drops = [sum(q["drops"] for q in s["queues"]) for s in sums]
    assert row["drops"] == pytest.approx(np.mean(drops), abs=1e-12)
    soj_c = [next(q for q in s["queues"] if q["name"] == "C")["sojourn_ms"]["mean"] for s in sums]
    assert row["sojourn_C_ms"] == pytest.approx(np.mean(soj_c), rel=1e-12)
    # Mean total backlog after the warm-up, straight from samples.parquet.
    occ = []
    for rd in dirs:
        s = pd.read_parquet(bdp / "parts" / "50M40ms-mixed" / rd / "samples.parquet")
        s = s[s["t_s"] >= 1.0]
        occ.append(s.groupby("t_s")["backlog_pkts"].sum().mean())
    assert row["backlog_pkts"] == pytest.approx(np.mean(occ), rel=1e-12)
    # 95 % Student-t interval of three runs: half width t(0.975, 2) * sd / sqrt(3).
    half = 4.302652729911275 * np.std(tput, ddof=1) / np.sqrt(3)
    assert row["tput_mbps_hi"] - row["tput_mbps"] == pytest.approx(half, rel=1e-9)


def _bins(run_dir: Path, bins: int = 25) -> dict[str, np.ndarray]:
    """The run's series after warm-up in equal bins, computed here with pandas.cut (intervals
    closed on the right, as a sample at t covers the interval ending at t)."""
    s = json.loads((run_dir / "summary.json").read_text())
    t0, t1 = s["warmup_s"], s["duration_s"]
    # Nudged by 1 ns so a sample ending exactly on an edge falls in the bin that ends there.
    edges = np.linspace(t0, t1, bins + 1) + 1e-9
    width = (t1 - t0) / bins
    f = pd.read_parquet(run_dir / "flows.parquet").groupby("t_s")["tput_mbps"].sum()
    q = pd.read_parquet(run_dir / "samples.parquet").groupby("t_s")[
        ["backlog_pkts", "marks"]].sum()
    fb = pd.cut(f.index, edges)
    qb = pd.cut(q.index, edges)
    return {"tput_mbps": f.groupby(fb, observed=False).mean().fillna(0).to_numpy(),
            "backlog_pkts": q["backlog_pkts"].groupby(qb, observed=False).mean()
            .fillna(0).to_numpy(),
            "marks": q["marks"].groupby(qb, observed=False).sum().to_numpy() / width}


def test_bdp_link_model_validation_matches_the_exceedance_test(bdp: Path) -> None:
    from l4slab import _core

    lm = pd.read_csv(bdp / "tables" / "link_models.csv")
    part = bdp / "parts" / "12M20ms-mixed"
    a = [_bins(part / d) for d in _run_dirs(bdp, "12M20ms-mixed", **{
        "link.model": "smooth", "aqm.step_thresh": "1ms", "aqm.target": "15ms"})]
    b = [_bins(part / d) for d in _run_dirs(bdp, "12M20ms-mixed", **{
        "link.model": "txop1ms", "aqm.step_thresh": "1ms", "aqm.target": "15ms"})]
    tput = {m: [sum(f["tput_mbps"] for f in s["flows"]) for s in _summaries(
        bdp, "12M20ms-mixed", _run_dirs(bdp, "12M20ms-mixed", **{
            "link.model": m, "aqm.step_thresh": "1ms", "aqm.target": "15ms"}))]
        for m in ("smooth", "txop1ms")}
    trow = lm[(lm["link"] == "12 Mb/s 20 ms") & (lm["traffic"] == "Prague+Cubic")
              & (lm["step_thresh"] == "1ms") & (lm["target"] == "15ms")
              & (lm["metric"] == "tput_mbps")].iloc[0]
    assert trow["smooth"] == pytest.approx(np.mean(tput["smooth"]))
    assert trow["txop1ms"] == pytest.approx(np.mean(tput["txop1ms"]))
    assert trow["difference"] == pytest.approx(np.mean(tput["txop1ms"]) - np.mean(tput["smooth"]))
    for metric in ("tput_mbps", "backlog_pkts", "marks"):
        row = lm[(lm["link"] == "12 Mb/s 20 ms") & (lm["traffic"] == "Prague+Cubic")
                 & (lm["step_thresh"] == "1ms") & (lm["target"] == "15ms")
                 & (lm["metric"] == metric)].iloc[0]
        xa = [r[metric] for r in a]
        xb = [r[metric] for r in b]
        # DESIGN.md: distances are DTW (L1 cost, normalised by path length) between the runs'
        # series; eps_max = max of the within-group 95th percentiles;
        # p = (#cross > eps + 1) / (n_cross + 1).
        d = _core.dtw_distance
        wa = [d(xa[i].tolist(), xa[j].tolist(), None) for i in range(3) for j in range(i + 1, 3)]
        wb = [d(xb[i].tolist(), xb[j].tolist(), None) for i in range(3) for j in range(i + 1, 3)]
        eps = max(np.percentile(wa, 95), np.percentile(wb, 95))
        cross = [d(x.tolist(), y.tolist(), None) for x in xa for y in xb]
        assert row["p_hat_max"] == pytest.approx((sum(c > eps for c in cross) + 1) / 10)
        assert row["ci_low"] <= row["ci_high"]
        # The verdict beside p̂_max: 3 runs a side give C(6, 3) = 20 splits, a split and its
        # mirror tie, so the exact permutation test's smallest p is 2/20 = 0.1 ≥ 0.05.
        assert row["perm_p"] >= 0.1
        assert row["verdict"].startswith("too few runs (n = 3/3")


def test_bdp_variants_compare_against_the_default(bdp: Path) -> None:
    v = pd.read_csv(bdp / "tables" / "variants.csv")
    # Three non-default (step, target) pairs per link, traffic and link model, four metrics.
    assert len(v) == 9 * 2 * 3 * 4
    assert not ((v["step_thresh"] == "1ms") & (v["target"] == "15ms")).any()
    res = pd.read_csv(bdp / "tables" / "results.csv")
    m = v.merge(res, on=["link", "traffic", "link_model", "step_thresh", "target"])
    sel = m[m["metric"] == "backlog_pkts"]
    assert np.allclose(sel["variant"], sel["backlog_pkts"])
    assert np.allclose(v["difference"], v["variant"] - v["default"])


def test_bdp_report_states_provenance_and_resumes(bdp: Path) -> None:
    md = (bdp / "report.md").read_text()
    meta = json.loads((bdp / "suite.json").read_text())
    prov = meta["provenance"]
    n_runs = len(list((bdp / "parts").glob("*/runs/*/summary.json")))
    assert prov["runs_finished"] == n_runs == 216
    assert f"{n_runs} finished of {n_runs} planned" in md
    assert "kernel profile" in md and "l4slab version" in md and "wall time" in md
    seeds = {int(s) for p in (bdp / "parts").glob("*/sweep.parquet")
             for s in pd.read_parquet(p, columns=["seed"])["seed"]}
    assert set(prov["seeds"]) == seeds and len(seeds) == 3
    html = (bdp / "report.html").read_text()
    assert html.count("data:image/png;base64") == len(list((bdp / "figures").glob("*.png")))
    # A rerun resumes: nothing runs again, the tables come out the same.
    before = (bdp / "tables" / "results.csv").read_text()
    r = _suite(bdp, "bdp-regimes")
    assert r.exit_code == 0, r.output
    assert "0 ran, 216 resumed" in r.output
    assert (bdp / "tables" / "results.csv").read_text() == before


def test_bdp_reference_difference_is_l4slab_minus_reference(bdp: Path, tmp_path: Path) -> None:
    res = pd.read_csv(bdp / "tables" / "results.csv")
    ref = res[["link", "traffic", "link_model", "step_thresh", "target", "tput_mbps"]].head(5)
    ref = ref.assign(tput_mbps=[10.0, 20.0, 30.0, 40.0, 50.0])
    extra = {"link": "9 Mb/s 9 ms", "traffic": "Prague", "link_model": "smooth",
             "step_thresh": "1ms", "target": "15ms", "tput_mbps": 1.0}
    ref = pd.concat([ref, pd.DataFrame([extra])], ignore_index=True)
    ref.to_csv(tmp_path / "ref.csv", index=False)
    r = _suite(bdp, "bdp-regimes", "--reference", str(tmp_path / "ref.csv"))
    assert r.exit_code == 0, r.output
    cmp = pd.read_csv(bdp / "reference.csv")
    assert list(cmp["table"].unique()) == ["results"] and len(cmp) == 6
    m = cmp.merge(res, on=["link", "traffic", "link_model", "step_thresh", "target"],
                  how="left", suffixes=("", "_res"))
    assert np.allclose(m["l4slab"].iloc[:5], m["tput_mbps"].iloc[:5])
    assert np.allclose(cmp["difference"].iloc[:5],
                       cmp["l4slab"].iloc[:5] - np.array([10.0, 20.0, 30.0, 40.0, 50.0]))
    # A reference row l4slab did not run stays, with no l4slab value.
    assert np.isnan(cmp["l4slab"].iloc[5]) and cmp["reference"].iloc[5] == 1.0
    assert "l4slab beside the reference" in (bdp / "report.md").read_text()


def test_bad_reference_names_the_tables(bdp: Path, tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text("foo,bar\n1,2\n")
    r = _suite(bdp, "bdp-regimes", "--reference", str(tmp_path / "bad.csv"))
    assert r.exit_code == 2
    assert "match no result table" in r.output and "results: keys link" in r.output


def test_results_are_never_overwritten(bdp: Path, tmp_path: Path) -> None:
    # The full size into a quick directory is refused before anything runs.
    r = CliRunner().invoke(main, ["suite", "bdp-regimes", "-o", str(bdp)])
    assert r.exit_code == 2 and "quick results of suite 'bdp-regimes'" in r.output
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    r = _suite(tmp_path / "other", "bdp-regimes")
    assert r.exit_code == 2 and "not empty" in r.output
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_unknown_suite_and_emulate_fail_clearly(tmp_path: Path) -> None:
    r = _suite(tmp_path / "x", "no-such-suite")
    assert r.exit_code == 2 and "expected one of bdp-regimes" in r.output
    from l4slab.suites.cli import emulator_entry_point

    r = _suite(tmp_path / "y", "bdp-regimes", "--emulate")
    assert r.exit_code == 2
    if emulator_entry_point() is None:
        assert "no working emulator" in r.output
    else:  # bdp-regimes is a suite the emulator cannot run faithfully (test_emulate_suites)
        assert "--emulate: suite bdp-regimes:" in r.output
    assert not (tmp_path / "y").exists()


@pytest.fixture(scope="module")
def pvc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _quick_suite(tmp_path_factory, "pvc", "prague-vs-cubic")


def test_pvc_tables_are_means_of_their_runs(pvc: Path) -> None:
    flows = pd.read_csv(pvc / "tables" / "flows.csv")
    queues = pd.read_csv(pvc / "tables" / "queues.csv")
    link = pd.read_csv(pvc / "tables" / "link.csv")
    dirs = _run_dirs(pvc, "10M30ms")
    sums = _summaries(pvc, "10M30ms", dirs)
    assert len(sums) == 4
    row = flows[(flows["link"] == "10 Mb/s 30 ms") & (flows["flow"] == "1 cubic")].iloc[0]
    assert row["tput_mbps"] == pytest.approx(np.mean([s["flows"][1]["tput_mbps"] for s in sums]))
    assert row["srtt_ms"] == pytest.approx(np.mean([s["flows"][1]["srtt_ms"] for s in sums]))
    cwnd = []
    for rd in dirs:
        f = pd.read_parquet(pvc / "parts" / "10M30ms" / rd / "flows.parquet")
        cwnd.append(f[(f["flow"] == 1) & (f["t_s"] >= 2.0)]["cwnd_pkts"].mean())
    assert row["cwnd_pkts"] == pytest.approx(np.mean(cwnd))
    q = queues[(queues["link"] == "10 Mb/s 30 ms") & (queues["queue"] == "L")].iloc[0]
    assert q["marks"] == pytest.approx(np.mean([s["queues"][0]["marks"] for s in sums]))
    lk = link[link["link"] == "10 Mb/s 30 ms"].iloc[0]
    assert lk["jain"] == pytest.approx(np.mean([s["jain"] for s in sums]))
    # Coupling (RFC 9332 / sch_dualpi2): p_CL = k p' with k = 2 while p' stays below 1/k.
    assert lk["p_prime"] > 0 and lk["p_cl"] == pytest.approx(2 * lk["p_prime"], rel=1e-9)


def test_quick_report_says_what_ran_not_the_full_size(pvc: Path) -> None:
    """The description states the full study (60 s, 30 seeds); the quick form ran 10 s runs
    with 2 s warm-up and 4 seeds, and the report says so, from the runs' own summaries."""
    md = (pvc / "report.md").read_text()
    assert "60 s (5 s warm-up), 30 seeds" in md  # the description, unchanged
    assert ("This is the quick form (--quick): runs of 10 s (2 s warm-up), 4 seeds per grid "
            "point") in md
    assert "**what ran**: runs of 10 s (2 s warm-up), 4 seeds per grid point" in md
    assert "**kernel profile (aqm.profile)**: mainline" in md
    html = (pvc / "report.html").read_text()
    assert "This is the quick form" in html


def test_pvc_time_series_band_is_the_mean_over_seeds(pvc: Path) -> None:
    band = pd.read_csv(pvc / "figures" / "10_Mb_s_30_ms_tput_mbps.csv", index_col="t_s")
    dirs = _run_dirs(pvc, "10M30ms")
    per_run = []
    for rd in dirs:
        f = pd.read_parquet(pvc / "parts" / "10M30ms" / rd / "flows.parquet")
        f = f[f["flow"] == 0]
        per_run.append(f[(f["t_s"] >= 5.0) & (f["t_s"] < 5.1 - 1e-9)]["tput_mbps"].mean())
    t = band.index[np.argmin(np.abs(band.index - 5.0))]
    assert band.loc[t, "prague mean"] == pytest.approx(np.mean(per_run))
    half = 3.182446305284263 * np.std(per_run, ddof=1) / 2.0  # t(0.975, 3) sd / sqrt(4)
    assert band.loc[t, "prague hi"] - band.loc[t, "prague mean"] == pytest.approx(half)


# --- robustness ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rob(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _quick_suite(tmp_path_factory, "rob", "robustness")


def test_adaptation_time_closed_form() -> None:
    from l4slab.suites.robustness import adaptation_time

    t = np.round(np.arange(0, 20, 0.1), 1)
    # 10 -> 40 Mb/s at 10 s: 9.5 Mb/s before (utilisation 0.95), then 9.5 + 3 (k + 1) Mb/s in
    # bin k after the change, capped at 40; the bar is 0.9 x 0.95 x 40 = 34.2 Mb/s, first met
    # in bin k = 8 (36.5 Mb/s), i.e. 0.8 s after the change, and held from there on.
    tput = np.where(t < 10, 9.5, np.minimum(40.0, 9.5 + 3.0 * (t - 10 + 0.1) / 0.1))
    soj = np.full_like(t, 2.0)
    assert adaptation_time(t, tput, soj, 10.0, 10.0, 40.0) == pytest.approx(0.8)
    # A sojourn excursion above the pre-change p95 + 1 ms until 13 s delays it to 3 s.
    soj2 = np.where((t >= 10) & (t < 13), 5.0, 2.0)
    assert adaptation_time(t, tput, soj2, 10.0, 10.0, 40.0) == pytest.approx(3.0)
    # Never reaching the bar, or no change at all: NaN.
    assert np.isnan(adaptation_time(t, np.where(t < 10, 9.5, 20.0), soj, 10.0, 10.0, 40.0))
    assert np.isnan(adaptation_time(t, tput, soj, 10.0, 40.0, 40.0))


def test_robustness_tables_are_means_of_their_runs(rob: Path) -> None:
    res = pd.read_csv(rob / "tables" / "results.csv")
    row = res[(res["traffic"] == "Prague+Cubic") & (res["condition"] == "loss 5 %")].iloc[0]
    dirs = _run_dirs(rob, "prague_cubic-loss", **{"link.loss": 0.05})
    sums = _summaries(rob, "prague_cubic-loss", dirs)
    assert row["n"] == len(sums) == 2
    assert row["tput_total_mbps"] == pytest.approx(
        np.mean([sum(f["tput_mbps"] for f in s["flows"]) for s in sums]))
    assert row["tput_Classic_mbps"] == pytest.approx(np.mean([s["flows"][1]["tput_mbps"]
                                                              for s in sums]))
    p5 = []
    for rd in dirs:
        sm = pd.read_parquet(rob / "parts" / "prague_cubic-loss" / rd / "samples.parquet")
        sm = sm[(sm["t_s"] >= 2.0) & (sm["queue"] == "C") & (sm["backlog_pkts"] > 0)]
        p5.append(np.percentile(sm["sojourn_ms"], 5))
    assert row["delay_C_p5_ms"] == pytest.approx(np.mean(p5))
    # Cubic alone never fills the L queue: no delay to rank there, NaN rather than 0.
    cub = res[(res["traffic"] == "Cubic") & (res["condition"] == "loss 0 %")].iloc[0]
    assert np.isnan(cub["delay_L_p5_ms"]) and cub["delay_C_p5_ms"] > 0
    assert set(res["condition"]) == {"loss 0 %", "loss 1 %", "loss 5 %", "loss 10 %",
                                     "jitter 2ms", "jitter 10ms", "constant 10 Mb/s",
                                     "constant 40 Mb/s", "up 10→40 Mb/s", "down 40→10 Mb/s"}
    fair = pd.read_csv(rob / "tables" / "fairness.csv")
    assert set(fair["traffic"]) == {"Prague+Cubic", "Prague+BBRv3(L4S)"}
    j = fair[(fair["traffic"] == "Prague+Cubic") & (fair["condition"] == "loss 5 %")].iloc[0]
    assert j["jain"] == pytest.approx(np.mean([s["jain"] for s in sums]))
    ad = pd.read_csv(rob / "tables" / "adaptation.csv")
    assert len(ad) == 8 and set(ad["condition"]) == {"up 10→40 Mb/s", "down 40→10 Mb/s"}
    rm = pd.read_parquet(rob / "parts" / "cubic-steps" / "runmetrics.parquet")
    idx = pd.read_parquet(rob / "parts" / "cubic-steps" / "sweep.parquet").merge(rm, on="run")
    up = idx[(idx["link.rate"] == "10mbit") & (idx["link.steps.0.rate"] == "40mbit")]
    a = ad[(ad["traffic"] == "Cubic") & (ad["condition"] == "up 10→40 Mb/s")].iloc[0]
    assert a["adaptation_s"] == pytest.approx(up["adaptation_s"].mean())


# --- coexistence --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def coex(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _quick_suite(tmp_path_factory, "coex", "coexistence")


def test_coexistence_matrix_and_harm(coex: Path) -> None:
    t = pd.read_csv(coex / "tables" / "throughput.csv")
    # 6 AQMs x 2 buffers x 2 Classic counts x 2 L4S senders x 2 Classic senders.
    assert len(t) == 96
    row = t[(t["aqm"] == "DualPI2") & (t["buffer_bdp"] == 1.0) & (t["classic_flows"] == 4)
            & (t["l4s_cc"] == "prague") & (t["classic_cc"] == "cubic")].iloc[0]
    dirs = _run_dirs(coex, "dualpi2", **{"aqm.limit": 167, "flows.1.count": 4,
                                         "flows.0.cc": "prague", "flows.1.cc": "cubic"})
    (s,) = _summaries(coex, "dualpi2", dirs)
    assert len(s["flows"]) == 5 and s["flows"][0]["class"] == "L4S"
    l4s = s["flows"][0]["tput_mbps"]
    classic = [f["tput_mbps"] for f in s["flows"][1:]]
    assert row["l4s_mbps"] == pytest.approx(l4s)
    assert row["classic_mbps"] == pytest.approx(np.mean(classic))
    share = (l4s + sum(classic)) / 5
    sh = pd.read_csv(coex / "tables" / "share.csv")
    srow = sh[(sh["aqm"] == "DualPI2") & (sh["buffer_bdp"] == 1.0) & (sh["classic_flows"] == 4)
              & (sh["l4s_cc"] == "prague") & (sh["classic_cc"] == "cubic")].iloc[0]
    assert srow["short_l4s"] == pytest.approx(max(0.0, 1 - l4s / share))
    assert srow["short_classic"] == pytest.approx(max(0.0, 1 - np.mean(classic) / share))
    # Harm against solo runs (Ware et al.): Prague alone, and the 4 Cubic flows alone, at the
    # same AQM and buffer, same seed.
    harm = pd.read_csv(coex / "tables" / "harm.csv")
    hrow = harm[(harm["aqm"] == "DualPI2") & (harm["buffer_bdp"] == 1.0)
                & (harm["classic_flows"] == 4) & (harm["l4s_cc"] == "prague")
                & (harm["classic_cc"] == "cubic")].iloc[0]
    (p_alone,) = _summaries(coex, "solo-dualpi2",
                            _run_dirs(coex, "solo-dualpi2", **{"aqm.limit": 167,
                                                                "flows": "prague"}))
    (c_alone,) = _summaries(coex, "solo-dualpi2",
                            _run_dirs(coex, "solo-dualpi2", **{"aqm.limit": 167,
                                                                "flows": "4×cubic"}))
    assert [f["cc"] for f in p_alone["flows"]] == ["prague"]
    assert [f["cc"] for f in c_alone["flows"]] == ["cubic"] * 4
    solo_c = np.mean([f["tput_mbps"] for f in c_alone["flows"]])
    assert hrow["harm_to_l4s"] == pytest.approx(
        max(0.0, 1 - l4s / p_alone["flows"][0]["tput_mbps"]))
    assert hrow["harm_to_classic"] == pytest.approx(max(0.0, 1 - np.mean(classic) / solo_c))
    md = (coex / "report.md").read_text()
    assert "Ware et al." in md
    assert f"{l4s:.1f} ({np.mean(classic):.1f})" in md


def test_coexistence_tables_each_hold_their_own_columns(coex: Path) -> None:
    """harm.csv, share.csv and throughput.csv were byte-identical (each table got the whole
    aggregate frame)."""
    keys = ["aqm", "buffer_bdp", "classic_flows", "l4s_cc", "classic_cc"]
    want = {"throughput": ["l4s_mbps", "classic_mbps", "jain", "utilisation"],
            "harm": ["harm_to_l4s", "harm_to_classic"],
            "share": ["short_l4s", "short_classic"]}
    texts = set()
    for name, values in want.items():
        text = (coex / "tables" / f"{name}.csv").read_text()
        texts.add(text)
        cols = list(pd.read_csv(coex / "tables" / f"{name}.csv").columns)
        assert cols == keys + [c for v in values for c in (v, f"{v}_lo", f"{v}_hi")] + ["n"]
    assert len(texts) == 3
    # The profile is that of the DualPI2 runs; the other AQMs have none.
    md = (coex / "report.md").read_text()
    prov = json.loads((coex / "suite.json").read_text())["provenance"]
    assert "mainline" in prov["kernel_profile"] and "no aqm.profile" not in md
    assert prov["ran"] == [{"duration_s": 8.0, "warmup_s": 2.0, "seeds_per_point": 1}]


# --- cellular -----------------------------------------------------------------------------------

def test_trace_txops_closed_form(tmp_path: Path) -> None:
    from l4slab.suites.cellular import trace_txops

    (tmp_path / "t.down").write_text("1\n1\n1\n3\n3\n7\n")
    gaps, counts = trace_txops(tmp_path / "t.down")
    assert gaps.tolist() == [2.0, 4.0] and counts.tolist() == [3.0, 2.0, 1.0]


@pytest.fixture(scope="module")
def cell(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _quick_suite(tmp_path_factory, "cell", "cellular")


def test_cellular_tables_are_means_of_their_runs(cell: Path) -> None:
    from l4slab.suites.cellular import trace_txops

    res = pd.read_csv(cell / "tables" / "results.csv")
    ql = pd.read_csv(cell / "tables" / "queue_length.csv")
    idx = pd.read_parquet(cell / "parts" / "rtt20ms" / "sweep.parquet")
    sel = idx[idx["link.trace"].str.endswith("Verizon-LTE-short-30s.down")
              & (idx["aqm.step_thresh"] == "9ms")]
    sums = _summaries(cell, "rtt20ms", list(sel["run_dir"]))
    row = res[(res["trace"] == "Verizon-LTE-short-30s.down") & (res["rtt"] == "20 ms")
              & (res["step_thresh"] == "9ms")].iloc[0]
    assert row["unused_txops"] == pytest.approx(np.mean([s["link"]["unused_txops"]
                                                         for s in sums]))
    assert row["tput_L4S_mbps"] == pytest.approx(np.mean([s["flows"][0]["tput_mbps"]
                                                          for s in sums]))
    p95 = []
    for rd in sel["run_dir"]:
        sm = pd.read_parquet(cell / "parts" / "rtt20ms" / rd / "samples.parquet")
        p95.append(np.percentile(sm[(sm["t_s"] >= 2.0) & (sm["queue"] == "C")]["backlog_pkts"],
                                 95))
    q = ql[(ql["trace"] == "Verizon-LTE-short-30s.down") & (ql["rtt"] == "20 ms")
           & (ql["step_thresh"] == "9ms")].iloc[0]
    assert q["backlog_C_p95"] == pytest.approx(np.mean(p95))
    tr = pd.read_csv(cell / "tables" / "traces.csv").set_index("trace")
    gaps, counts = trace_txops(sel["link.trace"].iloc[0])
    vz = "Verizon-LTE-short-30s.down"
    assert tr.loc[vz, "txops"] == counts.size
    assert tr.loc[vz, "pkts_per_txop_mean"] == pytest.approx(counts.mean())
    assert tr.loc[vz, "inter_txop_p95_ms"] == pytest.approx(
        np.percentile(gaps, 95))


def test_cellular_missing_traces_name_the_setting(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("L4SLAB_TRACES", str(tmp_path))
    r = _suite(tmp_path / "out", "cellular")
    assert r.exit_code == 2
    assert "TMobile-LTE-short-30s.down not found in L4SLAB_TRACES=" in r.output


def test_refused_input_leaves_no_directory(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("L4SLAB_TRACES", str(tmp_path / "nowhere"))
    r = _suite(tmp_path / "out", "cellular")
    assert r.exit_code == 2 and not (tmp_path / "out").exists()


def test_pvc_on_dask_gives_the_same_tables(pvc: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        r = CliRunner().invoke(main, ["suite", "prague-vs-cubic", "--quick", "-o",
                                      str(tmp_path / "d"), "--dask",
                                      cluster.scheduler_address])
    assert r.exit_code == 0, r.output
    for name in ("flows", "queues", "link"):
        pd.testing.assert_frame_equal(pd.read_csv(pvc / "tables" / f"{name}.csv"),
                                      pd.read_csv(tmp_path / "d" / "tables" / f"{name}.csv"))


def test_ci_is_cut_to_the_metric_domain():
    """A starved flow in 4 of 5 seeds: the Student-t interval of the mean reaches below 0 Mb/s,
    which no throughput can; the reported CI is cut at 0 and keeps its upper t bound. Jain's
    index is cut at 1, and a caller's own domain (harm in [0, 1]) is honoured."""
    from scipy import stats

    from l4slab.suites.core import UNIT, aggregate
    from l4slab.suites.figures import band_stats

    x = np.array([0.0, 0.0, 0.0, 0.0, 10.0])
    half = stats.t.ppf(0.975, 4) * x.std(ddof=1) / np.sqrt(5)
    assert x.mean() - half < 0  # the uncut interval is impossible
    runs = pd.DataFrame({"k": "a", "tput": x, "jain": [1.0, 1.0, 1.0, 1.0, 0.6],
                         "harm": [0.0, 0.0, 0.0, 0.0, 0.9]})
    r = aggregate(runs, ["k"], {"tput_mbps": "tput", "jain": "jain", "harm": "harm"},
                  domains={"harm": UNIT}).iloc[0]
    assert r["tput_mbps"] == pytest.approx(2.0)
    assert r["tput_mbps_lo"] == 0.0 and r["tput_mbps_hi"] == pytest.approx(2.0 + half)
    jh = stats.t.ppf(0.975, 4) * np.std([1, 1, 1, 1, 0.6], ddof=1) / np.sqrt(5)
    assert r["jain_hi"] == 1.0 and r["jain_lo"] == pytest.approx(0.92 - jh)
    assert r["harm_lo"] == 0.0 and r["harm_hi"] <= 1.0
    bands = band_stats([pd.Series([v], index=[0.0]) for v in x])
    assert bands["lo"].iloc[0] == 0.0 and bands["hi"].iloc[0] == pytest.approx(2.0 + half)


@pytest.mark.parametrize("csv, needle", [
    ("foo,bar\n1,2\n", "match no result table"),
    ("link,flow,tput_mbps,goodput\n10 Mb/s 30 ms,0 prague,5.0,1\n",
     "column 'goodput' is neither a key nor a metric of table flows"),
    ("link,flow,tput_mbps\n10 Mb/s 30 ms,0 prague,fast\n",
     "column tput_mbps is not numeric (row 2: 'fast')"),
])
def test_bad_reference_is_refused_before_anything_runs(tmp_path: Path, csv: str,
                                                       needle: str) -> None:
    """A bad --reference used to be reported only after the whole suite had run."""
    (tmp_path / "ref.csv").write_text(csv)
    out = tmp_path / "pvc"
    r = _suite(out, "prague-vs-cubic", "--reference", str(tmp_path / "ref.csv"))
    assert r.exit_code == 2 and needle in r.output, r.output
    assert not (out / "parts").exists()


def test_declared_table_shapes_are_the_tables_written(bdp: Path, pvc: Path, coex: Path,
                                                     rob: Path, cell: Path) -> None:
    """The shapes a --reference is checked against early are the tables analyse() writes."""
    from l4slab.suites import get_suite

    for out, name in ((bdp, "bdp-regimes"), (pvc, "prague-vs-cubic"), (coex, "coexistence"),
                      (rob, "robustness"), (cell, "cellular")):
        for shape in get_suite(name).tables:
            cols = list(pd.read_csv(out / "tables" / f"{shape.name}.csv", nrows=1).columns)
            assert set(shape.keys) | set(shape.values) <= set(cols), (name, shape.name, cols)
@pytest.fixture(scope="module")
def inter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _quick_suite(tmp_path_factory, "inter", "interactive")


def test_interactive_tables_are_means_of_their_runs(inter: Path) -> None:
    from l4slab.suites.interactive import aqm_label

    assert aqm_label("{kind=fifo, limit=333}") == "fifo 333"
    assert aqm_label({"kind": "dualpi2"}) == "dualpi2"
    assert aqm_label({"kind": "fq_codel", "ce_threshold": "1ms",
                      "ce_threshold_ect1_only": "true"}) == "fq_codel ce 1ms"
    res = pd.read_csv(inter / "tables" / "results.csv")
    idx = pd.read_parquet(inter / "parts" / "web_50mbit" / "sweep.parquet")
    sel = idx[(idx["flows.0.cc"] == "rt-prague") & (idx["aqm.kind"] == "dualpi2")]
    sums = _summaries(inter, "web_50mbit", list(sel["run_dir"]))
    row = res[(res["link"] == "50mbit") & (res["traffic"] == "50 % web")
              & (res["aqm_q"] == "dualpi2") & (res["video"] == "L4S video (RT-Prague)")].iloc[0]
    fr = [s["flows"][0]["frames"] for s in sums]
    assert row["video_lat_p99_ms"] == pytest.approx(np.mean([f["latency_ms"]["p99"] for f in fr]))
    assert row["video_mbps"] == pytest.approx(np.mean([f["bitrate_mbps"] for f in fr]))
    assert row["fct_slowdown_p99"] == pytest.approx(
        np.mean([s["workloads"][0]["slowdown"]["p99"] for s in sums]))
    assert row["rpm_L4S"] == pytest.approx(np.mean([s["rpm"]["L4S"] for s in sums]))
    # The per-run tables behind the figures are in the run directories.
    rd = inter / "parts" / "web_50mbit" / sel["run_dir"].iloc[0]
    frames = pd.read_parquet(rd / "frames.parquet")
    fct = pd.read_parquet(rd / "fct.parquet")
    assert len(frames) > 0 and (fct["slowdown"].dropna() >= 1.0).all()
    # The 1 and 4 BDP FIFOs are rows of their own (labels from the effective aqm.* columns).
    assert {"fifo 333", "dualpi2"} <= set(res["aqm_q"]), set(res["aqm_q"])
    assert (inter / "figures" / "slowdown_50mbit.png").exists()
    assert (inter / "figures" / "frame_cdf_50mbit_L4S_RT_Prague.png").exists()
    assert (inter / "figures" / "frame_cdf_50mbit_L4S_SCReAMv2.png").exists()
    # Stalls: gaps > 200 ms between consecutive completions of the video's frames captured
    # after warm-up (one replication: the row is that run's count).
    v = frames[(frames["flow"] == 0) & (frames["capture_s"] >= float(sel["warmup_s"].iloc[0]))]
    done = np.sort((v["capture_s"] + v["latency_ms"] / 1e3).dropna().to_numpy())
    assert len(sel) == 1 and len(done) > 1
    assert row["video_stalls"] == float(np.sum(np.diff(done) > 0.2))
    assert row["video_lat_p50_ms"] == pytest.approx(
        np.mean([f["latency_ms"]["p50"] for f in fr]))

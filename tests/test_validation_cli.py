"""Validation inputs and the `validate` command end to end, on synthetic run directories
(parquet written here with pandas/pyarrow), CSV traces and a hand-written Mahimahi log."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from l4slab.validation import compare_runs, load_group, mahimahi_to_frame, read_run
from l4slab.validation.cli import mahimahi_import_cmd, validate_cmd
from l4slab.validation.io import ValidationInputError

T_S = np.arange(0, 2.0, 0.016)  # 125 samples of 16 ms


def write_run(path: Path, rng: np.random.Generator, tput_level: float, sojourn_ms: float):
    """A run directory with DESIGN.md's samples.parquet / flows.parquet columns: two flows
    (prague, cubic) and a DualPI2 with queues L and C."""
    path.mkdir(parents=True)
    rows = []
    for q, base in (("L", 0.5 * sojourn_ms), ("C", sojourn_ms)):
        soj = np.abs(base + rng.normal(scale=0.2 * sojourn_ms, size=T_S.size))
        for t, s in zip(T_S, soj, strict=True):
            rows.append(
                {
                    "t_s": t,
                    "queue": q,
                    "backlog_pkts": s * 4.0,
                    "backlog_bytes": s * 4.0 * 1500,
                    "sojourn_ms": s,
                    "marks": float(rng.poisson(2)),
                    "drops": 0.0,
                    "p_prime": 0.1,
                    "p_c": 0.01,
                    "p_cl": 0.2,
                }
            )
    pd.DataFrame(rows).to_parquet(path / "samples.parquet")
    rows = []
    for fid, cc in ((0, "prague"), (1, "cubic")):
        tput = tput_level + rng.normal(scale=1.0, size=T_S.size)
        delivered = np.cumsum(tput * 1e6 / 8 * 0.016)
        ce = np.cumsum(rng.poisson(3, size=T_S.size))
        for k, t in enumerate(T_S):
            rows.append(
                {
                    "t_s": t,
                    "flow": fid,
                    "cc": cc,
                    "delivered_bytes": delivered[k],
                    "tput_mbps": tput[k],
                    "cwnd_pkts": 40.0,
                    "srtt_ms": 42.0,
                    "pacing_mbps": 30.0,
                    "ce_acked": float(ce[k]),
                }
            )
    pd.DataFrame(rows).to_parquet(path / "flows.parquet")
    return path


def make_group(root: Path, runs: int, seed: int, tput_level=25.0, sojourn_ms=1.0) -> Path:
    rng = np.random.default_rng(seed)
    for i in range(runs):
        write_run(root / f"run{i:02d}", rng, tput_level, sojourn_ms)
    return root


def test_run_directory_metrics(tmp_path):
    run = read_run(write_run(tmp_path / "r", np.random.default_rng(0), 25.0, 1.0))
    assert set(run.metrics) == {
        "tput_total", "tput_flow0", "tput_flow1", "ce_flow0", "ce_flow1",
        "backlog_L", "backlog_C", "sojourn_L", "sojourn_C", "marks_L", "marks_C",
        "drops_L", "drops_C",
    }  # fmt: skip
    flows = pd.read_parquet(tmp_path / "r" / "flows.parquet")
    f0, f1 = flows[flows.flow == 0], flows[flows.flow == 1]
    np.testing.assert_array_equal(
        run.metrics["tput_total"], f0.tput_mbps.to_numpy() + f1.tput_mbps.to_numpy()
    )
    # ce_acked is cumulative: the metric is its first difference (one sample shorter).
    np.testing.assert_array_equal(run.metrics["ce_flow0"], np.diff(f0.ce_acked.to_numpy()))
    assert run.metrics["sojourn_L"].size == T_S.size


def test_csv_layout_and_cumulative_columns(tmp_path):
    p = tmp_path / "trace.csv"
    p.write_text("t_s,tput_total,delivered_bytes_cum\n0.0,1.5,100\n0.1,2.5,250\n0.2,3.5,450\n")
    run = read_run(p)
    assert run.metrics["tput_total"].tolist() == [1.5, 2.5, 3.5]
    # delivered_bytes_cum -> delivered_bytes, differenced: 250-100, 450-250.
    assert run.metrics["delivered_bytes"].tolist() == [150.0, 200.0]
    assert read_run(p, warmup_s=0.1).metrics["tput_total"].tolist() == [2.5, 3.5]
    bad = tmp_path / "bad.csv"
    bad.write_text("time,x\n0,1\n")
    with pytest.raises(ValidationInputError, match="no t_s column"):
        read_run(bad)


MM_LOG = """# mahimahi mm-link [downlink] > mm.log
# command line: mm-link trace trace --downlink-log=mm.log
# queue: infinite
# init timestamp: 1000
# base timestamp: 1000
1000 + 1500
1001 # 1504
1001 - 1500 1
1050 + 1500
1120 # 1504
1120 - 1500 70
1150 d 1 1500
1210 # 1504
"""


def test_mahimahi_log_conversion(tmp_path):
    log = tmp_path / "mm.log"
    log.write_text(MM_LOG)
    df = mahimahi_to_frame(log, interval_ms=100)
    # Bins of 100 ms from the base timestamp 1000: [0,100), [100,200), [200,300).
    # Mbit/s = bytes·8 / 0.1 s / 1e6: 1500 B -> 0.12, 1504 B -> 0.12032, 3000 B -> 0.24.
    assert df["t_s"].tolist() == [0.0, 0.1, 0.2]
    assert df["arrival_mbps"].tolist() == pytest.approx([0.24, 0.0, 0.0])
    assert df["capacity_mbps"].tolist() == pytest.approx([0.12032, 0.12032, 0.12032])
    assert df["tput_mbps"].tolist() == pytest.approx([0.12, 0.12, 0.0])
    # Queue delay: mean of departures in the bin (1 ms, 70 ms), carried over in an empty bin.
    assert df["qdelay_ms"].tolist() == [1.0, 70.0, 70.0]
    assert df["drops"].tolist() == [0.0, 1.0, 0.0]
    bad = tmp_path / "bad.log"
    bad.write_text("# base timestamp: 0\n5 ? 1500\n")
    with pytest.raises(ValidationInputError, match=r"bad.log:2: not a Mahimahi log line"):
        mahimahi_to_frame(bad)
    # The command writes the same table as CSV; bad logs exit with status 2.
    res = CliRunner().invoke(mahimahi_import_cmd, [str(log), "--interval-ms", "100"])
    assert res.exit_code == 0, res.output
    assert pd.read_csv(tmp_path / "mm.csv")["qdelay_ms"].tolist() == [1.0, 70.0, 70.0]
    res = CliRunner().invoke(mahimahi_import_cmd, [str(bad)])
    assert res.exit_code == 2 and "not a Mahimahi log line" in res.output


def test_validate_cli_end_to_end(tmp_path):
    # 5 runs per group: the fewest for which p_hat_max can go below 0.05 (1/26).
    a = make_group(tmp_path / "a", 5, seed=1)
    b = make_group(tmp_path / "b", 5, seed=2)
    c = make_group(tmp_path / "c", 5, seed=3, tput_level=40.0, sojourn_ms=8.0)
    out = tmp_path / "out"
    metrics = "tput_total,sojourn_C,mean:tput_flow0"
    res = CliRunner().invoke(
        validate_cmd,
        [str(a), str(c), "--metrics", metrics, "--bootstrap", "200", "--seed", "5", "-o", str(out)],
    )
    assert res.exit_code == 0, res.output
    for name in ("tput_total", "sojourn_C", "mean:tput_flow0", "ε_max", "p̂_max"):
        assert name in res.output
    table = pd.read_csv(out / "validation.csv")
    assert table["metric"].tolist() == ["tput_total", "sojourn_C", "mean:tput_flow0"]
    assert table["distance"].tolist() == ["dtw", "dtw", "scalar"]
    # 5 runs each: 25 cross pairs. Levels 25 vs 40 Mbit/s and 1 vs 8 ms apart: every cross
    # distance exceeds eps_max -> p_hat = 26/26 = 1, not similar.
    assert (table["n_cross"] == 25).all()
    assert (table["p_hat_max"] == 1.0).all()
    assert table["similar"].astype(str).tolist() == ["False"] * 3
    assert (out / "validation.md").read_text().startswith("# Validation")
    for slug in ("tput_total", "sojourn_C", "mean_tput_flow0"):
        png = out / f"hist_{slug}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Same configuration, a glob for group B: runs with one distribution.
    res = CliRunner().invoke(
        validate_cmd,
        [str(a), str(b / "run*"), "-m", "tput_total", "--bootstrap", "50", "-o", str(out),
         "--force"],
    )
    assert res.exit_code == 0, res.output
    same = pd.read_csv(out / "validation.csv").iloc[0]
    assert same["n_b"] == 5 and same["p_hat_max"] < 1.0


def _invoke_bad(args):
    res = CliRunner().invoke(validate_cmd, [str(x) for x in args])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    return res.output


def test_validate_cli_bad_input(tmp_path):
    a = make_group(tmp_path / "a", 3, seed=1)
    empty = tmp_path / "empty"
    empty.mkdir()
    out = ["-o", tmp_path / "o"]
    assert "empty group" in _invoke_bad([a, empty, *out])
    one = make_group(tmp_path / "one", 1, seed=2)
    msg = _invoke_bad([a, one, *out])
    assert "group B has 1 run" in msg and "at least 2" in msg
    # A group whose runs lack the C queue (a single-queue AQM): mismatched metrics.
    single = tmp_path / "single"
    for i in range(2):
        d = write_run(single / f"r{i}", np.random.default_rng(i), 25.0, 1.0)
        s = pd.read_parquet(d / "samples.parquet")
        s[s.queue == "L"].to_parquet(d / "samples.parquet")
    assert "mismatched metrics" in _invoke_bad([a, single, *out])
    assert "no metric 'sojourn_C'" in _invoke_bad([a, single, "-m", "sojourn_C", *out])
    # NaN in one run's trace.
    nan_group = tmp_path / "nan"
    nan_group.mkdir()
    (nan_group / "r1.csv").write_text("t_s,tput_total\n0,1\n1,2\n")
    (nan_group / "r2.csv").write_text("t_s,tput_total\n0,1\n1,\n")
    msg = _invoke_bad([nan_group, nan_group, *out])
    assert "r2.csv" in msg and "non-finite value nan" in msg
    assert "no such file" in _invoke_bad([tmp_path / "missing", a, *out])
    _invoke_bad([a, a, "--bootstrap", "1", *out])  # click's own range check, also status 2


def test_compare_runs_single_runs_and_groups(tmp_path):
    a = make_group(tmp_path / "a", 3, seed=1)
    b = make_group(tmp_path / "b", 3, seed=2)
    res = compare_runs(a / "run00", b / "run00", metrics=["tput_total"])
    assert len(res) == 1 and res[0].p_hat is None and res[0].n_cross == 1
    ra, rb = read_run(a / "run00"), read_run(b / "run00")
    from l4slab import _core

    expected = _core.dtw_distance(
        ra.metrics["tput_total"].tolist(), rb.metrics["tput_total"].tolist()
    )
    assert res[0].cross[0] == expected
    res = compare_runs(a, b, metrics=["sojourn_L"], bootstrap=100, out_dir=tmp_path / "cmp")
    assert res[0].p_hat is not None and (tmp_path / "cmp" / "validation.csv").is_file()
    assert len(load_group("A", a)) == 3


def test_validate_default_output_lies_beside_the_inputs_not_in_the_working_directory():
    from l4slab.validation.cli import default_out_dir

    assert default_out_dir("results/st/runs/p000-*", "results/st/runs/p001-*", None) == Path(
        "results/st/runs/validation-p000-__vs_p001-_")
    assert default_out_dir("res/sim/", "res/emu", None) == Path("res/validation-sim_vs_emu")
    assert default_out_dir("results/sweep", None, "aqm.step_thresh") == Path(
        "results/sweep-validation-by-aqm.step_thresh")


def test_validate_default_output_of_two_grid_points_sits_in_the_sweep_not_its_runs(tmp_path):
    from l4slab.validation.cli import default_out_dir

    (tmp_path / "sw" / "runs").mkdir(parents=True)
    (tmp_path / "sw" / "sweep.json").write_text("{}")
    runs = tmp_path / "sw" / "runs"
    assert default_out_dir(f"{runs}/p000-*", f"{runs}/p001-*", None) == (
        tmp_path / "sw" / "validation-p000-__vs_p001-_")



def test_validate_without_o_leaves_the_working_directory_alone(tmp_path, monkeypatch):
    """`l4slab validate A B` run from elsewhere writes validation-A_vs_B beside A and B and
    nothing into the directory it was started in (no ./validation/)."""
    a = make_group(tmp_path / "res" / "a", 2, seed=1)
    b = make_group(tmp_path / "res" / "b", 2, seed=2)
    cwd = tmp_path / "checkout"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    res = CliRunner().invoke(validate_cmd, [str(a), str(b), "-m", "tput_total",
                                            "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    assert list(cwd.iterdir()) == []
    assert (tmp_path / "res" / "validation-a_vs_b" / "validation.csv").is_file()

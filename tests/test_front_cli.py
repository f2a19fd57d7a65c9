"""The `l4slab` command line and Python API end to end on the real simulator (short
scenarios): run directories, summary, plot, bad-input messages, sweeps with resume and
failures, determinism."""

import json
import re

import pandas as pd
import pytest
from click.testing import CliRunner

import l4slab
from cli_helpers import SHORT_BASE, invoke
from l4slab.cli import main
from l4slab.scenario import dumps_toml

SHORT = SHORT_BASE  # the `scen` fixture (conftest.py) writes it


def assert_bad_input(res, *needles):
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    text = " ".join(res.output.split())  # rich may wrap long messages
    for n in needles:
        assert n in text, (n, res.output)


def test_version():
    res = invoke("--version")
    assert res.exit_code == 0 and l4slab.__version__ in res.output


def test_run_writes_run_directory_and_summary_and_plot(scen, tmp_path):
    out = tmp_path / "run"
    res = invoke("run", scen, "-o", out, "--set", "aqm.step_thresh=5ms", "--set", "seed=4")
    assert res.exit_code == 0, res.output
    for name in ("samples.parquet", "flows.parquet", "summary.json", "scenario.toml",
                 "report.html", "throughput.png", "sojourn.svg"):
        assert (out / name).stat().st_size > 0, name
    assert not (out / "packets.parquet").exists()  # opt-in
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seed"] == 4
    assert [f["cc"] for f in summary["flows"]] == ["prague", "cubic"]
    effective = (out / "scenario.toml").read_text()
    assert 'step_thresh = "5ms"' in effective and "seed = 4" in effective
    samples = pd.read_parquet(out / "samples.parquet")
    assert set(samples["queue"].astype(str)) == {"L", "C"}
    # t_s runs to the 2 s duration in sample_interval steps
    assert samples["t_s"].max() == pytest.approx(2.0, abs=0.02)

    res = invoke("summary", out)
    assert res.exit_code == 0 and "dualpi2" in res.output and "prague" in res.output

    for p in out.glob("*.png"):
        p.unlink()
    res = invoke("plot", out)
    assert res.exit_code == 0, res.output
    assert (out / "throughput.png").stat().st_size > 5000


def test_packets_are_opt_in(scen, tmp_path):
    out = tmp_path / "run"
    res = invoke("run", scen, "-o", out, "--packets", "--no-figures")
    assert res.exit_code == 0, res.output
    pk = pd.read_parquet(out / "packets.parquet")
    assert len(pk) > 1000 and set(pk["verdict"].astype(str)) <= {"pass", "mark", "drop"}
    assert not (out / "throughput.png").exists()


@pytest.mark.parametrize(
    ("override", "needles"),
    [
        ("aqm.bogus=1", ["aqm.bogus"]),  # unknown key
        ("flows.0.rtt=20xs", ["flows", "rtt"]),  # bad unit
        ("aqm.step_thresh", ["expected key=value"]),  # bad --set syntax
        ("flows.7.cc=reno", ["flows.7.cc", "out of range"]),
    ],
)
def test_bad_input_is_one_message_and_exit_2(scen, tmp_path, override, needles):
    res = invoke("run", scen, "-o", tmp_path / "x", "--set", override)
    assert_bad_input(res, *needles)


def test_missing_trace_file_names_the_field_and_the_file(tmp_path):
    scen = tmp_path / "trace.toml"
    data = {**SHORT, "link": {"trace": "traces/missing.down"}}
    scen.write_text(dumps_toml(data))
    assert_bad_input(invoke("run", scen, "-o", tmp_path / "x"), "link.trace",
                     "traces/missing.down")
    # sweeps check every grid point before running anything
    sw = tmp_path / "sw.toml"
    sw.write_text('base = "trace.toml"\n[grid]\n"aqm.step_thresh" = ["1ms"]\n')
    assert_bad_input(invoke("sweep", sw, "-o", tmp_path / "o"), "link.trace", "missing.down")


def test_missing_scenario_file(tmp_path):
    assert_bad_input(invoke("run", tmp_path / "nope.toml"), "scenario file not found")


def test_empty_sweep_grid_is_bad_input(scen, tmp_path):
    sw = tmp_path / "sw.toml"
    sw.write_text(f'base = "{scen.name}"\n[grid]\n"aqm.step_thresh" = []\n')
    assert_bad_input(invoke("sweep", sw, "-o", tmp_path / "o"), "aqm.step_thresh",
                     "empty list")


def test_bad_grid_value_is_caught_before_any_run(scen, tmp_path):
    sw = tmp_path / "sw.toml"
    sw.write_text(f'base = "{scen.name}"\n[grid]\n"aqm.step_thresh" = ["1ms", "5parsecs"]\n')
    res = invoke("sweep", sw, "-o", tmp_path / "o")
    assert_bad_input(res, "grid point 5parsecs: aqm.step_thresh")
    assert not list((tmp_path / "o" / "runs").glob("*/summary.json"))


def _sweep_file(scen, tmp_path, reps=2):
    sw = tmp_path / "sw.toml"
    sw.write_text(f'base = "{scen.name}"\nreplications = {reps}\nseed = 11\n'
                  '[grid]\n"aqm.step_thresh" = ["1ms", "10ms"]\n[set]\nduration = "1s"\n'
                  'warmup = "0.2s"\n')
    return sw


def test_sweep_then_resume_reruns_only_the_unfinished_run(scen, tmp_path):
    sw = _sweep_file(scen, tmp_path)
    out = tmp_path / "o"
    res = invoke("sweep", sw, "-o", out, "-j", "1")
    assert res.exit_code == 0, res.output
    idx = pd.read_parquet(out / "sweep.parquet")
    assert len(idx) == 4 and (idx["status"] == "ok").all()
    assert idx["seed"].tolist() == [l4slab.derive_seed(11, r) for r in (0, 1, 0, 1)]
    assert {"aqm.step_thresh", "run_dir", "jain", "queues.L.sojourn_ms.p99"} <= set(idx)
    assert (out / "report.html").exists() and (out / "sweep_aqm_step_thresh.png").exists()
    mtimes = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("runs/*/summary.json")}
    assert len(mtimes) == 4
    before = json.loads((out / "runs" / "p001-r00" / "summary.json").read_text())

    (out / "runs" / "p001-r00" / "summary.json").unlink()  # as if interrupted mid-run
    res = invoke("sweep", sw, "-o", out, "-j", "1")
    assert res.exit_code == 0, res.output
    assert "1 ran, 3 resumed" in res.output
    after = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("runs/*/summary.json")}
    assert {k for k in after if after[k] != mtimes[k]} == {"p001-r00"}
    # deterministic: the rerun reproduces the lost run exactly
    assert json.loads((out / "runs" / "p001-r00" / "summary.json").read_text()) == before
    idx = pd.read_parquet(out / "sweep.parquet")
    assert idx["resumed"].tolist() == [True, True, False, True]

    # a changed base scenario is a different sweep: refused without --force (its runs would
    # be replaced), and with it nothing is reused
    res = invoke("sweep", sw, "-o", out, "-j", "1", "--set", "link.rate=8mbit")
    assert_bad_input(res, "holds a different sweep", "--force")
    res = invoke("sweep", sw, "-o", out, "-j", "1", "--set", "link.rate=8mbit", "--force")
    assert res.exit_code == 0 and "4 ran, 0 resumed" in res.output, res.output
    assert json.loads((out / "sweep.json").read_text())["set"]["link.rate"] == "8mbit"
    res = invoke("sweep", sw, "-o", out, "--set", "aqm.step_thresh=2ms")
    assert_bad_input(res, "aqm.step_thresh", "swept by the grid")


def test_failed_runs_exit_1_are_listed_and_the_rest_kept(scen, tmp_path, monkeypatch):
    import l4slab.runner

    real = l4slab.runner.simulate
    bad_seed = l4slab.derive_seed(11, 1)

    def flaky(data, base_dir):
        if data["seed"] == bad_seed and data["aqm"]["step_thresh"] == "10ms":
            raise RuntimeError("injected failure")
        return real(data, base_dir)

    monkeypatch.setattr(l4slab.runner, "simulate", flaky)
    out = tmp_path / "o"
    res = invoke("sweep", _sweep_file(scen, tmp_path), "-o", out, "-j", "1")
    assert res.exit_code == 1
    assert "p001-r01" in res.output and "injected failure" in res.output
    assert "1 failed" in res.output
    assert len(list(out.glob("runs/*/summary.json"))) == 3
    assert "injected failure" in (out / "runs" / "p001-r01" / "error.txt").read_text()
    idx = pd.read_parquet(out / "sweep.parquet")
    assert idx.set_index("run").loc["p001-r01", "status"] == "failed"

    monkeypatch.setattr(l4slab.runner, "simulate", real)  # fixed: resume runs only that one
    res = invoke("sweep", _sweep_file(scen, tmp_path), "-o", out, "-j", "1")
    assert res.exit_code == 0 and "1 ran, 3 resumed" in res.output


def test_sweep_with_run_figures_on_the_pool_and_its_summary(scen, tmp_path):
    out = tmp_path / "o"
    res = invoke("sweep", _sweep_file(scen, tmp_path, reps=1), "-o", out, "-j", "2",
                 "--figures")
    assert res.exit_code == 0, res.output
    for run in ("p000-r00", "p001-r00"):
        assert (out / "runs" / run / "throughput.png").stat().st_size > 5000
        assert "data:image/png;base64," in (out / "runs" / run / "report.html").read_text()
    res = invoke("summary", out)
    assert res.exit_code == 0
    assert len(re.findall(r"p00\d-r00", res.output)) == 2
    assert "1ms" in res.output and "10ms" in res.output


def test_compare_hands_sweep_runs_to_the_validation_toolkit(scen, tmp_path):
    try:
        import l4slab.validation.cli  # noqa: F401
    except ImportError:
        assert_bad_input(invoke("compare", tmp_path, tmp_path), "not available yet")
        return
    out = tmp_path / "o"
    assert invoke("sweep", _sweep_file(scen, tmp_path, reps=3), "-o", out, "-j", "1"
                  ).exit_code == 0
    res = invoke("compare", str(out / "runs" / "p000-*"), str(out / "runs" / "p001-*"),
                 "--bootstrap", "20", "-o", tmp_path / "cmp", "-m", "sojourn_L")
    assert res.exit_code == 0, res.output
    assert "sojourn_L" in res.output and any((tmp_path / "cmp").iterdir())


def test_api_run_is_deterministic_and_load_round_trips(tmp_path):
    a = l4slab.run(SHORT, overrides={"duration": "1s"})
    b = l4slab.run(SHORT, tmp_path / "b", overrides=["duration=1s"], figures=False)
    pd.testing.assert_frame_equal(a.samples, b.samples)
    pd.testing.assert_frame_equal(a.flows, b.flows)
    assert a.summary == b.summary
    c = l4slab.load(tmp_path / "b")
    pd.testing.assert_frame_equal(c.flows, b.flows)
    assert c.summary == b.summary and c.scenario["duration"] == "1s"
    d = l4slab.run(SHORT, overrides={"duration": "1s", "seed": 99})
    assert not a.flows["tput_mbps"].equals(d.flows["tput_mbps"])


def test_api_errors_are_scenario_errors():
    with pytest.raises(l4slab.ScenarioError, match="aqm.nope"):
        l4slab.run(SHORT, overrides={"aqm.nope": 1})
    assert issubclass(l4slab.ScenarioError, ValueError)


def test_validation_commands_are_registered():


    runner = CliRunner()
    for name in ("validate", "compare", "import-mahimahi"):
        res = runner.invoke(main, [name, "--help"])
        assert res.exit_code == 0, (name, res.output)
        assert "Usage:" in res.output

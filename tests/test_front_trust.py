"""Results a researcher can trust, end to end through the `l4slab` command line: ambiguous
units refused, windows labelled, no results overwritten or lost, one error line per bad input
(never a Python traceback)."""

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import l4slab
from cli_helpers import SHORT_BASE, one_error
from cli_helpers import invoke_wide as invoke
from l4slab.cli import main
from l4slab.scenario import dumps_toml

SHORT = {**SHORT_BASE, "duration": "1s"}  # the `scen` fixture (conftest.py) writes it


# --- item 3: rates ----------------------------------------------------------------------------

def test_bps_rate_is_refused_with_both_readings(scen, tmp_path):
    res = invoke("run", scen, "-o", tmp_path / "x", "--set", "link.rate=50Mbps")
    one_error(res, "link.rate", "ambiguous", '"50mbit"', '"50mbyte"')
    res = invoke("run", scen, "-o", tmp_path / "y", "--no-figures", "--set",
                 "link.rate=10Mbit/s")
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "y" / "summary.json").read_text())
    assert s["link"]["capacity_mbps"] == pytest.approx(10.0)


# --- item 4: windows --------------------------------------------------------------------------

def test_report_labels_the_window_of_every_counter(scen, tmp_path):
    r = l4slab.run(scen, tmp_path / "r", figures=False)
    assert r.summary["windows"]["packets"] == "whole_run"
    html = (tmp_path / "r" / "report.html").read_text()
    assert "packets aqm dropped (whole run, 0–1 s)" in html
    assert "Queues <small>(after warm-up, 0.5–1 s)</small>" in html
    assert "Flows <small>(after warm-up, 0.5–1 s)</small>" in html
    assert "utilisation (after warm-up, 0.5–1 s)" in html


# --- item 5: sweeps ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    "body, needles",
    [
        ('[grid]\n"aqm.step_thresh" = ["1ms", "5ms"]\n[set]\n"aqm.step_thresh" = "2ms"\n',
         ['"aqm.step_thresh" is in both [grid] and [set]']),
        ('[grid]\n"flows.0.cc" = ["dctcp"]\n[set]\n"flows[0].cc" = "reno"\n',
         ["in both [grid] and [set]"]),
        ('[grid]\n"aqm.step_thresh" = ["1ms", "5ms", "1ms"]\n',
         ['grid."aqm.step_thresh" lists \'1ms\' more than once']),
    ],
)
def test_sweep_key_conflicts_are_refused(scen, tmp_path, body, needles):
    sw = tmp_path / "sw.toml"
    sw.write_text(f'base = "{scen.name}"\n' + body)
    one_error(invoke("sweep", sw, "-o", tmp_path / "s", "-j", "1"), *needles)
    assert not (tmp_path / "s").exists()


def test_flow_starting_after_the_run_is_refused(scen, tmp_path):
    res = invoke("run", scen, "-o", tmp_path / "x", "--set", "flows.1.start=5s")
    one_error(res, "flows[1].start", '"5s" is not before the end of the run')


# --- item 7: no silent overwrite --------------------------------------------------------------

def test_run_refuses_a_directory_with_another_run(scen, tmp_path):
    out = tmp_path / "r"
    assert invoke("run", scen, "-o", out).exit_code == 0
    first = (out / "summary.json").read_text()
    assert (out / "throughput.png").exists()
    # The same scenario again: allowed (deterministic: the same files).
    assert invoke("run", scen, "-o", out).exit_code == 0
    assert (out / "summary.json").read_text() == first
    # Another scenario: refused before anything runs, the old run intact.
    res = invoke("run", scen, "-o", out, "--set", "seed=4", "--no-figures")
    one_error(res, str(out), "another run", "--force")
    assert (out / "summary.json").read_text() == first
    # --force: the old run's files go first, so no stale figure sits beside the new data.
    (out / "notes.txt").write_text("mine")
    res = invoke("run", scen, "-o", out, "--set", "seed=4", "--no-figures", "--force")
    assert res.exit_code == 0, res.output
    assert json.loads((out / "summary.json").read_text())["seed"] == 4
    assert not list(out.glob("*.png")) and not list(out.glob("*.svg"))
    assert (out / "notes.txt").read_text() == "mine"  # not a run file: left alone
    from l4slab.results import OutputDirError

    with pytest.raises(OutputDirError):
        l4slab.run(scen, out, overrides={"seed": 5})


def test_run_refuses_a_directory_of_other_files(scen, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("x")
    one_error(invoke("run", scen, "-o", out), "other files")


def test_second_sweep_into_one_directory_is_refused_and_resume_still_works(scen, tmp_path):
    sw = tmp_path / "sw.toml"
    sw.write_text(f'base = "{scen.name}"\nreplications = 2\n[grid]\n"aqm.step_thresh" = '
                  '["1ms"]\n')
    out = tmp_path / "s"
    out.mkdir()
    # Another process holds the sweep lock (as a running sweep does).
    code = ("import fcntl, sys, time; f = open(sys.argv[1], 'a+'); "
            "fcntl.flock(f, fcntl.LOCK_EX); f.write('pid 4242'); f.flush(); "
            "print('locked', flush=True); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(out / ".l4slab-sweep.lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        one_error(invoke("sweep", sw, "-o", out, "-j", "1"), "another sweep is writing",
                  "pid 4242")
    finally:
        holder.kill()
        holder.wait()
    # The lock dies with its process: the sweep runs, and a rerun resumes.
    assert invoke("sweep", sw, "-o", out, "-j", "1").exit_code == 0
    res = invoke("sweep", sw, "-o", out, "-j", "1")
    assert res.exit_code == 0 and "2 resumed" in res.output, res.output


# --- item 8: results before figures -----------------------------------------------------------

def test_summary_and_tables_exist_before_figures_are_drawn(scen, tmp_path, monkeypatch):
    import l4slab.plots

    seen = {}

    def interrupted(run, out_dir, formats=()):
        seen["files"] = sorted(p.name for p in out_dir.iterdir())
        raise KeyboardInterrupt

    monkeypatch.setattr(l4slab.plots, "plot_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        l4slab.run(scen, tmp_path / "r")
    assert {"summary.json", "samples.parquet", "flows.parquet", "scenario.toml"} <= set(
        seen["files"])
    assert l4slab.load(tmp_path / "r").summary["seed"] == 3


def test_many_flows_draw_aggregates_and_the_busiest(tmp_path):
    from l4slab.plots import MAX_FLOWS_DRAWN, fig_throughput
    from l4slab.results import RunData

    n, t = 400, np.arange(0.0, 2.0, 0.1)
    flows = pd.DataFrame({
        "t_s": np.repeat(t, n), "flow": np.tile(np.arange(n), t.size),
        "tput_mbps": np.tile(np.arange(n, dtype=float) / 100, t.size),
    })
    summary = {"flows": [{"id": i, "cc": "prague" if i % 2 else "cubic",
                          "class": "L4S" if i % 2 else "Classic"} for i in range(n)],
               "sample_interval_s": 0.1, "link": {"capacity_mbps": 2000.0}}
    t0 = time.perf_counter()
    fig = fig_throughput(RunData(pd.DataFrame(), flows, summary))
    assert time.perf_counter() - t0 < 5
    ax = fig.axes[0]
    labels = [ln.get_label() for ln in ax.get_lines()]
    # Two class aggregates, the busiest flows (the highest ids: tput = id/100), total, capacity.
    assert labels[:2] == ["Classic: sum of 200 flows", "L4S: sum of 200 flows"]
    flows_drawn = [lb for lb in labels if lb.startswith("flow ")]
    assert len(flows_drawn) == MAX_FLOWS_DRAWN
    assert flows_drawn[0].startswith(f"flow {n - MAX_FLOWS_DRAWN} ")
    assert f"{MAX_FLOWS_DRAWN} busiest of {n} flows" in ax.get_title()
    # The L4S (odd ids) sum: sum of (2k+1)/100 for k < 200 = 400.0 Mb/s at every sample.
    l4s = ax.get_lines()[1].get_ydata()
    assert np.allclose(l4s, sum((2 * k + 1) / 100 for k in range(200)))


# --- item 9: one error line, never a traceback ------------------------------------------------

@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_paths_nonroot(scen, tmp_path):  # pragma: no cover - CI runs as root
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    one_error(invoke("run", scen, "-o", ro / "x"), str(ro / "x"))


def _unwritable(tmp_path):
    """A path no process can create, root included: below a file in /proc."""
    return "/proc/version/sub"


def test_each_bad_path_is_one_error_line(scen, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    binary = tmp_path / "bin.toml"
    binary.write_bytes(bytes(range(256)) * 8)
    mm = tmp_path / "mm.log"
    mm.write_text("# base timestamp: 0\n0 # 1504\n2000 + 1500\n")
    sw = tmp_path / "sw.toml"
    sw.write_text(f'base = "{scen}"\n')
    cases = [
        (["run", scen, "-o", afile / "sub"], [str(afile / "sub"), "Not a directory"]),
        (["run", scen, "-o", "/proc/version/sub"], ["/proc/version/sub"]),
        (["sweep", sw, "-o", "/proc/version/sub"], ["/proc/version/sub"]),
        (["import-mahimahi", mm, "-o", "/proc/version/sub.csv"], ["/proc/version/sub.csv"]),
        (["run", binary], [str(binary), "not a text file"]),
        (["sweep", binary], [str(binary), "not a text file"]),
        (["import-mahimahi", binary], [str(binary), "not a text file"]),
        (["import-mahimahi", mm, "--interval-ms", "1e-9"], ["interval_ms", "at most"]),
        (["validate", mm, mm, "-o", "/proc/version/v"], []),
    ]
    for args, needles in cases:
        res = invoke(*args)
        assert res.exit_code != 0, args
        assert "Traceback" not in res.output, args
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert len(lines) == 1, (args, res.output)
        for n in needles:
            assert n in " ".join(res.output.split()), (args, n, res.output)


# --- item 11: changing the AQM kind, --unset; item 10: flows[0] in --set ------------------------

def test_aqm_kind_override_starts_from_that_aqms_defaults(scen, tmp_path):
    base = dict(SHORT, aqm={"kind": "dualpi2", "k": 2, "step_thresh": "1ms"})
    scen.write_text(dumps_toml(base))
    res = invoke("run", scen, "-o", tmp_path / "f", "--no-figures", "--set", "aqm.kind=fifo")
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "f" / "summary.json").read_text())
    assert s["aqm"] == "fifo" and [q["name"] for q in s["queues"]] == ["single"]
    # Order does not matter: the kind is applied first, then its parameters.
    from l4slab.scenario import apply_overrides

    eff = apply_overrides(base, ["aqm.target=5ms", "aqm.kind=codel"])
    assert eff["aqm"] == {"kind": "codel", "target": "5ms"}
    assert apply_overrides(base, {"aqm.kind": "dualpi2"})["aqm"] == base["aqm"]  # unchanged
    # A sweep over AQM kinds from the DualPI2 base.
    sw = tmp_path / "sw.toml"
    sw.write_text(f'base = "{scen.name}"\n[grid]\n"aqm.kind" = ["fifo", "codel", "dualpi2"]\n')
    res = invoke("sweep", sw, "-o", tmp_path / "s", "-j", "1")
    assert res.exit_code == 0, res.output
    idx = pd.read_parquet(tmp_path / "s" / "sweep.parquet")
    assert (idx["status"] == "ok").all() and len(idx) == 3


def test_unset_restores_the_default_and_names_missing_keys(scen, tmp_path):
    base = dict(SHORT, aqm={"kind": "dualpi2", "step_thresh": "5ms"})
    scen.write_text(dumps_toml(base))
    res = invoke("run", scen, "-o", tmp_path / "u", "--no-figures", "--unset",
                 "aqm.step_thresh")
    assert res.exit_code == 0, res.output
    eff = (tmp_path / "u" / "scenario.toml").read_text()
    assert "step_thresh" not in eff
    one_error(invoke("run", scen, "-o", tmp_path / "v", "--unset", "aqm.bogus"),
              "--unset aqm.bogus", "not set")


def test_set_accepts_the_index_form_errors_use(scen, tmp_path):
    res = invoke("run", scen, "-o", tmp_path / "i", "--no-figures", "--set", "flows[1].cc=reno")
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "i" / "summary.json").read_text())
    assert [f["cc"] for f in s["flows"]] == ["prague", "reno"]


# --- item 13: summary formats, not cut to 80 columns when piped --------------------------------

def test_summary_formats_and_full_width_when_piped(scen, tmp_path):
    import csv as csvmod
    import io

    for name in ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "b"):
        assert invoke("run", scen, "-o", tmp_path / name, "--no-figures").exit_code == 0
    dirs = [tmp_path / "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", tmp_path / "b"]
    s = json.loads((dirs[0] / "summary.json").read_text())
    res = CliRunner().invoke(main, ["summary", "--format", "csv", *map(str, dirs)])
    rows = list(csvmod.reader(io.StringIO(res.output)))
    assert rows[0][:3] == ["run", "L4S Mb/s", "Classic Mb/s"] and rows[0][-2:] == ["util", "Jain"]
    assert rows[1][0] == str(dirs[0])
    assert float(rows[1][-1]) == pytest.approx(s["jain"])
    res = CliRunner().invoke(main, ["summary", "--format", "json", *map(str, dirs)])
    recs = json.loads(res.output)
    assert recs[1]["run"] == str(dirs[1]) and recs[0]["util"] == s["link"]["utilisation"]
    res = CliRunner().invoke(main, ["summary", "--format", "markdown", *map(str, dirs)])
    assert "| run | L4S Mb/s |" in res.output and res.output.count("\n| ") >= 3
    # The default table, piped (CliRunner is not a terminal): whole rows, no 80-column cut.
    res = CliRunner().invoke(main, ["summary", *map(str, dirs)], env={"COLUMNS": ""})
    line = next(ln for ln in res.output.splitlines() if "aaaaaaaaaaaaaaaa" in ln)
    assert str(dirs[0]) in line and len(line) > 80


# --- item 10: messages name the key ----------------------------------------------------------

def test_non_finite_override_names_the_key(scen, tmp_path):
    one_error(invoke("run", scen, "-o", tmp_path / "n", "--set", "link.loss=nan"),
              "link.loss: nan is not a finite number")
    one_error(invoke("run", scen, "-o", tmp_path / "n", "--set", "link.rate=1e30gbit"),
              "link.rate", "out of range")


def test_shipped_scenarios_are_package_data_not_a_link() -> None:
    """A wheel carries what the package directory holds and maturin does not follow symlinks,
    so the scenarios, sweeps, suites and traces must be real files inside l4slab/data (the
    source tree's top-level scenarios/ is the link)."""
    from l4slab.shipped_cli import scenarios_dir
    from l4slab.suites.core import suites_dir
    from l4slab.traces import data_dir

    pkg = Path(l4slab.__file__).resolve().parent
    d = data_dir() / "scenarios"
    assert d.is_dir() and not d.is_symlink()
    assert scenarios_dir() == d and suites_dir().resolve().is_relative_to(pkg)
    names = {p.name for p in d.rglob("*.toml")}
    assert {"prague_vs_cubic_50M_40ms.toml", "cellular_tmobile_lte.toml"} <= names
    assert any(d.joinpath("traces").glob("*.down"))


def test_import_mahimahi_refuses_to_overwrite_without_force(tmp_path):
    mm = tmp_path / "mm.log"
    mm.write_text("# base timestamp: 0\n0 # 1504\n2000 + 1500\n2001 - 1500 1\n")
    out = tmp_path / "mm.csv"
    assert invoke("import-mahimahi", mm, "-o", out).exit_code == 0
    out.write_text("the user's edited table\n")
    one_error(invoke("import-mahimahi", mm, "-o", out), str(out), "--force")
    assert out.read_text() == "the user's edited table\n"  # untouched
    one_error(invoke("import-mahimahi", mm, "-o", mm), "log being read")
    res = invoke("import-mahimahi", mm, "-o", out, "--force")
    assert res.exit_code == 0, res.output
    assert out.read_text().startswith("t_s,")


def test_sweep_unset_restores_the_default_and_refuses_swept_keys(scen, tmp_path):
    """`sweep --unset aqm.target` must give the runs DualPI2's default target (15 ms,
    sch_dualpi2.c `dualpi2_reset_default`), not the base scenario's value."""
    base = dict(SHORT, aqm={"kind": "dualpi2", "target": "5ms"})
    p = tmp_path / "base.toml"
    p.write_text(dumps_toml(base))
    sw = tmp_path / "sw.toml"
    sw.write_text(f'base = "{p}"\nreplications = 1\n[grid]\n"aqm.step_thresh" = ["1ms"]\n')
    out = tmp_path / "out"
    res = invoke("sweep", sw, "-j", "1", "-o", out, "--unset", "aqm.target")
    assert res.exit_code == 0, res.output
    (run,) = (out / "runs").iterdir()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["aqm_params"]["target_ms"] == 15.0, summary["aqm_params"]
    one_error(invoke("sweep", sw, "-o", tmp_path / "o2", "--unset", "aqm.step_thresh"),
              "--unset aqm.step_thresh", "grid")


def test_sweeping_the_flows_list_gives_labels_not_a_crash(tmp_path):
    """A grid over `flows` (a list of tables) used to crash the sweep figures with
    "unhashable type: 'list'" after every run had finished."""
    base = tmp_path / "base.toml"
    base.write_text(dumps_toml(SHORT))
    sw = tmp_path / "sw.toml"
    sw.write_text(f'base = "{base}"\nreplications = 1\n[grid]\nflows = '
                  '[[{cc="prague", rtt="20ms"}], '
                  '[{cc="cubic", rtt="20ms", count=2}, {cc="prague", rtt="20ms"}]]\n')
    out = tmp_path / "out"
    res = invoke("sweep", sw, "-j", "1", "-o", out)
    assert res.exit_code == 0, res.output
    idx = pd.read_parquet(out / "sweep.parquet")
    assert list(idx["flows"]) == ["prague", "2×cubic+prague"]
    html = (out / "report.html").read_text()
    assert "2×cubic+prague" in html and 'class="wide"' in html
    assert "L4S throughput [Mb/s]" in html  # labelled, the dotted key beneath it
    res = invoke("summary", out)
    assert "2×cubic+prague" in res.output and "{'cc'" not in res.output

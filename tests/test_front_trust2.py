"""Trust, round 2: a sweep runs what its index says, nothing is replaced without --force, and
errors, reports and verdicts say what happened."""

import contextlib
import json
import os
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from cli_helpers import SHORT_BASE, one_error
from cli_helpers import invoke_wide as invoke
from l4slab.scenario import apply_overrides, dumps_toml, set_path
from l4slab.sweeps import load_sweep_spec, plan

SHORT = {**SHORT_BASE, "duration": "1s", "aqm": {"kind": "fifo"}}


# --- item 1: a grid over a table (or list) and one of its sub-keys ----------------------------

ALIAS_SWEEP = """base = "{base}"
replications = 1
[grid]
"aqm" = [{{kind = "fifo"}}, {{kind = "codel", ecn = true}}]
"aqm.limit" = [20, 400]
"flows" = [[{{cc = "prague", rtt = "20ms"}}], [{{cc = "cubic", rtt = "20ms"}}]]
"flows.0.rtt" = ["10ms", "30ms"]
"""


def _expected(params: dict, base: dict) -> dict:
    """The scenario a run's params mean, built from scratch (fresh copies, key by key)."""
    want = json.loads(json.dumps(base))
    for k, v in params.items():
        set_path(want, k, json.loads(json.dumps(v)))
    return want


def test_grid_over_a_table_and_its_sub_key_runs_what_the_index_says(tmp_path):
    """Every grid point used to get the *last* sub-key value: set_path stored the grid's own
    dict, so later points mutated earlier ones."""
    base = tmp_path / "base.toml"
    base.write_text(dumps_toml({**SHORT, "duration": "0.3s", "warmup": "0.1s"}))
    sw = tmp_path / "sw.toml"
    sw.write_text(ALIAS_SWEEP.format(base=base))
    out = tmp_path / "out"
    res = invoke("sweep", sw, "-j", "1", "-o", out)
    assert res.exit_code == 0, res.output
    fresh = {t.name: t for t in plan(load_sweep_spec(sw))}
    assert len(fresh) == 16
    hashes = set()
    for name, task in fresh.items():
        rd = out / "runs" / name
        ident = json.loads((rd / "params.json").read_text())
        ran = tomllib.loads((rd / "scenario.toml").read_text())
        params = ident["params"]
        assert ran["aqm"]["kind"] == params["aqm"]["kind"], name
        assert ran["aqm"]["limit"] == params["aqm.limit"], name
        assert ran["flows"][0]["cc"] == params["flows"][0]["cc"], name
        assert ran["flows"][0]["rtt"] == params["flows.0.rtt"], name
        # The grid value itself is recorded as given, not as later points changed it.
        assert "limit" not in params["aqm"] and params["flows"][0]["rtt"] == "20ms", name
        assert ident["scenario_sha256"] == task.identity()["scenario_sha256"], name
        want = _expected(params, {**SHORT, "duration": "0.3s", "warmup": "0.1s",
                                  "seed": task.seed})
        assert task.scenario == want, name
        hashes.add(ident["scenario_sha256"])
    assert len(hashes) == 16  # sixteen different experiments, sixteen digests
    idx = pd.read_parquet(out / "sweep.parquet")
    assert sorted(idx["aqm.limit"]) == [20] * 8 + [400] * 8


def test_set_path_and_overrides_never_share_the_value_given():
    value = {"kind": "fifo"}
    a: dict = {}
    set_path(a, "aqm", value)
    set_path(a, "aqm.limit", 20)
    assert value == {"kind": "fifo"}
    base = {"aqm": {"kind": "fifo"}, "flows": [{"cc": "prague"}]}
    over = {"flows": [{"cc": "cubic"}]}
    x = apply_overrides(base, over)
    x["flows"][0]["rtt"] = "1ms"
    assert over == {"flows": [{"cc": "cubic"}]}
    assert base == {"aqm": {"kind": "fifo"}, "flows": [{"cc": "prague"}]}


def test_sweep_spec_fixed_tables_are_not_shared_between_runs(tmp_path):
    """A [set] table plus a grid over one of its sub-keys: each run its own value."""
    base = tmp_path / "base.toml"
    base.write_text(dumps_toml(SHORT))
    spec = load_sweep_spec({"base": str(base), "set": {"flows": [{"cc": "cubic"}]},
                            "grid": {"flows.0.rtt": ["5ms", "50ms"]}})
    tasks = plan(spec)
    assert [t.scenario["flows"][0]["rtt"] for t in tasks] == ["5ms", "50ms"]
    assert spec.fixed["flows"] == [{"cc": "cubic"}]


# --- item 2: a sweep into a directory holding another sweep ----------------------------------

def _sweep_file(tmp_path: Path, name: str, values: list[str], reps: int = 1) -> Path:
    base = tmp_path / "base.toml"
    base.write_text(dumps_toml({**SHORT, "aqm": {"kind": "dualpi2"}, "duration": "0.3s",
                                "warmup": "0.1s"}))
    sw = tmp_path / name
    sw.write_text(f'base = "{base}"\nreplications = {reps}\n[grid]\n"aqm.step_thresh" = '
                  f"{json.dumps(values)}\n")
    return sw


def test_a_different_sweep_is_refused_and_force_removes_its_stale_runs(tmp_path):
    a = _sweep_file(tmp_path, "a.toml", ["1ms", "5ms"], reps=2)
    b = _sweep_file(tmp_path, "b.toml", ["2ms"], reps=1)
    out = tmp_path / "out"
    assert invoke("sweep", a, "-j", "1", "-o", out).exit_code == 0
    before = sorted(p.name for p in (out / "runs").iterdir())
    assert before == ["p000-r00", "p000-r01", "p001-r00", "p001-r01"]
    one_error(invoke("sweep", b, "-j", "1", "-o", out),
              "holds a different sweep", "--force")
    assert sorted(p.name for p in (out / "runs").iterdir()) == before  # nothing touched
    # The identical sweep resumes.
    res = invoke("sweep", a, "-j", "1", "-o", out)
    assert res.exit_code == 0 and "4 resumed" in res.output, res.output
    # --force: the other sweep's runs go, so no `runs/p00*` glob can pick them up.
    res = invoke("sweep", b, "-j", "1", "-o", out, "--force")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["p000-r00"]
    ident = json.loads((out / "runs" / "p000-r00" / "params.json").read_text())
    assert ident["params"] == {"aqm.step_thresh": "2ms"}
    assert tomllib.loads((out / "runs" / "p000-r00" / "scenario.toml").read_text())[
        "aqm"]["step_thresh"] == "2ms"


def test_force_keeps_the_runs_the_new_plan_shares(tmp_path):
    """Going from 1 to 2 replications is another plan: refused, then with --force the run both
    plans share is resumed, not redone."""
    a = _sweep_file(tmp_path, "a.toml", ["1ms"], reps=1)
    a2 = _sweep_file(tmp_path, "a2.toml", ["1ms"], reps=2)
    out = tmp_path / "out"
    assert invoke("sweep", a, "-j", "1", "-o", out).exit_code == 0
    one_error(invoke("sweep", a2, "-j", "1", "-o", out), "different sweep")
    res = invoke("sweep", a2, "-j", "1", "-o", out, "--force")
    assert res.exit_code == 0 and "1 resumed" in res.output, res.output


def test_a_sweep_into_a_directory_of_other_files_is_refused(tmp_path):
    a = _sweep_file(tmp_path, "a.toml", ["1ms"])
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("x")
    one_error(invoke("sweep", a, "-j", "1", "-o", out), "holds no sweep")
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]


# --- item 3: sweep() raises when runs fail; the README's examples run as written --------------

def test_sweep_raises_naming_the_first_failed_run(tmp_path, monkeypatch):
    import l4slab
    import l4slab.runner

    real = l4slab.runner.simulate

    def flaky(data, base_dir):
        if data["aqm"]["step_thresh"] == "5ms":
            raise RuntimeError("disk on fire")
        return real(data, base_dir)

    monkeypatch.setattr(l4slab.runner, "simulate", flaky)
    a = _sweep_file(tmp_path, "a.toml", ["1ms", "5ms"], reps=2)
    with pytest.raises(l4slab.SweepFailed) as e:
        l4slab.sweep(a, tmp_path / "out", jobs=1, report=False)
    msg = str(e.value)
    assert "2 of 4 sweep runs failed" in msg and "p001-r00" in msg and "disk on fire" in msg
    assert [o.task.name for o in e.value.result.failed] == ["p001-r00", "p001-r01"]
    assert (tmp_path / "out" / "runs" / "p000-r00" / "summary.json").exists()  # kept
    res = l4slab.sweep(a, tmp_path / "out2", jobs=1, report=False, raise_on_failure=False)
    assert len(res.failed) == 2 and not res.ok


# --- item 4: Dask says what it has, and does not wait forever on an empty cluster ------------

def test_dask_scheduler_without_workers_times_out_then_reports_the_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    import l4slab

    a = _sweep_file(tmp_path, "a.toml", ["1ms", "5ms"])
    with distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        res = invoke("sweep", a, "--dask", cluster.scheduler_address, "--dask-wait", "1",
                     "-o", tmp_path / "out")
        assert res.exit_code == 2 and "Traceback" not in res.output, res.output
        warn, err = [ln for ln in res.output.splitlines() if ln.strip()]
        assert "has no workers; waiting up to 1 s" in warn, warn
        assert "no worker joined" in err and "--dask-wait" in err, err
        assert cluster.scheduler_address in err
        cluster.scale(1)
        notes: list[str] = []
        seen: list[tuple[str, int, int]] = []
        with distributed.Client(cluster) as client:
            out = l4slab.sweep(a, tmp_path / "out2", dask=client, report=False,
                               on_note=notes.append,
                               on_progress=lambda o, d, t: seen.append((o.status, d, t)))
    assert out.ok
    assert notes and notes[-1].endswith("1 worker, 1 threads"), notes
    assert sorted(seen) == [("ok", 1, 2), ("ok", 2, 2)]  # one call per result, as it came


# --- item 5: pool workers die with their sweep ------------------------------------------------

def _children(pid: int) -> list[int]:
    """Pool workers (multiprocessing spawn children) of process `pid`."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"spawn_main" in cmd:
            out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_killing_a_sweep_with_sigkill_takes_its_pool_workers_with_it(tmp_path):
    """Each run simulates 600 s at 100 Mb/s (tens of seconds of CPU), so a worker that
    outlived its parent would still be running long after the 10 s bound; with
    PR_SET_PDEATHSIG it gets SIGTERM at once (the parent watch, polling every 1 s, is the
    fallback)."""
    import signal
    import subprocess
    import sys
    import time

    base = tmp_path / "base.toml"
    base.write_text(dumps_toml({**SHORT, "duration": "600s", "link": {"rate": "100mbit"}}))
    sw = tmp_path / "sw.toml"
    sw.write_text(f'base = "{base}"\nreplications = 4\n')
    cli = Path(sys.executable).parent / "l4slab"
    parent = subprocess.Popen([str(cli), "sweep", str(sw), "-j", "2", "-o",
                               str(tmp_path / "out")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2 and time.monotonic() < deadline and parent.poll() is None:
            time.sleep(0.2)
            workers = _children(parent.pid)
        assert len(workers) == 2, "the sweep did not start its two workers"
        time.sleep(1.0)  # into their runs
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], "pool workers outlived their sweep"
    finally:
        if parent.poll() is None:
            parent.kill()
        for w in workers:
            with contextlib.suppress(OSError):
                os.kill(w, signal.SIGKILL)


# --- item 7: a CI that cannot be one says why -------------------------------------------------

def test_single_runs_and_identical_runs_are_named_not_shown_as_intervals():
    import numpy as np

    from l4slab.plots import mean_ci_text
    from l4slab.suites.core import Table, aggregate
    from l4slab.suites.report import display_frame

    assert mean_ci_text(np.array([3.0])) == "3 (n = 1)"
    assert mean_ci_text(np.array([3.0, 3.0, 3.0])) == "3 (identical runs)"
    # Student t, 2 runs: 12.706 · s / √2 with s = √2 → 12.71.
    assert mean_ci_text(np.array([2.0, 4.0])) == "3 ± 13"
    runs = pd.DataFrame({"k": ["one", "same", "same", "spread", "spread"],
                         "x": [5.0, 2.0, 2.0, 1.0, 3.0]})
    t = Table("t", "t", aggregate(runs, ["k"], {"x": "x"}), ["k"], ["x"])
    cells = dict(zip(display_frame(t)["k"], display_frame(t)["x"], strict=True))
    assert cells["one"] == "5 (n = 1)"
    assert cells["same"] == "2 (identical runs)"
    assert cells["spread"].startswith("2 [0, ")  # CI cut at 0 (the metric's domain)


def test_sweep_report_says_n1_and_identical_runs(tmp_path):
    """A sweep with one replication: the report's table says n = 1, not "± 0"."""
    sw = _sweep_file(tmp_path, "a.toml", ["1ms", "5ms"], reps=1)
    out = tmp_path / "out"
    res = invoke("sweep", sw, "-j", "1", "-o", out)
    assert res.exit_code == 0
    # Not a terminal (no live bar): progress comes as lines while results arrive.
    assert "runs: 1/2 done" in res.output and "runs: 2/2 done" in res.output, res.output
    html = (out / "report.html").read_text()
    assert "(n = 1)" in html and "± 0" not in html


# --- item 9: early errors name what is wrong --------------------------------------------------

def _csv_runs(d: Path, n: int = 3) -> Path:
    import numpy as np

    d.mkdir()
    t = np.arange(20) * 0.1
    for i in range(n):
        pd.DataFrame({"t_s": t, "tput": 10 + 0.1 * i + 0 * t}).to_csv(d / f"r{i}.csv",
                                                                       index=False)
    return d


def test_validate_warmup_past_the_end_names_the_warmup(tmp_path):
    g = _csv_runs(tmp_path / "g")
    line = one_error(invoke("validate", g, g, "--warmup", "100", "-o", tmp_path / "o"),
                     "warm-up of 100 s leaves no sample", "t = 1.9 s", "--warmup")
    assert "empty" not in line
    # A run directory (Parquet) says the same.
    import l4slab

    run = tmp_path / "run"
    l4slab.run({**SHORT, "duration": "0.3s", "warmup": "0.1s"}, out_dir=run, figures=False)
    one_error(invoke("validate", run, run, "--warmup", "5", "-o", tmp_path / "o2"),
              "warm-up of 5 s leaves no sample")


def test_validate_names_a_group_that_matches_nothing_by_the_path_given(tmp_path):
    g = _csv_runs(tmp_path / "g")
    pattern = str(tmp_path / "nothing-*")
    line = one_error(invoke("validate", g, pattern, "-o", tmp_path / "o"), "empty group")
    assert f"group B ({pattern})" in line and "[]" not in line


# --- item 11: small ones ----------------------------------------------------------------------

def test_trace_refuses_to_overwrite_and_names_a_negative_rate(tmp_path):
    out = tmp_path / "c.down"
    assert invoke("trace", "constant", "50", "-o", out).exit_code == 0
    before = out.read_text()
    res = invoke("trace", "constant", "5", "-o", out)
    assert res.exit_code == 2 and "exists" in res.output and "--force" in res.output
    assert out.read_text() == before
    assert invoke("trace", "constant", "5", "-o", out, "--force").exit_code == 0
    assert out.read_text() != before
    res = invoke("trace", "constant", "-5", "-o", tmp_path / "n.down")
    assert res.exit_code == 2 and "No such option" not in res.output
    assert "rate_mbps = -5" in res.output and "0.01 ≤ rate_mbps" in res.output
    assert not (tmp_path / "n.down").exists()


def test_durations_accept_hours(tmp_path):
    import l4slab
    from l4slab import _core

    assert _core.parse_duration_ns("10h") == 36_000 * 10**9
    # A scenario may say hours (validated, not run: a 2 h run is not a unit test).
    assert l4slab.validate({**SHORT, "duration": "2h"})["duration"] == "2h"


# --- item 10: figures fit to publish ----------------------------------------------------------

def test_sweep_figure_axes_have_no_offset_notation_and_no_negative_bands():
    """Utilisation 0.99999 at every point read "1e−5+9.999e−1"; a delay's CI band went
    below 0."""
    import types

    from matplotlib.collections import PolyCollection

    from l4slab.plots import sweep_figures

    rows = [{"status": "ok", "aqm.limit": lim, "link.utilisation": 0.99999 + 1e-9 * r,
             "queues.C.sojourn_ms.mean": [0.1, 3.0, 0.2][r]}
            for lim in (100, 200) for r in range(3)]
    data = types.SimpleNamespace(index=pd.DataFrame(rows), params=["aqm.limit"],
                                 meta={"grid": {"aqm.limit": [100, 200]}})
    fig = sweep_figures(data)["sweep_aqm_limit"]
    fig.canvas.draw()
    for ax in fig.axes:
        assert ax.yaxis.get_major_formatter().get_offset() == "", ax.get_title()
        for band in (c for c in ax.collections if isinstance(c, PolyCollection)):
            assert band.get_paths()[0].vertices[:, 1].min() >= 0.0, ax.get_title()
    util = next(ax for ax in fig.axes if ax.get_title() == "link utilisation")
    lo, hi = util.get_ylim()
    assert lo < 0.99 and hi > 1.0  # ±1 % around the value, not a 1e-9 magnification


def _drawn(monkeypatch, module) -> list:
    """Figures a suite module saves, kept for inspection."""
    figs: list = []
    real = module.save
    monkeypatch.setattr(module, "save", lambda f, *a: (figs.append(f), real(f, *a))[1])
    return figs


def test_reference_chart_and_share_heatmap_are_labelled(tmp_path, monkeypatch):
    """The reference chart showed raw column names ("l4s_mbps") and unlabeled
    "FIFO · 1 · 1 · prague · cubic" ticks; the share heatmap had 6-pt ticks and no values."""
    import l4slab.suites.coexistence as coex
    import l4slab.suites.figures as sfig
    from l4slab.suites.core import Table

    assert sfig.column_label("l4s_mbps") == "L4S throughput [Mb/s]"
    assert sfig.column_label("sojourn_p99_ms") == "sojourn p99 [ms]"
    assert sfig.column_label("buffer_bdp") == "buffer BDP"
    cmp = pd.DataFrame({"table": "throughput", "aqm": ["FIFO", "DualPI2"],
                        "buffer_bdp": [1.0, 1.0], "l4s_cc": ["prague", "prague"],
                        "metric": "l4s_mbps", "l4slab": [40.0, 60.0], "l4slab_lo": [39.0, 59.0],
                        "l4slab_hi": [41.0, 61.0], "reference": [30.0, 50.0]})
    figs = _drawn(monkeypatch, sfig)
    sfig.reference_bars(Table("reference", "r", cmp,
                              ["table", "aqm", "buffer_bdp", "l4s_cc", "metric"],
                              ["l4slab", "reference"]), tmp_path)
    ax = figs[0].axes[0]
    assert ax.get_ylabel() == "L4S throughput [Mb/s]"
    # Only the key that varies labels the ticks, by name; the others are in the title.
    assert [t.get_text() for t in ax.get_xticklabels()] == ["AQM FIFO", "AQM DualPI2"]
    assert "buffer BDP 1.0, L4S CC prague" in ax.get_title()
    one = pd.DataFrame({"aqm": ["FIFO", "DualPI2"], "buffer_bdp": [1.0, 1.0],
                        "l4s_cc": "prague", "classic_cc": "cubic",
                        "l4s_mbps": [30.0, 40.0], "classic_mbps": [20.0, 10.0]})
    figs = _drawn(monkeypatch, coex)
    coex._heatmap(one, tmp_path)
    ax = figs[0].axes[0]
    assert sorted(t.get_text() for t in ax.texts) == ["0.60", "0.80"]  # 30/50, 40/50
    assert min(t.get_fontsize() for t in ax.get_yticklabels()) >= 8


def test_run_goodput_plot_names_a_spike_above_capacity_only_when_there_is_one(tmp_path):
    """Item 10: the goodput plot of a lossy run rose above the link rate without a word. In-order
    goodput can exceed the wire rate for a moment when a retransmission releases the bytes held
    behind a hole; the legend must say so when (and only when) the drawn total crosses the
    capacity line. A FIFO of 8 packets (a quarter of the 10 Mb/s × 20 ms BDP of 16.7) makes two
    loss-based flows drop and repair; 2000 packets is never reached in 3 s, so nothing is lost."""
    import l4slab
    from l4slab.plots import fig_throughput

    def drawn(limit: int) -> tuple[float, float, list[str]]:
        r = l4slab.run({**SHORT, "duration": "3s", "warmup": "0.5s",
                        "aqm": {"kind": "fifo", "limit": limit},
                        "flows": [{"cc": "cubic", "rtt": "20ms"}, {"cc": "reno", "rtt": "20ms"}]},
                       out_dir=tmp_path / f"lim{limit}", figures=False, report=False)
        ax = fig_throughput(r).axes[0]
        lines, labels = ax.get_legend_handles_labels()
        total = lines[labels.index("total goodput (payload)")].get_ydata()
        return float(max(total)), float(r.summary["link"]["capacity_mbps"]), labels

    peak, cap, labels = drawn(8)
    assert peak > cap, (peak, cap)
    assert any(lab.startswith("spikes above capacity: a retransmission") for lab in labels)
    peak, cap, labels = drawn(2000)
    assert peak <= cap, (peak, cap)
    assert not any(lab.startswith("spikes above capacity") for lab in labels), labels

"""Research workflow: buffers in BDP units, sweeps across AQM kinds, replications that differ,
pcap export and progress on long runs (issue 25)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from l4slab.scenario import dumps_toml
from l4slab.sweeps import load_sweep

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_helpers import SHORT_BASE, invoke  # noqa: E402

# --- buffers in BDP units ----------------------------------------------------------------------


def test_bdp_limit_is_resolved_recorded_and_shown(tmp_path):
    scen = copy.deepcopy(SHORT_BASE)
    scen["aqm"] = {"kind": "fifo", "limit": "2bdp"}
    (tmp_path / "s.toml").write_text(dumps_toml(scen))
    res = invoke("run", tmp_path / "s.toml", "-o", tmp_path / "r", width=200)
    assert res.exit_code == 0, res.output
    summ = json.loads((tmp_path / "r" / "summary.json").read_text())
    # 10 Mb/s · 20 ms / 8 = 25 000 B = 16.67 packets of 1500 B; 2 BDP = 33.3 -> 34 packets.
    assert summ["buffer"]["value"] == 34 and summ["buffer"]["unit"] == "pkts"
    assert summ["scenario"]["aqm"]["limit"] == "2bdp"  # the echo keeps what was written
    assert "2bdp=34 pkts" in res.output
    report = (tmp_path / "r" / "report.html").read_text()
    assert "2bdp = 34 pkts" in report


def test_bdp_on_a_trace_link_asks_for_bdp_rate(tmp_path):
    scen = copy.deepcopy(SHORT_BASE)
    scen["link"] = {"trace": "t.down"}
    scen["aqm"] = {"kind": "fifo", "limit": "2bdp"}
    (tmp_path / "s.toml").write_text(dumps_toml(scen))
    res = invoke("run", tmp_path / "s.toml", "-o", tmp_path / "r")
    assert res.exit_code == 2
    assert "aqm.limit" in res.output and "aqm.bdp_rate" in res.output
    assert "Traceback" not in res.output


# --- one sweep across AQM kinds ----------------------------------------------------------------

AQM_VARIANTS_SWEEP = """
base = "base.toml"
replications = {reps}
seed = 5
[grid]
"aqm.limit" = ["1bdp", "2bdp"]
[[grid.aqm]]
kind = "fifo"
[[grid.aqm]]
kind = "codel"
ecn = true
[[grid.aqm]]
kind = "dualpi2"
target = "5ms"
[set]
duration = "1s"
warmup = "0.2s"
"""


def _variants_sweep(tmp_path: Path, reps: int = 1) -> Path:
    (tmp_path / "base.toml").write_text(dumps_toml(SHORT_BASE))
    sw = tmp_path / "sw.toml"
    sw.write_text(AQM_VARIANTS_SWEEP.format(reps=reps))
    return sw


def test_aqm_variants_combine_by_product_with_one_index_column_per_key(tmp_path):
    from l4slab.sweeps import load_sweep_spec, plan

    sw = _variants_sweep(tmp_path)
    spec = load_sweep_spec(sw)
    grid_before = copy.deepcopy(spec.grid)
    tasks = plan(spec)
    assert len(tasks) == 6  # 2 limits × 3 variants
    # The deeper key lands inside each variant; the variant's own keys stay.
    by = {(t.scenario["aqm"]["kind"], t.scenario["aqm"]["limit"]): t.scenario["aqm"]
          for t in tasks}
    assert by[("codel", "2bdp")] == {"kind": "codel", "ecn": True, "limit": "2bdp"}
    assert by[("dualpi2", "1bdp")] == {"kind": "dualpi2", "target": "5ms", "limit": "1bdp"}
    # No run shares (or wrote into) a grid value.
    assert spec.grid == grid_before
    assert tasks[0].scenario["aqm"] is not tasks[1].scenario["aqm"]

    res = invoke("sweep", sw, "-o", tmp_path / "out", "-j", "1")
    assert res.exit_code == 0, res.output
    idx = load_sweep(tmp_path / "out").index
    assert {"aqm.limit", "aqm.kind", "aqm.ecn", "aqm.target"} <= set(idx.columns)
    rows = {(r["aqm.kind"], r["aqm.limit"]): r for _, r in idx.iterrows()}
    assert rows[("codel", "1bdp")]["aqm.ecn"] == "True"
    assert rows[("fifo", "1bdp")]["aqm.ecn"] == "(default)"
    assert rows[("dualpi2", "2bdp")]["aqm.target"] == "5ms"
    # Each run's limit resolved against 10 Mb/s × 20 ms = 16.67 packets: 17 and 34.
    assert sorted(idx["buffer.value"].unique()) == [17, 34]
    meta = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert meta["params"] == ["aqm.limit", "aqm.kind", "aqm.ecn", "aqm.target"]

    res = invoke("summary", "--group", "--format", "csv", tmp_path / "out")
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[0].startswith("aqm.limit,aqm.kind,aqm.ecn,aqm.target,runs,L4S Mb/s")
    assert len(lines) == 1 + 6
    assert "2bdp,codel,True,(default),1," in res.output


def test_variants_and_a_kind_key_together_are_refused(tmp_path):
    (tmp_path / "base.toml").write_text(dumps_toml(SHORT_BASE))
    sw = tmp_path / "sw.toml"
    sw.write_text('base = "base.toml"\n[grid]\n"aqm.kind" = ["fifo", "pie"]\n'
                  '[[grid.aqm]]\nkind = "fifo"\n')
    res = invoke("sweep", sw, "-o", tmp_path / "o", "-j", "1")
    assert res.exit_code == 2 and 'grid."aqm.kind"' in res.output


def test_several_sweeps_merge_into_one_table_with_a_source_column(tmp_path):
    sw = _variants_sweep(tmp_path)
    for name in ("a", "b"):
        res = invoke("sweep", sw, "-o", tmp_path / name, "-j", "1",
                     "--set", f"flows.1.cc={'cubic' if name == 'a' else 'reno'}")
        assert res.exit_code == 0, res.output
    res = invoke("summary", "--format", "csv", tmp_path / "a", tmp_path / "b")
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[0].startswith("run,source,aqm.limit,aqm.kind")
    assert len(lines) == 1 + 12  # one table, every run of both sweeps
    res = invoke("summary", "--group", "--format", "csv", tmp_path / "a", tmp_path / "b")
    lines = res.output.strip().splitlines()
    assert lines[0].startswith("source,aqm.limit") and len(lines) == 1 + 12
    res = invoke("report", tmp_path / "a", tmp_path / "b", "-o", tmp_path / "m.html")
    assert res.exit_code == 0, res.output
    html = (tmp_path / "m.html").read_text()
    assert str(tmp_path / "a") in html and str(tmp_path / "b") in html
    # Never overwrite.
    res = invoke("report", tmp_path / "a", "-o", tmp_path / "m.html")
    assert res.exit_code == 2 and "exists" in res.output


# --- pcap export -------------------------------------------------------------------------------

def _tshark() -> str:
    """tshark's path; skips with a reason without it, except in CI (CI installs it)."""
    import os
    import shutil

    exe = shutil.which("tshark")
    if exe is None:
        if os.environ.get("CI") or os.environ.get("L4SLAB_REQUIRE_ROOT_TESTS") == "1":
            pytest.fail("tshark is missing (.ci/run installs it with apt-get)")
        pytest.skip("tshark is not installed (apt-get install tshark)")
    return exe


def test_pcap_is_read_by_tshark_with_ecn_bits_and_verdict_comments(tmp_path):
    import subprocess

    tshark = _tshark()
    scen = copy.deepcopy(SHORT_BASE)
    scen["duration"] = "1s"
    scen["output"] = {"packets": True}
    (tmp_path / "s.toml").write_text(dumps_toml(scen))
    pcap = tmp_path / "b.pcapng"
    res = invoke("run", tmp_path / "s.toml", "-o", tmp_path / "r", "--pcap", pcap,
                 "--no-figures")
    assert res.exit_code == 0, res.output
    out = subprocess.run(
        [tshark, "-r", str(pcap), "-T", "fields", "-e", "frame.time_epoch", "-e",
         "ip.dsfield.ecn", "-e", "tcp.srcport", "-e", "frame.comment", "-e", "frame.len"],
        capture_output=True, text=True, check=True, timeout=120).stdout.splitlines()
    pk = load_packets(tmp_path / "r")
    # One frame per packet record of packets.parquet, in the same order and instants (ns).
    assert len(out) == len(pk) > 100
    rows = [line.split("\t") for line in out]
    t_pcap = np.array([float(r[0]) for r in rows])
    assert np.allclose(t_pcap, pk["t_s"].to_numpy(), atol=2e-6)
    for r, (_, p) in zip(rows, pk.iterrows(), strict=True):
        ecn, port, comment = int(r[1]), int(r[2]), r[3]
        verdict = str(p["verdict"])
        assert port == 10000 + int(p["flow"])
        assert f"verdict={verdict} queue={p['queue']} flow={int(p['flow'])}" in comment
        # DualPI2 classifies by codepoint: L holds ECT(1) (01) and CE (11), C the rest; a
        # packet the AQM marked leaves it with CE.
        if verdict == "mark":
            assert ecn == 3
        elif p["queue"] == "L":
            assert ecn == 1
        else:
            assert ecn in (0, 2)
    ecns = [int(r[1]) for r in rows]
    assert ecns.count(3) == int((pk["verdict"] == "mark").sum()) > 0
    assert ecns.count(1) == int(((pk["queue"] == "L") & (pk["verdict"] != "mark")).sum()) > 0
    # Nanosecond resolution: if_tsresol = 9 keeps sub-microsecond instants.
    info = subprocess.run([tshark, "-r", str(pcap), "-c", "1", "-T", "fields", "-e",
                           "frame.time_epoch"], capture_output=True, text=True,
                          check=True, timeout=60).stdout.strip()
    assert len(info.split(".")[1]) == 9
    # Never overwritten.
    res = invoke("run", tmp_path / "s.toml", "-o", tmp_path / "r2", "--pcap", pcap)
    assert res.exit_code == 2 and "exists" in res.output


def load_packets(run_dir: Path):
    from l4slab.results import load_run

    return load_run(run_dir).packets


# --- progress on long runs --------------------------------------------------------------------

def test_progress_counter_advances_to_the_duration_and_the_bar_draws_on_a_terminal():
    import io
    import threading

    from rich.console import Console

    from l4slab import _core
    from l4slab.progress import run_with_progress
    from l4slab.runner import simulate

    scen = copy.deepcopy(SHORT_BASE)
    scen["duration"] = "20s"
    prog = _core.Progress()
    seen: list[float] = []
    th = threading.Thread(target=lambda: simulate(scen, ".", progress=prog))
    th.start()
    while th.is_alive():
        seen.append(prog.sim_s())
        th.join(0.005)
    seen.append(prog.sim_s())
    # Non-decreasing simulated time, never past the duration, ending at it.
    assert seen == sorted(seen) and seen[-1] == 20.0 and max(seen) <= 20.0

    buf = io.StringIO()
    term = Console(file=buf, force_terminal=True, width=120)
    r = run_with_progress(term, "sim", 20.0, lambda p: simulate(scen, ".", progress=p))
    assert r.summary["duration_s"] == 20.0
    assert "s simulated" in buf.getvalue() and "ETA" in buf.getvalue()
    # Not a terminal: no bar at all.
    buf = io.StringIO()
    run_with_progress(Console(file=buf, force_terminal=False), "sim", 20.0,
                      lambda p: simulate(scen, ".", progress=p))
    assert buf.getvalue() == ""


# --- replications that are copies are flagged ---------------------------------------------------

def _cbr_sweep(tmp_path: Path, jitter: str) -> Path:
    """A CBR through a FIFO: nothing random but the start offsets."""
    base = {"seed": 1, "duration": "1s", "link": {"rate": "10mbit"},
            "aqm": {"kind": "fifo", "limit": 50},
            "flows": [{"cc": "cbr", "rtt": "20ms", "rate": "12mbit", "start_jitter": jitter},
                      {"cc": "cbr", "rtt": "20ms", "rate": "1mbit", "start_jitter": jitter}]}
    (tmp_path / "base.toml").write_text(dumps_toml(base))
    sw = tmp_path / f"sw{jitter}.toml"
    sw.write_text('base = "base.toml"\nreplications = 3\n')
    return sw


def test_identical_replications_are_flagged_and_jitter_makes_them_differ(tmp_path):
    out0, out1 = tmp_path / "zero", tmp_path / "jit"
    assert invoke("sweep", _cbr_sweep(tmp_path, "0s"), "-o", out0, "-j", "1").exit_code == 0
    assert invoke("sweep", _cbr_sweep(tmp_path, "20ms"), "-o", out1, "-j", "1").exit_code == 0
    # Without jitter the three seeds give the same run: flagged, no ± 0 CI.
    res = invoke("summary", "--group", "--format", "csv", out0)
    assert res.exit_code == 0
    assert res.output.splitlines()[1].startswith("3 identical,") and "±" not in res.output
    assert "identical" in res.output.splitlines()[-1]  # the warning (stderr is mixed in)
    html = (out0 / "report.html").read_text()
    assert "are identical runs" in html
    # With jitter the seeds differ: a CI, no warning.
    res = invoke("summary", "--group", "--format", "csv", out1)
    assert res.output.splitlines()[1].startswith("3,") and "±" in res.output
    assert "identical" not in res.output
    assert "are identical runs" not in (out1 / "report.html").read_text()
    # validate names the group of copies.
    res = invoke("validate", out0 / "runs", out1 / "runs", "-o", tmp_path / "v",
                 "--bootstrap", "50", width=200)
    assert "the runs of group A" in res.output and "group B" not in res.output

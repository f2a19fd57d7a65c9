"""`l4slab emulate SCENARIO.toml` (scenario mode): the scenario's own [[flows]] as l4s-flow
senders through the emulator; refusals of what it cannot run faithfully; the senders' rows in
the simulator's layout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from l4slab.emuflows import (
    MSS_OFFSET,
    RT_PORT,
    UNLIMITED_RATE,
    plan_scenario,
    scenario_flows,
    scenario_frames,
)
from l4slab.scenario import ScenarioError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_emulate import EMU_BIN, l4slab, need_root  # noqa: E402

TWO_FLOWS = """
seed = 1
duration = "6s"
warmup = "1s"
[link]
rate = "20mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "prague"
rtt = "20ms"
[[flows]]
cc = "cubic"
rtt = "20ms"
"""


def doc(extra_flow: str = "", **top: str) -> dict:
    import tomllib

    d = tomllib.loads(TWO_FLOWS + extra_flow)
    d.update(top)
    return d


# --- the plan --------------------------------------------------------------------------------

def test_plan_expands_count_in_simulator_order_with_classes_and_delays(tmp_path):
    d = doc('[[flows]]\ncc = "dctcp"\nrtt = "20ms"\ncount = 2\nstart = "2s"\nstop = "4s"\n'
            'mss = 1200\nstart_jitter = "0s"\n')
    plan = plan_scenario(d, tmp_path)
    assert [(f.index, f.entry, f.cc, f.klass) for f in plan.flows] == [
        (0, 0, "prague", "L4S"), (1, 1, "cubic", "Classic"), (2, 2, "dctcp", "Classic"),
        (3, 2, "dctcp", "Classic")]
    f = plan.flows[2]
    assert (f.start_s, f.end_s, f.mss) == (2.0, 4.0, 1200 - MSS_OFFSET)
    assert plan.flows[0].end_s == 6.0 and plan.flows[0].mss is None
    # rtt/2 each way; the ACK direction is not rate-limited (the simulator's ACK path).
    assert plan.doc["emulator"] == {"delay": "10ms", "downlink": {"rate": UNLIMITED_RATE}}
    assert plan.base_rtt_ms == 20.0
    # The simulator's own classification: DCTCP asks for classic ECN (ECT(0)) unless told
    # otherwise, so it is Classic above; with ecn = "l4s" it is L4S, as bbr3 is.
    d = doc('[[flows]]\ncc = "dctcp"\nrtt = "20ms"\necn = "l4s"\n'
            '[[flows]]\ncc = "bbr3"\nrtt = "20ms"\necn = "l4s"\n')
    assert [f.klass for f in plan_scenario(d, tmp_path).flows][2:] == ["L4S", "L4S"]


def test_an_emulator_delay_in_the_scenario_wins(tmp_path):
    d = doc(emulator={"delay": "5ms", "uplink": {"delay": "15ms"}})
    plan = plan_scenario(d, tmp_path)
    assert plan.doc["emulator"]["delay"] == "5ms"
    assert plan.base_rtt_ms == 20.0  # 15 ms up + 5 ms down


@pytest.mark.parametrize("extra, top, field, why", [
    ('[[flows]]\ncc = "cubic"\nrtt = "40ms"\n', {}, "flows[2].rtt", "one path delay"),
    ('[[flows]]\ncc = "cbr"\nrtt = "20ms"\nrate = "1mbit"\n', {}, "flows[2].cc",
     "TCP and real-time video only"),
    ('[[flows]]\ncc = "cubic"\nrtt = "20ms"\ninit_cwnd = 4\n', {}, "flows[2].init_cwnd",
     "always uses 10"),
    ('[[flows]]\ncc = "cubic"\nrtt = "20ms"\nsack = false\n', {}, "flows[2].sack",
     "always uses true"),
    ('[[flows]]\ncc = "cubic"\nrtt = "20ms"\npacing = false\n', {}, "flows[2].pacing",
     "always uses true"),
    ('[[flows]]\ncc = "cubic"\nrtt = "20ms"\nmss = 80\n', {}, "flows[2].mss", "mss ≥ 84"),
    ('[[flows]]\ncc = "cubic"\nrtt = "20ms"\ntso = true\n', {}, "flows[2].tso", "no TSO"),
    ('[[flows]]\ncc = "cubic"\nrtt = "20ms"\ngro = true\n', {}, "flows[2].gro", "no GRO"),
    ('[[flows]]\ncc = "prague"\nrtt = "20ms"\nqdisc = "fq"\n', {}, "flows[2].qdisc",
     "paces inside the sender"),
    ('[[flows]]\ncc = "prague"\nrtt = "20ms"\nprague_cwnd_mode = 0\n', {},
     "flows[2].prague_cwnd_mode", "mode 2"),
    ("", {"ack_link": {"rate": "1mbit"}}, "ack_link", "[emulator.downlink]"),
    ("", {"workloads": [{"load": 0.3, "sizes": "web-search", "cc": "cubic", "rtt": "40ms"}]},
     "workloads[0].rtt", "one path delay"),
    ("", {"probes": [{"rtt": "20ms"}, {"rtt": "30ms"}]}, "probes[1].rtt", "one path delay"),
    ("", {"probes": [{"rtt": "20ms", "packet_size": 39}]}, "probes[0].packet_size", "≥ 40"),
])
def test_what_l4s_flow_cannot_honour_is_refused_naming_the_field(tmp_path, extra, top, field,
                                                                 why):
    with pytest.raises(ScenarioError) as e:
        plan_scenario(doc(extra, **top), tmp_path)
    msg = str(e.value)
    assert msg.startswith(f"{field}:"), msg
    assert why in msg, msg


@pytest.mark.parametrize("key, value", [
    ("loss", 0.01), ("jitter", "2ms"), ("steps", [{"at": "2s", "rate": "10mbit"}]),
    ("model", "txop1ms"), ("gilbert", {"p": 0.01, "r": 0.5, "loss_good": 0.0,
                                       "loss_bad": 0.5}),
])
def test_link_features_the_emulator_applies_both_ways_are_refused(tmp_path, key, value):
    d = doc()
    d["link"][key] = value
    with pytest.raises(ScenarioError) as e:
        plan_scenario(d, tmp_path)
    assert str(e.value).startswith(f"link.{key}:"), str(e.value)
    assert "both directions" in str(e.value)


def test_the_simulators_own_errors_come_first(tmp_path):
    d = doc()
    d["flows"][1]["rtt"] = "fast"
    with pytest.raises(ScenarioError) as e:
        plan_scenario(d, tmp_path)
    assert "flows[1].rtt" in str(e.value)


def test_cli_refusal_is_one_line_exit_2_and_nothing_runs(tmp_path):
    scen = tmp_path / "s.toml"
    scen.write_text(TWO_FLOWS.replace('rtt = "20ms"\n"""', 'rtt = "20ms"\n""').replace(
        'cc = "cubic"\nrtt = "20ms"', 'cc = "cubic"\nrtt = "40ms"'))
    out = tmp_path / "out"
    r = l4slab(str(scen), "-o", str(out), "--quiet")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0, r.stderr
    assert "flows[1].rtt" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()
    # A flag that only makes sense with a COMMAND is refused in scenario mode, named.
    r = l4slab(str(scen), "--rate", "10mbit", "-o", str(out))
    assert r.returncode == 2 and "--rate: not available in scenario mode" in r.stderr


# --- the senders' rows in the simulator's layout ---------------------------------------------

def test_sender_rows_become_simulator_rows_and_summary(tmp_path):
    # Sender 7 (flow 1 of the scenario) reports every 16 ms with a 5 ms offset, delivering
    # 2000 bytes per report from t = 0.005; sender 9 (flow 0) never wrote a row.
    t = 0.005 + 0.016 * np.arange(200)
    senders = pd.DataFrame({
        "t_s": t, "flow": "udp 10.77.0.1:4000>10.77.0.2:5201", "cc": "cubic",
        "delivered_bytes": 2000.0 * np.arange(1, 201), "tput_mbps": 1.0,
        "cwnd_pkts": 10.0, "srtt_ms": np.where(t < 1.0, 50.0, np.where(t <= 3.0, 30.0, 90.0)),
        "pacing_mbps": 2.0,
        "ce_acked": np.arange(200, dtype=float), "_pid": 7})
    launch = {"duration_s": 3.2, "flows": [
        {"index": 0, "cc": "prague", "klass": "L4S", "pid": 9, "rtt_ms": 20.0,
         "start_s": 0.0, "bytes": None, "exit": 130, "ended_by": "end time"},
        {"index": 1, "cc": "cubic", "klass": "Classic", "pid": 7, "rtt_ms": 20.0,
         "start_s": 0.0, "bytes": 100000, "exit": 0, "ended_by": "itself"}]}
    grid = 0.016 * np.arange(1, 201)
    bott = [{"flow": "udp 10.77.0.1:4000>10.77.0.2:5201", "class": "Classic", "drops": 4}]
    flows, rows, diag = scenario_flows(launch, senders, grid, bott, (1.0, 2.99))
    assert list(flows["flow"].unique()) == [0, 1]
    f1 = flows[flows["flow"] == 1].reset_index(drop=True)
    assert len(f1) == len(grid) and (f1["cc"] == "cubic").all()
    assert (f1["class"] == "Classic").all()
    # Held values: at t = 0.016 the last report is the one at 0.005 (2000 bytes).
    assert f1["delivered_bytes"].iloc[0] == 2000.0
    # One report per 16 ms interval: 2000 bytes per 16 ms = 1.0 Mb/s in every later row.
    assert np.allclose(f1["tput_mbps"].iloc[1:], 2000 * 8 / 0.016 / 1e6)
    # Summary over (1, 2.99]: 2000 bytes every 16 ms is exactly 1.0 Mb/s. The counter is
    # interpolated at the window's ends (the last reports before them, at 0.997 and 2.981 s,
    # would give 124 intervals in 1.99 s: 0.997 Mb/s).
    assert rows[1]["tput_mbps"] == pytest.approx(1.0)
    # srtt: the mean of the samples inside the window only.
    assert rows[1]["srtt_ms"] == 30.0 and rows[1]["drops"] == 4
    # CE: one per report; 62.19 and 186.56 at the ends, rounded (held values: 124).
    assert rows[1]["ce_marks"] == 125
    # 100000 bytes are reached by the 50th report.
    assert rows[1]["fct_s"] == pytest.approx(t[49])
    assert rows[1]["id"] == 1 and rows[1]["base_rtt_ms"] == 20.0
    assert rows[0]["tput_mbps"] == 0.0 and (flows[flows["flow"] == 0]["tput_mbps"] == 0).all()
    assert diag["problems"] == ["flow 0 (prague): no rows from its sender"]


# --- through the emulator (root) -------------------------------------------------------------

def test_two_flows_run_through_the_emulator_as_in_the_scenario(tmp_path):
    need_root()
    scen = tmp_path / "pc.toml"
    scen.write_text(TWO_FLOWS + "[output]\npackets = true\n")
    out = tmp_path / "run"
    log = tmp_path / "up.log"
    r = l4slab(str(scen), "-o", str(out), "--quiet", "--uplink-log", str(log), timeout=90)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert [(f["id"], f["cc"], f["class"]) for f in s["flows"]] == [
        (0, "prague", "L4S"), (1, "cubic", "Classic")]
    # The Mahimahi log of the uplink (the senders' side): one `+` line per packet that entered
    # the bottleneck, as the emulator counted them.
    up = next(d for d in json.loads((out / "emulator.json").read_text())["directions"]
              if d["name"] == "uplink")
    arrivals = sum(1 for ln in log.read_text().splitlines() if ln.split(" ")[1:2] == ["+"])
    assert arrivals == up["sent_pkts"] > 1000
    mode = s["emulator"]["scenario_mode"]
    assert mode["problems"] == [], mode["problems"]
    assert [x["ended_by"] for x in mode["senders"]] == ["end time", "end time"]
    assert s["emulator"]["primary_direction"] == "uplink"
    # The run lasts the scenario's duration (plus the emulator's start and stop).
    assert 6.0 <= s["duration_s"] < 7.0
    assert s["link"]["utilisation"] >= 0.85
    # Goodput over (warmup, duration]: a 1500-byte datagram carries 1428 payload bytes.
    assert 0.85 * 20 * 1428 / 1500 <= sum(f["tput_mbps"] for f in s["flows"]) \
        <= 20 * 1428 / 1500
    assert all(f["tput_mbps"] > 0.5 for f in s["flows"])
    q = {x["name"]: x for x in s["queues"]}
    # DualPI2 (Linux defaults): the L queue is CE-marked above step_thresh = 1 ms, so the
    # scalable flow holds it below that on average; PI2 steers the C queue to target = 15 ms.
    assert q["L"]["sojourn_ms"]["mean"] < 1.0, q["L"]
    assert 7.5 <= q["C"]["sojourn_ms"]["mean"] <= 22.5, q["C"]
    assert q["L"]["marks"] > 0 and s["flows"][0]["ce_marks"] > 0
    flows = pd.read_parquet(out / "flows.parquet")
    assert sorted(flows["flow"].unique()) == [0, 1]
    assert dict(flows.groupby("flow")["cc"].first().astype(str)) == {0: "prague", 1: "cubic"}
    assert dict(flows.groupby("flow")["class"].first().astype(str)) == {0: "L4S", 1: "Classic"}
    samples = pd.read_parquet(out / "samples.parquet")
    # One flow row per flow at every sampling instant, as the simulator writes them.
    assert len(flows) == 2 * samples["t_s"].nunique()
    # Per-packet rows name the scenario's flows too: Prague's ECT(1) data goes through the
    # L queue (its few Not-ECT control datagrams, the handshake and the end, through C),
    # Cubic's Not-ECT packets through the C queue.
    pk = pd.read_parquet(out / "packets.parquet")
    in_l = pk.assign(l=pk["queue"].astype(str) == "L").groupby("flow")["l"].agg(["sum", "size"])
    assert in_l.loc[0, "sum"] >= in_l.loc[0, "size"] - 5 and in_l.loc[0, "size"] > 1000, in_l
    assert in_l.loc[1, "sum"] == 0 and in_l.loc[1, "size"] > 500, in_l
    # Other packets are not the senders': e.g. ICMP port unreachable from the client once its
    # senders have ended (ids after the scenario's, named in summary.emulator.flow_keys).
    keys = s["emulator"]["flow_keys"]
    for fid in set(pk["flow"].unique()) - {0, 1}:
        assert not keys[fid - 2].startswith("udp "), keys[fid - 2]
    r2 = subprocess.run([sys.executable, "-m", "l4slab.cli", "summary", str(out)],
                        capture_output=True, text=True, timeout=60)
    assert r2.returncode == 0 and "prague" in r2.stdout, r2.stderr


def test_a_scenario_without_flows_still_runs_a_command(tmp_path):
    if not EMU_BIN.exists():
        pytest.skip(f"needs {EMU_BIN}")
    need_root()
    scen = tmp_path / "b.toml"
    scen.write_text('[link]\nrate = "10mbit"\n[aqm]\nkind = "fifo"\n')
    r = l4slab(str(scen), "-o", str(tmp_path / "o"), "--quiet", "--", "sh", "-c", "exit 3")
    assert r.returncode == 3, r.stderr


# --- l4slab sweep --emulate ------------------------------------------------------------------

ONE_FLOW = """
seed = 1
duration = "2s"
warmup = "0.5s"
[link]
rate = "10mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "prague"
rtt = "10ms"
"""


def sweep_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "l4slab.cli", "sweep", *args],
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_sweep_emulate_refuses_a_grid_point_before_anything_runs(tmp_path):
    (tmp_path / "base.toml").write_text(ONE_FLOW + '[[flows]]\ncc = "cubic"\nrtt = "10ms"\n')
    sw = tmp_path / "sw.toml"
    sw.write_text('base = "base.toml"\n[grid]\n"flows.1.rtt" = ["10ms", "30ms"]\n')
    out = tmp_path / "out"
    r = sweep_cli(str(sw), "--emulate", "-o", str(out))
    assert r.returncode == 2, r.stderr
    assert "grid point 30ms: flows[1].rtt" in r.stderr.replace("\n", " ")
    assert "Traceback" not in r.stderr and not (out / "runs").exists()
    r = sweep_cli(str(sw), "--emulate", "-j", "2", "-o", str(out))
    assert r.returncode == 2 and "one run at a time" in r.stderr


def test_emulator_engine_labels_a_grid_point_as_the_sweep_reports_do(tmp_path):
    """The emulator's refusal of a grid point names it with `sweeps.point_label` (a table
    variant by its values, points joined by " · "), as the simulator's refusals do."""
    from l4slab.emulate import EmulatorEngine
    from l4slab.sweeps import load_sweep_spec, plan, point_label

    (tmp_path / "base.toml").write_text(ONE_FLOW + '[[flows]]\ncc = "cubic"\nrtt = "10ms"\n')
    spec = load_sweep_spec({"base": "base.toml",
                            "grid": {"aqm": [{"kind": "fifo", "limit": 100}],
                                     "flows.1.rtt": ["10ms", "30ms"]}}, tmp_path)
    tasks = plan(spec)
    assert point_label(tasks[-1].params) == "fifo limit=100 · 30ms"
    with pytest.raises(ScenarioError) as e:
        EmulatorEngine().validate(tasks)
    assert str(e.value).startswith("grid point fifo limit=100 · 30ms: flows[1].rtt"), e.value


def test_sweep_emulate_names_the_remedy_when_the_emulator_cannot_run(request):
    need_root()
    import shutil
    import stat

    if Path("/dev/net/tun").stat().st_mode & stat.S_IROTH:
        pytest.skip("/dev/net/tun is open to every user here: nobody can run the emulator")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv")
    import tempfile

    # pytest's tmp_path sits under a directory only root can enter.
    work = Path(tempfile.mkdtemp(prefix="l4slab-nobody-"))
    request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    work.chmod(0o777)
    (work / "base.toml").write_text(ONE_FLOW)
    (work / "sw.toml").write_text('base = "base.toml"\n')
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        sys.executable, "-m", "l4slab.cli", "sweep", "sw.toml", "--emulate",
                        "-o", "out"], capture_output=True, text=True, timeout=60, cwd=work,
                       env={"PATH": "/usr/bin:/bin", "HOME": str(work),
                            "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python"),
                            "L4SLAB_EMU_BIN": str(EMU_BIN)})
    assert r.returncode == 2, r.stderr
    msg = " ".join(r.stderr.split())
    assert "the emulator cannot run here" in msg and "chmod 0666 /dev/net/tun" in msg, msg
    assert not (work / "out" / "runs").exists() or not any((work / "out" / "runs").iterdir())


def test_sweep_emulate_runs_each_point_and_resumes(tmp_path):
    need_root()
    (tmp_path / "base.toml").write_text(ONE_FLOW)
    sw = tmp_path / "sw.toml"
    sw.write_text('base = "base.toml"\n[grid]\n"link.rate" = ["10mbit", "20mbit"]\n')
    out = tmp_path / "out"
    r = sweep_cli(str(sw), "--emulate", "-o", str(out))
    assert r.returncode == 0, r.stderr
    runs = out / "runs"
    assert sorted(p.name for p in runs.iterdir()) == ["p000-r00", "p001-r00"]
    tput = {}
    for name in ("p000-r00", "p001-r00"):
        s = json.loads((runs / name / "summary.json").read_text())
        ident = json.loads((runs / name / "params.json").read_text())
        assert ident["engine"] == "emulator"
        assert s["flows"][0]["cc"] == "prague" and s["flows"][0]["class"] == "L4S"
        tput[ident["params"]["link.rate"]] = s["flows"][0]["tput_mbps"]
        assert s["link"]["capacity_mbps"] == pytest.approx(
            float(ident["params"]["link.rate"][:-4]))
    # Each point ran at its own rate: goodput ≤ rate × 1428/1500, and the 20 Mb/s point
    # carries more than the 10 Mb/s one could.
    assert tput["10mbit"] <= 10 * 1428 / 1500 and tput["20mbit"] > 10.0, tput
    idx = pd.read_parquet(out / "sweep.parquet")
    assert list(idx["status"]) == ["ok", "ok"]
    # Resume: a finished run is kept as it is; an unfinished one (no summary.json) reruns.
    kept = (runs / "p000-r00" / "summary.json").read_bytes()
    (runs / "p001-r00" / "summary.json").unlink()
    r = sweep_cli(str(sw), "--emulate", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "resuming: 1 of 2 runs already finished" in r.stdout, r.stdout
    assert (runs / "p000-r00" / "summary.json").read_bytes() == kept
    assert (runs / "p001-r00" / "summary.json").exists()
    assert not [p for p in runs.iterdir() if p.name.startswith(".")]
    # A simulator sweep may not write into this directory, nor this one into a simulator's.
    r = sweep_cli(str(sw), "-o", str(out))
    assert r.returncode == 2 and "holds emulator runs" in " ".join(r.stderr.split()), r.stderr


# --- the launcher (no root: a stand-in for l4s-flow) -----------------------------------------

FAKE_FLOW = """#!/bin/sh
# Records its arguments; "--cc reno" fails at once, a -t flow sends for -t seconds, others
# (sized transfers) run until they are ended.
echo "$@" > "$L4SLAB_FLOW_DIR/args-$$"
case "$*" in *"--cc reno"*) echo "no route" >&2; exit 3;; esac
t=$(echo "$@" | sed -n 's/.*-t \\([0-9.]*\\).*/\\1/p')
trap 'exit 130' TERM
if [ -n "$t" ]; then sleep "$t"; : > "$L4SLAB_FLOW_DIR/done-$$"; exit 0; fi
while :; do sleep 0.05; done
"""


def run_launcher(tmp_path, flows, duration_s):
    import os
    import time

    from l4slab.emuflows import LAUNCHER

    fake = tmp_path / "fake-flow"
    fake.write_text(FAKE_FLOW)
    fake.chmod(0o755)
    fdir = tmp_path / "flows"
    fdir.mkdir()
    plan = tmp_path / "plan.json"
    base = {"entry": 0, "klass": "Classic", "ecn": None, "bytes": None, "mss": None,
            "seed": 1, "rtt_ms": 20.0}
    plan.write_text(json.dumps({"duration_s": duration_s,
                                "flows": [{**base, **f} for f in flows]}))
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    t0_real_ns = time.time_ns()
    env = {**os.environ, "L4SLAB_T0_NS": str(t0), "L4SLAB_SERVER": "10.77.0.2",
           "L4SLAB_FLOW_DIR": str(fdir)}
    r = subprocess.run([sys.executable, str(LAUNCHER), str(plan), str(fake)], env=env,
                       capture_output=True, text=True, timeout=30)
    wall = (time.clock_gettime_ns(time.CLOCK_MONOTONIC) - t0) / 1e9
    launch = json.loads((fdir / "launch.json").read_text())
    args = {int(p.name.split("-")[1]): p.read_text().split() for p in fdir.glob("args-*")}
    flows_by_index = {f["index"]: f for f in launch["flows"]}
    # When each timed stand-in finished its sleep, on the launcher's clock (its done-PID
    # file's mtime, against the wall clock read beside L4SLAB_T0_NS).
    flows_by_index[-1] = {"ready_s": launch["ready_s"],
                          "done_s": {int(p.name.split("-")[1]):
                                     (p.stat().st_mtime_ns - t0_real_ns) / 1e9
                                     for p in fdir.glob("done-*")}}
    return r, wall, flows_by_index, args


def test_launcher_starts_and_ends_each_flow_at_its_times(tmp_path):
    r, wall, fl, args = run_launcher(tmp_path, [
        {"index": 0, "cc": "prague", "start_s": 0.0, "end_s": 1.5},
        {"index": 1, "cc": "cubic", "start_s": 0.5, "end_s": 1.0, "ecn": "classic",
         "mss": 1180},
        {"index": 2, "cc": "cubic", "start_s": 0.2, "end_s": 0.8, "bytes": 10**9}], 1.5)
    assert r.returncode == 0, r.stderr
    # The run ends at the duration (plus the stand-ins' exit), not before.
    assert 1.5 <= wall < 3.5, wall
    # Each flow starts at its start_s, or when the launcher is ready if that is later (its
    # Python start-up counts from L4SLAB_T0_NS, and takes tenths of a second on a loaded host).
    ready = fl[-1]["ready_s"]
    for i, start in ((0, 0.0), (1, 0.5), (2, 0.2)):
        due = max(start, ready)
        assert due <= fl[i]["started_s"] < due + 0.3, (fl[i], ready)
    a1 = args[fl[1]["pid"]]
    assert a1[:4] == ["-c", "10.77.0.2", "--cc", "cubic"]
    assert a1[a1.index("--ecn") + 1] == "classic" and a1[a1.index("--mss") + 1] == "1180"
    # -t counts to the flow's end time from its launch: the launcher reads the clock just
    # before starting it and records started_s just after, so -t is at least the time left
    # at started_s, and more by at most the start itself (bounded at 0.3 s as above).
    t_arg = float(a1[a1.index("-t") + 1])
    assert -1e-5 <= t_arg - (1.0 - fl[1]["started_s"]) < 0.3, (t_arg, fl[1])
    assert fl[1]["ended_by"] == "itself" and fl[1]["exit"] == 0
    # Its exit is recorded when it happens: not before its end time (it slept -t from after
    # its start), and within 0.25 s of the stand-in's own end (the launcher polls every
    # 10 ms). The stand-in's start-up (sh, sed) is the host's and is not bounded here.
    done = fl[-1]["done_s"][fl[1]["pid"]]
    assert fl[1]["ended_s"] >= 1.0 - 0.02, fl[1]
    assert -0.02 <= fl[1]["ended_s"] - done <= 0.25, (fl[1], done)
    # A sized transfer still running at its end time is ended there.
    a2 = args[fl[2]["pid"]]
    assert a2[a2.index("-n") + 1] == str(10**9) and "-t" not in a2
    assert fl[2]["ended_by"] == "end time" and fl[2]["ended_s"] == pytest.approx(0.8, abs=0.25)
    # A timed flow whose end is the duration is ended with the run.
    assert fl[0]["ended_by"] in ("end time", "itself")


def test_launcher_reports_a_failed_sender_and_exits_1(tmp_path):
    r, _, fl, _ = run_launcher(tmp_path, [
        {"index": 0, "cc": "reno", "start_s": 0.0, "end_s": 0.5},
        {"index": 1, "cc": "cubic", "start_s": 0.0, "end_s": 0.5}], 0.5)
    assert r.returncode == 1
    assert "flow 0 (reno): l4s-flow exited with status 3: no route" in r.stderr
    assert fl[0]["exit"] == 3 and fl[1]["exit"] in (0, 130)


def test_a_bdp_limit_reaches_the_emulator_resolved_as_the_simulator_does(tmp_path):
    # 20 Mb/s · 20 ms / 8 = 50 000 B = 33.3 packets of 1500 B; 2 BDP = 66.7 -> 67 packets.
    d = doc()
    d["aqm"]["limit"] = "2bdp"
    plan = plan_scenario(d, tmp_path)
    assert plan.doc["aqm"] == {"kind": "dualpi2", "limit": 67}
    assert d["aqm"]["limit"] == "2bdp"  # the caller's document is untouched


def test_senders_start_at_the_simulators_jittered_starts(tmp_path):
    # Default start_jitter: one base RTT (20 ms) after `start`, the simulator's own draw.
    import json as _json

    from l4slab import _core

    d = doc()
    plan = plan_scenario(d, tmp_path)
    starts = _json.loads(_core.effective_settings(_json.dumps(d), "json", str(tmp_path))
                         )["flow_start_ns"]
    assert [f.start_s for f in plan.flows] == [t / 1e9 for t in starts]
    assert all(0.0 <= f.start_s < 0.020 for f in plan.flows)
    assert len(set(starts)) == 2


# --- real-time video flows ---------------------------------------------------------------------

RT_FLOW = """
seed = 1
duration = "4s"
warmup = "1s"
[link]
rate = "10mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "rt-prague"
rtt = "20ms"
fps = 30
deadline = "80ms"
max_rate = "4mbit"
"""


def test_an_rt_flow_is_planned_as_an_rt_sender_with_its_keys(tmp_path):
    import tomllib

    d = tomllib.loads(RT_FLOW + '[[flows]]\ncc = "cubic"\nrtt = "20ms"\n')
    plan = plan_scenario(d, tmp_path)
    rt, bulk = plan.flows
    assert (rt.app, rt.port, rt.klass, rt.deadline_ms) == ("rt", RT_PORT, "L4S", 80.0)
    assert rt.rt_flags == ["--fps", "30", "--deadline", "80ms", "--max-rate", "4mbit"]
    assert (bulk.app, bulk.port, bulk.rt_flags) == ("bulk", None, None)
    # One receiver per kind, the rt one on its own port (stacks.server_shell waits for them).
    srv = plan.servers("/x/l4s-flow")
    assert srv == f"/x/l4s-flow -s -q & /x/l4s-flow -s --app rt -p {RT_PORT} -q"
    # Without an rt key the deadline is the simulator's default (100 ms).
    d2 = tomllib.loads(RT_FLOW.replace('deadline = "80ms"\n', ""))
    assert plan_scenario(d2, tmp_path).flows[0].deadline_ms == 100.0
    assert plan_scenario(d2, tmp_path).servers("f") == f"f -s --app rt -p {RT_PORT} -q"


def test_rt_sender_args_carry_the_app_port_and_keys():
    from l4slab.emu_launcher import _argv

    f = {"cc": "rt-gcc", "seed": 3, "ecn": "classic", "mss": None, "bytes": None,
         "app": "rt", "port": RT_PORT, "rt_flags": ["--fps", "30"]}
    assert _argv("l4s-flow", "10.0.0.2", f, 2.5) == [
        "l4s-flow", "-c", "10.0.0.2", "--cc", "rt-gcc", "-i", "0", "-q", "--seed", "3",
        "--ecn", "classic", "-p", str(RT_PORT), "--app", "rt", "--fps", "30", "-t", "2.500000"]


def test_frame_rows_get_the_simulators_rows_and_block(tmp_path):
    # The simulator's own frame rows of an rt flow, written as l4s-flow writes frames-<pid>.csv,
    # come back with the same rows and the same flows[0].frames block: one definition.
    from l4slab import run

    scen = tmp_path / "rt.toml"
    # A 22 ms deadline: RT-Prague's frames take 11-23 ms here (10 ms one way, up to its 10 ms
    # frame budget), so some are late and most are not.
    scen.write_text(RT_FLOW.replace('rate = "10mbit"', 'rate = "2mbit"')
                    .replace('deadline = "80ms"', 'deadline = "22ms"'))
    sim = run(scen, out_dir=tmp_path / "sim", figures=False)
    fr = sim.app["frames"]
    fr = fr[fr["flow"] == 0]
    assert fr["late"].sum() > 0 and fr["latency_ms"].notna().sum() > 50
    # The sender also reported the frames the simulator drops as of unknown fate: an
    # incomplete frame captured less than a deadline (22 ms) before the end (4 s).
    extra = pd.DataFrame({"frame": [10**6], "capture_s": [3.99], "bytes": [5000],
                          "latency_ms": [np.nan], "late": [1]})
    csv = pd.concat([fr.drop(columns="flow"), extra], ignore_index=True)
    (tmp_path / "flows").mkdir()
    csv.to_csv(tmp_path / "flows" / "frames-42.csv", index=False)
    launch = {"flows": [{"index": 0, "cc": "rt-prague", "app": "rt", "pid": 42,
                         "deadline_ms": 22.0}]}
    frames, blocks, problems = scenario_frames(launch, tmp_path / "flows", (1.0, 4.0))
    assert problems == []
    pd.testing.assert_frame_equal(frames.reset_index(drop=True), fr.reset_index(drop=True),
                                  check_exact=False, rtol=1e-12)
    assert blocks[0] == sim.summary["flows"][0]["frames"]


def test_missing_frame_rows_are_a_problem_not_a_crash(tmp_path):
    launch = {"flows": [{"index": 0, "cc": "rt-cbr", "app": "rt", "pid": 5,
                         "deadline_ms": 100.0},
                        {"index": 1, "cc": "cubic", "app": "bulk", "pid": 6}]}
    frames, blocks, problems = scenario_frames(launch, tmp_path, (0.0, 1.0))
    assert len(frames) == 0 and list(frames.columns) == [
        "flow", "frame", "capture_s", "bytes", "latency_ms", "late"]
    assert blocks == {} and len(problems) == 1 and "flow 0 (rt-cbr)" in problems[0]


def test_an_rt_flow_runs_through_the_emulator_with_frames(tmp_path):
    need_root()
    scen = tmp_path / "rt.toml"
    scen.write_text(RT_FLOW + '[[flows]]\ncc = "cubic"\nrtt = "20ms"\n')
    out = tmp_path / "run"
    r = l4slab(str(scen), "-o", str(out), "--quiet", timeout=60)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    mode = s["emulator"]["scenario_mode"]
    assert mode["problems"] == [], mode["problems"]
    assert [(f["cc"], f["class"]) for f in s["flows"]] == [("rt-prague", "L4S"),
                                                           ("cubic", "Classic")]
    block = s["flows"][0]["frames"]
    assert "frames" not in s["flows"][1]
    fr = pd.read_parquet(out / "frames.parquet")
    assert set(fr["flow"]) == {0}
    # 30 fps over (warmup, duration] = 3 s: 90 captures, less the few at the start (the sender
    # starts after the emulator) and at most a deadline's worth of unknown fate at the end.
    assert 80 <= block["frames"] <= 90, block
    assert block["frames"] == int((fr["capture_s"] >= 1.0).sum())
    done = fr[fr["latency_ms"].notna()]
    assert len(done) >= 80
    # Lower bound of a completed frame's latency: its bytes (IP datagrams, so at least the
    # frame's size) cross the 10 Mb/s bottleneck no faster than back to back from capture on,
    # and the last one then takes the one-way delay rtt/2 = 10 ms (the emulator's uplink delay).
    # Queueing, pacing over the frame budget and emulator lateness only add to it; both ends
    # stamp on CLOCK_MONOTONIC. 1 µs covers the CSV's rounding.
    bound_ms = 10.0 + done["bytes"].to_numpy() * 8 / 10e6 * 1e3
    assert (done["latency_ms"].to_numpy() >= bound_ms - 1e-3).all(), \
        done[done["latency_ms"] < bound_ms]
    # Through DualPI2's L queue next to Cubic, a 4 Mb/s video keeps most frames in time.
    assert block["latency_ms"]["p50"] < 80.0 and block["miss_ratio"] < 0.5, block

"""`[[flows]] stack` ("model" | "kernel" | "command") in the simulator and the emulator's scenario
mode, the kernel sender's TCP_INFO rows, and `l4slab crosscheck`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from l4slab.crosscheck import _ratio_ci, crosscheck, plan_crosscheck
from l4slab.emuflows import plan_scenario
from l4slab.scenario import ScenarioError
from l4slab.stacks import COMMAND_PORT_BASE, kernel_ccs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_helpers import invoke  # noqa: E402
from test_emulate import ROOT, need_root  # noqa: E402

FLOW_BIN = ROOT / "target" / "release" / "l4s-flow"
RATE_MBPS = 20.0
RTT_MS = 20.0
#: One BDP of 1500-byte packets at 20 Mb/s × 20 ms (33.3, rounded up).
BDP_PKTS = 34
#: Goodput ceiling: 1448 payload bytes per 1500-byte packet at the link rate.
GOODPUT_MAX_MBPS = RATE_MBPS * 1448 / 1500


def scenario(aqm: str, flows: str, duration: str = "6s", warmup: str = "2s") -> str:
    return f"""
seed = 1
duration = "{duration}"
warmup = "{warmup}"
[link]
rate = "{RATE_MBPS:g}mbit"
[aqm]
{aqm}
{flows}
"""


CUBIC_FIFO = scenario(f'kind = "fifo"\nlimit = {BDP_PKTS}',
                      f'[[flows]]\ncc = "cubic"\nrtt = "{RTT_MS:g}ms"\n')


def kernel(text: str) -> str:
    return text.replace('cc = "cubic"\n', 'cc = "cubic"\nstack = "kernel"\n')


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "l4slab.cli", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


# --- the simulator: stack changes nothing, is recorded, and is said once --------------------

def test_stack_changes_nothing_in_the_simulator_and_is_recorded(tmp_path):
    from l4slab.runner import run

    base = tomllib.loads(scenario(f'kind = "fifo"\nlimit = {BDP_PKTS}',
                                  '[[flows]]\ncc = "cubic"\nrtt = "20ms"\n', "2s", "1s"))
    with_stack = json.loads(json.dumps(base))
    with_stack["flows"][0]["stack"] = "kernel"
    a = run(base, tmp_path / "a", figures=False, report=False, base_dir=tmp_path)
    b = run(with_stack, tmp_path / "b", figures=False, report=False, base_dir=tmp_path)
    pd.testing.assert_frame_equal(a.flows, b.flows)
    pd.testing.assert_frame_equal(a.samples, b.samples)
    s = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert s["scenario"]["flows"][0]["stack"] == "kernel"


def test_run_says_once_that_stack_is_for_the_emulator(tmp_path):
    scen = tmp_path / "s.toml"
    scen.write_text(kernel(scenario('kind = "fifo"', '[[flows]]\ncc = "cubic"\nrtt = "20ms"\n',
                                    "1s", "0s")))
    r = cli("run", str(scen), "-o", str(tmp_path / "o"), "--no-figures")
    assert r.returncode == 0, r.stderr
    assert (r.stdout + r.stderr).count("applies to the emulator only") == 1


@pytest.mark.parametrize("flow, field, words", [
    ('stack = "command"\ncommand = "prog -c {host}"', "flows[0].command",
     "unknown placeholder {host}"),
    ('stack = "command"', "flows[0].command", "missing"),
    ('command = "prog {server}"', "flows[0].command", 'stack = "command" only'),
    ('stack = "kernal"', "flows[0].stack", "kernal"),
])
def test_bad_stack_fields_are_refused_naming_the_field(tmp_path, flow, field, words):
    from l4slab.runner import validate

    d = tomllib.loads(CUBIC_FIFO.replace('rtt = "20ms"', f'rtt = "20ms"\n{flow}'))
    with pytest.raises(ScenarioError) as e:
        validate(d)
    msg = str(e.value)
    assert field in msg and words in msg and "\n" not in msg, msg


# --- the emulator's plan: refusals in one line ----------------------------------------------

def test_kernel_prague_is_refused_naming_what_the_kernel_offers(tmp_path):
    d = tomllib.loads(CUBIC_FIFO.replace('cc = "cubic"', 'cc = "prague"\nstack = "kernel"'))
    if "prague" in kernel_ccs():
        pytest.skip("this kernel has tcp_prague")
    with pytest.raises(ScenarioError) as e:
        plan_scenario(d, tmp_path)
    msg = str(e.value)
    assert msg.startswith("flows[0].cc: \"prague\" is not a congestion control of this kernel")
    assert " ".join(kernel_ccs()) in msg and "\n" not in msg
    # Through the CLI: one line, exit 2, nothing run.
    scen = tmp_path / "p.toml"
    scen.write_text(kernel(CUBIC_FIFO).replace('cc = "cubic"', 'cc = "prague"'))
    r = cli("emulate", str(scen), "-o", str(tmp_path / "o"), "--quiet")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0, r.stderr
    assert "tcp_available_congestion_control" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()


def test_kernel_flows_must_agree_on_ecn_and_send_classic_ecn_only(tmp_path):
    two = CUBIC_FIFO + '[[flows]]\ncc = "reno"\nrtt = "20ms"\nstack = "kernel"\necn = "classic"\n'
    with pytest.raises(ScenarioError, match=r"flows\[1\]\.ecn: kernel flows share"):
        plan_scenario(tomllib.loads(kernel(two)), tmp_path)
    l4s = kernel(CUBIC_FIFO).replace('stack = "kernel"', 'stack = "kernel"\necn = "accecn"')
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.ecn: \"accecn\" cannot be sent"):
        plan_scenario(tomllib.loads(l4s), tmp_path)


def test_a_command_whose_program_is_missing_is_refused(tmp_path):
    d = tomllib.loads(CUBIC_FIFO.replace(
        'rtt = "20ms"', 'rtt = "20ms"\nstack = "command"\n'
        'command = "/nonexistent/udp_prague -c {server} -p {port}"'))
    with pytest.raises(ScenarioError) as e:
        plan_scenario(d, tmp_path)
    assert str(e.value) == ('flows[0].command: program "/nonexistent/udp_prague" not found '
                            '(not on PATH, not a file)')


def test_a_command_flow_cannot_take_bytes_or_mss(tmp_path):
    d = tomllib.loads(CUBIC_FIFO.replace(
        'rtt = "20ms"', 'rtt = "20ms"\nstack = "command"\nbytes = 1000\n'
        f'command = "{sys.executable} -c pass"'))
    with pytest.raises(ScenarioError, match=r"^flows\[0\]\.bytes: stack = \"command\" cannot"):
        plan_scenario(d, tmp_path)


def test_crosscheck_plan_runs_what_the_kernel_lacks_as_the_model():
    d = tomllib.loads(CUBIC_FIFO + '[[flows]]\ncc = "prague"\nrtt = "20ms"\n')
    p = plan_crosscheck(d)
    if "prague" in kernel_ccs():
        pytest.skip("this kernel has tcp_prague")
    assert p.stacks == ["kernel", "model"]
    assert len(p.notes) == 1 and p.notes[0].startswith("flows[1] (prague): runs as the model")
    assert "stack" not in p.sim_doc["flows"][0] and p.emu_doc["flows"][0]["stack"] == "kernel"


def test_tcp_info_fields_are_read_at_the_kernels_offsets():
    """Loopback TCP (no root): the sampled struct tcp_info fields are the kernel's."""
    import socket
    import time

    from l4slab.kernel_flow import TCP_CONGESTION, tcp_info

    if "reno" not in kernel_ccs():
        pytest.skip("this kernel has no reno")
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    c = socket.socket()
    c.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, b"reno")
    c.connect(ls.getsockname())
    a, _ = ls.accept()
    n = 100_000
    c.sendall(bytes(n))
    got = 0
    while got < n:
        got += len(a.recv(1 << 16))
    deadline = time.monotonic() + 5
    while (i := tcp_info(c))["unacked"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert c.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).rstrip(b"\0") == b"reno"
    # bytes_acked counts the SYN's sequence number too (tcp_snd_una_update).
    assert i["bytes_acked"] == n + 1, i
    assert i["bytes_sent"] == n and i["unacked"] == 0 and i["total_retrans"] == 0
    assert i["snd_cwnd"] >= 10 and 0 < i["snd_mss"] <= 65483
    assert 0 < i["rtt_us"] < 1_000_000 and i["delivered"] >= 1 and i["delivered_ce"] == 0
    for s in (a, c, ls):
        s.close()


# --- root: real runs ----------------------------------------------------------------------------

def emulate(text: str, tmp_path: Path, name: str) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    from l4slab.emulate import emulate_doc

    need_root()
    out = tmp_path / name
    rc = emulate_doc(tomllib.loads(text), tmp_path, out, ["--quiet"], report_flows=False)
    assert rc == 0, (out / "flows").glob("*.log")
    s = json.loads((out / "summary.json").read_text())
    return s, pd.read_parquet(out / "flows.parquet"), pd.read_parquet(out / "samples.parquet")


def test_kernel_cubic_alone_through_fifo_fills_the_link_and_reports_tcp_info(tmp_path):
    s, fl, sa = emulate(kernel(CUBIC_FIFO), tmp_path, "fifo")
    f = s["flows"][0]
    assert f["flow"].startswith("tcp ") and f["flow"].endswith(":5202")
    # Goodput ≤ the link's payload rate; with one BDP of buffer Cubic's 0.7 back-off keeps
    # the link busy (0.7·2 BDP > 1 BDP), so it is close to it.
    assert 0.85 * GOODPUT_MAX_MBPS <= f["tput_mbps"] <= 1.01 * GOODPUT_MAX_MBPS, f
    assert f["retransmits"] is not None and f["retransmits"] >= 1  # the FIFO drops
    w = fl[(fl["t_s"] >= 2.0) & (fl["t_s"] <= 6.0)]
    q = sa[(sa["t_s"] >= 2.0) & (sa["t_s"] <= 6.0)]
    # TCP_INFO's srtt = base RTT + the queue's delay (the bottleneck's own sojourn), within
    # 2 ms on the window's medians (srtt is a 1/8 EWMA, so it lags by a few RTTs).
    assert abs(w["srtt_ms"].median() - (RTT_MS + q["sojourn_ms"].median())) < 2.0
    # A full FIFO of BDP_PKTS packets at 20 Mb/s holds at most 20.4 ms.
    assert q["sojourn_ms"].max() <= BDP_PKTS * 1500 * 8 / (RATE_MBPS * 1e3) + 1.0
    assert (w["cwnd_pkts"] > 10).all() and w["cwnd_pkts"].max() <= 4 * BDP_PKTS
    # The sender kept the socket full (real-time, not application-limited after warm-up), so
    # the throughput is the stack's, not the host's scheduling.
    csv = pd.read_csv(next((tmp_path / "fifo" / "flows").glob("flow-*.csv")))
    assert (csv["realtime"] == 1).all()
    assert csv.loc[csv["t_s"] >= 2.0, "app_limited"].mean() <= 0.05


def test_kernel_cubic_alone_through_dualpi2_holds_the_c_queue_at_target(tmp_path):
    text = kernel(scenario('kind = "dualpi2"', '[[flows]]\ncc = "cubic"\nrtt = "20ms"\n'
                                               'ecn = "classic"\n'))
    s, fl, sa = emulate(text, tmp_path, "dualpi2")
    f = s["flows"][0]
    assert 0.85 * GOODPUT_MAX_MBPS <= f["tput_mbps"] <= 1.01 * GOODPUT_MAX_MBPS, f
    c = next(q for q in s["queues"] if q["name"] == "C")
    # The PI holds the C queue's delay at target (15 ms, DualPI2's default) on average.
    assert abs(c["sojourn_ms"]["mean"] - 15.0) < 5.0, c
    # Classic ECN was negotiated (net.ipv4.tcp_ecn = 1 in the client namespace): CE, no drops.
    assert c["marks"] > 0 and c["drops"] == 0 and f["ce_marks"] == c["marks"]
    csv = pd.read_csv(next((tmp_path / "dualpi2" / "flows").glob("flow-*.csv")))
    assert (csv["ecn_ok"] == 1).all()
    w = fl[(fl["t_s"] >= 2.0) & (fl["t_s"] <= 6.0)]
    q = sa[(sa["t_s"] >= 2.0) & (sa["t_s"] <= 6.0) & (sa["queue"] == "C")]
    assert abs(w["srtt_ms"].median() - (RTT_MS + q["sojourn_ms"].median())) < 2.0


def test_command_stack_runs_l4slab_flow_matched_by_port(tmp_path):
    if not FLOW_BIN.exists():
        pytest.skip(f"needs {FLOW_BIN}")
    text = scenario('kind = "fifo"\nlimit = 34', f"""[[flows]]
cc = "cubic"
rtt = "20ms"
stack = "command"
command = "{FLOW_BIN} -c {{server}} -p {{port}} -t {{duration}} --cc cubic -q -i 0"
server_command = "{FLOW_BIN} -s -q -p {{port}}"
""", duration="4s", warmup="1s")
    s, fl, _ = emulate(text, tmp_path, "cmd")
    f = s["flows"][0]
    assert f["flow"].startswith("udp ") and f["flow"].endswith(f":{COMMAND_PORT_BASE}")
    assert f["tput_mbps"] > 0.8 * GOODPUT_MAX_MBPS * 1428 / 1448, f
    rows = fl[fl["flow"] == 0]
    assert len(rows) > 100 and rows["srtt_ms"].max() > RTT_MS


def test_crosscheck_kernel_cubic_against_the_model_and_a_wrong_model(tmp_path):
    need_root()
    scen = tmp_path / "x.toml"
    scen.write_text(scenario(f'kind = "fifo"\nlimit = {BDP_PKTS}',
                             '[[flows]]\ncc = "cubic"\nrtt = "20ms"\n', "5s", "1s"))
    out = tmp_path / "right"
    rep = crosscheck(scen, out, 5, echo=lambda m: None)
    assert [s["stack"] for s in rep["stacks"]] == ["kernel"]
    tput = next(r for r in rep["ratios"] if "throughput" in r["what"])
    assert abs(tput["ratio"] - 1.0) < 0.10, tput
    # No mean departs by more than 10 % (the time series may still be "not similar": the
    # test is strict at n = 5, and the simulator's runs of one Cubic flow are identical).
    assert not any(" ms: the real stack" in d or "Mb/s: the real stack" in d
                   for d in rep["departures"]), rep["departures"]
    right_srtt = next(v for v in rep["validation"] if v["metric"] == "srtt_flow0")
    md = (out / "crosscheck.md").read_text()
    for section in ("## Stacks", "## Verdicts", "## Mean ratios", "## Time series",
                    "## Summary"):
        assert section in md
    assert (out / "timeseries.png").stat().st_size > 10_000
    # The command line on the same -o reuses the five runs of each side and prints the
    # verdict table: p̂_max, the permutation p and the worded verdict per metric.
    res = invoke("crosscheck", scen, "-n", "5", "-o", out)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("metric"))
    assert lines[head].split() == ["metric", "p̂_max", "perm", "p", "verdict"], lines[head]
    rows = lines[head + 1:lines.index("", head)]
    assert {r.split()[0] for r in rows} == {v["metric"] for v in rep["validation"]}
    assert all(r.split(None, 3)[3].startswith(("different", "indistinguishable", "too few"))
               for r in rows), rows
    assert f"report: {out / 'crosscheck.md'}" in res.output
    assert {v["metric"] for v in rep["validation"]} >= {"tput_flow0", "srtt_flow0",
                                                        "sojourn_single", "backlog_single",
                                                        "drops_single", "marks_single"}
    # The same emulator runs against a simulator whose RTT is doubled: the emulator's runs
    # are reused (kept, never rerun), and the report says the two differ.
    wrong = tmp_path / "wrong"
    shutil.copytree(out / "emu", wrong / "emu")
    said: list[str] = []
    rep = crosscheck(scen, wrong, 5, sim_sets=["flows.0.rtt=40ms"], echo=said.append)
    assert sum("finished earlier, kept" in m for m in said) == 5
    # Another scenario into `right` (RTT 30 ms on both sides) is refused before anything
    # runs: runs are reused only for the scenario they were made from, never mixed.
    with pytest.raises(ScenarioError, match="holds runs of another scenario"):
        crosscheck(scen, out, 5, sets=["flows.0.rtt=30ms"], echo=lambda m: None)
    srtt = next(v for v in rep["validation"] if v["metric"] == "srtt_flow0")
    assert srtt["similar"] is False, srtt
    assert srtt["verdict"] == "different" and srtt["perm_p"] < 0.05, srtt
    # srtt ≈ 40 ms + queue against ≈ 20 ms + queue; the same 34-packet FIFO is half a BDP at
    # 40 ms, so the simulated queue also shrinks (measured: ~11 ms against the right model's
    # < 1 ms): several times the right model's distance and more than 5 ms.
    assert srtt["mean_cross_distance"] > max(5 * right_srtt["mean_cross_distance"], 5.0)
    assert any(d.startswith("flow 0 (cubic) srtt ms") for d in rep["departures"])
    assert any(d.startswith("srtt_flow0: the runs differ") for d in rep["departures"])
    # The ratio is emulator over simulator: the emulator's srtt (20 ms path) is about half
    # the doubled-RTT model's (at least 40 ms), so it lies below 1 with its whole CI.
    sr = next(r for r in rep["ratios"] if r["what"].startswith("flow 0 (cubic) srtt"))
    assert sr["sim_mean"] >= 40.0 > sr["emu_mean"], sr
    assert sr["ratio"] == pytest.approx(sr["emu_mean"] / sr["sim_mean"], rel=1e-9), sr
    assert sr["ci_low"] <= sr["ratio"] <= sr["ci_high"] < 1.0, sr


def test_kernel_flow_honours_mss_bytes_and_start(tmp_path):
    """`mss`, `bytes` and `start` reach the kernel sender: TCP_MAXSEG = mss + 12 (timestamps)
    gives tcpi_snd_mss = mss; a `bytes` flow stops at exactly that much payload acknowledged
    (the SYN's and the FIN's sequence numbers are not payload); a flow never sends before its
    `start`. (The kernel sender is a Python process and starts late on a loaded host, so
    `start` is checked as a lower bound.)"""
    text = scenario(f'kind = "fifo"\nlimit = {BDP_PKTS}', """[[flows]]
cc = "cubic"
rtt = "20ms"
stack = "kernel"
mss = 1000
start = "1s"
[[flows]]
cc = "reno"
rtt = "20ms"
stack = "kernel"
bytes = 2000000
""", duration="5s", warmup="0s")
    s, fl, _ = emulate(text, tmp_path, "knobs")
    csvs = [pd.read_csv(p) for p in (tmp_path / "knobs" / "flows").glob("flow-*.csv")]
    by_cc = {c["cc"].iloc[0]: c for c in csvs}
    assert set(by_cc) == {"cubic", "reno"}, [c["cc"].iloc[0] for c in csvs]
    cubic, reno = by_cc["cubic"], by_cc["reno"]
    assert (cubic["snd_mss"] == 1000).all() and (reno["snd_mss"] == 1448).all()
    assert cubic["t_s"].min() >= 1.0 and reno["t_s"].min() < cubic["t_s"].min()
    assert reno["delivered_bytes"].iloc[-1] == 2_000_000, reno.tail(3)
    assert fl.loc[fl["flow"] == 1, "delivered_bytes"].max() == 2_000_000


def test_kernel_sender_stops_at_its_stop_time_on_the_emulator_clock(tmp_path):
    """The kernel sender ends at `--end-s` on the emulator's clock (the flow's `stop`), not
    `--time` after its own late start; and a sized flow's last row is its payload exactly,
    after the FIN is acknowledged (tcpi_bytes_acked counts the SYN's and the FIN's sequence
    numbers). Loopback, no root: the stop time does not depend on the path."""
    import socket
    import time

    kf = Path(__file__).resolve().parents[1] / "python" / "l4slab" / "kernel_flow.py"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(kf), "server", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def send(name: str, *args: str) -> pd.DataFrame:
            d = tmp_path / name
            d.mkdir()
            t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            env = {**os.environ, "L4SLAB_T0_NS": str(t0),
                   "L4SLAB_FLOW_DIR": str(d)}
            subprocess.run([sys.executable, str(kf), "client", "--server", "127.0.0.1",
                            "--port", str(port), "--cc", "cubic", "--model-cc", "cubic",
                            *args], env=env, check=True, timeout=60)
            (csv,) = d.glob("flow-*.csv")
            return pd.read_csv(csv)

        # --time 30 alone would send for 30 s; the stop at 1.5 s on the clock ends it there
        # (rows every 16 ms; the socket's send buffer drains within a few loopback RTTs).
        timed = send("timed", "--time", "30", "--end-s", "1.5")
        growing = timed.loc[timed["delivered_bytes"].diff().fillna(1) > 0, "t_s"]
        assert 0 < growing.max() <= 1.5 + 0.25, timed.tail(3)
        sized = send("sized", "--bytes", "3000000")
        assert sized["delivered_bytes"].iloc[-1] == 3_000_000, sized.tail(3)
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_ratio_ci_is_emulator_over_simulator():
    """`_ratio_ci(emu, sim)` reports mean(emu)/mean(sim): emulator values twice the
    simulator's give 2.0 (6/3), inside its bootstrap CI, never 0.5."""
    import numpy as np

    r, lo, hi = _ratio_ci(np.array([2, 2.2, 1.8]), np.array([1, 1.1, 0.9]),
                          np.random.default_rng(0))
    assert r == pytest.approx(2.0, rel=1e-12)
    assert 1.0 < lo <= r <= hi, (r, lo, hi)

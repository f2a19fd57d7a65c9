"""Issue 32, "The emulator on a loaded host": the namespaces' TCP congestion control is set
explicitly (cubic unless --tcp-cc) and any available one may be chosen by an unprivileged
program; each hosted TCP connection's congestion control, each hosted program's scheduling
class and the host's load are recorded; a late link (an injected stall) or a loaded host is
warned about with its figure and threshold."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from l4slab.emulate import SUSPECT_LATENESS_P99_US, parse_ss, suspect_reasons  # noqa: E402
from test_emulate import l4slab, need_root  # noqa: E402

ALLOWED = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
NOBODY = {"SUDO_UID": "65534", "SUDO_GID": "65534"}


def test_the_lateness_threshold_is_exclusive_and_names_its_figure():
    at = {"lateness_us": {"p99": SUSPECT_LATENESS_P99_US}}
    assert suspect_reasons(at) == []
    over = suspect_reasons({"lateness_us": {"p99": 1234.5}})
    assert over == ["the emulator's lateness p99 was 1.23 ms (threshold 1 ms): packets left "
                    "the link late, so queue delays, RTTs and marking are biased"]


def test_the_load_threshold_is_the_number_of_cpus():
    def s(start: float, end: float) -> dict:
        return {"emulator": {"host": {"cpus": 2, "load_avg_start": [start, 0, 0],
                                      "load_avg_end": [end, 0, 0]}}}
    assert suspect_reasons(s(2.0, 1.5)) == []
    assert suspect_reasons(s(0.5, 2.5)) == [
        "the host's 1-minute load average reached 2.50 on 2 CPUs (threshold: the number of "
        "CPUs): the hosted programs competed for the CPU"]


def test_ss_output_gives_each_connection_and_its_cc():
    text = (
        "ESTAB 0 0 10.77.0.1:50194 10.77.0.2:5201\n"
        "\t cubic wscale:10,10 rto:212 rtt:10.55/3.59 mss:1448 cwnd:10\n"
        "ESTAB 0 424264 [::ffff:10.77.0.2]:5201 [::ffff:10.77.0.1]:50200\n"
        "\t bbr wscale:10,10 rto:260 bbr:(bw:20Mbps,mrtt:10.1) cwnd:107\n"
        "LISTEN 0 5 *:5201 *:*\n")
    assert parse_ss(text) == [
        {"state": "ESTAB", "local": "10.77.0.1:50194", "peer": "10.77.0.2:5201", "cc": "cubic"},
        {"state": "ESTAB", "local": "[::ffff:10.77.0.2]:5201", "peer": "[::ffff:10.77.0.1]:50200",
         "cc": "bbr"},
        {"state": "LISTEN", "local": "*:5201", "peer": "*:*", "cc": ""}]


def _client_ccs(out: Path) -> list[str]:
    s = json.loads((out / "summary.json").read_text())
    return sorted(c["cc"] for c in s["emulator"]["host"]["tcp_connections"]
                  if c["side"] == "client")


@pytest.mark.parametrize("tcp_cc", [None, "reno"])
def test_an_unprivileged_iperf3_runs_cubic_when_asked_and_the_default_otherwise(tmp_path,
                                                                               tcp_cc):
    # As sudo would run it: the commands run as nobody. Before: the namespaces inherited the
    # host's default (bbr here) and `-C cubic` failed (only reno and bbr allowed to users).
    need_root("iperf3", "ss", "nsenter")
    allowed_before = ALLOWED.read_text()
    flag = ["--tcp-cc", tcp_cc] if tcp_cc else []
    default = tcp_cc or "cubic"
    out = tmp_path / "run"
    r = l4slab("--quiet", "--rate", "20mbit", "--delay", "5ms", *flag, "-o", str(out),
               "--server", "iperf3 -s -p 5202 & iperf3 -s -p 5201", "--",
               "sh", "-c", "iperf3 -c $L4SLAB_SERVER -p 5201 -C cubic -t 2 >/dev/null && "
               "iperf3 -c $L4SLAB_SERVER -p 5202 -t 2 >/dev/null", env=NOBODY, timeout=90)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())["emulator"]
    for side in ("client", "server"):
        assert s["tcp_sysctls"][side]["net.ipv4.tcp_congestion_control"] == default
    assert s["tcp_cc"]["default"] == default
    # Each iperf3 run: a control connection (the namespace's default: iperf3 applies -C to
    # its data sockets only) and a data connection, client side.
    ccs = _client_ccs(out)
    assert ccs == sorted(["cubic", default, default, default]), ccs
    differs = [c for c in s["host"]["tcp_connections"] if c["differs"]]
    assert all(c["cc"] == "cubic" for c in differs) and bool(differs) == (default != "cubic")
    assert ("WARNING: TCP connection" in r.stderr) == (default != "cubic"), r.stderr
    # The host's own list is back as it was.
    assert ALLOWED.read_text() == allowed_before


def test_tcp_cc_that_the_kernel_lacks_is_one_line(tmp_path):
    need_root()
    r = l4slab("--quiet", "--tcp-cc", "nosuchcc", "-o", str(tmp_path / "r"), "--", "true")
    assert r.returncode == 2
    have = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    assert r.stderr.strip() == (
        "l4s-emu: error: --tcp-cc: \"nosuchcc\" is not offered by this kernel; expected one of "
        f"{', '.join(have)} (net.ipv4.tcp_available_congestion_control; `modprobe "
        "tcp_nosuchcc` may add it)"), r.stderr
    assert not (tmp_path / "r").exists()


def test_a_stall_is_warned_about_and_the_priorities_and_load_are_recorded(tmp_path):
    # One 300 ms stall of the driver 1 s after ping started (the client waits 3 s for a
    # server that never listens): the packets on the 100 ms delay lines then (a ping every
    # 10 ms each way: ~10 of 250 per direction, 4 %) leave up to 300 ms late, so the lateness
    # p99 is far above the 1 ms threshold.
    need_root("ping")
    out = tmp_path / "run"
    r = l4slab("--quiet", "--delay", "100ms", "--rt-priority", "7", "-o", str(out),
               "--server", "sleep 30", "--", "ping", "-n", "-q", "-i", "0.01", "-c", "250",
               "10.77.0.2", env={"L4SLAB_EMU_TEST_STALL_MS": "300"}, timeout=90)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    e = s["emulator"]
    assert json.loads((out / "emulator.json").read_text())["test_stall_ms"] == 300
    assert s["lateness_us"]["p99"] > 100_000, s["lateness_us"]
    assert e["suspect"][0].startswith("the emulator's lateness p99 was "), e["suspect"]
    assert "WARNING: this run's figures are suspect: the emulator's lateness p99 was" \
        in r.stderr, r.stderr
    assert e["priority"] == {"emulator": {"policy": "SCHED_FIFO", "priority": 99},
                             "commands_rt_priority": 7}
    # A ping every 10 ms leaves the driver asleep almost all the time: it never reaches its
    # awake cap (85 % of a 100 ms window); the injected stall ends a window, which restarts.
    assert e["spin"] == {"cap": 0.85, "window_s": 0.1, "capped_windows": 0}, e["spin"]
    progs = {(p["side"], p["comm"]): (p["policy"], p["priority"])
             for p in e["host"]["programs"]}
    assert progs[("client", "ping")] == ("SCHED_FIFO", 7), progs
    assert progs[("server", "sleep")] == ("SCHED_FIFO", 7), progs
    h = e["host"]
    assert h["cpus"] == os.cpu_count()
    for k in ("load_avg_start", "load_avg_end"):
        assert len(h[k]) == 3 and all(x >= 0 for x in h[k]), h


def test_without_rt_priority_the_commands_run_at_normal_priority(tmp_path):
    need_root()
    if shutil.which("sleep") is None:
        pytest.skip("no sleep")
    out = tmp_path / "run"
    r = l4slab("--quiet", "-o", str(out), "--", "sleep", "1", timeout=60)
    assert r.returncode == 0, r.stderr
    progs = json.loads((out / "summary.json").read_text())["emulator"]["host"]["programs"]
    assert {(p["comm"], p["policy"], p["priority"]) for p in progs} == \
        {("sleep", "SCHED_OTHER", 0)}, progs

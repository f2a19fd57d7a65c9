"""`l4slab flow` from the Python CLI: finds the l4s-flow binary and hands it the arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from l4slab.flow import ENV_VAR, find_binary

CLI = [sys.executable, "-m", "l4slab.cli", "flow"]

needs_binary = pytest.mark.skipif(find_binary() is None,
                                  reason="l4s-flow is not built (make develop builds it)")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env.update(extra)
    return env


@needs_binary
def test_flow_transfers_over_loopback(tmp_path: Path) -> None:
    srv = subprocess.Popen([*CLI, "-s", "-1", "-p", "0", "-B", "127.0.0.1", "-i", "0"],
                           stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert srv.stdout is not None
        first = srv.stdout.readline()
        port = first.strip().rsplit(":", 1)[1].split()[0]
        out = tmp_path / "r.json"
        res = subprocess.run([*CLI, "-c", "127.0.0.1", "-p", port, "-n", "200000", "-q",
                              "--json", str(out)], capture_output=True, text=True,
                             env=_env(), timeout=30)
        assert res.returncode == 0, res.stderr
        r = json.loads(out.read_text())
        s = r["streams"][0]
        assert r["cc"] == "prague"
        assert s["bytes_acked"] == 200000
        assert s["receiver"]["delivered_bytes"] == 200000
        assert s["receiver"]["ect1_pkts"] == s["receiver"]["data_pkts"] > 0
        assert srv.wait(timeout=10) == 0
    finally:
        srv.kill()
        srv.wait()


@needs_binary
def test_flow_bad_flag_is_one_line_and_exit_2() -> None:
    res = subprocess.run([*CLI, "-c", "127.0.0.1", "--cc", "vegas"], capture_output=True,
                         text=True, env=_env(), timeout=30)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert "--cc" in res.stderr and "prague" in res.stderr


def test_flow_missing_binary_is_one_clear_error(tmp_path: Path) -> None:
    res = subprocess.run([*CLI, "-s"], capture_output=True, text=True,
                         env=_env(**{ENV_VAR: str(tmp_path / "nope")}), timeout=30)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert ENV_VAR in res.stderr


def test_flow_binary_from_env_is_used(tmp_path: Path) -> None:
    fake = tmp_path / "fake-flow"
    fake.write_text("#!/bin/sh\necho \"fake $@\"\nexit 7\n")
    fake.chmod(0o755)
    res = subprocess.run([*CLI, "-c", "h", "-t", "1"], capture_output=True, text=True,
                         env=_env(**{ENV_VAR: str(fake)}), timeout=30)
    assert res.returncode == 7
    assert res.stdout.strip() == "fake -c h -t 1"


# --- round 2: no silent zero-byte success, output as promised ------------------------------

def _flow(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    binary = find_binary()
    assert binary is not None
    return subprocess.run([str(binary), *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


class _Server:
    """`l4s-flow -s` on a free loopback port (`-1`: one connection, then exit)."""

    def __init__(self, one_off: bool = True) -> None:
        binary = find_binary()
        assert binary is not None
        args = ["-1"] if one_off else []
        self.p = subprocess.Popen([str(binary), "-s", "-p", "0", "-B", "127.0.0.1",
                                   "-i", "0", *args], stdout=subprocess.PIPE, text=True)
        assert self.p.stdout is not None
        first = self.p.stdout.readline()
        self.port = first.strip().rsplit(":", 1)[1].split()[0]

    def __enter__(self) -> _Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.p.kill()
        self.p.wait()


@needs_binary
def test_an_mss_beyond_the_receive_buffer_is_refused_before_the_run(tmp_path: Path) -> None:
    # Loopback's MTU is 65536, so the receiver's 2048-byte datagram buffer is the limit:
    # 2048 - 44 header bytes = 2004. Before: 0 bytes sent, exit 0, "error": null.
    with _Server() as srv:
        r = _flow("-c", "127.0.0.1", "-p", srv.port, "--mss", "2100", "-t", "1")
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip().splitlines() == [
            "l4slab flow: error: --mss: 2100: a datagram does not fit the receiver's "
            "2048-byte datagram buffer; allowed 1..=2004"], r.stderr
        ok = _flow("-c", "127.0.0.1", "-p", srv.port, "--mss", "2004", "-n", "100K", "-q")
        assert ok.returncode == 0, ok.stderr


@needs_binary
def test_a_silent_peer_is_a_failure_with_the_error_in_the_json(tmp_path: Path) -> None:
    import socket

    # A bound UDP socket that never answers: no ICMP error, just silence. -t shorter than
    # --peer-timeout used to end "successfully" with 0 bytes.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
        out = tmp_path / "r.json"
        r = _flow("-c", "127.0.0.1", "-p", port, "-t", "0.5", "--peer-timeout", "3s", "-q",
                  "--json", str(out))
    assert r.returncode == 3, (r.returncode, r.stderr)
    doc = json.loads(out.read_text())
    assert doc["error"] and "no byte was delivered" in doc["error"]
    assert doc["streams"][0]["bytes_acked"] == 0


@needs_binary
def test_json_into_a_missing_directory_fails_before_the_run(tmp_path: Path) -> None:
    import time

    t0 = time.monotonic()
    r = _flow("-c", "127.0.0.1", "-t", "30", "--json", str(tmp_path / "nodir" / "r.json"))
    assert r.returncode == 2
    assert "--json" in r.stderr and "no such directory" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 20  # not after the 30 s run


@needs_binary
def test_an_unresolvable_host_still_writes_the_json(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r = _flow("-c", "no-such-host.invalid", "-t", "1", "--json", str(out))
    assert r.returncode == 2, r.stderr
    doc = json.loads(out.read_text())
    assert "cannot resolve host" in doc["error"] and doc["streams"] == []


@needs_binary
def test_quiet_keeps_the_final_lines_and_final_srtt_matches_the_intervals(tmp_path) -> None:
    # The final srtt was ~5 ms above every interval's on loopback: the lone last segment waits
    # for the receiver's 40 ms delayed-ACK timer (Linux TCP_DELACK_MIN) and that sample enters
    # srtt with gain 1/8 (RFC 6298): +40/8 = 5 ms. An odd number of full segments makes the
    # last one lone every time. Three runs, medians: a loaded 2-core host can stall one run.
    mss = 1428  # the default for a 1500-byte MTU over IPv4
    finals, lasts, ivs = [], [], []
    for k in range(3):
        out = tmp_path / f"r{k}.json"
        with _Server() as srv:
            r = _flow("-c", "127.0.0.1", "-p", srv.port, "-n", str(mss * 8001), "-i", "0.02",
                      "-q", "--json", str(out), "--cc", "cubic")
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        # -q drops the interval lines, not the result.
        assert any(line.endswith("sender") for line in lines), r.stdout
        assert any("receiver" in line for line in lines), r.stdout
        assert not any("connecting" in line or "Mbit/s  retr" in line and "sender" not in line
                       for line in lines), r.stdout
        s = json.loads(out.read_text())["streams"][0]
        finals.append(s["srtt_ms"])
        lasts.append(s["srtt_last_ms"])
        ivs.append(max(row["srtt_ms"] for row in s["intervals"]) if s["intervals"] else 0.0)
    med = sorted(finals)[1]
    # The tail's sample is still there, apart: it raised srtt by about 5 ms.
    assert sorted(lasts)[1] >= med + 3.0, (finals, lasts, ivs)
    # The reported srtt is the run's, within the intervals' (loopback: ~0.1 ms) plus 1 ms.
    assert med <= 2 * sorted(ivs)[1] + 1.0, (finals, lasts, ivs)


# --- iperf3 habits: -C, -J, -P with [SUM], -O, --logfile -----------------------------------

@needs_binary
def test_iperf3_habits_C_J_P_sum_and_omit(tmp_path: Path) -> None:
    with _Server(one_off=False) as srv:
        r = _flow("-c", "127.0.0.1", "-p", srv.port, "-C", "cubic", "-P", "2", "-t", "1.5",
                  "-O", "0.5", "-i", "0.25", "-J")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # -J: stdout is the JSON and nothing else
    assert doc["cc"] == "cubic" and doc["omit_s"] == 0.5
    streams = doc["streams"]
    assert len(streams) == 2
    # The sum adds up the streams, as iperf3's does.
    assert doc["sum"]["bytes_acked"] == sum(s["bytes_acked"] for s in streams)
    assert abs(doc["sum"]["tput_mbps"] - sum(s["tput_mbps"] for s in streams)) < 1e-6
    for s in streams:
        # -O: 1.5 s counted after 0.5 s left out; the omitted bytes are not in the rate.
        assert 0 < s["omitted_bytes"] < s["bytes_acked"]
        assert s["duration_s"] >= 2.0
        rate = (s["bytes_acked"] - s["omitted_bytes"]) * 8 / (s["duration_s"] - 0.5) / 1e6
        assert abs(s["tput_mbps"] - rate) / rate < 0.02, (s["tput_mbps"], rate)


@needs_binary
def test_parallel_streams_end_with_a_sum_line_and_logfile_takes_the_output(tmp_path: Path):
    log = tmp_path / "out.log"
    with _Server(one_off=False) as srv:
        r = _flow("-c", "127.0.0.1", "-p", srv.port, "-P", "3", "-n", "300K", "-q",
                  "--logfile", str(log))
    assert r.returncode == 0, log.read_text() if log.exists() else r.stderr
    assert r.stdout == "" and r.stderr == ""
    text = log.read_text()
    sums = [line for line in text.splitlines() if line.startswith("[SUM]")]
    assert len(sums) == 1 and sums[0].endswith("sender"), text
    assert "900.0 KBytes" in sums[0], sums[0]  # 3 x 300 KiB
    # Never overwritten.
    r = _flow("-c", "127.0.0.1", "-n", "1K", "--logfile", str(log))
    assert r.returncode == 2 and "--logfile" in r.stderr


@needs_binary
def test_reverse_passes_through_the_wrapper(tmp_path: Path) -> None:
    # -R reaches the binary unchanged: the server sends exactly -n bytes and the client's JSON
    # says reverse, with the sender's count (from the server) equal to the receiver's.
    out = tmp_path / "r.json"
    with _Server() as srv:
        r = _flow("-c", "127.0.0.1", "-p", srv.port, "-R", "-n", "1M", "-q", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["reverse"] is True and doc["intervals_side"] == "receiver"
    s = doc["streams"][0]
    assert s["bytes_acked"] == s["receiver"]["delivered_bytes"] == 1 << 20

"""`l4slab emulate` as a wrapper: signals reach the emulator and end the run cleanly, a killed
wrapper or emulator leaves no process, namespace or empty run directory, a command that ends
inside the warm-up still gives a run directory, a failing --server is reported, and
summary.json records the AQM's parameters and each side's kernel TCP settings."""

from __future__ import annotations

import ctypes
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_emulate import EMU_BIN, l4slab, need_root  # noqa: E402

WRAPPER = [sys.executable, "-m", "l4slab.cli", "emulate"]


def _cmdlines() -> dict[int, str]:
    out = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                out[int(p.name)] = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
    return out


def pids_with(marker: str) -> list[int]:
    """The `sleep MARKERn` commands (not the wrapper or l4s-emu, whose arguments name them)."""
    return [pid for pid, c in _cmdlines().items() if c.startswith(f"sleep {marker}")]


def netns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def live_netns() -> set[str]:
    return {n for pid in _cmdlines() if (n := netns_of(pid)) is not None}


def children_of(pid: int) -> list[int]:
    kids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(p.name))
    return kids


def wait_for(cond, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def start(out: Path, marker: str) -> subprocess.Popen[str]:
    """A run whose server and client commands are `sleep`s tagged with `marker`."""
    return subprocess.Popen(
        [*WRAPPER, "--quiet", "--delay", "1ms", "-o", str(out), "--server",
         f"sleep {marker}1", "--", "sh", "-c", f"sleep {marker}2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, start_new_session=True)


def emu_child(wrapper: int) -> int | None:
    kids = [k for k in children_of(wrapper) if "l4s-emu" in _cmdlines().get(k, "")]
    return kids[0] if kids else None


@pytest.mark.parametrize("sig, to_group", [(signal.SIGTERM, False), (signal.SIGINT, False),
                                           (signal.SIGINT, True)])
def test_a_signal_to_the_wrapper_ends_the_run_and_keeps_what_was_measured(tmp_path, sig,
                                                                          to_group):
    # Before: SIGTERM/SIGINT to the wrapper alone were ignored (it set SIG_IGN, and l4s-emu
    # inherited the ignored disposition, so even a Ctrl-C to the whole group was lost).
    need_root()
    marker = f"{700 + os.getpid() % 97}.{sig}{int(to_group)}"
    out = tmp_path / "run"
    p = start(out, marker)
    assert wait_for(lambda: len(pids_with(marker)) == 2, 20), "commands did not start"
    if to_group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + sig, err
    assert "Traceback" not in err, err
    assert f"stopped by {signal.Signals(sig).name}" in err, err
    assert (out / "summary.json").exists(), err
    assert json.loads((out / "emulator.json").read_text())["signal"] == sig
    assert wait_for(lambda: not pids_with(marker), 5), pids_with(marker)


def test_a_sigterm_delivered_to_a_helper_thread_of_the_wrapper_still_ends_the_run(tmp_path):
    # The kernel may hand a process-directed signal to any thread that does not block it.
    # Sent straight to a non-main thread (tgkill), SIGTERM only sets Python's flag there; the
    # main thread must still run the handler and forward it, not wait out the commands.
    need_root()
    marker = f"{600 + os.getpid() % 97}.7"
    out = tmp_path / "run"
    p = start(out, marker)
    assert wait_for(lambda: len(pids_with(marker)) == 2, 20), "commands did not start"
    def takes_sigterm(tid: int) -> bool:
        # A thread blocking SIGTERM (e.g. jemalloc's background thread) never receives it.
        status = Path(f"/proc/{p.pid}/task/{tid}/status").read_text()
        blocked = int(status.split("SigBlk:")[1].split()[0], 16)
        return not blocked & (1 << (signal.SIGTERM - 1))

    tids = [int(t) for t in os.listdir(f"/proc/{p.pid}/task")
            if int(t) != p.pid and takes_sigterm(int(t))]
    assert tids, "the wrapper has no helper thread that takes SIGTERM"
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(234, p.pid, tids[0], int(signal.SIGTERM)) == 0  # SYS_tgkill (x86-64)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert (out / "summary.json").exists(), err
    assert wait_for(lambda: not pids_with(marker), 5), pids_with(marker)


def test_sigkill_of_the_wrapper_at_random_moments_leaves_nothing(tmp_path):
    # Ten trials at moments drawn from a fixed seed between the wrapper's start (Python
    # imports, l4s-emu's set-up) and the commands running: l4s-emu dies with the wrapper
    # (PR_SET_PDEATHSIG), its holders with it, and the kernel ends every process of their PID
    # namespaces; no process and no namespace of the run may remain.
    need_root()
    rng = random.Random(21)
    for trial in range(10):
        marker = f"{800 + os.getpid() % 97}.{trial}"
        out = tmp_path / f"run{trial}"
        p = start(out, marker)
        t_kill = rng.uniform(0.2, 2.5)
        seen_emu: set[int] = set()
        seen_ns: set[str] = set()
        t0 = time.monotonic()
        while time.monotonic() - t0 < t_kill:
            e = emu_child(p.pid)
            if e is not None:
                seen_emu.add(e)
            for pid in pids_with(marker):
                if (n := netns_of(pid)) is not None:
                    seen_ns.add(n)
            time.sleep(0.01)
        p.kill()
        p.wait(timeout=10)

        def gone(seen_emu: set[int] = seen_emu, seen_ns: set[str] = seen_ns,
                 marker: str = marker) -> bool:
            alive_emu = [e for e in seen_emu if Path(f"/proc/{e}").exists()
                         and "l4s-emu" in _cmdlines().get(e, "")]
            return not pids_with(marker) and not alive_emu and not (seen_ns & live_netns())

        # A command fork that was in flight at the kill must not appear later either.
        assert wait_for(gone, 5), (trial, t_kill, pids_with(marker), seen_ns & live_netns())
        time.sleep(0.3)
        assert gone(), (trial, t_kill, pids_with(marker))


def test_sigkill_of_the_emulator_is_reported_and_leaves_no_run_directory(tmp_path):
    need_root()
    marker = f"{600 + os.getpid() % 97}.9"
    out = tmp_path / "run"
    p = start(out, marker)
    assert wait_for(lambda: len(pids_with(marker)) == 2, 20)
    emu = emu_child(p.pid)
    assert emu is not None
    os.kill(emu, signal.SIGKILL)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGKILL, (p.returncode, err)
    assert "l4s-emu was killed by SIGKILL" in err and "Traceback" not in err, err
    # Nothing finished, so nothing is left (an empty flows/ made the next -o fail).
    assert not out.exists()
    assert wait_for(lambda: not pids_with(marker), 5)
    r = l4slab("-o", str(out), "--quiet", "--", "true")
    assert r.returncode == 0, r.stderr


def test_a_refused_unprivileged_start_leaves_no_run_directory(tmp_path):
    need_root("setpriv")
    if Path("/dev/net/tun").stat().st_mode & 0o006 == 0o006:
        pytest.skip("/dev/net/tun is open to everyone here: an unprivileged start may succeed")
    import tempfile

    # Somewhere the unprivileged user can reach (pytest's own tmp_path is root's, 0700).
    base = Path(tempfile.mkdtemp(prefix="l4slab-unpriv-"))
    base.chmod(0o777)
    out = base / "run"
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        *WRAPPER, "--quiet", "-o", str(out), "--", "true"],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                       env={**os.environ, "L4SLAB_EMU_BIN": str(EMU_BIN)})
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists(), list(out.iterdir())
    base.rmdir()


def test_output_naming_a_regular_file_is_one_line(tmp_path):
    if not EMU_BIN.exists():
        pytest.skip(f"needs {EMU_BIN}")
    f = tmp_path / "file"
    f.write_text("mine")
    r = l4slab("-o", str(f), "--", "true")
    assert r.returncode == 2
    assert r.stderr.strip() == f"l4slab: error: -o {f}: exists and is not a directory; " \
        "choose a new directory", r.stderr
    assert f.read_text() == "mine"


def test_a_command_ending_inside_the_warmup_still_gives_a_run_directory(tmp_path):
    # Before: TypeError ('int' + 'NoneType') and half a run directory.
    need_root("ping")
    scen = tmp_path / "s.toml"
    scen.write_text('duration = "30s"\nwarmup = "5s"\n[link]\nrate = "12mbit"\n'
                    '[aqm]\nkind = "dualpi2"\n[emulator]\ndelay = "5ms"\n')
    out = tmp_path / "run"
    r = l4slab(str(scen), "--quiet", "-o", str(out), "--server", "sleep 30", "--", "sh", "-c",
               "ping -n -q -c 5 -i 0.05 $L4SLAB_SERVER >/dev/null")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "the run ended inside the scenario's warm-up" in r.stderr, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["emulator"]["ended_inside_warmup"] is True
    assert s["duration_s"] < 5.0
    # What was measured is kept: the pings crossed the link both ways.
    assert s["packets"]["delivered"] >= 5


@pytest.mark.parametrize("server, code", [("exit 7", 7), ("no_such_cmd_l4slab", 127)])
def test_a_failing_server_command_is_reported(tmp_path, server, code):
    need_root()
    r = l4slab("--quiet", "-o", str(tmp_path / "run"), "--server", server, "--", "sleep", "1")
    assert r.returncode == code, r.stderr
    assert f"the server command (--server) exited with status {code} before the client " \
        "command ended" in r.stderr, r.stderr
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["emulator"]["server_exit_status"] == code


def test_summary_records_aqm_params_and_each_sides_tcp_settings(tmp_path):
    need_root()
    r = l4slab("--quiet", "-o", str(tmp_path / "run"), "--aqm", "dualpi2", "--server",
               "sleep 5", "--", "true")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    # The simulator's effective kernel-profile values (AqmConfig::profile_json): RFC 9332
    # defaults, target 15 ms, tupdate 16 ms.
    assert s["aqm_params"]["target_ms"] == 15.0 and s["aqm_params"]["tupdate_ms"] == 16.0
    # A new network namespace would start with the host's default congestion control
    # (tcp_sk_init copies init_net's); the emulator sets cubic, the kernel's own default
    # (issue 32), and each keeps its own tcp_ecn (default 2).
    sides = s["emulator"]["tcp_sysctls"]
    assert set(sides) == {"client", "server"}
    for side in sides.values():
        assert side["net.ipv4.tcp_congestion_control"] == "cubic"
        assert side["net.ipv4.tcp_ecn"] in ("0", "1", "2")


def test_help_is_the_front_ends_and_lists_set_and_sweep():
    if not EMU_BIN.exists():
        pytest.skip(f"needs {EMU_BIN}")
    r = l4slab("--help")
    assert r.returncode == 0
    assert r.stdout.startswith("usage: l4slab emulate"), r.stdout[:200]
    assert "l4s-emu" not in r.stdout.splitlines()[0]
    for flag in ("--set KEY=VALUE", "--sweep SWEEP.toml", "--rate RATE", "--server CMD"):
        assert flag in r.stdout, flag


def test_an_unknown_scenario_key_lists_emulator_among_the_allowed(tmp_path):
    if not EMU_BIN.exists():
        pytest.skip(f"needs {EMU_BIN}")
    scen = Path(__file__).resolve().parents[1] / "scenarios" / "prague_vs_cubic_12M_20ms.toml"
    r = l4slab(str(scen), "--set", "nosuch.key=1", "-o", str(tmp_path / "x"))
    assert r.returncode == 2
    assert "nosuch" in r.stderr and "`emulator`" in r.stderr, r.stderr


def test_flow_refuses_an_mss_beyond_the_emulated_path_mtu(tmp_path):
    # `l4slab flow --mss 1472` sent 1544-byte datagrams through the 1500-byte TUN link: IP
    # fragments, 0 Mb/s. The path MTU (IP_MTU) bounds the MSS: 1500 - 20 - 8 - 44 = 1428.
    need_root()
    from l4slab.flow import find_binary as flow_binary

    fb = flow_binary()
    if fb is None:
        pytest.skip("needs l4s-flow (make develop)")
    r = l4slab("--quiet", "-o", str(tmp_path / "run"), "--server", f"exec {fb} -s -1 -q",
               "--", str(fb), "-c", "10.77.0.2", "--mss", "1472", "-t", "1")
    assert r.returncode == 2, r.stderr
    assert "--mss: 1472: a datagram does not fit the path MTU to 10.77.0.2 (1500 bytes); " \
        "allowed 1..=1428" in r.stderr, r.stderr

"""`l4slab sweep` stopped by a signal while its workers start (issue 35): Ctrl-C exits 130 and
SIGTERM 143 with one message, no worker traceback and no leaked-semaphore warning, and no
process of the sweep outlives it; after SIGKILL of the sweep its workers end too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SWEEP = """
base = "base.toml"
replications = 4
seed = 1
[grid]
"aqm.step_thresh" = ["1ms", "5ms"]
"""
# Long enough that no run ends before the signal: 300 s at 50 Mb/s is several seconds of work.
BASE = """
duration = "300s"
warmup = "1s"
[link]
rate = "50mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "prague"
rtt = "40ms"
[[flows]]
cc = "cubic"
rtt = "40ms"
"""


def _group(pgid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(p.name))
    return out


def _workers_of(pid: int) -> list[int]:
    return [q for q in _group(pid) if q != pid
            and b"spawn_main" in Path(f"/proc/{q}/cmdline").read_bytes()]


def _start(tmp_path: Path) -> subprocess.Popen[str]:
    (tmp_path / "base.toml").write_text(BASE)
    (tmp_path / "sw.toml").write_text(SWEEP)
    p = subprocess.Popen([sys.executable, "-m", "l4slab.cli", "sweep", str(tmp_path / "sw.toml"),
                          "-o", str(tmp_path / "out"), "-j", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    # Until both workers exist: they are then importing l4slab (the window of the bug).
    deadline = time.monotonic() + 120
    while len(_workers_of(p.pid)) < 2:
        assert p.poll() is None, p.communicate()[0]
        assert time.monotonic() < deadline, "the sweep started no workers"
        time.sleep(0.05)
    return p


def _gone(pgid: int, timeout_s: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := _group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.parametrize(("sig", "rc"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_workers_start_stops_the_sweep_cleanly(tmp_path, sig, rc):
    p = _start(tmp_path)
    if sig == signal.SIGINT:
        os.killpg(p.pid, sig)  # Ctrl-C at a terminal reaches the whole process group
    else:
        p.send_signal(sig)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == rc, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    assert "leaked" not in out, out
    assert "interrupted: finished runs are kept in" in out
    assert _gone(p.pid) == []


def test_workers_end_with_a_killed_sweep(tmp_path):
    p = _start(tmp_path)
    # Mid-run (the first run stored, the others under way), kill the sweep outright.
    deadline = time.monotonic() + 120
    while not list((tmp_path / "out").glob("runs/p*")):
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    p.kill()
    # Each worker's parent-death signal (prctl PR_SET_PDEATHSIG) or its parent watch ends it,
    # and the resource tracker after them: nothing of the group is left 15 s later.
    assert _gone(p.pid, timeout_s=15) == []
    out, _ = p.communicate(timeout=60)
    # The tracker unlinks the pool's semaphores the sweep could not release, without its
    # "There appear to be N leaked semaphore objects" warning.
    assert "leaked" not in out and "Traceback" not in out, out

"""Progress bars of `l4slab run` and `l4slab sweep` (l4slab.progress) on a fake clock: the
elapsed time and the ETA stay readable on an 80-column terminal, a sweep's bar and the total
printed after it read one clock, and a fully resumed sweep says so instead of "0/0"."""

from __future__ import annotations

import io
import subprocess
import sys
from types import SimpleNamespace

from rich.console import Console

from l4slab.progress import SweepProgress, run_bar


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _console(width: int = 80) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=width, color_system=None), buf


def _render(bar, width: int = 80) -> str:
    c, buf = _console(width)
    c.print(bar.make_tasks_table(bar.tasks))
    return buf.getvalue()


def test_run_bar_shows_elapsed_and_eta_on_80_columns():
    clock = FakeClock()
    bar = run_bar(_console()[0], get_time=clock)
    task = bar.add_task("simulating prague_vs_cubic_200M_100ms.toml", total=30.0)
    clock.t = 1.0
    bar.update(task, completed=2.0)
    clock.t = 5.0
    bar.update(task, completed=10.0)
    line = _render(bar)
    assert line.count("\n") == 1 and len(line.rstrip("\n")) <= 80, line
    # rich's speed: the advance after the first sample over their time span, 8 s / 4 s = 2
    # simulated s per s; ETA ceil((30 - 10) / 2) = 10 s; elapsed 5 s since add_task.
    assert "10.0/30 s simulated 0:00:05 ETA 0:00:10" in line, line
    # The label gives way before the times do.
    assert "simulating" in line and "…" in line


def _outcome(name: str, status: str = "ok") -> SimpleNamespace:
    return SimpleNamespace(status=status, task=SimpleNamespace(name=name))


def test_sweep_bar_and_the_total_after_read_one_clock(tmp_path):
    clock = FakeClock()
    console, buf = _console()
    sp = SweepProgress(console, tmp_path, get_time=clock)  # the command starts at t = 0
    clock.t = 2.0  # planning and validation
    sp.on_start(4, 0)
    for i, t in enumerate((3.0, 4.0, 5.0, 6.0)):
        clock.t = t
        sp.on_progress(_outcome(f"p00{i}-r00", "failed" if i == 1 else "ok"), i + 1, 4)
    clock.t = 9.5  # index, figures and report
    line = _render(sp.bar)
    # Elapsed frozen when the last run is in: 6 s from the command's start, not 4 s from
    # the bar's creation.
    assert "4/4 1 failed 0:00:06 ETA 0:00:00" in line, line
    assert sp.summary(4, 4, 0, 1) == ("sweep: 4 runs (4 ran, 0 resumed, 1 failed) in 9.5 s "
                                      "(runs done at 6.0 s, then 3.5 s of index, figures and "
                                      "report)")
    # No terminal: a line per failure and the last; the first at once, none within 5 s.
    assert buf.getvalue().splitlines() == [
        "runs: 1/4 done (last p000-r00 ok)",
        "runs: 2/4 done, 1 failed (last p001-r00 failed)",
        "runs: 4/4 done, 1 failed (last p003-r00 ok)"]


def test_a_fully_resumed_sweep_says_all_runs_are_done(tmp_path):
    clock = FakeClock()
    console, buf = _console(200)
    sp = SweepProgress(console, tmp_path / "out", get_time=clock)
    clock.t = 1.25
    sp.on_start(8, 8)
    assert buf.getvalue() == (f"resuming: all 8 runs already finished in {tmp_path / 'out'} "
                              "(8/8); nothing to run\n")
    assert sp.task is None and sp.bar.tasks == []
    assert sp.summary(8, 0, 8, 0) == "sweep: 8 runs (0 ran, 8 resumed, 0 failed) in 1.2 s"
    sp2 = SweepProgress(_console()[0], "out", get_time=clock)
    sp2.on_start(8, 3)
    assert sp2.bar.tasks[0].total == 5


SWEEP = 'base = "base.toml"\nreplications = 2\nseed = 1\n[grid]\n"aqm.target" = ["15ms"]\n'
BASE = """
duration = "1s"
warmup = "0s"
[link]
rate = "10mbit"
[aqm]
kind = "codel"
[[flows]]
cc = "cubic"
rtt = "20ms"
"""


def test_sweep_cli_rerun_of_a_finished_sweep_says_nothing_is_left(tmp_path):
    (tmp_path / "base.toml").write_text(BASE)
    (tmp_path / "sw.toml").write_text(SWEEP)
    cmd = [sys.executable, "-m", "l4slab.cli", "sweep", str(tmp_path / "sw.toml"), "-o",
           str(tmp_path / "out"), "-j", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "runs: 2/2 done (last p000-r01 ok)" in r.stdout, r.stdout
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"resuming: all 2 runs already finished in {tmp_path / 'out'} (2/2)" in r.stdout
    assert "0/0" not in r.stdout and "sweep: 2 runs (0 ran, 2 resumed, 0 failed)" in r.stdout

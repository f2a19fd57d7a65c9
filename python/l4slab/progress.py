"""Progress bars of the command line: one long run (simulated time / duration) and a sweep's
runs, each with the elapsed time and an estimate of the time left, on one line that keeps both
at any terminal width (the label and the bar give way first).

The simulator runs in a worker thread with the GIL released; it stores the simulated time it
has reached in a `l4slab._core.Progress` every few thousand events, and this thread polls it.
Every bar takes a `get_time` clock (rich's, time.monotonic by default), so tests drive it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from l4slab import _core

T = TypeVar("T")

__all__ = ["SweepProgress", "make_bar", "resume_line", "run_bar", "run_with_progress"]

#: Poll period of the run bar, s.
POLL_S = 0.1


class LabelColumn(ProgressColumn):
    """The task's description in bold on one line, cut with "…" when the line is short."""

    def render(self, task: Any) -> Text:
        return Text(task.description, style="bold", no_wrap=True, overflow="ellipsis")


def make_bar(console: Console, *counts: ProgressColumn,
             get_time: Callable[[], float] | None = None, transient: bool = False) -> Progress:
    """label, bar, `counts`, elapsed, "ETA", time left. The label and the bar are the columns
    a narrow terminal shrinks (wrappable, the bar as wide as the line allows); the counts and
    times keep their width, so the elapsed time and the ETA never turn into "…"."""
    return Progress(
        LabelColumn(table_column=Column(no_wrap=False, overflow="ellipsis")),
        BarColumn(bar_width=None, table_column=Column(no_wrap=False)),
        *counts, TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        console=console, transient=transient, get_time=get_time)


def run_bar(console: Console, get_time: Callable[[], float] | None = None) -> Progress:
    """The bar of one run: its task's total is the duration in simulated seconds."""
    return make_bar(console, TextColumn("{task.completed:.1f}/{task.total:g} s simulated"),
                    get_time=get_time, transient=True)


def run_with_progress(console: Console, label: str, duration_s: float,
                      work: Callable[[Any], T]) -> T:
    """Call `work(progress)` (it passes `progress` to `_core.run_scenario`) and, on a
    terminal, show simulated seconds out of `duration_s` with the elapsed time and an ETA;
    elsewhere just call it. Exceptions from `work` propagate."""
    prog = _core.Progress()
    if not console.is_terminal or not duration_s > 0:
        return work(prog)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work(prog)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    th = threading.Thread(target=target, name="l4slab-run", daemon=True)
    bar = run_bar(console)
    with bar:
        task = bar.add_task(label, total=duration_s)
        th.start()
        while th.is_alive():
            th.join(POLL_S)
            bar.update(task, completed=min(prog.sim_s(), duration_s))
    if "error" in box:
        raise box["error"]
    return box["result"]


def resume_line(total: int, skipped: int, out_dir: Path | str) -> str:
    """What a resumed sweep says before it runs anything ("" when nothing was finished)."""
    if not skipped:
        return ""
    if skipped == total:
        return (f"resuming: all {total} runs already finished in {out_dir} ({total}/{total}); "
                "nothing to run")
    return f"resuming: {skipped} of {total} runs already finished in {out_dir}"


class SweepProgress:
    """The `l4slab sweep` bar: runs done out of the runs to do, failures, and one clock from
    the command's start (before planning), so the bar's elapsed time and the total printed
    after (`summary`) are read off the same clock. Without a terminal, a line per failure and
    at most one per `line_every_s` otherwise (and the last)."""

    def __init__(self, console: Console, out_dir: Path | str,
                 get_time: Callable[[], float] = time.monotonic,
                 line_every_s: float = 5.0) -> None:
        self.console = console
        self.out_dir = out_dir
        self.get_time = get_time
        self.line_every_s = line_every_s
        self.t0 = get_time()
        self.bar = make_bar(console, MofNCompleteColumn(),
                            TextColumn("[red]{task.fields[failed]}"), get_time=get_time)
        self.task: Any = None
        self.failed = 0
        self.runs_done_t: float | None = None
        self._line_t = -float("inf")

    def on_start(self, total: int, skipped: int) -> None:
        """`sweeps.sweep`'s on_start: `skipped` of `total` runs were finished earlier."""
        line = resume_line(total, skipped, self.out_dir)
        if line:
            self.console.print(line, highlight=False, soft_wrap=True)
        if skipped == total:
            self.runs_done_t = self.get_time()
            return
        self.task = self.bar.add_task("runs", total=total - skipped, failed="")
        # Elapsed from the command's start, as the total printed after the sweep.
        self.bar.tasks[-1].start_time = self.t0
        if self.console.is_terminal:
            self.bar.start()

    def on_progress(self, outcome: Any, done: int, total: int) -> None:
        """`sweeps.sweep`'s on_progress: `done` of the `total` runs to do have finished."""
        if outcome.status == "failed":
            self.failed += 1
        self.bar.update(self.task, completed=done,
                        failed=f"{self.failed} failed" if self.failed else "")
        if done == total:
            self.runs_done_t = self.get_time()
        if not self.console.is_terminal:
            now = self.get_time()
            if outcome.status == "failed" or done == total or \
                    now - self._line_t >= self.line_every_s:
                self._line_t = now
                fails = f", {self.failed} failed" if self.failed else ""
                self.console.print(f"runs: {done}/{total} done{fails} (last "
                                   f"{outcome.task.name} {outcome.status})", highlight=False,
                                   soft_wrap=True)

    def stop(self) -> None:
        """End the live bar (its last state stays on screen)."""
        if self.task is not None and self.console.is_terminal:
            self.bar.stop()

    def summary(self, runs: int, ran: int, skipped: int, failed: int) -> str:
        """The line after the sweep: counts, and the time on the bar's clock: when the runs
        were done (what the bar showed last) and then the figures and report."""
        now = self.get_time()
        total_s = now - self.t0
        head = f"sweep: {runs} runs ({ran} ran, {skipped} resumed, {failed} failed) in " \
               f"{total_s:.1f} s"
        if self.runs_done_t is None or not ran:
            return head
        runs_s = self.runs_done_t - self.t0
        return f"{head} (runs done at {runs_s:.1f} s, then {now - self.runs_done_t:.1f} s " \
               "of index, figures and report)"

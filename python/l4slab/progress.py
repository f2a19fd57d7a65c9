"""A progress bar for one long run: simulated time / duration and an estimate of the time left,
drawn on a terminal only (a pipe, a file or a test gets nothing).

The simulator runs in a worker thread with the GIL released; it stores the simulated time it
has reached in a `l4slab._core.Progress` every few thousand events, and this thread polls it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from l4slab import _core

T = TypeVar("T")

__all__ = ["run_with_progress"]

#: Poll period of the bar, s.
POLL_S = 0.1


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
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                   TextColumn("{task.completed:.1f}/{task.total:g} s simulated"),
                   TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                   console=console, transient=True)
    with bar:
        task = bar.add_task(label, total=duration_s)
        th.start()
        while th.is_alive():
            th.join(POLL_S)
            bar.update(task, completed=min(prog.sim_s(), duration_s))
    if "error" in box:
        raise box["error"]
    return box["result"]

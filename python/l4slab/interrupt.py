"""Ctrl-C while the `l4slab` program starts: one line and exit 130, never a traceback.

The package's own import (numpy, pandas, the Rust core: a second or more on a busy machine)
runs before `l4slab.cli.entry` can catch KeyboardInterrupt, so in the `l4slab` program (the
console script, `python -m l4slab`, `python -m l4slab.cli`) l4slab/__init__.py first calls
`hold_during_import`: SIGINT then prints the line and ends the process, until `entry`
restores Python's handler. A library import (`import l4slab` in a notebook) is left alone.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any, NoReturn

#: The line a Ctrl-C prints (stderr), and the exit status (128 + SIGINT).
LINE = "l4slab: interrupted"
EXIT_INTERRUPTED = 130

#: Tests only: the point ("import" or "command") at which the process sends itself SIGINT.
HOOK_ENV = "L4SLAB_TEST_SIGINT_AT"


def is_cli_process() -> bool:
    """True in the `l4slab` program: the console script, or `-m l4slab` / `-m l4slab.cli`."""
    if sys.argv and os.path.basename(sys.argv[0]) == "l4slab":
        return True
    argv = list(getattr(sys, "orig_argv", []) or [])
    for i, a in enumerate(argv[:-1]):
        if a == "-m":
            return argv[i + 1] in ("l4slab", "l4slab.cli")
    return False


def exit_interrupted() -> NoReturn:
    """Print the one line and exit 130 (a normal exit: atexit handlers run)."""
    sys.stderr.write(LINE + "\n")
    sys.stderr.flush()
    sys.exit(EXIT_INTERRUPTED)


def _during_import(_signum: int, _frame: Any) -> None:
    # In the middle of an import: leave at once (nothing to clean up yet).
    try:
        sys.stderr.write(LINE + "\n")
        sys.stderr.flush()
    finally:
        os._exit(EXIT_INTERRUPTED)


def hold_during_import() -> None:
    """In the `l4slab` program, from here until `l4slab.cli.entry` runs, Ctrl-C prints the
    line and exits 130."""
    if not is_cli_process() or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, _during_import)
    test_hook("import")


def test_hook(point: str) -> None:
    """Tests only: SIGINT to this process at `point` when $L4SLAB_TEST_SIGINT_AT names it
    (a Ctrl-C landing there, deterministically)."""
    if os.environ.get(HOOK_ENV) == point:
        os.kill(os.getpid(), signal.SIGINT)

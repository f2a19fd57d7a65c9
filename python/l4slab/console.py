"""Rich consoles for the command line: a terminal gets its own width; a pipe or file gets a
wide one, so tables are never cut to 80 columns when redirected (`l4slab summary > t.txt`)."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from rich.console import Console

#: Width used when the output is not a terminal and $COLUMNS is unset.
PIPE_WIDTH = 400


def make_console(stderr: bool = False, file: TextIO | None = None) -> Console:
    """A Console that keeps whole table rows when the output is not a terminal."""
    stream = file or (sys.stderr if stderr else sys.stdout)
    if stream.isatty() or os.environ.get("COLUMNS"):
        return Console(stderr=stderr, file=file)
    return Console(stderr=stderr, file=file, width=PIPE_WIDTH)


#: How every error of the `l4slab` program starts (docs/ARCHITECTURE.md, "Messages"): the
#: program's name, "error:", then the field at fault and what is wrong, on one line.
ERROR_PREFIX = "l4slab: error:"


def error_line(msg: str, prog: str = "l4slab") -> str:
    """`msg` as the one line an error of `prog` is: "l4slab: error: <field>: <message>"."""
    return f"{prog}: error: {msg}"


def os_error_message(e: OSError) -> str:
    """`PATH: reason` for a file a command could not read or write (one line, no traceback)."""
    where = " -> ".join(str(f) for f in (e.filename, e.filename2) if f is not None)
    reason = e.strerror or str(e)
    if isinstance(e, NotADirectoryError):
        reason += " (a component of the path is a file)"
    return f"{where}: {reason}" if where else reason

"""`l4slab flow`: run the `l4s-flow` binary (l4slab's TCP over UDP with per-datagram ECN).

The binary is found by, in order: the environment variable L4SLAB_FLOW_BIN, the source tree's
`target/release/l4s-flow` (built by `make develop`), then `l4s-flow` on PATH. All arguments go
to it unchanged; this process is replaced by it, so its exit code is the command's.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click

from l4slab.console import error_line

BIN_NAME = "l4s-flow"
ENV_VAR = "L4SLAB_FLOW_BIN"


def find_binary() -> Path | None:
    """The `l4s-flow` executable to run, or None when there is none."""
    env = os.environ.get(ENV_VAR)
    if env:
        p = Path(env)
        return p if p.is_file() and os.access(p, os.X_OK) else None
    tree = Path(__file__).resolve().parents[2] / "target" / "release" / BIN_NAME
    if tree.is_file() and os.access(tree, os.X_OK):
        return tree
    found = shutil.which(BIN_NAME)
    return Path(found) if found else None


@click.command(
    name="flow",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def flow_cmd(args: tuple[str, ...]) -> None:
    """l4slab's TCP (Prague, DCTCP, Cubic, ...) over UDP: `-s` server, `-c HOST` client."""
    binary = find_binary()
    if binary is None:
        env = os.environ.get(ENV_VAR)
        where = (f"{ENV_VAR}={env} is not an executable file" if env else
                 f"no {BIN_NAME} in the source tree's target/release nor on PATH; "
                 f"build it with `make develop` (cargo build --release -p {BIN_NAME})")
        click.echo(error_line(where, prog="l4slab flow"), err=True)
        sys.exit(2)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(binary, [str(binary), *args])

"""What the front-end CLI tests share: a short two-flow DualPI2 scenario and a CliRunner call."""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner, Result

from l4slab.cli import main

#: Prague + CUBIC through DualPI2 at 10 Mb/s, 20 ms: runs in well under a second.
SHORT_BASE: dict[str, Any] = {
    "seed": 3,
    "duration": "2s",
    "warmup": "0.5s",
    "link": {"rate": "10mbit"},
    "aqm": {"kind": "dualpi2"},
    "flows": [{"cc": "prague", "rtt": "20ms"}, {"cc": "cubic", "rtt": "20ms"}],
}


def invoke(*args: object, width: int | None = None) -> Result:
    """`l4slab ARGS` in-process (exceptions propagate; `width` sets rich's terminal width)."""
    kw = {"terminal_width": width} if width else {}
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, **kw)

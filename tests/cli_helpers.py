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


def invoke_wide(*args: object) -> Result:
    """`invoke` at 200 columns, so that rich wraps no one-line error (see `one_error`)."""
    return invoke(*args, width=200)


def one_error(res: Result, *needles: str) -> str:
    """Exit 2, exactly one line of output (the error), no traceback, every needle in it."""
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    for n in needles:
        assert n in lines[0], (n, res.output)
    return lines[0]

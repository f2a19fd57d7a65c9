"""One error style across the programs (docs/ARCHITECTURE.md, "Messages"): `<program>: error:
<field>: <message>` on one line of stderr, exit 2, for `l4slab` (its own checks and click's
usage errors), `l4slab flow` and `l4s-emu`; and Ctrl-C anywhere in `l4slab`, its import
included, is one line and exit 130, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EMU = ROOT / "target" / "release" / "l4s-emu"
FLOW = ROOT / "target" / "release" / "l4s-flow"
L4SLAB = [sys.executable, "-m", "l4slab"]


def _run(cmd: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, **env})


def _one_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize(("args", "want"), [
    # The scenario's own check (l4s-sim), through `l4slab run`.
    (["run", "{bad}", "-o", "{out}"], "l4slab: error: flows[0].rtt: missing (required)"),
    # click's usage errors: the same prefix, the option named, where the help is.
    (["sweep", "{bad}", "-j", "0"], "l4slab: error: Invalid value for '-j' / '--jobs': 0 is "
                                    "not in the range x>=1. (see l4slab sweep --help)"),
    (["bogus"], "l4slab: error: No such command 'bogus'. (see l4slab --help)"),
])
def test_l4slab_errors_are_one_prefixed_line(tmp_path, args, want):
    bad = tmp_path / "bad.toml"
    bad.write_text('[link]\nrate = "10mbit"\n[[flows]]\ncc = "prague"\n')
    cmd = [a.format(bad=bad, out=tmp_path / "o") for a in args]
    r = _run([*L4SLAB, *cmd])
    assert r.returncode == 2, r.stderr
    assert _one_line(r) == want
    assert not (tmp_path / "o").exists()


def test_l4slab_flow_errors_are_one_prefixed_line():
    if not FLOW.exists():
        pytest.skip(f"needs {FLOW} (make develop)")
    r = _run([*L4SLAB, "flow", "-c", "127.0.0.1", "-t", "-5"])
    assert r.returncode == 2
    assert _one_line(r) == 'l4slab flow: error: -t: "-5" must be a duration ≥ 0'
    # clap's own parse errors, one line in the same style.
    r = _run([*L4SLAB, "flow", "-s", "--port", "x"])
    assert r.returncode == 2
    assert _one_line(r) == ("l4slab flow: error: invalid value 'x' for '--port <PORT>': "
                            "invalid digit found in string (see l4slab flow --help)")


def test_emulator_errors_are_one_prefixed_line():
    if not EMU.exists():
        pytest.skip(f"needs {EMU} (make develop)")
    r = _run([str(EMU), "--rate", "-5", "--", "true"])
    assert r.returncode == 2
    assert _one_line(r) == 'l4s-emu: error: --rate: "-5" is negative'


# --- Ctrl-C ----------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["import", "command"])
def test_ctrl_c_anywhere_in_l4slab_is_one_line_and_130(tmp_path, where):
    """SIGINT delivered while the package imports (before any command could catch it) and
    inside a command that does not handle it (`summary`): `l4slab: interrupted`, 130."""
    (tmp_path / "r").mkdir()
    for cmd in ([*L4SLAB, "summary", str(tmp_path / "r")],
                [sys.executable, "-m", "l4slab.cli", "summary", str(tmp_path / "r")]):
        r = _run(cmd, L4SLAB_TEST_SIGINT_AT=where)
        assert r.returncode == 130, r.stderr
        assert r.stderr == "l4slab: interrupted\n"
        assert r.stdout == ""


def test_a_library_import_keeps_python_s_ctrl_c(tmp_path):
    """`import l4slab` in another program is not the CLI: its Ctrl-C stays KeyboardInterrupt."""
    r = _run([sys.executable, "-c", "import l4slab, signal; "
              "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"],
             L4SLAB_TEST_SIGINT_AT="import")
    assert r.returncode == 0 and r.stdout == "True\n", r.stderr

"""`l4slab suite NAME --emulate`: suites whose scenarios the emulator can run faithfully run in
scenario mode, one run at a time; the others say why in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_emulate import EMU_BIN, need_root  # noqa: E402


def suite(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "l4slab.cli", "suite", *args],
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("name, why", [
    ("robustness", "would apply them to the ACKs too"),
    ("bdp-regimes", "1 ms txops on the data direction only"),
])
def test_a_suite_the_emulator_cannot_run_says_why_in_one_line(tmp_path, name, why):
    if not EMU_BIN.exists():
        pytest.skip(f"needs {EMU_BIN}")
    out = tmp_path / "s"
    r = suite(name, "--quick", "--emulate", "-o", str(out))
    assert r.returncode == 2, r.stderr
    msg = " ".join(r.stderr.split())
    assert f"--emulate: suite {name}: " in msg and why in msg, msg
    assert len(r.stderr.strip().splitlines()) <= 2, r.stderr  # one line, maybe wrapped
    assert "Traceback" not in r.stderr and not out.exists()


def test_simulator_results_are_not_mixed_with_emulator_runs(tmp_path):
    if not EMU_BIN.exists():
        pytest.skip(f"needs {EMU_BIN}")
    out = tmp_path / "s"
    out.mkdir()
    (out / "suite.json").write_text(json.dumps({"suite": "prague-vs-cubic", "quick": True}))
    r = suite("prague-vs-cubic", "--quick", "--emulate", "-o", str(out))
    assert r.returncode == 2
    assert "holds simulator runs" in " ".join(r.stderr.split()), r.stderr
    r = suite("prague-vs-cubic", "--quick", "--emulate", "-j", "2", "-o", str(tmp_path / "t"))
    assert r.returncode == 2 and "one run at a time" in " ".join(r.stderr.split())


def test_quick_prague_vs_cubic_runs_through_the_emulator(tmp_path):
    need_root()
    out = tmp_path / "pvc"
    r = suite("prague-vs-cubic", "--quick", "--emulate", "-o", str(out), timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    meta = json.loads((out / "suite.json").read_text())
    assert meta["engine"] == "emulator" and meta["provenance"]["runs_finished"] == 4
    # --quick --emulate: 2 replications of 4 s per link.
    assert all(p["replications"] == 2 and p["set"]["duration"] == "4s"
               for p in meta["parts"].values())
    flows = pd.read_csv(out / "tables" / "flows.csv")
    tot = flows.groupby("link")["tput_mbps"].sum()
    # Each part ran at its own rate: 10 Mb/s carries at most 10 × 1428/1500 of goodput, the
    # 100 Mb/s part more than the 10 Mb/s link could.
    assert tot["10 Mb/s 30 ms"] <= 10 * 1428 / 1500 and tot["100 Mb/s 5 ms"] > 10, tot
    assert (flows["tput_mbps"] > 0).all() and (flows["n"] == 2).all()
    assert "emulator (real time, l4slab flow senders)" in (out / "report.md").read_text()

"""tools/mutants_table.py on a cargo-mutants 27.1.0 outcomes.json: the baseline and the first
(missed) outcome are verbatim from a `make mutants` sample run; the caught, timeout, unviable
and second missed outcomes reuse that record with other mutants of the same run's mutants.json."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "mutants"
TOOL = ROOT / "tools" / "mutants_table.py"
_spec = importlib.util.spec_from_file_location("mutants_table", TOOL)
assert _spec is not None and _spec.loader is not None
mt = importlib.util.module_from_spec(_spec)
sys.modules["mutants_table"] = mt
_spec.loader.exec_module(mt)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True)


def test_modules_are_directories_of_l4s_core_and_files_of_l4s_sim() -> None:
    assert mt.module("crates/l4s-core/src/wifi/edca.rs") == "l4s-core wifi/"
    assert mt.module("crates/l4s-core/src/aqm/dualpi2/pi2.rs") == "l4s-core aqm/"
    assert mt.module("crates/l4s-core/src/aqm/mod.rs") == "l4s-core aqm/"
    assert mt.module("crates/l4s-sim/src/pcap.rs") == "l4s-sim pcap"
    assert mt.module("crates/l4s-core/src/aqm/dualpi2/pi2.rs", by_file=True) == \
        "l4s-core aqm/dualpi2/pi2.rs"


def test_the_table_counts_each_outcome_and_rates_timeouts_as_caught() -> None:
    r = _run(str(DATA / "outcomes.json"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # Five mutants tested of the seven in the run's mutants.json.
    assert lines[0] == "5 of 7 mutants tested (the run stopped early)."
    assert "| l4s-core aqm/ | 0 | 1 | 0 | 0 | 0 % |" in lines
    assert "| l4s-core rt/ | 0 | 1 | 1 | 0 | 50 % |" in lines
    # The unviable mutant is outside the rate: 1 caught of 1 viable.
    assert "| l4s-core wifi/ | 1 | 0 | 0 | 1 | 100 % |" in lines
    assert "| all | 1 | 2 | 1 | 1 | 50 % |" in lines
    missed = lines[lines.index("Missed:") + 1:lines.index("Missed:") + 3]
    assert missed == [
        "- crates/l4s-core/src/aqm/mod.rs:77:13: delete field marks from struct QueueSample "
        "expression in QueueSample::with_counters",
        "- crates/l4s-core/src/rt/probe.rs:123:9: replace <impl Endpoint for ProbeClient>"
        "::take_app_log -> AppLog with Default::default()",
    ]
    assert lines[lines.index("Timeout:") + 1] == \
        "- crates/l4s-core/src/rt/scream.rs:153:12: delete ! in ScreamParams::validate"


def test_a_failed_baseline_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    data = json.loads((DATA / "outcomes.json").read_text())
    data["outcomes"][0]["summary"] = "Failure"
    data["outcomes"] = data["outcomes"][:1]
    (tmp_path / "outcomes.json").write_text(json.dumps(data))
    r = _run(str(tmp_path / "outcomes.json"))
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr.startswith(
        "error: the baseline (unmutated tree) did not pass its tests (Failure)")


def test_a_missing_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    r = _run(str(tmp_path / "outcomes.json"))
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {tmp_path / 'outcomes.json'}: ")
    assert len(r.stderr.splitlines()) == 1

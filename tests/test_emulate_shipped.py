"""Every shipped scenario (scenarios/*.toml) through `l4slab emulate` in scenario mode, 2 s each:
it runs and writes a run directory, or it is one the emulator refuses by design (docs/emulator.md
"Scenario mode"), with that one-line reason. Issue 35: the Wi-Fi scenario was refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_emulate import ROOT, need_root  # noqa: E402

SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))
#: What scenario mode refuses by design, and the words of its one-line reason.
REFUSED = {
    "cbr_l4s_vs_classic_dualpi2": "flows[0].cc: \"cbr\" cannot run through the emulator",
    "parking_lot": "links: a chain of 3 hops runs in the simulator only",
}


def test_the_list_of_shipped_scenarios_is_the_one_tested():
    # A new scenario is tested here without a change; a removed refusal must go from REFUSED.
    names = {p.stem for p in SCENARIOS}
    assert len(names) >= 9, names
    assert set(REFUSED) <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_a_shipped_scenario_runs_in_scenario_mode(tmp_path, path):
    need_root()
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "l4slab.cli", "emulate", str(path), "--quiet",
                        "--set", "duration=2s", "--set", "warmup=0.5s", "-o", str(out)],
                       capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert "Traceback" not in r.stderr, r.stderr
    if path.stem in REFUSED:
        print(f"{path.stem}: refused by design: {r.stderr.strip()}")
        assert r.returncode == 2, r.stderr
        assert REFUSED[path.stem] in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert not out.exists()
        return
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["duration_s"] == pytest.approx(2.0, abs=0.5), s["duration_s"]
    # The flows have their rows and the link carried them after warm-up (a Wi-Fi link's
    # utilisation was 0.0 before it counted the MAC's deliveries).
    assert len(s["flows"]) >= 1, s["flows"]
    assert s["link"]["utilisation"] is not None and s["link"]["utilisation"] > 0, s["link"]

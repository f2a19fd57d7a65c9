"""The demo's scenario choice: the default experiment when it runs, else a named stand-in."""

from pathlib import Path

import pytest

from l4slab import demo
from l4slab.scenario import load_scenario


def test_default_scenario_runs_unchanged_on_this_build():
    src = load_scenario(demo.find_scenario())
    data, notes = demo.best_available(src.data, src.base_dir)
    assert notes == [] and data == src.data
    assert [f["cc"] for f in data["flows"]] == ["prague", "cubic"]
    assert data["aqm"]["kind"] == "dualpi2" and data["link"]["rate"] == "50mbit"


def test_missing_prague_falls_back_to_dctcp_and_says_so(monkeypatch):
    real = demo._valid

    def without_prague(data, base_dir):
        for i, f in enumerate(data["flows"]):
            if f["cc"] == "prague":
                return f'flows[{i}].cc: "prague" is not available in this build'
        return real(data, base_dir)

    monkeypatch.setattr(demo, "_valid", without_prague)
    src = load_scenario(demo.find_scenario())
    data, notes = demo.best_available(src.data, src.base_dir)
    assert [f["cc"] for f in data["flows"]] == ["dctcp", "cubic"]
    assert any("prague is not available, using dctcp" in n for n in notes)


def test_demo_writes_reports(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "REPLICATIONS", 2)
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert demo.main(["-o", str(tmp_path), "-j", "1"]) == 0
    assert (tmp_path / "prague_vs_cubic" / "report.html").stat().st_size > 10000
    assert (tmp_path / "sweep_step_thresh" / "sweep.parquet").exists()
    assert len(list((tmp_path / "sweep_step_thresh" / "runs").glob("*/summary.json"))) == 6


def test_no_stand_in_is_an_error():
    src = load_scenario(demo.find_scenario())
    broken = {**src.data, "link": {"rate": "nope"}}
    with pytest.raises(demo.ScenarioError, match="no runnable stand-in"):
        demo.best_available(broken, src.base_dir)

"""Research workflow: buffers in BDP units, sweeps across AQM kinds, replications that differ,
pcap export and progress on long runs (issue 25)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from l4slab.scenario import dumps_toml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_helpers import SHORT_BASE, invoke  # noqa: E402

# --- buffers in BDP units ----------------------------------------------------------------------


def test_bdp_limit_is_resolved_recorded_and_shown(tmp_path):
    scen = copy.deepcopy(SHORT_BASE)
    scen["aqm"] = {"kind": "fifo", "limit": "2bdp"}
    (tmp_path / "s.toml").write_text(dumps_toml(scen))
    res = invoke("run", tmp_path / "s.toml", "-o", tmp_path / "r", width=200)
    assert res.exit_code == 0, res.output
    summ = json.loads((tmp_path / "r" / "summary.json").read_text())
    # 10 Mb/s · 20 ms / 8 = 25 000 B = 16.67 packets of 1500 B; 2 BDP = 33.3 -> 34 packets.
    assert summ["buffer"]["value"] == 34 and summ["buffer"]["unit"] == "pkts"
    assert summ["scenario"]["aqm"]["limit"] == "2bdp"  # the echo keeps what was written
    assert "2bdp=34 pkts" in res.output
    report = (tmp_path / "r" / "report.html").read_text()
    assert "2bdp = 34 pkts" in report


def test_bdp_on_a_trace_link_asks_for_bdp_rate(tmp_path):
    scen = copy.deepcopy(SHORT_BASE)
    scen["link"] = {"trace": "t.down"}
    scen["aqm"] = {"kind": "fifo", "limit": "2bdp"}
    (tmp_path / "s.toml").write_text(dumps_toml(scen))
    res = invoke("run", tmp_path / "s.toml", "-o", tmp_path / "r")
    assert res.exit_code == 2
    assert "aqm.limit" in res.output and "aqm.bdp_rate" in res.output
    assert "Traceback" not in res.output

"""The `_core.run_scenario` / `validate_scenario` contract the Python side relies on."""

import json

import numpy as np
import pytest

from l4slab import ScenarioError, _core

SCEN = {"seed": 2, "duration": "1s", "link": {"rate": "10mbit"}, "aqm": {"kind": "dualpi2"},
        "flows": [{"cc": "prague", "rtt": "20ms"}, {"cc": "cubic", "rtt": "20ms"}],
        "output": {"packets": True}}


def test_columns_are_numpy_arrays_of_equal_length():
    raw = _core.run_scenario(json.dumps(SCEN), "json", ".")
    assert raw["queue_names"] == ["L", "C"] and raw["flow_cc"] == ["prague", "cubic"]
    for table in ("samples", "flows", "packets"):
        lengths = set()
        for name, col in raw[table].items():
            assert isinstance(col, np.ndarray) and col.ndim == 1, (table, name)
            assert col.dtype.itemsize in (1, 4, 8) and col.dtype.kind in "fu"
            lengths.add(len(col))
        assert len(lengths) == 1 and lengths.pop() > 0, table
    t = raw["samples"]["t_s"]
    assert np.all(np.diff(t) >= 0) and t[-1] == pytest.approx(1.0, abs=0.02)
    # conservation on the bottleneck: sent = delivered + AQM drops + link losses + in flight
    tot = raw["totals"]
    assert tot["sent_pkts"] == (tot["delivered_pkts"] + tot["aqm_dropped_pkts"]
                                + tot["link_lost_pkts"] + tot["in_flight_pkts"])
    # per-packet records: one per packet that left or was dropped at the bottleneck queue.
    # Packets still on the wire at the end have a record but count as in flight, so
    # delivered + dropped <= records <= sent; every AQM drop is a record with verdict 2.
    n_packets = len(raw["packets"]["t_s"])
    assert tot["delivered_pkts"] + tot["aqm_dropped_pkts"] <= n_packets <= tot["sent_pkts"]
    verdict = raw["packets"]["verdict"]
    assert int((verdict == 2).sum()) == tot["aqm_dropped_pkts"]
    assert json.loads(raw["summary_json"])["seed"] == 2


def test_toml_and_json_give_the_same_run():
    from l4slab.scenario import dumps_toml

    a = _core.run_scenario(json.dumps(SCEN), "json", ".")
    b = _core.run_scenario(dumps_toml(SCEN), "toml", ".")
    assert a["samples"].keys() == b["samples"].keys() and a["summary_json"] == b["summary_json"]
    for k, col in a["samples"].items():
        np.testing.assert_array_equal(col, b["samples"][k])


def test_errors_are_one_exception_type_naming_the_field():
    with pytest.raises(ScenarioError, match=r"flows\[1\]\.cc"):
        _core.validate_scenario(json.dumps({**SCEN, "flows": [SCEN["flows"][0],
                                                              {"cc": "x", "rtt": "1ms"}]}),
                                "json", ".")
    with pytest.raises(ScenarioError, match="fmt"):
        _core.validate_scenario("{}", "yaml", ".")
    with pytest.raises(ScenarioError, match="syntax"):
        _core.run_scenario("seed = ", "toml", ".")
    _core.validate_scenario(json.dumps(SCEN), "json", ".")  # valid: no exception

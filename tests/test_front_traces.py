"""Shipped traces and scenarios (`l4slab scenarios`), and the trace generator (`l4slab trace`)
against closed forms: opportunities × 12032 bits / period = the asked rate."""

import json
from pathlib import Path

import numpy as np
import pytest

import l4slab
from cli_helpers import invoke
from l4slab.traces import (
    OPPORTUNITY_BITS,
    TraceError,
    cellular,
    constant,
    on_off,
    steps,
    trace_rate_mbps,
)

ROOT = Path(__file__).resolve().parents[1]




def test_constant_rate_is_exact_and_even():
    # 12.032 Mb/s = one 1504-byte opportunity per ms: 1, 2, ..., 1000.
    t = constant(12.032, 1000)
    assert t.tolist() == list(range(1, 1001))
    # 50 Mb/s over 1 s: floor(50e6 / 12032) = 4155 opportunities, never more than
    # ceil(50e3/12032) = 5 in one millisecond.
    t = constant(50.0, 1000)
    assert t.size == 4155 and np.bincount(t).max() <= 5 and t[-1] == 1000
    assert trace_rate_mbps(t) == pytest.approx(50.0, rel=3e-4)


def test_steps_and_on_off_follow_their_segments():
    t = steps([(500, 12.032), (500, 0.0), (500, 24.064)])
    assert ((t > 500) & (t <= 1000)).sum() == 0  # the outage
    assert (t <= 500).sum() == 500 and (t > 1000).sum() == 1000
    t = on_off(24.064, on_ms=100, off_ms=100, cycles=2)
    # Two opportunities per ms in (0, 100] and (200, 300], one end marker at 400.
    assert t.size == 401 and t[-1] == 400 and ((t > 100) & (t <= 200)).sum() == 0


def test_cellular_is_seeded_and_keeps_its_mean():
    a, b = cellular(10.0, 20_000, seed=3), cellular(10.0, 20_000, seed=3)
    assert np.array_equal(a, b) and not np.array_equal(a, cellular(10.0, 20_000, seed=4))
    # Over 300 s the log-normal AR(1) (sigma 0.6, 0.5 s correlation) averages to the mean:
    # the rate's sd is 10·sqrt(e^0.36 − 1) = 6.6 Mb/s, about 300 independent seconds -> sd of
    # the mean ≈ 0.4 Mb/s; 10 % is 2.6 of those.
    long = cellular(10.0, 300_000, seed=1)
    assert trace_rate_mbps(long) == pytest.approx(10.0, rel=0.10)
    assert np.all(np.diff(long) >= 0)
    with pytest.raises(TraceError, match="sigma = 9: expected 0 ≤ sigma ≤ 3"):
        cellular(10.0, 1000, sigma=9)


def test_trace_command_writes_a_trace_the_simulator_runs(tmp_path):
    out = tmp_path / "c.down"
    res = invoke("trace", "constant", "12.032", "-o", out)
    assert res.exit_code == 0 and "mean 12.032 Mb/s" in res.output, res.output
    assert out.read_text().splitlines()[:3] == ["1", "2", "3"]
    scen = {"duration": "2s", "link": {"trace": str(out)}, "aqm": {"kind": "fifo"},
            "flows": [{"cc": "cbr", "rtt": "20ms", "rate": "20mbit"}]}
    r = l4slab.run(scen)
    assert r.summary["link"]["capacity_mbps"] == pytest.approx(12.032, rel=1e-3)
    res = invoke("trace", "steps", "100:5", "oops", "-o", out)
    assert res.exit_code == 2 and "DURATION_MS:RATE_MBPS" in res.output
    res = invoke("trace", "constant", "0", "-o", out)
    assert res.exit_code == 2 and "rate_mbps = 0: expected 0.01" in res.output


def test_shipped_traces_have_their_origin_beside_them():
    d = ROOT / "scenarios" / "traces"
    readme = (d / "README.md").read_text()
    for f in d.glob("*.down"):
        assert f.name in readme and f.stat().st_size < 300_000
        ts = np.loadtxt(f, dtype=np.int64)
        assert np.all(np.diff(ts) >= 0) and ts[-1] <= 30_000
    assert "GPL-3.0" in readme and "ravinet/mahimahi" in readme


def test_scenarios_list_and_copy_and_the_cellular_scenario_runs_from_the_copy(tmp_path):
    res = invoke("scenarios", "list")
    assert "cellular_tmobile_lte.toml" in res.output
    assert "traces/TMobile-LTE-short-30s.down" in res.output
    res = invoke("scenarios", "copy", tmp_path / "s")
    assert res.exit_code == 0, res.output
    res = invoke("scenarios", "copy", tmp_path / "s")
    assert res.exit_code == 2 and "--force" in res.output
    res = invoke("run", tmp_path / "s" / "cellular_tmobile_lte.toml", "-o", tmp_path / "r",
                 "--no-figures", "--set", "duration=3s", "--set", "warmup=1s")
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    # The first 30 s of the T-Mobile trace: 16.96 Mb/s on average; over 1..3 s it is what
    # those two seconds of the trace hold.
    ts = np.loadtxt(tmp_path / "s" / "traces" / "TMobile-LTE-short-30s.down", dtype=np.int64)
    window = ((ts > 1000) & (ts <= 3000)).sum() * OPPORTUNITY_BITS / 2.0 / 1e6
    assert s["link"]["capacity_mbps"] == pytest.approx(window, rel=0.01)

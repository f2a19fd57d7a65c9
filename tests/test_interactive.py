"""Interactive traffic through the Python front end: the frames / fct / probes tables land in
the run directory, read back equal, carry the summary's figures, and draw their figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import l4slab
from l4slab.results import load_run

SCENARIO = {
    "seed": 3, "duration": "6s", "warmup": "1s",
    "link": {"rate": "20mbit"}, "aqm": {"kind": "dualpi2"},
    "flows": [{"cc": "rt-prague", "rtt": "20ms", "fps": 50, "deadline": "80ms"},
              {"cc": "cubic", "rtt": "20ms"}],
    "workloads": [{"rate": 5.0, "sizes": "web-search", "rtt": "20ms"}],
    "probes": [{"rtt": "20ms"}, {"rtt": "20ms", "ecn": "classic"}],
}


def test_application_tables_round_trip_and_match_the_summary(tmp_path: Path) -> None:
    run = l4slab.run(SCENARIO, tmp_path / "r")
    for name in ("frames", "fct", "probes"):
        assert (tmp_path / "r" / f"{name}.parquet").exists()
    back = load_run(tmp_path / "r")
    for name in ("frames", "fct", "probes"):
        assert back.app[name].equals(run.app[name]), name
    fr = back.app["frames"]
    f = back.summary["flows"][0]["frames"]
    after = fr[fr["capture_s"] >= 1.0]
    # The summary's counts and percentiles are those of the table's rows after warm-up.
    assert f["frames"] == len(after)
    assert f["deadline_misses"] == int(after["late"].sum())
    lat = after["latency_ms"].dropna().to_numpy()
    assert f["latency_ms"]["p99"] == pytest.approx(np.percentile(lat, 99))
    assert f["deadline_ms"] == 80.0
    pr = back.app["probes"]
    l4s = pr[(pr["probe"] == 0) & (pr["t_s"] >= 1.0)]["rtt_ms"]
    assert back.summary["rpm"]["L4S"] == pytest.approx(60_000 / np.median(l4s))
    fct = back.app["fct"]
    assert (fct["slowdown"].dropna() >= 1.0).all()
    assert (tmp_path / "r" / "frame_latency_cdf.png").exists()
    assert (tmp_path / "r" / "slowdown.png").exists()
    # The summary lists the two [[flows]] only; transfers and probes are in their tables.
    assert len(back.summary["flows"]) == 2


def test_a_run_without_application_traffic_writes_no_such_tables(tmp_path: Path) -> None:
    sc = {k: v for k, v in SCENARIO.items() if k not in ("workloads", "probes")}
    sc["flows"] = [{"cc": "cubic", "rtt": "20ms"}]
    run = l4slab.run(sc, tmp_path / "r", figures=False, report=False)
    assert run.app == {}
    assert not any((tmp_path / "r" / f"{n}.parquet").exists() for n in ("frames", "fct", "probes"))
    assert "workloads" not in run.summary and "rpm" not in run.summary


def test_bad_application_keys_are_one_clear_error() -> None:
    bad = {**SCENARIO, "flows": [{"cc": "rt-prague", "rtt": "20ms", "fps": 300}]}
    with pytest.raises(l4slab.ScenarioError, match=r"flows\[0\]\.fps.*\[1, 255\]"):
        l4slab.run(bad)


def test_a_cdf_file_is_read_relative_to_the_scenario_and_kept_in_the_run_dir(
        tmp_path: Path) -> None:
    (tmp_path / "sizes.cdf").write_text("# bytes probability\n1000 0\n1000 0.5\n5000 1\n")
    sc = {k: v for k, v in SCENARIO.items() if k != "workloads"}
    sc["workloads"] = [{"rate": 20.0, "sizes": "sizes.cdf", "rtt": "20ms"}]
    from l4slab.scenario import dumps_toml

    (tmp_path / "s.toml").write_text(dumps_toml(sc))
    run = l4slab.run(tmp_path / "s.toml", tmp_path / "r", figures=False, report=False)
    sizes = run.app["fct"]["size_bytes"]
    assert sizes.between(1000, 5000).all() and (sizes == 1000).mean() > 0.3
    # The run directory's scenario.toml still finds the file.
    again = l4slab.run(tmp_path / "r" / "scenario.toml", figures=False, report=False)
    assert again.app["fct"]["size_bytes"].equals(sizes)

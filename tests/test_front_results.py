"""Run directories, figures and reports from column data generated here (the same
`(dtype, bytes)` layout `_core.run_scenario` returns). These check the Python plumbing only;
simulation results are checked in test_front_cli.py against the real simulator."""

import json

import numpy as np
import pandas as pd
import pytest

from l4slab.plots import numeric_axis, plot_run, plot_sweep
from l4slab.report import sweep_report
from l4slab.results import from_core, load, load_run, write_run_dir
from l4slab.sweeps import SweepData, flatten_summary


def col(a):
    a = np.asarray(a)
    return (a.dtype.str, a.tobytes())


def synthetic_raw(n=200, packets=True):
    t = np.arange(1, n + 1) * 0.016
    # two queues (L=0, C=1) interleaved per sample; two flows (0 prague, 1 cubic)
    qt = np.repeat(t, 2)
    q = np.tile(np.array([0, 1], dtype=np.uint8), n)
    p_prime = np.repeat(0.1 + 0.05 * np.sin(t), 2)
    samples = {
        "t_s": col(qt), "queue": col(q),
        "backlog_pkts": col(np.where(q == 0, 2, 30).astype(np.uint64)),
        "backlog_bytes": col(np.where(q == 0, 3000, 45000).astype(np.uint64)),
        "sojourn_ms": col(np.where(q == 0, 0.5, 15.0)),
        "marks": col(np.ones(2 * n, dtype=np.uint64)), "drops": col(np.zeros(2 * n, np.uint64)),
        "p_prime": col(p_prime), "p_c": col(p_prime**2), "p_cl": col(2 * p_prime),
    }
    f = np.tile(np.array([0, 1], dtype=np.uint32), n)
    flows = {
        "t_s": col(qt), "flow": col(f),
        "delivered_bytes": col((np.repeat(np.arange(1, n + 1), 2) * 50_000).astype(np.uint64)),
        "tput_mbps": col(np.where(f == 0, 24.0, 25.0)),
        "cwnd_pkts": col(np.where(f == 0, 80.0, 90.0)),
        "srtt_ms": col(np.full(2 * n, 41.0)), "pacing_mbps": col(np.full(2 * n, 25.0)),
        "ce_acked": col(np.arange(2 * n, dtype=np.uint64)),
    }
    pk = None
    if packets:
        m = 1000
        pk = {"t_s": col(np.linspace(0, t[-1], m)),
              "flow": col((np.arange(m) % 2).astype(np.uint32)),
              "queue": col((np.arange(m) % 2).astype(np.uint8)),
              "sojourn_ms": col(np.linspace(0, 20, m)),
              "verdict": col((np.arange(m) % 3).astype(np.uint8))}
    summary = {"l4slab_version": "0.1.0", "seed": 1, "duration_s": t[-1], "warmup_s": 0.5,
               "link": {"capacity_mbps": 50.0, "utilisation": 0.98, "unused_txops": 0},
               "flows": [{"id": 0, "cc": "prague", "class": "L4S", "tput_mbps": 24.0},
                         {"id": 1, "cc": "cubic", "class": "Classic", "tput_mbps": 25.0}],
               "queues": [{"name": "L", "sojourn_ms": {"mean": 0.5, "p50": 0.5, "p95": 0.5,
                                                       "p99": 0.5}, "marks": 10, "drops": 0},
                          {"name": "C", "sojourn_ms": {"mean": 15, "p50": 15, "p95": 15,
                                                       "p99": 15}, "marks": 5, "drops": 1}],
               "jain": 0.9999}
    return {"queue_names": ["L", "C"], "flow_cc": ["prague", "cubic"],
            "flow_class": ["L4S", "Classic"], "samples": samples, "flows": flows,
            "packets": pk, "summary_json": json.dumps(summary), "events": 123}


def test_from_core_views_columns_and_names_categories():
    raw = synthetic_raw()
    run = from_core(raw, scenario={"seed": 1})
    assert list(run.samples.columns) == ["t_s", "queue", "backlog_pkts", "backlog_bytes",
                                         "sojourn_ms", "marks", "drops", "p_prime", "p_c", "p_cl"]
    assert list(run.flows.columns) == ["t_s", "flow", "cc", "class", "delivered_bytes",
                                       "tput_mbps", "cwnd_pkts", "srtt_ms", "pacing_mbps",
                                       "ce_acked"]
    assert run.samples["queue"].tolist()[:2] == ["L", "C"]
    assert run.samples["backlog_bytes"].dtype == np.uint64
    assert run.flows.loc[run.flows["flow"] == 1, "cc"].unique().tolist() == ["cubic"]
    assert run.flows.loc[run.flows["flow"] == 0, "class"].unique().tolist() == ["L4S"]
    assert run.packets["verdict"].tolist()[:3] == ["pass", "mark", "drop"]
    assert run.summary["jain"] == 0.9999 and run.events == 123
    # the numpy views share the bytes objects: no copy before the DataFrame
    arr = np.frombuffer(raw["samples"]["t_s"][1], dtype="<f8")
    assert not arr.flags.writeable and arr[0] == pytest.approx(0.016)


def test_unknown_queue_code_is_an_error():
    raw = synthetic_raw(packets=False)
    raw["queue_names"] = ["L"]
    with pytest.raises(ValueError, match="queue code 1"):
        from_core(raw)


def test_run_dir_round_trip_with_figures_and_report(tmp_path):
    run = from_core(synthetic_raw(), scenario={"seed": 1, "aqm": {"kind": "dualpi2"}})
    out = write_run_dir(run, tmp_path / "r")
    for name in ("samples.parquet", "flows.parquet", "packets.parquet", "summary.json",
                 "scenario.toml", "report.html"):
        assert (out / name).stat().st_size > 0, name
    for fig in ("throughput", "sojourn", "probability", "sojourn_cdf", "cwnd"):
        for ext in ("png", "svg"):
            assert (out / f"{fig}.{ext}").stat().st_size > 5000, (fig, ext)
    assert (out / "throughput.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 5 and "prague" in html
    back = load(out)
    pd.testing.assert_frame_equal(back.samples, run.samples)
    pd.testing.assert_frame_equal(back.flows, run.flows)
    pd.testing.assert_frame_equal(back.packets, run.packets)
    assert back.summary == run.summary and back.scenario == run.scenario


def test_no_probability_figure_without_probabilities(tmp_path):
    raw = synthetic_raw(packets=False)
    nan = col(np.full(400, np.nan))
    raw["samples"].update(p_prime=nan, p_c=nan, p_cl=nan)
    files = plot_run(from_core(raw), tmp_path)
    names = sorted({p.stem for p in files})
    assert names == ["cwnd", "sojourn", "sojourn_cdf", "throughput"]


def test_load_refuses_unfinished_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="no summary.json"):
        load_run(tmp_path)


def test_flatten_summary_names_and_class_sums():
    m = flatten_summary(json.loads(synthetic_raw()["summary_json"]))
    assert m["jain"] == 0.9999 and m["link.utilisation"] == 0.98
    assert m["flows.1.cc"] == "cubic" and m["queues.C.sojourn_ms.p99"] == 15
    assert m["class.L4S.tput_mbps"] == 24.0 and m["class.Classic.tput_mbps"] == 25.0
    assert "flows.0.id" not in m


def test_numeric_axis_parses_units():
    x, unit, ticks = numeric_axis(["1ms", "5ms", "250us"])
    assert x.tolist() == pytest.approx([1.0, 5.0, 0.25]) and unit == " [ms]" and ticks is None
    x, unit, _ = numeric_axis(["50mbit", "1.5gbit"])
    assert x.tolist() == pytest.approx([50.0, 1500.0]) and unit == " [Mb/s]"
    x, _, ticks = numeric_axis(["prague", "dctcp"])
    assert x.tolist() == [0.0, 1.0] and ticks == ["prague", "dctcp"]


def test_sweep_figure_and_report_with_confidence_bands(tmp_path):
    rows = []
    for i, st in enumerate(["1ms", "5ms", "10ms"]):
        for rep in range(4):
            rows.append({"run": f"p{i:03d}-r{rep:02d}", "aqm.step_thresh": st, "seed": rep,
                         "status": "ok", "error": None,
                         "queues.L.sojourn_ms.p99": 1.0 + i + 0.1 * rep, "jain": 0.9})
    rows.append({"run": "p003-r00", "aqm.step_thresh": "20ms", "seed": 0, "status": "failed",
                 "error": "ScenarioError: boom"})
    data = SweepData(path=tmp_path, index=pd.DataFrame(rows), params=["aqm.step_thresh"],
                     meta={"grid": {"aqm.step_thresh": ["1ms", "5ms", "10ms", "20ms"]},
                           "replications": 4})
    files = plot_sweep(data, tmp_path)
    assert sorted(p.name for p in files) == ["sweep_aqm_step_thresh.png",
                                             "sweep_aqm_step_thresh.svg"]
    assert all(p.stat().st_size > 5000 for p in files)
    html = sweep_report(data, tmp_path).read_text()
    # mean of 1.0,1.1,1.2,1.3 = 1.15; sd = 0.1291; t(0.975,3) = 3.182 → half = 0.2054
    assert "1.15 ± 0.21" in html
    assert "ScenarioError: boom" in html and html.count("data:image/png;base64,") == 1

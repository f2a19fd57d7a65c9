"""Per-flow results of a sweep (issue 26, item 2): sweep.parquet holds per-run scalars, and
sweep_flows.parquet one row per finished run and flow with summary.json's per-flow fields."""

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from cli_helpers import SHORT_BASE
from l4slab.results import OutputDirError
from l4slab.scenario import dumps_toml
from l4slab.sweeps import (
    FLOW_TABLE,
    SweepData,
    flatten_summary,
    load_sweep,
    sweep,
    wide_flow_columns,
)

#: Prague + 2 CUBIC (a `count` entry: flow ids 0, 1, 2), 1 s: 2 grid points × 2 replications.
BASE = {**SHORT_BASE, "duration": "1s",
        "flows": [SHORT_BASE["flows"][0], {**SHORT_BASE["flows"][1], "count": 2}]}
RUNS, FLOWS = 4, 3


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweepflows")
    (d / "base.toml").write_text(dumps_toml(BASE))
    (d / "sweep.toml").write_text(
        'base = "base.toml"\nreplications = 2\n[grid]\n"aqm.step_thresh" = ["1ms", "5ms"]\n')
    res = sweep(d / "sweep.toml", d / "out", jobs=1, report=False)
    assert res.ok and len(res.index) == RUNS
    return d / "out"


def _summaries(out):
    return {rd.name: json.loads((rd / "summary.json").read_text())
            for rd in sorted((out / "runs").iterdir())}


def test_flow_table_has_one_row_per_run_and_flow_with_the_summary_values(swept):
    long = pd.read_parquet(swept / FLOW_TABLE)
    assert len(long) == RUNS * FLOWS
    assert list(long.columns[:6]) == ["run", "point", "rep", "aqm.step_thresh", "seed", "flow"]
    index = pd.read_parquet(swept / "sweep.parquet").set_index("run")
    summaries = _summaries(swept)
    assert sorted(long["run"].unique()) == sorted(summaries)
    assert {"tput_mbps", "srtt_ms", "cc", "class", "ce_marks", "retransmits"} <= set(long.columns)
    for run, s in summaries.items():
        rows = long[long["run"] == run].set_index("flow")
        assert list(rows.index) == [f["id"] for f in s["flows"]] == [0, 1, 2]
        # The run's identity columns repeat sweep.parquet's values.
        for c in ("point", "rep", "aqm.step_thresh", "seed"):
            assert (rows[c] == index.loc[run, c]).all(), (run, c)
        for f in s["flows"]:
            for k, v in f.items():
                if k == "id" or isinstance(v, (dict, list)):
                    continue
                got = rows.loc[f["id"], k]
                assert (got is None or pd.isna(got)) if v is None else got == v, (run, k)
            for k, v in f["host"].items():
                assert rows.loc[f["id"], f"host.{k}"] == v
        assert rows["cc"].tolist() == ["prague", "cubic", "cubic"]


def test_index_keeps_per_run_scalars_and_no_per_flow_columns(swept):
    index = pd.read_parquet(swept / "sweep.parquet")
    assert not [c for c in index.columns if c.startswith("flows.")]
    for run, s in _summaries(swept).items():
        row = index[index["run"] == run].iloc[0]
        scalars = flatten_summary(s, per_flow=False)
        assert not [k for k in scalars if k.startswith("flows.")]
        # Per-class sums stay per-run scalars: L4S is flow 0, Classic flows 1 and 2.
        tputs = [f["tput_mbps"] for f in s["flows"]]
        assert row["class.L4S.tput_mbps"] == pytest.approx(tputs[0], rel=1e-12)
        assert row["class.Classic.tput_mbps"] == pytest.approx(tputs[1] + tputs[2], rel=1e-12)
        assert row["jain"] == s["jain"]


def test_wide_flow_columns_equal_the_old_flattened_index(swept):
    """What suites read per run (flows.<id>.<field>) is what the wide index held before."""
    fields = ["cc", "class", "tput_mbps", "srtt_ms", "ce_marks", "retransmits"]
    wide = wide_flow_columns(swept, fields).set_index("run")
    assert list(wide.columns) == [f"flows.{i}.{k}" for i in range(FLOWS) for k in fields]
    old = pd.DataFrame([{"run": r, **flatten_summary(s)} for r, s in _summaries(swept).items()]
                       ).set_index("run")
    pd.testing.assert_frame_equal(wide.loc[old.index], old[wide.columns])


def test_columns_are_read_one_by_one_and_a_missing_table_or_column_is_named(swept, tmp_path):
    data = load_sweep(swept)
    t = data.flows(["run", "flow", "tput_mbps"])
    assert list(t.columns) == ["run", "flow", "tput_mbps"] and len(t) == RUNS * FLOWS
    assert np.isfinite(t["tput_mbps"]).all()
    assert pq.ParquetFile(swept / FLOW_TABLE).metadata.num_rows == RUNS * FLOWS
    with pytest.raises(OutputDirError, match="no column 'nope'"):
        data.flows(["run", "nope"])
    (tmp_path / "old").mkdir()
    with pytest.raises(OutputDirError, match=f"no {FLOW_TABLE}.*rerun the same"):
        SweepData(tmp_path / "old", data.index, data.params, {}).flows()


def test_a_resumed_sweep_rewrites_the_same_flow_table(swept):
    before = pq.read_table(swept / FLOW_TABLE)
    res = sweep(swept.parent / "sweep.toml", swept, jobs=1, report=False)
    assert res.skipped == RUNS and res.ran == 0
    assert pq.read_table(swept / FLOW_TABLE).equals(before)


def test_a_per_flow_field_named_like_an_identity_column_gets_its_own_column(swept, tmp_path):
    """An emulated run's flows carry `flow` (their 5-tuple label): it must not collide with
    the table's `flow` id column (Arrow refuses two fields of one name when reading)."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(swept, out)
    shutil.copy(swept.parent / "base.toml", tmp_path / "base.toml")
    shutil.copy(swept.parent / "sweep.toml", tmp_path / "sweep.toml")
    for summ in (out / "runs").glob("*/summary.json"):
        s = json.loads(summ.read_text())
        for f in s["flows"]:
            f["flow"] = f"udp 10.77.0.1:{40000 + f['id']}>10.77.0.2:5201"
        summ.write_text(json.dumps(s))
    res = sweep(tmp_path / "sweep.toml", out, jobs=1, report=False)
    assert res.skipped == RUNS and res.ran == 0
    t = pq.read_table(out / FLOW_TABLE)
    assert t.schema.names.count("flow") == 1 and "flow.flow" in t.schema.names
    long = load_sweep(out).flows(["run", "flow", "flow.flow"])
    assert (long["flow.flow"] == [f"udp 10.77.0.1:{40000 + i}>10.77.0.2:5201"
                                  for i in long["flow"]]).all()
    wide = wide_flow_columns(out, ["flow", "cc"]).set_index("run")
    assert wide["flows.2.flow"].eq("udp 10.77.0.1:40002>10.77.0.2:5201").all()
    assert wide["flows.0.cc"].eq("prague").all()

"""Per-flow and per-packet tables kept as columns (issue 13): the files written from the
columns are the files `DataFrame.to_parquet` wrote before, the columns cross from Rust
without a copy, and the figures' numpy aggregations equal pandas' groupby."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import l4slab.columnar as columnar
from l4slab import _core
from l4slab.columnar import grouped_by_time, per_flow_mean
from l4slab.plots import MAX_FLOWS_DRAWN, fig_throughput
from l4slab.results import FLOW_COLUMNS, RunData, from_core, load_run, write_run_dir
from l4slab.runner import simulate
from test_front_results import synthetic_raw

SCEN = {"seed": 3, "duration": "2s", "warmup": "0.5s", "link": {"rate": "20mbit"},
        "aqm": {"kind": "dualpi2"}, "output": {"packets": True},
        "flows": [{"cc": "prague", "rtt": "20ms", "count": 3},
                  {"cc": "cubic", "rtt": "30ms", "count": 2}]}


def _as_array(v):
    """A `_core` array, or a `(dtype, bytes)` pair of the synthetic columns."""
    return v if isinstance(v, np.ndarray) else np.frombuffer(v[1], dtype=np.dtype(v[0]))


def _old_frames(raw):
    """The DataFrames `from_core` built before the tables stayed columnar (pandas from the
    raw arrays, cc/class from per-row object arrays)."""
    a = {k: _as_array(v) for k, v in raw["flows"].items()}
    ids = a["flow"].astype(np.int64)
    flows = pd.DataFrame({k: a[k] for k in FLOW_COLUMNS if k in a})
    flows.insert(2, "cc", pd.Categorical(np.asarray(raw["flow_cc"], dtype=object)[ids]))
    flows.insert(3, "class", pd.Categorical(np.asarray(raw["flow_class"], dtype=object)[ids],
                                            categories=["L4S", "Classic"]))
    p = {k: _as_array(v) for k, v in raw["packets"].items()}
    packets = pd.DataFrame({"t_s": p["t_s"], "flow": p["flow"]})
    packets["queue"] = pd.Categorical.from_codes(p["queue"].astype(np.int16),
                                                 categories=list(raw["queue_names"]))
    packets["sojourn_ms"] = p["sojourn_ms"]
    packets["verdict"] = pd.Categorical.from_codes(p["verdict"].astype(np.int16),
                                                   categories=["pass", "mark", "drop"])
    return flows, packets


@pytest.fixture(scope="module")
def sim_raw():
    return _core.run_scenario(json.dumps(SCEN), "json", ".")


def test_core_hands_columns_as_numpy_arrays_of_the_simulator_dtypes(sim_raw):
    f = sim_raw["flows"]
    assert all(isinstance(v, np.ndarray) for v in f.values())
    assert {k: v.dtype.str for k, v in f.items()} == {
        "t_s": "<f8", "flow": "<u4", "delivered_bytes": "<u8", "tput_mbps": "<f8",
        "cwnd_pkts": "<f8", "srtt_ms": "<f8", "pacing_mbps": "<f8", "ce_acked": "<u8",
        "target_mbps": "<f8", "acked_mbps": "<f8"}
    # 5 flows x one row per 16 ms sample over 2 s.
    assert len(f["t_s"]) == 5 * 125
    assert sim_raw["packets"]["verdict"].dtype == np.uint8


def test_run_data_keeps_the_arrays_it_was_given(sim_raw):
    run = from_core(sim_raw)
    assert run.flow_columns is not None
    for k in ("t_s", "tput_mbps", "flow", "ce_acked"):
        assert run.flow_columns.numeric(k) is sim_raw["flows"][k]
    assert run.packet_columns.numeric("sojourn_ms") is sim_raw["packets"]["sojourn_ms"]


def test_parquet_written_from_columns_is_the_file_pandas_wrote(sim_raw, tmp_path):
    old_flows, old_packets = _old_frames(sim_raw)
    old_flows.to_parquet(tmp_path / "old_flows.parquet", index=False)
    old_packets.to_parquet(tmp_path / "old_packets.parquet", index=False)
    run = from_core(sim_raw, scenario=SCEN)
    write_run_dir(run, tmp_path / "run", figures=False, report=False)
    assert run.flow_columns is not None, "writing must not build the DataFrame"
    for name in ("flows", "packets"):
        new = (tmp_path / "run" / f"{name}.parquet").read_bytes()
        assert new == (tmp_path / f"old_{name}.parquet").read_bytes(), name
    # NaN (srtt before the first RTT sample, if any) and dtypes round-trip as before.
    back = load_run(tmp_path / "run")
    pd.testing.assert_frame_equal(back.flows, old_flows)
    pd.testing.assert_frame_equal(back.packets, old_packets)


def test_dataframe_on_first_access_equals_the_old_one_and_edits_are_written(sim_raw, tmp_path):
    old_flows, old_packets = _old_frames(sim_raw)
    run = from_core(sim_raw, scenario=SCEN)
    assert run.flow_rows() == len(old_flows) and "flow rows" in repr(run)
    pd.testing.assert_frame_equal(run.flows, old_flows)
    pd.testing.assert_frame_equal(run.packets, old_packets)
    assert run.flow_columns is None and run.packet_columns is None
    run.flows["tput_mbps"] = 1.5  # once built, the DataFrame is the table
    write_run_dir(run, tmp_path, figures=False, report=False)
    assert (load_run(tmp_path).flows["tput_mbps"] == 1.5).all()


def test_nan_and_empty_tables_write_like_pandas(tmp_path):
    raw = synthetic_raw(n=3, packets=False)
    cw = np.frombuffer(raw["flows"]["cwnd_pkts"][1], dtype="<f8").copy()
    cw[::2] = np.nan  # CBR-style missing cwnd
    raw["flows"]["cwnd_pkts"] = cw
    old, _ = _old_frames({**raw, "packets": synthetic_raw(n=3)["packets"]})
    old.to_parquet(tmp_path / "old.parquet", index=False)
    run = from_core(raw)
    run.flow_columns.write_parquet(tmp_path / "new.parquet")
    assert (tmp_path / "new.parquet").read_bytes() == (tmp_path / "old.parquet").read_bytes()
    empty = synthetic_raw(n=1, packets=False)
    empty["flows"] = {k: _as_array(v)[:0] for k, v in empty["flows"].items()}
    old0, _ = _old_frames({**empty, "packets": synthetic_raw(n=1)["packets"]})
    old0.to_parquet(tmp_path / "old0.parquet", index=False)
    from_core(empty).flow_columns.write_parquet(tmp_path / "new0.parquet")
    assert (tmp_path / "new0.parquet").read_bytes() == (tmp_path / "old0.parquet").read_bytes()


def _random_rows(rng, n_rows=5000, n_flows=40):
    t = np.repeat(np.arange(1, n_rows // n_flows + 1) * 0.016, n_flows)
    f = np.tile(np.arange(n_flows, dtype=np.uint32), n_rows // n_flows)
    y = rng.exponential(10.0, size=t.size)
    y[rng.random(t.size) < 0.1] = np.nan
    y[f == 7] = np.nan  # a flow with no value at all
    return t, f, y


@pytest.mark.parametrize("chunk", [64, 1 << 18])
def test_chunked_aggregations_equal_pandas_groupby(monkeypatch, chunk):
    monkeypatch.setattr(columnar, "CHUNK_ROWS", chunk)
    t, f, y = _random_rows(np.random.default_rng(1))
    df = pd.DataFrame({"t_s": t, "flow": f, "y": y})
    want = df.groupby("flow")["y"].mean().to_numpy()
    np.testing.assert_allclose(per_flow_mean(f, y, 40), want, rtol=1e-12, equal_nan=True)
    assert np.isnan(per_flow_mean(f, y, 40)[7])
    for how in ("sum", "mean"):
        g = df.groupby("t_s", sort=True)["y"].agg(how)
        tt, v = grouped_by_time(t, y, how)
        np.testing.assert_array_equal(tt, g.index.to_numpy())
        np.testing.assert_allclose(v, g.to_numpy(), rtol=1e-12, equal_nan=True)
        sub = df[df["flow"] % 3 == 0].groupby("t_s", sort=True)["y"].agg(how)
        tt, v = grouped_by_time(t, y, how, lambda s: f[s] % 3 == 0)
        np.testing.assert_allclose(v, sub.to_numpy(), rtol=1e-12, equal_nan=True)


def test_many_flow_figure_draws_the_busiest_flows_and_class_sums_as_pandas_would(monkeypatch):
    monkeypatch.setattr(columnar, "CHUNK_ROWS", 64)
    rng = np.random.default_rng(2)
    t, f, y = _random_rows(rng)
    n = 40
    y[f == 3] = 500.0  # tie at the top: lower flow id first, as nlargest keeps it
    y[f == 11] = 500.0
    flows = {"t_s": t, "flow": f, "delivered_bytes": np.zeros(t.size, np.uint64),
             "tput_mbps": y, "cwnd_pkts": y, "srtt_ms": y, "pacing_mbps": y,
             "ce_acked": np.zeros(t.size, np.uint64)}
    cls = ["L4S" if i % 4 == 0 else "Classic" for i in range(n)]
    summary = {"flows": [{"id": i, "cc": "x", "class": cls[i]} for i in range(n)],
               "sample_interval_s": 0.016}
    raw = {"queue_names": ["L", "C"], "flow_cc": ["x"] * n, "flow_class": cls,
           "samples": synthetic_raw(n=2)["samples"], "flows": flows, "packets": None,
           "summary_json": json.dumps(summary)}
    fig = fig_throughput(from_core(raw))
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    df = pd.DataFrame({"t_s": t, "flow": f, "y": y, "cls": np.asarray(cls)[f]})
    busiest = df.groupby("flow")["y"].mean().nlargest(MAX_FLOWS_DRAWN).index
    drawn = sorted(int(k.split()[1]) for k in lines if k.startswith("flow "))
    assert drawn == sorted(busiest.tolist()) and {3, 11} <= set(drawn)
    win = round(0.1 / 0.016)
    for c in ("L4S", "Classic"):
        want = (df[df["cls"] == c].groupby("t_s")["y"].sum()
                .rolling(win, min_periods=1).mean().to_numpy())
        n_c = cls.count(c)
        np.testing.assert_allclose(lines[f"{c}: sum of {n_c} flows"].get_ydata(), want,
                                   rtol=1e-12)
    tot = df.groupby("t_s")["y"].sum().rolling(win, min_periods=1).mean().to_numpy()
    np.testing.assert_allclose(lines["total goodput (payload)"].get_ydata(), tot, rtol=1e-12)
    g = df[df["flow"] == 3]
    np.testing.assert_allclose(lines["flow 3 x (Classic)"].get_ydata(),
                               g["y"].rolling(win, min_periods=1).mean().to_numpy())


def test_a_pickled_run_carries_its_tables_as_the_parquet_files(sim_raw, tmp_path):
    """A sweep worker's result reaches the parent pickled: the tables travel as their Parquet
    bytes (smaller than the columns), and the parent writes exactly the file the worker's
    columns give."""
    import pickle

    run = simulate(SCEN, ".")
    write_run_dir(run, tmp_path / "direct", figures=False, report=False)
    blob = pickle.dumps(run)
    raw_bytes = sum(run.flow_columns.numeric(k).nbytes for k in run.flow_columns.names
                    if k not in ("cc", "class"))
    back = pickle.loads(blob)
    assert isinstance(back, RunData) and back.flow_columns is not None
    # Smaller even at 625 rows (the Parquet footer is a few kB); 34 MB against 375 MB of
    # columns for the 10 000-flow run (BENCHMARKS.md).
    assert len(pickle.dumps(back.flow_columns)) < raw_bytes
    write_run_dir(back, tmp_path / "via_pickle", figures=False, report=False)
    for name in ("flows.parquet", "packets.parquet", "samples.parquet", "summary.json"):
        assert ((tmp_path / "via_pickle" / name).read_bytes()
                == (tmp_path / "direct" / name).read_bytes()), name
    pd.testing.assert_frame_equal(back.flows, run.flows)
    pd.testing.assert_frame_equal(back.packets, run.packets)


def test_an_empty_table_survives_pickling(tmp_path):
    import pickle

    empty = synthetic_raw(n=1, packets=False)
    empty["flows"] = {k: _as_array(v)[:0] for k, v in empty["flows"].items()}
    t = from_core(empty).flow_columns
    back = pickle.loads(pickle.dumps(t))
    assert len(back) == 0 and back.names == t.names
    pd.testing.assert_frame_equal(back.to_pandas(), t.to_pandas())


def test_loaded_run_reads_only_the_columns_a_figure_draws(sim_raw, tmp_path):
    write_run_dir(from_core(sim_raw, scenario=SCEN), tmp_path, figures=False, report=False)
    run = load_run(tmp_path)
    assert run.flow_columns is not None and run.flow_columns.columns == {}
    assert run.flow_rows() == 5 * 125
    fig_throughput(run)
    assert set(run.flow_columns.columns) == {"t_s", "flow", "tput_mbps"}
    pd.testing.assert_frame_equal(run.flows, pd.read_parquet(tmp_path / "flows.parquet"))
    pd.testing.assert_frame_equal(run.packets, pd.read_parquet(tmp_path / "packets.parquet"))


def test_a_table_with_other_column_types_loads_as_a_dataframe(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from l4slab.columnar import ColumnTable

    df = pd.DataFrame({"t_s": [0.1, 0.2], "flow": np.array([0, 1], np.uint32),
                       "cc": ["cubic", "prague"]})  # plain strings, not a dictionary
    df.to_parquet(tmp_path / "f.parquet", index=False)
    assert ColumnTable.from_parquet(tmp_path / "f.parquet") is None
    # integers with nulls read as float64 with NaN, as pandas reads them
    pq.write_table(pa.table({"x": pa.array([1, None, 3], pa.uint64())}), tmp_path / "n.parquet")
    t = ColumnTable.from_parquet(tmp_path / "n.parquet")
    np.testing.assert_array_equal(t.numeric("x"), pd.read_parquet(tmp_path / "n.parquet")["x"])
    assert t.numeric("x").dtype == np.float64


@pytest.mark.parametrize("victim", ["flows.parquet", "samples.parquet", "summary.json"])
def test_plot_of_a_corrupt_run_file_is_one_error_naming_it(sim_raw, tmp_path, victim):
    from cli_helpers import invoke

    write_run_dir(from_core(sim_raw, scenario=SCEN), tmp_path, figures=False, report=False)
    data = (tmp_path / victim).read_bytes()
    (tmp_path / victim).write_bytes(data[: len(data) // 2])  # cut short
    res = invoke("plot", tmp_path)
    assert res.exit_code == 2
    assert f"{tmp_path / victim}: cannot be read" in " ".join(res.output.split())
    assert "Traceback" not in res.output


def test_a_column_that_cannot_be_read_names_the_file(sim_raw, tmp_path):
    from l4slab.columnar import ColumnTable, UnreadableFileError

    write_run_dir(from_core(sim_raw, scenario=SCEN), tmp_path, figures=False, report=False)
    t = ColumnTable.from_parquet(tmp_path / "flows.parquet")
    data = bytearray((tmp_path / "flows.parquet").read_bytes())
    data[4:200] = b"\xff" * 196  # the first column chunk's pages, footer intact
    (tmp_path / "flows.parquet").write_bytes(bytes(data))
    with pytest.raises(UnreadableFileError, match=r"flows\.parquet: column 't_s'"):
        t.numeric("t_s")


def test_read_parquet_by_path_gives_the_frames_pandas_reads(sim_raw, tmp_path):
    """`columnar.read_parquet` reads by path (a read through pandas' file object can leave
    the interpreter aborting at exit, apache/arrow#50482): it must give pandas' frames,
    whole and by columns, categoricals and NaN included, and be the only reader used."""
    run = from_core(sim_raw, scenario=SCEN)
    write_run_dir(run, tmp_path / "run", figures=False, report=False)
    for name in ("samples", "flows", "packets"):
        p = tmp_path / "run" / f"{name}.parquet"
        pd.testing.assert_frame_equal(columnar.read_parquet(p), pd.read_parquet(p))
        cols = list(pd.read_parquet(p).columns[1:3])
        pd.testing.assert_frame_equal(columnar.read_parquet(p, columns=cols),
                                      pd.read_parquet(p, columns=cols))
    pkg = Path(columnar.__file__).parent
    users = [str(f.relative_to(pkg)) for f in pkg.rglob("*.py")
             if "pd.read_parquet(" in f.read_text().replace("`pd.read_parquet(path", "")]
    assert users == [], f"read through columnar.read_parquet instead: {users}"

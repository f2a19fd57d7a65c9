"""New-user audit (issues 35, 32): results that were silently wrong, runs that could be lost,
and what a run says about itself (grid labels, per-hop verdicts, slowdown, CIs, workloads)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

from l4slab.scenario import dumps_toml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_helpers import SHORT_BASE, invoke_wide, one_error  # noqa: E402

# --- a [[grid.aqm]] variant that sets a key the grid also sweeps --------------------------------


def test_variant_key_also_swept_is_refused_naming_both(tmp_path):
    # The grid's "aqm.limit" lands inside every variant, so a variant's limit = 7 never runs;
    # labelling the runs "aqm.limit = 7" merged a 50-packet and a 500-packet run into one row.
    (tmp_path / "base.toml").write_text(dumps_toml(SHORT_BASE))
    sw = tmp_path / "sw.toml"
    sw.write_text('base = "base.toml"\n[grid]\n"aqm.limit" = [50, 500]\n'
                  '[[grid.aqm]]\nkind = "fifo"\nlimit = 7\n')
    one_error(invoke_wide("sweep", sw, "-o", tmp_path / "o", "-j", "1"),
              "[[grid.aqm]] variant 0 sets limit = 7", 'grid."aqm.limit"')
    assert not (tmp_path / "o").exists()


def test_a_deeper_grid_key_labels_the_run_over_its_table():
    from l4slab.sweepgrid import expand_params

    # Whatever the key order, the index shows what ran: the deeper key lands inside the table.
    params = {"aqm.limit": 50, "aqm": {"kind": "fifo", "limit": 7}}
    assert expand_params(params)["aqm.limit"] == 50
    assert expand_params(dict(reversed(params.items())))["aqm.limit"] == 50


# --- multi-hop: a verdict belongs to the hop that gave it ---------------------------------------


def test_parking_lot_verdicts_per_hop_agree_in_packets_pcap_and_summary(tmp_path):
    import collections
    import json
    import re

    import pandas as pd

    scen = Path(__file__).resolve().parents[1] / "scenarios" / "parking_lot.toml"
    res = invoke_wide("run", scen, "--set", "duration=3s", "--set", "warmup=0s", "--packets",
                      "--pcap", tmp_path / "t.pcapng", "-o", tmp_path / "r")
    assert res.exit_code == 0, res.output
    summ = json.loads((tmp_path / "r" / "summary.json").read_text())
    want = {(q["name"], v): q[k] for q in summ["queues"]
            for v, k in (("mark", "marks"), ("drop", "drops"))}
    pk = pd.read_parquet(tmp_path / "r" / "packets.parquet")
    got = collections.Counter(zip(pk["queue"].astype(str), pk["verdict"].astype(str), strict=True))
    cap = collections.Counter((q.decode(), v.decode()) for v, q in re.findall(
        rb"verdict=(\w+) queue=(\S+) ", (tmp_path / "t.pcapng").read_bytes()))
    # A packet an earlier hop marked arrives CE: later hops pass it unless their AQM acted
    # (counted a mark on it), so every hop's counts are its own in all three outputs.
    for key, n in want.items():
        assert got[key] == n, (key, got[key], n)
        assert cap[key] == n, (key, cap[key], n)
    # The run exercises the case: CE packets of the long flow cross hops after the first mark.
    assert want[("access/L", "mark")] > 0
    for h in summ["hops"]:
        assert h["marks"] == sum(got[(q, "mark")] for q in h["queues"]), h["name"]


# --- workloads: a run says what load it offered ------------------------------------------------

WORKLOAD = {"sizes": "web-search", "rtt": "20ms"}


def _workload_run(tmp_path: Path, duration: str, **w: object):
    import json

    scen = copy.deepcopy(SHORT_BASE)
    scen["duration"], scen["warmup"] = duration, "0s"
    scen["workloads"] = [{**WORKLOAD, **w}]
    (tmp_path / "s.toml").write_text(dumps_toml(scen))
    res = invoke_wide("run", tmp_path / "s.toml", "-o", tmp_path / "r", "--no-figures")
    assert res.exit_code == 0, res.output
    return res, json.loads((tmp_path / "r" / "summary.json").read_text())["workloads"][0]


def test_a_workload_without_arrivals_keeps_its_block_and_says_so(tmp_path):
    import pandas as pd

    # rate 0.01/s over 2 s: λ·span = 0.02 expected arrivals; the seed draws none.
    res, w = _workload_run(tmp_path, "2s", rate=0.01)
    assert w["flows"] == 0 and w["completed"] == 0 and w["offered_load"] == 0.0
    assert w["expected_arrivals"] == 0.02
    assert w["offered_load_ci95"] is None
    assert "no transfer arrived in 2.000 s (about 0.02 expected)" in w["note"]
    assert "note: workloads[0]: no transfer arrived" in res.output
    assert len(pd.read_parquet(tmp_path / "r" / "fct.parquet")) == 0


def test_offered_load_has_a_compound_poisson_ci_and_a_warning_outside_it(tmp_path):
    import pandas as pd

    res, w = _workload_run(tmp_path, "20s", load=0.5)
    fct = pd.read_parquet(tmp_path / "r" / "fct.parquet")
    # offered = Σ S·8 / (span·C); its 95 % bounds ± 1.96·sqrt(Σ S²)·8 / (span·C).
    to_load = 8 / 20.0 / 10e6
    assert w["offered_load"] == fct["size_bytes"].sum() * to_load
    half = 1.96 * float((fct["size_bytes"].astype(float) ** 2).sum()) ** 0.5 * to_load
    lo, hi = w["offered_load_ci95"]
    assert abs(hi - (w["offered_load"] + half)) < 1e-12
    assert abs(lo - max(0.0, w["offered_load"] - half)) < 1e-12
    # λ = load·C / (8·E[size]), E[size] of web-search 1141 packets of 1460 B (pFabric).
    assert abs(w["expected_arrivals"] - 0.5 * 10e6 / 8 / (1141 * 1460) * 20.0) < 0.05
    outside = not lo <= 0.5 <= hi
    assert ("leaves out the target load 0.5" in res.output) == outside


def test_the_stack_note_names_the_flows():
    from l4slab.cli import run_notes

    scen = {"flows": [{"cc": "cubic"}, {"cc": "cubic", "stack": "kernel"}]}
    assert run_notes({}, scen) == [
        "note: flows[1]: stack applies to the emulator only; the simulator ran the model"]


def test_one_run_per_point_writes_empty_ci_bounds_not_zero_width(tmp_path):
    import pandas as pd

    from l4slab.suites.core import aggregate

    runs = pd.DataFrame({"aqm": ["a", "b", "b"], "tput": [3.0, 2.0, 4.0]})
    df = aggregate(runs, ["aqm"], {"tput_mbps": "tput"})
    df.to_csv(tmp_path / "t.csv", index=False)
    lines = (tmp_path / "t.csv").read_text().splitlines()
    # One run: the mean, no interval; two runs 2 and 4: 3 ± t(0.975, 1)·sqrt(2)/sqrt(2) = 12.71.
    assert lines[1] == "a,3.0,,,1"
    lo, hi = df.loc[1, ["tput_mbps_lo", "tput_mbps_hi"]]
    assert lo == 0.0 and abs(hi - (3 + 12.706204736174707)) < 1e-9


# --- an output of one flag may not be another's file ------------------------------------------


def test_pcap_inside_the_run_directory_or_in_a_missing_directory_is_refused(tmp_path):
    (tmp_path / "s.toml").write_text(dumps_toml(SHORT_BASE))
    d = tmp_path / "D"
    one_error(invoke_wide("run", tmp_path / "s.toml", "-o", d, "--pcap", d / "summary.json"),
              f"--pcap {d / 'summary.json'}: inside the run directory {d}")
    assert not d.exists()
    one_error(invoke_wide("run", tmp_path / "s.toml", "-o", d, "--pcap",
                          tmp_path / "nope" / "t.pcapng"),
              f"the directory {tmp_path / 'nope'} does not exist")
    assert not d.exists()

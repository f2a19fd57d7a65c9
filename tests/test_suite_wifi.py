"""The wifi suite in its quick form: table cells are the values of the runs they came from,
the delay split adds up, the driver queue has its own sample rows, and the ns-3 reference
compares as l4slab - reference."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from l4slab.cli import main
from l4slab.suites.core import suites_dir


@pytest.fixture(scope="module")
def wifi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("suites") / "wifi"
    ref = suites_dir() / "wifi" / "reference-ns3.csv"
    r = CliRunner().invoke(main, ["suite", "wifi", "--quick", "-o", str(out), "-j", "2",
                                  "--reference", str(ref)])
    assert r.exit_code == 0, r.output
    return out


def _run(out: Path, part: str, **params: object) -> Path:
    idx = pd.read_parquet(out / "parts" / part / "sweep.parquet")
    for k, v in params.items():
        idx = idx[idx[k] == v]
    assert len(idx) == 1 and (idx["status"] == "ok").all()
    return out / "parts" / part / str(idx["run_dir"].iloc[0])


def test_wifi_cells_come_from_their_run(wifi: Path) -> None:
    # Quick form: one replication, so each cell is that run's value.
    rd = _run(wifi, "prague_cubic", **{"aqm.kind": "dualpi2", "link.wifi.per": 0.1,
                                       "link.wifi.stations": 4})
    s = json.loads((rd / "summary.json").read_text())
    res = pd.read_csv(wifi / "tables" / "results.csv")
    row = res[(res["traffic"] == "Prague+Cubic") & (res["aqm"] == "DualPI2")
              & (res["per_pct"] == 10) & (res["stations"] == 4)].iloc[0]
    down = s["wifi"]["downlink"]
    assert row["tput_mbps"] == pytest.approx(sum(f["tput_mbps"] for f in s["flows"]))
    assert row["retries_per_mpdu"] == pytest.approx(down["retries"] / down["mpdu_tx"])
    assert row["airtime"] == pytest.approx(s["wifi"]["airtime"]["utilisation"])
    # 4 saturated contenders take most of the airtime; every MPDU error costs a retry.
    assert s["wifi"]["airtime"]["others"] > 0.5
    assert down["retries"] >= down["per_errors"]
    q = {x["name"]: x for x in s["queues"]}
    dl = pd.read_csv(wifi / "tables" / "delay.csv")
    d = dl[(dl["traffic"] == "Prague+Cubic") & (dl["aqm"] == "DualPI2")
           & (dl["per_pct"] == 10) & (dl["stations"] == 4)].iloc[0]
    assert d["L_aqm_ms"] == pytest.approx(q["L"]["sojourn_ms"]["mean"])
    assert d["driver_ms"] == pytest.approx(q["driver"]["sojourn_ms"]["mean"])
    assert d["mac_ms"] == pytest.approx(down["mac_delay_ms"]["mean"])
    assert d["L_total_ms"] == pytest.approx(d["L_aqm_ms"] + d["driver_ms"] + d["mac_ms"])
    sm = pd.read_parquet(rd / "samples.parquet")
    assert set(sm["queue"].astype(str)) == {"L", "C", "driver"}


def test_wifi_reference_is_l4slab_minus_ns3(wifi: Path) -> None:
    ref = pd.read_csv(wifi / "reference.csv")
    res = pd.read_csv(wifi / "tables" / "results.csv")
    row = ref[(ref["traffic"] == "Cubic") & (ref["per_pct"] == 10)].iloc[0]
    ours = res[(res["traffic"] == "Cubic") & (res["aqm"] == "DualPI2") & (res["per_pct"] == 10)
               & (res["stations"] == 0)].iloc[0]["tput_mbps"]
    assert row["reference"] == 32.4
    assert row["difference"] == pytest.approx(ours - 32.4)
    # PER 5 % is not in the quick grid: listed with no l4slab value, not dropped.
    assert ref[ref["per_pct"] == 5]["l4slab"].isna().all()

"""The wifi suite in its quick form: table cells are the values of the runs they came from,
the delay split adds up, each AP design puts its queue where it should, and the ns-3 reference
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


def _row(df: pd.DataFrame, traffic: str, design: str, clients: int) -> pd.Series:
    sel = df[(df["traffic"] == traffic) & (df["design"] == design)
             & (df["clients"] == clients) & (df["per_pct"] == 5)]
    assert len(sel) == 1
    return sel.iloc[0]


def test_wifi_cells_come_from_their_run(wifi: Path) -> None:
    # Quick form: one replication, so each cell is that run's value.
    rd = _run(wifi, "prague_cubic-mac80211-2", **{"link.wifi.per": 0.05})
    s = json.loads((rd / "summary.json").read_text())
    assert s["wifi"]["ap"] == "mac80211"
    assert [c["flows"] for c in s["wifi"]["clients"]] == [[0, 1], [2, 3]]
    res = pd.read_csv(wifi / "tables" / "results.csv")
    row = _row(res, "Prague+Cubic", "mac80211", 2)
    assert row["tput_mbps"] == pytest.approx(sum(f["tput_mbps"] for f in s["flows"]))
    assert row["tput_L4S_mbps"] == pytest.approx(
        sum(f["tput_mbps"] for f in s["flows"] if f["cc"] == "prague"))
    shares = [c["airtime_share"]["downlink"] for c in s["wifi"]["clients"]]
    assert row["airtime_min"] == pytest.approx(min(shares))
    assert row["airtime_max"] == pytest.approx(max(shares))
    q = {x["name"]: x for x in s["queues"]}
    dl = pd.read_csv(wifi / "tables" / "delay.csv")
    d = _row(dl, "Prague+Cubic", "mac80211", 2)
    # The root qdisc of a mac80211 AP holds nothing; the TXQ mean is over both stations'
    # packets.
    assert d["L_qdisc_ms"] == 0.0
    txq = [q["txq/0"], q["txq/1"]]
    mean = (sum(x["sojourn_ms"]["mean"] * x["packets"] for x in txq)
            / sum(x["packets"] for x in txq))
    assert d["L_txq_ms"] == pytest.approx(mean)
    assert d["driver_ms"] == pytest.approx(q["driver"]["sojourn_ms"]["mean"])
    assert d["mac_ms"] == pytest.approx(s["wifi"]["downlink"]["mac_delay_ms"]["mean"])
    assert d["L_total_ms"] == pytest.approx(d["L_qdisc_ms"] + d["L_txq_ms"] + d["driver_ms"]
                                            + d["mac_ms"])
    sm = pd.read_parquet(rd / "samples.parquet")
    assert {"txq/0", "txq/1", "driver"} <= set(sm["queue"].astype(str))


def test_wifi_designs(wifi: Path) -> None:
    dl = pd.read_csv(wifi / "tables" / "delay.csv")
    # DualPI2 in the TXQ: the L queue is the TXQ, the root qdisc holds nothing.
    rd = _run(wifi, "prague-dualpi2_txq-1", **{"link.wifi.per": 0.05})
    q = {x["name"]: x for x in json.loads((rd / "summary.json").read_text())["queues"]}
    d = _row(dl, "Prague", "DualPI2 in TXQ", 1)
    assert d["L_txq_ms"] == pytest.approx(q["L"]["sojourn_ms"]["mean"])
    assert d["L_qdisc_ms"] == 0.0
    # The CE threshold marks ECT(1) in the TXQ (Prague), CoDel's own law none of Cubic's at
    # 1 ms: Cubic alone gets no threshold mark.
    assert _row(dl, "Prague", "mac80211+CE 1ms", 1)["ce_thr_marks"] > 0
    assert _row(dl, "Cubic", "mac80211+CE 1ms", 1)["ce_thr_marks"] == 0
    assert _row(dl, "Prague", "mac80211", 1)["ce_thr_marks"] == 0
    # DualPI2 in the TXQ with two stations: one DualPI2 per station (rows L and L/1), the
    # table's TXQ delay from both.
    rd2 = _run(wifi, "prague-dualpi2_txq-2", **{"link.wifi.per": 0.05})
    names2 = {x["name"] for x in json.loads((rd2 / "summary.json").read_text())["queues"]}
    assert {"L", "C", "L/1", "C/1"} <= names2
    assert _row(dl, "Prague", "DualPI2 in TXQ", 2)["L_qdisc_ms"] == 0.0


def test_wifi_reference_is_l4slab_minus_ns3(wifi: Path) -> None:
    ref = pd.read_csv(wifi / "reference.csv")
    res = pd.read_csv(wifi / "tables" / "results.csv")
    row = ref[(ref["traffic"] == "Cubic") & (ref["per_pct"] == 5)].iloc[0]
    ours = _row(res, "Cubic", "DualPI2 in TXQ", 1)["tput_mbps"]
    assert row["reference"] == 34.6
    assert row["difference"] == pytest.approx(ours - 34.6)
    # PER 10 % is not in the quick grid: listed with no l4slab value, not dropped.
    assert ref[ref["per_pct"] == 10]["l4slab"].isna().all()

"""wifi: Prague, Cubic and both through a Linux access point (`[link.wifi] ap`): mac80211's
stock per-station FQ-CoDel, the same with a 1 ms CE threshold on ECT(1), or DualPI2 in the
TXQ; 1, 2 or 8 client stations at VHT-MCS 8/5/0; per-MPDU errors 0/5 %: throughput, the
L4S/Classic delay split (qdisc + TXQ + AQL/firmware + MAC), Jain's index and airtime shares."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from l4slab.suites.core import (
    Analysis,
    Figure,
    Part,
    Suite,
    SuiteData,
    Table,
    TableShape,
    aggregate,
)
from l4slab.suites.figures import bars, save

TRAFFIC = [("prague", "Prague", ("prague",)), ("cubic", "Cubic", ("cubic",)),
           ("prague_cubic", "Prague+Cubic", ("prague", "cubic"))]
#: The AP designs: label, the `[link.wifi]` keys and the `[aqm]` kind that make it.
DESIGNS = [
    ("mac80211", "mac80211", {"link.wifi.ap": "mac80211"}, "fifo"),
    ("ce1ms", "mac80211+CE 1ms", {"link.wifi.ap": "mac80211",
                                  "link.wifi.txq_ce_threshold": "1ms"}, "fifo"),
    ("dualpi2_txq", "DualPI2 in TXQ", {"link.wifi.ap": "aqm_in_txq"}, "dualpi2"),
]
#: Client stations per count: VHT-MCS at 20 MHz, 1 stream (MCS 9 is not defined there).
CLIENT_MCS = {1: [5], 2: [8, 0], 8: [8, 5, 0, 8, 5, 0, 8, 5]}
KEYS = ["traffic", "design", "clients", "per_pct"]
FLOW = {"prague": {"cc": "prague", "rtt": "20ms", "ecn": "l4s"},
        "cubic": {"cc": "cubic", "rtt": "20ms", "ecn": "none"}}


def _rewrite(ccs: tuple[str, ...], design: str, n: int) -> Callable[[dict[str, Any]],
                                                                    dict[str, Any]]:
    """Set the part's AP design, its `n` client stations and one flow per station and CC."""
    _, _, keys, aqm = next(d for d in DESIGNS if d[0] == design)

    def rewrite(spec: dict[str, Any]) -> dict[str, Any]:
        flows = [{**FLOW[cc], "station": s} for s in range(n) for cc in ccs]
        clients = [{"mcs": m} for m in CLIENT_MCS[n]]
        spec["set"] = {**spec.get("set", {}), **keys, "aqm.kind": aqm,
                       "link.wifi.clients": clients, "flows": flows}
        return spec
    return rewrite


def _parts() -> list[Part]:
    parts = []
    for t, label, ccs in TRAFFIC:
        for d, dlabel, _, _ in DESIGNS:
            for n in CLIENT_MCS:
                parts.append(Part(f"{t}-{d}-{n}", f"{t}.toml",
                                  {"traffic": label, "design": dlabel, "clients": str(n)},
                                  rewrite=_rewrite(ccs, d, n)))
    return parts


def _mean(q: dict[str, Any] | None) -> float:
    return float(q["sojourn_ms"]["mean"]) if q else float("nan")


def extract(run_dir: Path, scenario: dict[str, Any]) -> dict[str, float]:
    """Per-run metrics from summary.json: per class the throughput and the mean smoothed RTT
    above the base RTT (what the flows saw end to end), the delay split (root qdisc sojourn
    of the class's queue; TXQ sojourn; driver (AQL/firmware) wait; MAC delay), the airtime
    shares of the client stations and the TXQ's CE marks."""
    s = json.loads((run_dir / "summary.json").read_text())
    q = {x["name"]: x for x in s["queues"]}
    w = s["wifi"]
    m: dict[str, float] = {}
    in_txq = w.get("ap") == "aqm_in_txq"
    for cls, short, own in (("L4S", "L", "L"), ("Classic", "C", "C")):
        fl = [f for f in s["flows"] if f["class"] == cls]
        m[f"tput_{short}"] = sum(f["tput_mbps"] for f in fl) if fl else float("nan")
        m[f"rtt_{short}"] = (float(np.mean([f["srtt_ms"] - f["base_rtt_ms"] for f in fl]))
                             if fl else float("nan"))
        aqm = _mean(q.get(own) or q.get("single") or q.get("fq")) if fl else float("nan")
        # aqm_in_txq: the scenario's AQM is the TXQ; mac80211: the root qdisc (no queue).
        m[f"qdisc_{short}"] = 0.0 if in_txq and fl else aqm
        m[f"txq_{short}"] = aqm if in_txq else float("nan")
    txqs = [x for n, x in q.items() if n.startswith("txq/")]
    if txqs:
        pk = sum(x["packets"] for x in txqs)
        t = sum(x["sojourn_ms"]["mean"] * x["packets"] for x in txqs) / pk if pk else 0.0
        for short in ("L", "C"):
            if np.isfinite(m[f"tput_{short}"]):
                m[f"txq_{short}"] = t
    m["driver_ms"] = _mean(q.get("driver"))
    m["mac_ms"] = float(w["downlink"]["mac_delay_ms"]["mean"])
    shares = [c["airtime_share"]["downlink"] for c in w.get("clients", [])]
    m["air_min"] = min(shares) if shares else float("nan")
    m["air_max"] = max(shares) if shares else float("nan")
    m["airtime"] = float(w["airtime"]["utilisation"])
    tx = [c["txq"] for c in w.get("clients", []) if "txq" in c]
    m["codel_marks"] = float(sum(t["codel_ecn_marks"] for t in tx)) if tx else float("nan")
    m["ce_thr_marks"] = float(sum(t["ce_threshold_marks"] for t in tx)) if tx else float("nan")
    return m


def derive(runs: pd.DataFrame) -> pd.DataFrame:
    """Labels and totals: per class, total delay = qdisc + TXQ + driver + MAC."""
    r = runs.copy()
    r["per_pct"] = (r["link.wifi.per"].astype(float) * 100).round().astype(int)
    r["clients"] = r["clients"].astype(int)
    r["tput_mbps"] = r[["tput_L", "tput_C"]].sum(axis=1, min_count=1)
    for c in ("L", "C"):
        r[f"{c}_total_ms"] = (r[f"qdisc_{c}"].fillna(0.0) + r[f"txq_{c}"] + r["driver_ms"]
                              + r["mac_ms"])
    return r


RES_COLS = {"tput_mbps": "tput_mbps", "tput_L4S_mbps": "tput_L", "tput_Classic_mbps": "tput_C",
            "jain": "jain", "airtime_min": "air_min", "airtime_max": "air_max",
            "airtime": "airtime"}
DELAY_COLS = {"L_total_ms": "L_total_ms", "L_qdisc_ms": "qdisc_L", "L_txq_ms": "txq_L",
              "C_total_ms": "C_total_ms", "C_qdisc_ms": "qdisc_C", "C_txq_ms": "txq_C",
              "driver_ms": "driver_ms", "mac_ms": "mac_ms", "L_rtt_q_ms": "rtt_L",
              "C_rtt_q_ms": "rtt_C", "codel_marks": "codel_marks",
              "ce_thr_marks": "ce_thr_marks"}


def delay_split_figure(df: pd.DataFrame, out: Any) -> Figure:
    """The delay-split figure (`delay_split_plot`) saved as delay_split.png in `out`."""
    return save(delay_split_plot(df), out, "delay_split", "Where the delay is: qdisc, TXQ, "
                "driver, MAC (one client station, no errors)")


def delay_split_plot(df: pd.DataFrame) -> MplFigure:
    """Stacked horizontal bars: each class's mean delay as qdisc + TXQ + driver + MAC, per
    design and traffic, one labelled row per class (labels never share a line, however many
    rows) and the total at the bar's end."""
    labels, parts = [], []
    for _, row in df.iterrows():
        for cls in ("L", "C"):
            t = row[f"{cls}_txq_ms"]
            if not np.isfinite(t):
                continue
            labels.append(f"{row['traffic']} · {row['design']} · {cls}")
            parts.append((np.nan_to_num(row[f"{cls}_qdisc_ms"]), t, row["driver_ms"],
                          row["mac_ms"]))
    fig = MplFigure(figsize=(8.0, 1.2 + 0.28 * max(len(labels), 1)))
    ax = fig.add_subplot()
    y = np.arange(len(labels))
    left = np.zeros(len(labels))
    for i, (name, color) in enumerate([("qdisc", "#8172b3"), ("TXQ", "#4c72b0"),
                                       ("driver (AQL/firmware)", "#dd8452"),
                                       ("MAC (access, retries, reorder)", "#55a868")]):
        w = np.array([p[i] for p in parts], dtype=float)
        ax.barh(y, w, left=left, label=name, color=color)
        left += np.nan_to_num(w)
    for yi, total in zip(y, left, strict=True):
        ax.annotate(f"{total:.1f}", (total, yi), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=7)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()  # first row on top, in table order
    ax.set_xlim(0, max(left.max(initial=0.0), 1e-9) * 1.12)
    ax.set_xlabel("mean one-way delay [ms]")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4,
              frameon=False)
    return fig


def analyse(data: SuiteData) -> Analysis:
    """The results and delay tables, and the throughput and delay-split figures."""
    runs = derive(data.runs)
    res = aggregate(runs, KEYS, RES_COLS, domains={"airtime": (0.0, 1.0),
                                                   "airtime_min": (0.0, 1.0),
                                                   "airtime_max": (0.0, 1.0)})
    dl = aggregate(runs, KEYS, DELAY_COLS)
    tables = [
        Table("results", "Throughput, fairness and airtime per traffic, AP design, client "
              "stations and PER [95 % CI]", res, KEYS, list(RES_COLS),
              note="tput: sum over flows (Mb/s, after warm-up), per class L4S (Prague) and "
                   "Classic (Cubic); jain: over flows; airtime_min/max: smallest and largest "
                   "downlink airtime share of a client station (its exchanges' medium time "
                   "over the busy time); airtime: busy fraction of the medium."),
        Table("delay", "Mean one-way queueing delay per class: qdisc + TXQ + driver + MAC "
              "[95 % CI]", dl, KEYS, list(DELAY_COLS),
              note="qdisc: the root qdisc's queue of the class (no queue on a mac80211 AP: "
                   "IFF_NO_QUEUE; 0 for DualPI2 in the TXQ); txq: mac80211's TXQs (mean "
                   "over the stations' packets, both classes: FQ-CoDel's flows are not split "
                   "by class in the output) or, in the TXQ, DualPI2's L or C queue; driver: "
                   "wait in the driver/firmware under AQL before the first transmission; "
                   "mac: first transmission to release by the client's reorder buffer. "
                   "total = qdisc + txq + driver + mac. rtt_q: the class's mean smoothed RTT "
                   "minus its base RTT (end to end, uplink ACKs included). codel_marks / "
                   "ce_thr_marks: CE marks of the TXQs' CoDel and CE threshold."),
    ]
    figs = []
    sel = res[(res["clients"] == 1) & (res["per_pct"] == 0)]
    if len(sel):
        figs.append(bars(sel, "design", "traffic", "tput_mbps", "throughput [Mb/s]",
                         "Throughput per AP design (one client station, no errors)",
                         data.out / "figures", "tput_design"))
    sel = dl[(dl["clients"] == 1) & (dl["per_pct"] == 0)]
    if len(sel):
        figs.append(delay_split_figure(sel, data.out / "figures"))
    return Analysis(tables, figs)


def quick(spec: dict[str, Any]) -> dict[str, Any]:
    """The --quick form of a part: 1 replication of 5 s (1 s warm-up), PER 5 % only."""
    spec["replications"] = 1
    spec["set"] = {**spec.get("set", {}), "duration": "5s", "warmup": "1s"}
    spec["grid"] = {**spec["grid"], "link.wifi.per": [0.05]}
    return spec


SUITE = Suite(
    name="wifi",
    title="L4S through a Linux Wi-Fi access point: mac80211's TXQs, a CE threshold, DualPI2 "
          "in the TXQ",
    description="802.11ac access point (20 MHz, 1 stream) running mac80211's TXQ model "
                "(per-station FQ-CoDel 20 ms/100 ms/ECN, AQL 5/12 ms, airtime fairness) to "
                "1, 2 or 8 client stations at VHT-MCS 5 / 8,0 / 8,5,0,… (78, 52, 6.5 Mb/s "
                "PHY), TCP ACKs on the same medium, 20 ms base RTT, 20 s (5 s warm-up), 3 "
                "replications: one Prague, Cubic or Prague+Cubic flow pair per station through "
                "the stock AP, with a 1 ms CE threshold on ECT(1) in the TXQ (a proposal), or "
                "DualPI2 in place of each station's FQ-CoDel; per-MPDU error rate "
                "0/5 %.",
    parts=_parts(),
    quick=quick,
    analyse=analyse,
    extract=extract,
    tables=[TableShape("results", KEYS, list(RES_COLS)),
            TableShape("delay", KEYS, list(DELAY_COLS))],
    headline="results",
    emulate_not="the emulator does not run the mac80211 AP model yet",
)

"""wifi: Prague, Cubic and both over an 802.11ac hop (`[link] model = "wifi"`), with DualPI2,
FQ-CoDel or FIFO above the access point's driver queue, per-MPDU errors of 0/1/5/10 %, 0 or 4
other saturated stations and a small (5 ms) or large (50 ms airtime) driver queue: throughput,
the L/C queueing delay split into AQM + driver queue + MAC, Jain's index and retries."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from l4slab.suites.core import Analysis, Figure, Part, Suite, SuiteData, Table, aggregate
from l4slab.suites.figures import bars, save

TRAFFIC = [("prague", "Prague"), ("cubic", "Cubic"), ("prague_cubic", "Prague+Cubic")]
AQM_LABEL = {"dualpi2": "DualPI2", "fq_codel": "FQ-CoDel", "fifo": "FIFO"}
KEYS = ["traffic", "aqm", "per_pct", "stations", "driver"]


def _col(runs: pd.DataFrame, name: str) -> pd.Series:
    return runs[name].astype(float) if name in runs else pd.Series(np.nan, index=runs.index)


def derive(runs: pd.DataFrame) -> pd.DataFrame:
    """Per-run columns of the tables: labels, class throughputs, the delay split per class
    (AQM sojourn of the class's queue — the one queue of FIFO/FQ-CoDel for both — plus the
    driver queue's wait before the first transmission plus the MAC's delay from the first
    transmission to the reorder buffer's release), retries per MPDU sent."""
    r = runs.copy()
    r["aqm"] = r["aqm.kind"].map(AQM_LABEL)
    r["per_pct"] = (r["link.wifi.per"].astype(float) * 100).round().astype(int)
    r["stations"] = r["link.wifi.stations"].astype(int)
    r["driver"] = r["link.wifi.driver_limit"].astype(str)
    for c in ("class.L4S.tput_mbps", "class.Classic.tput_mbps"):
        if c not in r:
            r[c] = np.nan
    r["tput_mbps"] = r[["class.L4S.tput_mbps", "class.Classic.tput_mbps"]].sum(
        axis=1, min_count=1)
    one = _col(r, "queues.single.sojourn_ms.mean").fillna(_col(r, "queues.fq.sojourn_ms.mean"))
    r["aqm_L_ms"] = _col(r, "queues.L.sojourn_ms.mean").fillna(one)
    r["aqm_C_ms"] = _col(r, "queues.C.sojourn_ms.mean").fillna(one)
    # A class without a flow has no delay to report (its queue's mean is of nothing).
    r.loc[r["class.L4S.tput_mbps"].isna(), "aqm_L_ms"] = np.nan
    r.loc[r["class.Classic.tput_mbps"].isna(), "aqm_C_ms"] = np.nan
    r["driver_ms"] = _col(r, "queues.driver.sojourn_ms.mean")
    r["mac_ms"] = _col(r, "wifi.downlink.mac_delay_ms.mean")
    r["L_total_ms"] = r["aqm_L_ms"] + r["driver_ms"] + r["mac_ms"]
    r["C_total_ms"] = r["aqm_C_ms"] + r["driver_ms"] + r["mac_ms"]
    r["retries_per_mpdu"] = (_col(r, "wifi.downlink.retries")
                             / _col(r, "wifi.downlink.mpdu_tx"))
    r["retry_drops"] = _col(r, "wifi.downlink.retry_drops")
    r["airtime"] = _col(r, "wifi.airtime.utilisation")
    r["access_ms"] = _col(r, "wifi.downlink.access_delay_ms.mean")
    r["agg_mpdus"] = _col(r, "wifi.downlink.aggregate_mpdus.mean")
    return r


def delay_split_figure(df: pd.DataFrame, out: Any) -> Figure:
    """The delay-split figure (`delay_split_plot`) saved as delay_split.png in `out`."""
    return save(delay_split_plot(df), out, "delay_split", "Where the delay is: AQM, driver "
                "queue, MAC (PER 1 %, no other station, 5 ms driver queue)")


def delay_split_plot(df: pd.DataFrame) -> MplFigure:
    """Stacked horizontal bars: each class's mean delay as AQM + driver queue + MAC, per AQM
    and traffic (PER 1 %, no other station, small driver queue), one labelled row per class
    (labels never share a line, however many rows) and the total at the bar's end."""
    labels, parts = [], []
    for _, row in df.iterrows():
        for cls in ("L", "C"):
            a = row[f"{cls}_aqm_ms"]
            if not np.isfinite(a):
                continue
            labels.append(f"{row['traffic']} · {row['aqm']} · {cls}")
            parts.append((a, row["driver_ms"], row["mac_ms"]))
    fig = MplFigure(figsize=(8.0, 1.2 + 0.28 * max(len(labels), 1)))
    ax = fig.add_subplot()
    y = np.arange(len(labels))
    left = np.zeros(len(labels))
    for i, (name, color) in enumerate([("AQM", "#4c72b0"), ("driver queue", "#dd8452"),
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
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3,
              frameon=False)
    return fig


def analyse(data: SuiteData) -> Analysis:
    """The results and delay tables, and the throughput and delay-split figures."""
    runs = derive(data.runs)
    res_cols = {"tput_mbps": "tput_mbps", "tput_L4S_mbps": "class.L4S.tput_mbps",
                "tput_Classic_mbps": "class.Classic.tput_mbps", "jain": "jain",
                "retries_per_mpdu": "retries_per_mpdu", "retry_drops": "retry_drops",
                "airtime": "airtime", "agg_mpdus": "agg_mpdus"}
    res = aggregate(runs, KEYS, res_cols, domains={"airtime": (0.0, 1.0),
                                                   "retries_per_mpdu": (0.0, 1.0)})
    delay_cols = {"L_total_ms": "L_total_ms", "L_aqm_ms": "aqm_L_ms",
                  "C_total_ms": "C_total_ms", "C_aqm_ms": "aqm_C_ms",
                  "driver_ms": "driver_ms", "mac_ms": "mac_ms", "access_ms": "access_ms"}
    dl = aggregate(runs, KEYS, delay_cols)
    tables = [
        Table("results", "Throughput, fairness and retries per traffic, AQM, PER, stations and "
              "driver queue [95 % CI]", res, KEYS, list(res_cols),
              note="tput: sum over flows (Mb/s, after warm-up); retries_per_mpdu: "
                   "retransmissions / MPDU transmissions of the AP; retry_drops: MPDUs lost "
                   "after 7 retries; airtime: busy fraction of the medium; agg_mpdus: mean "
                   "A-MPDU size of the AP."),
        Table("delay", "Mean one-way queueing delay per class: AQM + driver queue + MAC "
              "[95 % CI]", dl, KEYS, list(delay_cols),
              note="L/C_aqm: the class's AQM queue (the single queue of FIFO and FQ-CoDel for "
                   "both); driver: wait in the driver queue before the first transmission; "
                   "mac: first transmission to release by the client's reorder buffer "
                   "(channel access, retries, reordering); access: AP channel-access delay "
                   "per A-MPDU. total = aqm + driver + mac."),
    ]
    figs = []
    sel = res[(res["stations"] == 0) & (res["driver"] == "5ms") & (res["aqm"] == "DualPI2")]
    if len(sel):
        figs.append(bars(sel, "per_pct", "traffic", "tput_mbps", "throughput [Mb/s]",
                         "Throughput vs per-MPDU error rate [%] (DualPI2, no other station)",
                         data.out / "figures", "tput_per"))
    sel = dl[(dl["stations"] == 0) & (dl["driver"] == "5ms") & (dl["per_pct"] == 1)]
    if len(sel):
        figs.append(delay_split_figure(sel, data.out / "figures"))
    return Analysis(tables, figs)


def quick(spec: dict[str, Any]) -> dict[str, Any]:
    """The --quick form of a part: 1 replication of 5 s, PER 1 and 10 %, both station counts,
    the small driver queue, every AQM."""
    spec["replications"] = 1
    spec["set"] = {**spec.get("set", {}), "duration": "5s", "warmup": "1s"}
    spec["grid"] = {**spec["grid"], "link.wifi.per": [0.01, 0.1],
                    "link.wifi.driver_limit": ["5ms"]}
    return spec


SUITE = Suite(
    name="wifi",
    title="L4S over a Wi-Fi hop: AQM above the driver queue, errors, contention",
    description="802.11ac access point (20 MHz, VHT-MCS 5, 52 Mb/s PHY) to one client, TCP ACKs "
                "on the same medium, 20 ms base RTT, 30 s (5 s warm-up), 5 replications: "
                "Prague, Cubic and Prague+Cubic through DualPI2, FQ-CoDel or FIFO above the "
                "driver queue; per-MPDU error rate 0/1/5/10 % (retry limit 7); 0 or 4 other "
                "saturated stations; driver queue of 5 ms or 50 ms of airtime.",
    parts=[Part(t, f"{t}.toml", {"traffic": label}) for t, label in TRAFFIC],
    quick=quick,
    analyse=analyse,
    headline="results",
    emulate_not="the emulator does not model the Wi-Fi hop yet",
)

"""prague-vs-cubic: one Prague and one Cubic flow through DualPI2 on a dumbbell at 100 Mb/s +
5 ms and 10 Mb/s + 30 ms, 60 s, 30 seeds: per-flow throughput, RTT and cwnd, sojourn per
queue, the coupled probability, marks and Jain's index with 95 % CIs, and the per-flow time
series as mean ± CI bands over seeds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from l4slab.columnar import read_parquet
from l4slab.suites.common import read_summary, warmup_of
from l4slab.suites.core import Analysis, Part, Suite, SuiteData, Table, TableShape, aggregate
from l4slab.suites.figures import CLASSIC_ORANGE, L4S_BLUE, band_stats, bands

LINKS = [("100M5ms", "100 Mb/s 5 ms"), ("10M30ms", "10 Mb/s 30 ms")]
FLOWS = [(0, "prague"), (1, "cubic")]
FLOW_T = TableShape("flows", ["link", "flow"],
                    ["tput_mbps", "srtt_ms", "cwnd_pkts", "ce_marks", "retransmits"])
QUEUE_T = TableShape("queues", ["link", "queue"],
                     ["sojourn_mean_ms", "sojourn_p99_ms", "marks", "drops"])
LINK_T = TableShape("link", ["link"], ["jain", "utilisation", "p_prime", "p_cl", "p_c"])


def extract(run_dir: Path, scenario: dict[str, Any]) -> dict[str, float]:
    """Means after the warm-up that summary.json does not hold: cwnd per flow (flows.parquet),
    the PI probabilities p', p_C = p'^2 and p_CL = k p' (samples.parquet)."""
    warm = warmup_of(read_summary(run_dir))
    f = read_parquet(run_dir / "flows.parquet", columns=["t_s", "flow", "cwnd_pkts"])
    f = f[f["t_s"] >= warm]
    out = {f"flows.{int(k)}.cwnd_pkts": float(g["cwnd_pkts"].mean())
           for k, g in f.groupby("flow")}
    s = read_parquet(run_dir / "samples.parquet",
                        columns=["t_s", "queue", "p_prime", "p_c", "p_cl"])
    s = s[s["t_s"] >= warm].groupby("t_s").first()  # the probabilities are per AQM, not queue
    for c in ("p_prime", "p_c", "p_cl"):
        out[c] = float(s[c].mean())
    return out


def analyse(data: SuiteData) -> Analysis:
    """Per-flow and per-queue tables with 95 % CIs, and the mean ± CI time-series figures."""
    runs = data.runs
    figs_dir = data.out / "figures"
    flow_rows = []
    for fid, cc in FLOWS:
        cols = {"tput_mbps": f"flows.{fid}.tput_mbps", "srtt_ms": f"flows.{fid}.srtt_ms",
                "cwnd_pkts": f"flows.{fid}.cwnd_pkts", "ce_marks": f"flows.{fid}.ce_marks",
                "retransmits": f"flows.{fid}.retransmits"}
        t = aggregate(runs, ["link"], cols)
        t.insert(1, "flow", f"{fid} {cc}")
        flow_rows.append(t)
    flows = pd.concat(flow_rows, ignore_index=True).sort_values(["link", "flow"], kind="stable")
    q_rows = []
    for q in ("L", "C"):
        cols = {"sojourn_mean_ms": f"queues.{q}.sojourn_ms.mean",
                "sojourn_p99_ms": f"queues.{q}.sojourn_ms.p99",
                "marks": f"queues.{q}.marks", "drops": f"queues.{q}.drops"}
        t = aggregate(runs, ["link"], cols)
        t.insert(1, "queue", q)
        q_rows.append(t)
    queues = pd.concat(q_rows, ignore_index=True).sort_values(["link", "queue"], kind="stable")
    link = aggregate(runs, ["link"], {"jain": "jain", "utilisation": "link.utilisation",
                                      "p_prime": "p_prime", "p_cl": "p_cl", "p_c": "p_c"})
    tables = [
        Table(FLOW_T.name, "Per flow: mean over seeds [95 % CI]", flows, FLOW_T.keys,
              FLOW_T.values,
              note="After the warm-up; cwnd is the mean of the sampled cwnd (flows.parquet)."),
        Table(QUEUE_T.name, "Per DualPI2 queue: sojourn, marks, drops [95 % CI]", queues,
              QUEUE_T.keys, QUEUE_T.values),
        Table(LINK_T.name, "Per link: Jain's index, utilisation, PI probabilities [95 % CI]",
              link, LINK_T.keys, LINK_T.values,
              note="p_cl = k·p' is the coupled L4S marking probability, p_c = p'² the Classic "
                   "one; means of the 16 ms samples after the warm-up."),
    ]
    figs = []
    for lk, g in runs.groupby("link", sort=False):
        safe = "".join(c if c.isalnum() else "_" for c in str(lk))
        fl = [read_parquet(data.run_dir(r) / "flows.parquet") for _, r in g.iterrows()]
        sm = [read_parquet(data.run_dir(r) / "samples.parquet") for _, r in g.iterrows()]
        warm = float(g["warmup_s"].iloc[0]) if "warmup_s" in g else None
        for col, ylabel in (("tput_mbps", "throughput [Mb/s]"), ("cwnd_pkts", "cwnd [pkts]"),
                            ("srtt_ms", "smoothed RTT [ms]")):
            curves = {}
            for (fid, cc), color in zip(FLOWS, (L4S_BLUE, CLASSIC_ORANGE), strict=True):
                series = [f[f["flow"] == fid].set_index("t_s")[col] for f in fl]
                curves[cc] = (band_stats(series), color)
            figs.append(bands(curves, ylabel, f"{lk}: {col} per flow, mean ± 95 % CI over "
                              f"{len(g)} seeds", figs_dir, f"{safe}_{col}", warm))
        curves = {}
        for q, color in (("L", L4S_BLUE), ("C", CLASSIC_ORANGE)):
            series = [s[s["queue"] == q].set_index("t_s")["sojourn_ms"] for s in sm]
            curves[f"{q} queue"] = (band_stats(series), color)
        figs.append(bands(curves, "head sojourn [ms]", f"{lk}: sojourn per queue, mean ± 95 % "
                          f"CI over {len(g)} seeds", figs_dir, f"{safe}_sojourn", warm))
        series = [s[s["queue"] == "L"].set_index("t_s")["p_cl"] for s in sm]
        series_c = [s[s["queue"] == "L"].set_index("t_s")["p_c"] for s in sm]
        figs.append(bands({"p_CL (L4S)": (band_stats(series), L4S_BLUE),
                           "p_C (Classic)": (band_stats(series_c), CLASSIC_ORANGE)},
                          "probability", f"{lk}: coupled probabilities, mean ± 95 % CI",
                          figs_dir, f"{safe}_probability", warm))
    return Analysis(tables, figs)


SUITE = Suite(
    name="prague-vs-cubic",
    title="Prague vs Cubic through DualPI2 on a dumbbell",
    description="One TCP Prague flow (AccECN, ECT(1)) and one CUBIC flow (no ECN) through "
                "DualPI2 (Linux defaults) at 100 Mb/s with 5 ms and at 10 Mb/s with 30 ms base "
                "RTT, 60 s (5 s warm-up), 30 seeds. Means over seeds with Student-t 95 % CIs; "
                "time series are binned to 100 ms per run, then averaged over seeds.",
    parts=[Part(ln, f"{ln}.toml", {"link": ld}) for ln, ld in LINKS],
    quick={"replications": 4, "set": {"duration": "10s", "warmup": "2s"}},
    analyse=analyse,
    extract=extract,
    tables=[FLOW_T, QUEUE_T, LINK_T],
    headline="flows",
    flow_fields=("tput_mbps", "srtt_ms", "ce_marks", "retransmits"),
)

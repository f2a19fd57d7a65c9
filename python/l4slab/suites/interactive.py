"""interactive: does an L4S video call beat a Classic one next to a download? A real-time video
flow (SCReAMv2 or RT-Prague as the L4S call, GCC as the Classic call) next to 1 or 4 CUBIC bulk
flows or a 50 % web-search workload, through DualPI2, FQ-CoDel (without and with a 1 ms
ce_threshold for ECT(1)), PIE and FIFO (1 and 4 BDP) at 10/50 Mb/s and over the LTE traces,
with an L4S and a Classic latency probe: frame latency p50/p99, freezes (frames later than the
deadline), stalls (gaps > 200 ms between completed frames, counted apart), video bitrate, bulk
throughput, FCT slowdown p99 and RPM per class; frame-latency CDFs per AQM and slowdown vs size
(docs/interactive.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from l4slab.columnar import read_parquet
from l4slab.plots import plain_log_ticks
from l4slab.suites.cellular import prepare as cellular_prepare
from l4slab.suites.common import read_summary
from l4slab.suites.core import Analysis, Part, Suite, SuiteData, Table, aggregate
from l4slab.suites.figures import PALETTE, cdfs, save

LINKS = ["10mbit", "50mbit", "cellular"]
BACKGROUNDS = {"bulk": "CUBIC bulk", "web": "50 % web"}
VIDEO = {"rt-scream": "L4S video (SCReAMv2)", "rt-prague": "L4S video (RT-Prague)",
         "rt-gcc": "Classic video (GCC)", "rt-gcc-loss": "Classic video (GCC-loss)"}
#: A stall: no frame completed for longer than this (counted apart from deadline misses).
STALL_S = 0.2


def stalls(run_dir: Path, warmup_s: float) -> float:
    """Gaps longer than `STALL_S` between consecutive frame completions of the video (flow 0),
    frames captured after warm-up; NaN without frames.parquet."""
    p = run_dir / "frames.parquet"
    if not p.exists():
        return float("nan")
    fr = read_parquet(p, columns=["flow", "capture_s", "latency_ms"])
    fr = fr[(fr["flow"] == 0) & (fr["capture_s"] >= warmup_s)]
    done = np.sort((fr["capture_s"] + fr["latency_ms"] / 1e3).dropna().to_numpy())
    return float(np.sum(np.diff(done) > STALL_S)) if len(done) > 1 else 0.0


def aqm_label(aqm: Any) -> str:
    """'dualpi2', 'fq_codel', 'fq_codel ce 1ms', 'pie', 'fifo 83' (packets) from an `aqm`
    table or the inline form a sweep index stores ("{kind=fifo, limit=83}")."""
    if isinstance(aqm, dict):
        kv = {str(k): str(v) for k, v in aqm.items()}
    else:
        kv = dict(part.split("=", 1) for part in str(aqm).strip("{} ").split(", ") if "=" in part)
        kv = {k.strip(): v.strip().strip('"') for k, v in kv.items()}
    kind = kv.get("kind", str(aqm))
    if "ce_threshold" in kv:
        return f"{kind} ce {kv['ce_threshold']}"
    return f"{kind} {kv['limit']}" if "limit" in kv else kind


def _aqm_labels(r: pd.DataFrame) -> pd.Series | str:
    """Each run's AQM label from the sweep index's effective `aqm.*` columns (one per key the
    grid's aqm tables use; "(default)" where a table leaves a key out). The index's `aqm` column
    is the summary's AQM kind alone, which would merge the 1 and 4 BDP FIFOs into one row."""
    cols = [c for c in r.columns if c.startswith("aqm.")]
    if not cols:
        return r["aqm"].map(aqm_label) if "aqm" in r else "?"
    return pd.Series([aqm_label({k[len("aqm."):]: v for k, v in row.items()
                                 if pd.notna(v) and v != "(default)"})
                      for row in r[cols].to_dict("records")], index=r.index)


def extract(run_dir: Path, scenario: dict[str, Any]) -> dict[str, float]:
    """The interactive metrics of one run from its summary.json (flow 0 is the video)."""
    s = read_summary(run_dir)
    flows = s.get("flows", [])
    fr = (flows[0].get("frames") or {}) if flows else {}
    lat = fr.get("latency_ms") or {}
    bulk = [f.get("tput_mbps") or 0.0 for f in flows[1:] if f.get("cc") == "cubic"]
    w = (s.get("workloads") or [{}])[0]
    rpm = s.get("rpm") or {}

    def f(x: Any) -> float:
        return float(x) if x is not None else float("nan")

    return {"video_lat_p50_ms": f(lat.get("p50")), "video_lat_p99_ms": f(lat.get("p99")),
            "video_miss_pct": 100 * f(fr.get("miss_ratio")),
            "video_stalls": stalls(run_dir, float(s.get("warmup_s") or 0.0)),
            "video_mbps": f(fr.get("bitrate_mbps")),
            "bulk_mbps": float(sum(bulk)) if bulk else float("nan"),
            "fct_slowdown_p50": f((w.get("slowdown") or {}).get("p50")),
            "fct_slowdown_p99": f((w.get("slowdown") or {}).get("p99")),
            "rpm_L4S": f(rpm.get("L4S")), "rpm_Classic": f(rpm.get("Classic"))}


def _trace_of(data: SuiteData, row: Any) -> str:
    """The trace a cellular run replayed ("TMobile", "Verizon", "ATT"), from its scenario."""
    import tomllib

    try:
        sc = tomllib.loads((data.run_dir(row) / "scenario.toml").read_text())
    except (OSError, ValueError):
        return "cellular"
    t = sc.get("link", {}).get("trace")
    return Path(str(t)).name.split("-")[0] if t else "cellular"


def _label(runs: pd.DataFrame, data: SuiteData | None = None) -> pd.DataFrame:
    r = runs.copy()
    r["aqm_q"] = _aqm_labels(r)
    r["video"] = r["flows.0.cc"].map(lambda c: VIDEO.get(str(c), str(c)))
    if "flows.1.count" in r:
        r["traffic"] = np.where(r["background"] == "bulk",
                                r["flows.1.count"].map(lambda n: f"{int(n)} CUBIC"
                                                       if pd.notna(n) else ""), "50 % web")
    else:
        r["traffic"] = np.where(r["background"] == "bulk", "1 CUBIC", "50 % web")
    if data is not None:
        r["link"] = [_trace_of(data, row) if row["link"] == "cellular" else row["link"]
                     for _, row in r.iterrows()]
    return r


METRICS = {"video_lat_p50_ms": "video_lat_p50_ms", "video_lat_p99_ms": "video_lat_p99_ms",
           "video_miss_pct": "video_miss_pct", "video_stalls": "video_stalls",
           "video_mbps": "video_mbps", "bulk_mbps": "bulk_mbps",
           "fct_slowdown_p99": "fct_slowdown_p99", "rpm_L4S": "rpm_L4S",
           "rpm_Classic": "rpm_Classic"}


def analyse(data: SuiteData) -> Analysis:
    """The headline table per (link, traffic, AQM, video); frame-latency CDFs per AQM (runs
    pooled) and the slowdown-vs-size figure of the web runs."""
    runs = _label(data.runs, data)
    keys = ["link", "traffic", "aqm_q", "video"]
    res = aggregate(runs, keys, METRICS)
    tables = [Table("results", "Video frame latency p50/p99 [ms], freezes (deadline misses) "
                    "[%], stalls > 200 ms [count], video and bulk throughput [Mb/s], web FCT "
                    "slowdown p99 and RPM per class [95 % CI]",
                    res, keys, list(METRICS),
                    note="Frame latency: capture to last byte; a freeze is a frame skipped, "
                         "never completed or later than the 100 ms deadline; a stall is a gap "
                         "> 200 ms between completed frames. Slowdown: FCT over "
                         "the slow-start FCT alone on the empty link. RPM = 60 s / median probe "
                         "RTT. After the 5 s warm-up.")]
    fd = data.out / "figures"
    figs = []
    for (link, video), g in runs.groupby(["link", "video"], sort=False):
        samples: dict[str, np.ndarray] = {}
        for aqm, gg in g.groupby("aqm_q", sort=False):
            vals = []
            for _, r in gg.iterrows():
                p = data.run_dir(r) / "frames.parquet"
                if not p.exists():
                    continue
                fr = read_parquet(p, columns=["flow", "capture_s", "latency_ms"])
                fr = fr[(fr["flow"] == 0) & (fr["capture_s"] >= float(r["warmup_s"]))]
                # Frames that never completed count at +inf (the CDF ends below 1).
                vals.append(fr["latency_ms"].fillna(np.inf).to_numpy())
            if vals:
                samples[aqm] = np.concatenate(vals)
        if samples:
            safe = "".join(c if c.isalnum() else "_" for c in f"{link}_{_video_tag(video)}")
            figs.append(cdfs(samples, "frame latency [ms]",
                             f"{link}, {video}: frame latency CDF per AQM (runs pooled)", fd,
                             f"frame_cdf_{safe}", log_x=True))
    figs += _slowdown_figures(data, runs, fd)
    return Analysis(tables, figs)


def _video_tag(video: str) -> str:
    """"L4S_SCReAMv2", "L4S_RT_Prague", "Classic_GCC": the class and the controller."""
    head, _, ctl = video.partition("(")
    return f"{head.split()[0]}_{ctl.rstrip(')')}"


def _slowdown_figures(data: SuiteData, runs: pd.DataFrame, fd: Path) -> list[Any]:
    from matplotlib.figure import Figure as MplFigure

    out = []
    web = runs[runs["background"] == "web"]
    for link, g in web.groupby("link", sort=False):
        fig = MplFigure(figsize=(7, 3.8))
        ax = fig.add_subplot()
        drawn = False
        for i, (aqm, gg) in enumerate(g.groupby("aqm_q", sort=False)):
            parts = []
            for _, r in gg.iterrows():
                p = data.run_dir(r) / "fct.parquet"
                if p.exists():
                    t = read_parquet(p)
                    parts.append(t[(t["start_s"] >= float(r["warmup_s"]))
                                   & np.isfinite(t["slowdown"])])
            if not parts:
                continue
            t = pd.concat(parts)
            dec = np.floor(np.log10(t["size_bytes"].to_numpy(dtype=float)))
            xs, p99 = [], []
            for k in np.unique(dec):
                xs.append(10 ** (k + 0.5))
                p99.append(np.percentile(t["slowdown"].to_numpy()[dec == k], 99))
            ax.plot(xs, p99, "o-", color=PALETTE[i % len(PALETTE)], label=aqm)
            drawn = True
        if not drawn:
            continue
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax, "y")
        ax.set_xlabel("transfer size [bytes] (decade)")
        ax.set_ylabel("FCT slowdown p99")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        title = f"{link}: web FCT slowdown p99 vs size, per AQM (runs pooled)"
        out.append(save(fig, fd, f"slowdown_{link}", title))
    return out


def prepare(spec: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The cellular parts sweep whole `link` tables ({trace = ...}): resolve their traces as
    the cellular suite does ($L4SLAB_TRACES, else the shipped excerpts)."""
    links = spec.get("grid", {}).get("link")
    if not links:
        return spec
    tmp = {"grid": {"link.trace": [ln["trace"] for ln in links]}}
    resolved = cellular_prepare(tmp, folder)["grid"]["link.trace"]
    spec["grid"]["link"] = [{**ln, "trace": t} for ln, t in zip(links, resolved, strict=True)]
    return spec


def _quick(spec: dict[str, Any]) -> dict[str, Any]:
    """CI form: one replication of 4 s (1 s warm-up); DualPI2 vs the deep FIFO; 1 CUBIC flow;
    one trace; every video."""
    spec["replications"] = 1
    spec["set"] = {**spec.get("set", {}), "duration": "4s", "warmup": "1s"}
    g = spec.get("grid", {})
    if "aqm" in g:
        g["aqm"] = [g["aqm"][0], g["aqm"][-1]]
    if "flows.1.count" in g:
        g["flows.1.count"] = [1]
    if "link" in g:
        g["link"] = g["link"][:1]
    return spec


SUITE = Suite(
    name="interactive",
    title="Interactive traffic: video frames, web transfers and responsiveness",
    description="A 60 fps real-time video flow, SCReAMv2 or RT-Prague (L4S) or GCC "
                "(Classic), next to 1 or 4 CUBIC bulk flows or a 50 % web-search workload, "
                "through DualPI2, FQ-CoDel (without and with a 1 ms ce_threshold for ECT(1)), "
                "PIE and FIFO of 1 and 4 BDP, at 10 and 50 Mb/s and over three LTE traces, "
                "base RTT 20 ms, with an "
                "L4S and a Classic latency probe every 100 ms; 30 s (5 s warm-up), 3 "
                "replications.",
    parts=[Part(f"{bg}_{lk}", f"{bg}_{lk}.toml", {"link": lk, "background": bg})
           for bg in BACKGROUNDS for lk in LINKS],
    quick=_quick,
    analyse=analyse,
    extract=extract,
    prepare=prepare,
    headline="results",
    flow_fields=("cc",),
)

"""cellular: one L4S (Prague) and one Classic (Cubic) flow over Mahimahi-format cellular traces
through DualPI2, L-queue step threshold 3 ms vs 9 ms, base RTT 5/20/100 ms: per-class
throughput, queue-length CDFs, unused txops, and the trace's own inter-txop time and
packets-per-txop distributions (DESIGN.md "Link models": one line = one 1504-byte delivery
opportunity at that millisecond; lines sharing a millisecond are one txop)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from l4slab.columnar import read_parquet
from l4slab.suites.common import read_summary, warmup_of
from l4slab.suites.core import (
    Analysis,
    Part,
    Suite,
    SuiteData,
    SuiteError,
    Table,
    TableShape,
    aggregate,
)
from l4slab.suites.figures import CLASSIC_ORANGE, L4S_BLUE, cdfs

DELAYS = [5, 20, 100]
MM_OPPORTUNITY_BYTES = 1504
#: Folder of the traces (same file names as the sweep files list); default: the relative paths
#: of the sweep files (the excerpts shipped in scenarios/traces).
TRACES_ENV = "L4SLAB_TRACES"
KEYS = ["trace", "rtt", "step_thresh"]
#: The results table's metrics -> run columns.
RESULT_VALUES = {"tput_L4S_mbps": "class.L4S.tput_mbps",
                 "tput_Classic_mbps": "class.Classic.tput_mbps",
                 "capacity_mbps": "link.capacity_mbps", "utilisation": "link.utilisation",
                 "unused_txops": "link.unused_txops",
                 "sojourn_L_p99_ms": "queues.L.sojourn_ms.p99",
                 "sojourn_C_p99_ms": "queues.C.sojourn_ms.p99"}
QUEUE_VALUES = [f"backlog_{q}_p{p}" for q in ("L", "C") for p in (50, 95, 99)]
TRACE_VALUES = ["lines", "txops", "mean_rate_mbps", "inter_txop_mean_ms", "inter_txop_p50_ms",
                "inter_txop_p95_ms", "inter_txop_max_ms", "pkts_per_txop_mean",
                "pkts_per_txop_p50", "pkts_per_txop_p95", "pkts_per_txop_max"]


def prepare(spec: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Point the trace grid at $L4SLAB_TRACES when set, and name a missing trace clearly."""
    env = os.environ.get(TRACES_ENV)
    traces = spec.get("grid", {}).get("link.trace", [])
    out = []
    names = ", ".join(Path(x).name for x in traces)
    for t in traces:
        p = Path(env) / Path(t).name if env else (folder / t)
        if not p.is_file():
            where = f"{TRACES_ENV}={env}" if env else f"{folder / Path(t).parent} (the default)"
            raise SuiteError(f"cellular: trace {Path(t).name} not found in {where}; set "
                             f"{TRACES_ENV} to a folder holding {names}")
        out.append(str(p.resolve()))
    if traces:
        spec["grid"]["link.trace"] = out
    return spec


def trace_txops(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(inter-txop times in ms, packets per txop) of a Mahimahi trace: a txop is one distinct
    millisecond timestamp; its packets are the lines at that millisecond."""
    ms = np.loadtxt(path, dtype=np.int64, ndmin=1)
    stamps, counts = np.unique(ms, return_counts=True)
    return np.diff(stamps).astype(float), counts.astype(float)


def extract(run_dir: Path, scenario: dict[str, Any]) -> dict[str, float]:
    """Backlog quantiles per queue after the warm-up (for the queue-length table)."""
    warm = warmup_of(read_summary(run_dir))
    s = read_parquet(run_dir / "samples.parquet", columns=["t_s", "queue", "backlog_pkts"])
    s = s[s["t_s"] >= warm]
    out = {}
    for q, g in s.groupby("queue", observed=True):
        x = g["backlog_pkts"].to_numpy(dtype=float)
        for p in (50, 95, 99):
            out[f"backlog_{q}_p{p}"] = float(np.percentile(x, p))
    return out


def _label(runs: pd.DataFrame) -> pd.DataFrame:
    r = runs.copy()
    r["trace"] = r["link.trace"].map(lambda t: Path(str(t)).name)
    r["step_thresh"] = r["aqm.step_thresh"]
    return r


def analyse(data: SuiteData) -> Analysis:
    """Per-class throughput, queue-length and trace tables; inter-txop, packets-per-txop and
    queue-length CDFs."""
    runs = _label(data.runs)
    keys = KEYS
    cols = RESULT_VALUES
    res = aggregate(runs, keys, cols)
    qcols = {c: c for c in QUEUE_VALUES}
    ql = aggregate(runs, keys, qcols)
    tables = [Table("results", "Per-class throughput, unused txops and p99 sojourn [95 % CI]",
                    res, keys, list(cols),
                    note="unused_txops: delivery opportunities that found the queue empty "
                         "(summary.json link.unused_txops)."),
              Table("queue_length", "Queue length (packets) quantiles per queue, mean over "
                    "runs [95 % CI]", ql, keys, list(qcols),
                    note="Quantiles of the 16 ms samples of backlog_pkts after the warm-up.")]
    # The traces themselves.
    trows, inter, per = [], {}, {}
    for path in sorted({str(t) for t in runs["link.trace"]}):
        gaps, counts = trace_txops(path)
        name = Path(path).name
        inter[name], per[name] = gaps, counts
        ms = np.loadtxt(path, dtype=np.int64, ndmin=1)
        span_s = max(float(ms[-1]), 1.0) / 1e3
        trows.append({"trace": name, "lines": int(ms.size), "txops": int(counts.size),
                      "mean_rate_mbps": ms.size * MM_OPPORTUNITY_BYTES * 8 / span_s / 1e6,
                      "inter_txop_mean_ms": float(gaps.mean()),
                      "inter_txop_p50_ms": float(np.percentile(gaps, 50)),
                      "inter_txop_p95_ms": float(np.percentile(gaps, 95)),
                      "inter_txop_max_ms": float(gaps.max()),
                      "pkts_per_txop_mean": float(counts.mean()),
                      "pkts_per_txop_p50": float(np.percentile(counts, 50)),
                      "pkts_per_txop_p95": float(np.percentile(counts, 95)),
                      "pkts_per_txop_max": float(counts.max())})
    tt = pd.DataFrame(trows)[["trace", *TRACE_VALUES]]
    tables.append(Table("traces", "The traces: txops, inter-txop time and packets per txop",
                        tt, ["trace"], TRACE_VALUES,
                        note="A txop is one distinct millisecond of the trace; packets per txop "
                             "= lines at that millisecond (1504 bytes each); mean rate over the "
                             "trace's span (last timestamp)."))
    fd = data.out / "figures"
    figs = [cdfs(inter, "inter-txop time [ms]", "Inter-txop time of each trace", fd,
                 "trace_inter_txop_cdf", log_x=True),
            cdfs(per, "packets per txop", "Packets per txop of each trace", fd,
                 "trace_pkts_per_txop_cdf")]
    for (trace, rtt), g in runs.groupby(["trace", "rtt"], sort=False):
        samples: dict[str, np.ndarray] = {}
        colors: dict[str, str] = {}
        for st, gg in g.groupby("step_thresh", sort=True):
            for q, color in (("L", L4S_BLUE), ("C", CLASSIC_ORANGE)):
                vals = []
                for _, r in gg.iterrows():
                    s = read_parquet(data.run_dir(r) / "samples.parquet",
                                        columns=["t_s", "queue", "backlog_pkts"])
                    s = s[(s["t_s"] >= float(r["warmup_s"])) & (s["queue"] == q)]
                    vals.append(s["backlog_pkts"].to_numpy(dtype=float))
                label = f"{q} queue, step {st}"
                samples[label] = np.concatenate(vals) if vals else np.zeros(0)
                colors[label] = color if st == "3ms" else ("#0b3d66" if q == "L" else "#8a4500")
        safe = "".join(c if c.isalnum() else "_" for c in f"{trace}_{rtt}")
        figs.append(cdfs(samples, "queue length [packets]", f"{trace}, {rtt}: queue length "
                         "CDF (runs pooled)", fd, f"qlen_cdf_{safe}", colors=colors))
    return Analysis(tables, figs)


SUITE = Suite(
    name="cellular",
    title="L4S and Classic over cellular traces",
    description="One TCP Prague flow (L4S) and one CUBIC flow (Classic) over three Mahimahi "
                "LTE downlink traces (T-Mobile, Verizon, AT&T driving; looping) through "
                "DualPI2 with the L-queue step threshold at 3 ms vs 9 ms, base RTT 5, 20 and "
                "100 ms, 60 s (5 s warm-up), 5 replications. Traces are the 30 s "
                "excerpts shipped in scenarios/traces (or $L4SLAB_TRACES).",
    parts=[Part(f"rtt{d}ms", f"rtt{d}ms.toml", {"rtt": f"{d} ms"}) for d in DELAYS],
    quick={"replications": 2, "set": {"duration": "8s", "warmup": "2s"}},
    analyse=analyse,
    extract=extract,
    prepare=prepare,
    tables=[TableShape("results", KEYS, list(RESULT_VALUES)),
            TableShape("queue_length", KEYS, QUEUE_VALUES),
            TableShape("traces", ["trace"], TRACE_VALUES)],
    headline="results",
    # Real time: one trace, one replication per point (6 runs of 4 s).
    quick_emulate={"replications": 1,
                   "grid": {"link.trace": ["../../traces/TMobile-LTE-short-30s.down"]}},
)

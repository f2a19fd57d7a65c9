"""robustness: Prague and Cubic alone and together, and Prague with BBRv3 (L4S), under random
(Wi-Fi-like) loss, RTT jitter and sudden bandwidth changes: throughput, mean and 5th-percentile
queueing delay, adaptation time after a change, Jain's index for the mixes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from l4slab.columnar import read_parquet
from l4slab.suites.common import read_summary, warmup_of
from l4slab.suites.core import Analysis, Part, Suite, SuiteData, Table, TableShape, aggregate
from l4slab.suites.figures import bars

MIXES = [("prague", "Prague"), ("cubic", "Cubic"), ("prague_cubic", "Prague+Cubic"),
         ("prague_bbr3", "Prague+BBRv3(L4S)")]
IMPAIRMENTS = ["loss", "jitter", "steps"]
BIN_S = 0.1
#: Conditions that must hold, bin after bin, for this long to count as adapted.
HOLD_S = 1.0
PRE_S = 5.0
KEYS = ["traffic", "condition"]
#: The results table's metrics -> run columns.
RESULT_VALUES = {"tput_L4S_mbps": "class.L4S.tput_mbps",
                 "tput_Classic_mbps": "class.Classic.tput_mbps",
                 "tput_total_mbps": "tput_total_mbps",
                 "delay_L_mean_ms": "queues.L.sojourn_ms.mean", "delay_L_p5_ms": "delay_L_p5_ms",
                 "delay_C_mean_ms": "queues.C.sojourn_ms.mean", "delay_C_p5_ms": "delay_C_p5_ms",
                 "utilisation": "link.utilisation"}

_RATE = re.compile(r"^\s*([0-9.]+)\s*(bit|kbit|mbit|gbit)\s*$", re.IGNORECASE)


def rate_mbps(text: str) -> float:
    """A rate string such as '50mbit' in Mb/s."""
    m = _RATE.match(str(text))
    if not m:
        raise ValueError(f"not a rate: {text!r}")
    scale = {"bit": 1e-6, "kbit": 1e-3, "mbit": 1.0, "gbit": 1e3}[m.group(2).lower()]
    return float(m.group(1)) * scale


def adaptation_time(t_s: np.ndarray, tput_mbps: np.ndarray, sojourn_ms: np.ndarray,
                    t_change: float, old_mbps: float, new_mbps: float) -> float:
    """Seconds from a rate change until the flows have adapted, from 100 ms bins of the total
    throughput and of the largest head sojourn over the queues: the first bin from which, for
    `HOLD_S`, (a) throughput ≥ 90 % of the utilisation held in the `PRE_S` before the change
    times the new rate and (b) sojourn ≤ the 95th percentile of the same pre-change window
    + 1 ms. NaN when that never happens before the run ends (or nothing changed)."""
    if new_mbps == old_mbps:
        return float("nan")
    pre = (t_s >= t_change - PRE_S) & (t_s < t_change)
    post = t_s >= t_change
    if not pre.any() or not post.any():
        return float("nan")
    util_pre = float(np.mean(tput_mbps[pre])) / old_mbps
    soj_cap = float(np.percentile(sojourn_ms[pre], 95)) + 1.0
    ok = (tput_mbps >= 0.9 * util_pre * new_mbps) & (sojourn_ms <= soj_cap)
    idx = np.flatnonzero(post)
    hold = int(round(HOLD_S / BIN_S))
    for i in idx:
        if i + hold > len(ok):
            break
        if ok[i:i + hold].all():
            return float(t_s[i] - t_change)
    return float("nan")


def extract(run_dir: Path, scenario: dict[str, Any]) -> dict[str, float]:
    """Per-run queueing-delay statistics and adaptation times after each rate step."""
    s = read_summary(run_dir)
    warm = warmup_of(s)
    sm = read_parquet(run_dir / "samples.parquet",
                         columns=["t_s", "queue", "backlog_pkts", "sojourn_ms"])
    out: dict[str, float] = {}
    after = sm[sm["t_s"] >= warm]
    for q, g in after.groupby("queue", observed=True):
        busy = g[g["backlog_pkts"] > 0]["sojourn_ms"]
        # p5 over samples with a packet queued: an empty queue has no queueing delay to rank
        # (a queue never seen busy, e.g. L without an L4S flow, has none: NaN).
        out[f"delay_{q}_p5_ms"] = float(np.percentile(busy, 5)) if len(busy) else float("nan")
    link = scenario.get("link", {})
    steps = link.get("steps") or []
    if steps:
        f = read_parquet(run_dir / "flows.parquet", columns=["t_s", "tput_mbps"])
        b = np.floor(f["t_s"].to_numpy() / BIN_S) * BIN_S
        tput = f.groupby(b)["tput_mbps"].sum() / f.groupby(b)["t_s"].nunique()
        sb = np.floor(sm["t_s"].to_numpy() / BIN_S) * BIN_S
        soj = sm.groupby([sb, sm["t_s"]])["sojourn_ms"].max().groupby(level=0).mean()
        both = pd.concat({"tput": tput, "soj": soj}, axis=1).dropna()
        t_change = _seconds(steps[0]["at"])
        out["adaptation_s"] = adaptation_time(both.index.to_numpy(), both["tput"].to_numpy(),
                                              both["soj"].to_numpy(), t_change,
                                              rate_mbps(link["rate"]),
                                              rate_mbps(steps[0]["rate"]))
    return out


def _seconds(text: str) -> float:
    m = re.match(r"^\s*([0-9.]+)\s*(ns|us|ms|s)\s*$", str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    return float(m.group(1)) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def condition(r: pd.Series) -> str:
    """A run's impairment as a readable label ('loss 5 %', 'jitter 10ms', rate steps)."""
    imp = r["impairment"]
    if imp == "loss":
        return f"loss {float(r['link.loss']) * 100:g} %"
    if imp == "jitter":
        return f"jitter {r['link.jitter']}"
    a, b = rate_mbps(r["link.rate"]), rate_mbps(r["link.steps.0.rate"])
    if a == b:
        return f"constant {a:g} Mb/s"
    return f"{'up' if b > a else 'down'} {a:g}→{b:g} Mb/s"


def analyse(data: SuiteData) -> Analysis:
    """Throughput, delay, adaptation and Jain tables per sender mix and condition, with figures."""
    runs = data.runs.copy()
    runs["condition"] = runs.apply(condition, axis=1)
    for c in ("class.L4S.tput_mbps", "class.Classic.tput_mbps"):
        if c not in runs:
            runs[c] = np.nan
    runs["tput_total_mbps"] = runs[["class.L4S.tput_mbps", "class.Classic.tput_mbps"]].sum(
        axis=1, min_count=1)
    keys = KEYS
    cols = RESULT_VALUES
    main = aggregate(runs, keys, cols)
    tables = [Table("results", "Throughput and queueing delay per traffic mix and condition "
                    "[95 % CI]", main, keys, list(cols),
                    note="delay mean: per packet (summary.json); p5: 5th percentile of the "
                         "16 ms samples of head sojourn while the queue holds a packet.")]
    steps = runs[runs["impairment"] == "steps"]
    changed = steps[~steps["condition"].str.startswith("constant")]
    if len(changed):
        ad = aggregate(changed, keys, {"adaptation_s": "adaptation_s"})
        ad["adapted_runs"] = [int(g["adaptation_s"].notna().sum())
                              for _, g in changed.groupby(keys, sort=False)]
        tables.append(Table("adaptation", "Adaptation time after a bandwidth change [95 % CI]",
                            ad, keys, ["adaptation_s"],
                            note="From the change until, for 1 s of 100 ms bins, throughput ≥ "
                                 "90 % of (pre-change utilisation × new rate) and the largest "
                                 "head sojourn ≤ its pre-change 95th percentile + 1 ms; runs "
                                 "that never adapt are left out of the mean (adapted_runs)."))
    mixes = runs[runs["traffic"].isin(["Prague+Cubic", "Prague+BBRv3(L4S)"])]
    if len(mixes):
        jt = aggregate(mixes, keys, {"jain": "jain"})
        tables.append(Table("fairness", "Jain's index of the two-flow mixes [95 % CI]", jt,
                            keys, ["jain"]))
    figs = []
    loss = main[main["condition"].str.startswith("loss")]
    if len(loss):
        figs.append(bars(loss, "condition", "traffic", "tput_total_mbps", "throughput [Mb/s]",
                         "Throughput under random loss", data.out / "figures", "loss_tput"))
    return Analysis(tables, figs)


def quick(spec: dict[str, Any]) -> dict[str, Any]:
    """The --quick form of a part: 2 replications of 10 s, rate steps scaled to fit."""
    spec["replications"] = 2
    spec["set"] = {**spec.get("set", {}), "duration": "10s", "warmup": "2s"}
    steps = spec["set"].get("link.steps")
    if steps:
        spec["set"]["link.steps"] = [{**steps[0], "at": "6s"}]
    return spec


SUITE = Suite(
    name="robustness",
    title="Robustness to loss, jitter and bandwidth changes",
    description="DualPI2 (Linux defaults) at 40 Mb/s, 20 ms base RTT, 40 s (5 s warm-up), "
                "20 replications: Prague alone, Cubic alone, Prague+Cubic and "
                "Prague+BBRv3(L4S) under i.i.d. loss of 1/5/10 %, RTT jitter of 2/10 ms, and "
                "a bandwidth step at 20 s (10→40 and 40→10 Mb/s, with constant-rate "
                "references).",
    parts=[Part(f"{m}-{i}", f"{m}-{i}.toml", {"traffic": md, "impairment": i})
           for m, md in MIXES for i in IMPAIRMENTS],
    quick=quick,
    tables=[TableShape("results", KEYS, list(RESULT_VALUES)),
            TableShape("adaptation", KEYS, ["adaptation_s"]),
            TableShape("fairness", KEYS, ["jain"])],
    analyse=analyse,
    extract=extract,
    headline="results",
    emulate_not="its loss, jitter and rate steps apply to the data direction only in the "
                "simulator, while the emulator would apply them to the ACKs too",
)

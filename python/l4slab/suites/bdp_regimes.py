"""bdp-regimes: DualPI2 across three bandwidth-delay regimes, three traffic mixes, the L-queue
step threshold x PI target, and both link models (smooth serialisation vs Mahimahi-style 1 ms
txops), with validation tables (p̂_max and bootstrap CIs per metric) for link model and for
each variant against the default (step 1 ms, target 15 ms)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from l4slab.suites.common import (
    SERIES_BINS,
    binned_series,
    queue_occupancy,
    read_summary,
    rename_params,
    series_validation,
    totals,
    warmup_of,
)
from l4slab.suites.core import Analysis, Part, Suite, SuiteData, Table, TableShape, aggregate
from l4slab.suites.figures import bars

LINKS = [("12M20ms", "12 Mb/s 20 ms"), ("50M40ms", "50 Mb/s 40 ms"),
         ("200M100ms", "200 Mb/s 100 ms")]
TRAFFIC = [("prague", "Prague"), ("cubic", "Cubic"), ("mixed", "Prague+Cubic")]
KEYS = ["link", "traffic", "link_model", "step_thresh", "target"]
#: Validation metrics: time series of each run (`binned_series`), compared by normalised DTW.
METRICS = ["tput_mbps", "backlog_pkts", "marks", "drops"]
DEFAULT = {"step_thresh": "1ms", "target": "15ms"}
#: The results table's metrics -> run columns.
RESULT_VALUES = {"tput_mbps": "tput_mbps", "backlog_pkts": "backlog_pkts", "marks": "marks",
                 "drops": "drops", "sojourn_L_ms": "queues.L.sojourn_ms.mean",
                 "sojourn_C_ms": "queues.C.sojourn_ms.mean", "utilisation": "link.utilisation"}
LINK_MODEL_VALUES = ["smooth", "txop1ms", "difference", "p_hat_max", "perm_p"]
VARIANT_VALUES = ["default", "variant", "difference", "p_hat_max", "perm_p"]


def extract(run_dir: Path, scenario: dict[str, Any]) -> dict[str, float]:
    """Per-run metrics summary.json lacks: totals over flows and queues, mean queue occupancy."""
    s = read_summary(run_dir)
    return {**totals(s), **queue_occupancy(run_dir, warmup_of(s))}


def analyse(data: SuiteData) -> Analysis:
    """Results table, link-model and variant validation tables, and figures of the suite."""
    runs = rename_params(data.runs)
    figs_dir = data.out / "figures"
    vals = RESULT_VALUES
    res = aggregate(runs, KEYS, vals)
    results = Table("results", "Per configuration: mean over runs [95 % CI]", res, KEYS,
                    list(vals),
                    note="tput_mbps: sum over flows; backlog_pkts: mean total queue length "
                         "(samples after warm-up); marks/drops: CE marks and AQM drops in the "
                         "measured interval; sojourn: mean per queue (summary.json).")
    lm = _validation_frame(data.part_tables("link_models"), other_keys(), "smooth",
                           "txop1ms")
    link_models = Table("link_models", "Link model: smooth vs Mahimahi-style 1 ms txops "
                        "(validation, p̂_max with bootstrap 95 % CI)", lm,
                        other_keys() + ["metric"], LINK_MODEL_VALUES,
                        note="difference = txop1ms - smooth (means of each run's series); "
                             "similar: the published criterion p̂_max < 0.05, near which identical "
                             "groups sit by construction; the verdict comes from the "
                             "permutation test (perm_p, validation/interpret.py). Each run's "
                             "measured interval is cut into "
                             f"{SERIES_BINS} bins (throughput and backlog: bin means; "
                             "marks and drops: per second), compared by normalised DTW; "
                             "bootstrap B = 2000.")
    vf = _validation_frame(data.part_tables("variants"), KEYS, "default", "variant")
    variants = Table("variants", "Each variant against the default (step_thresh 1 ms, target "
                     "15 ms)", vf, KEYS + ["metric"], VARIANT_VALUES,
                     note="difference = variant - default; p̂_max as above.")
    figs = []
    mixed = res[res["traffic"] == "Prague+Cubic"] if (res["traffic"] == "Prague+Cubic").any() \
        else res
    dflt = mixed[(mixed["step_thresh"] == "1ms") & (mixed["target"] == "15ms")]
    if len(dflt):
        figs.append(bars(dflt, "link", "link_model", "backlog_pkts", "mean backlog [pkts]",
                         "Queue occupancy by link model (default DualPI2)", figs_dir,
                         "backlog_link_model"))
        figs.append(bars(dflt, "link", "link_model", "tput_mbps", "throughput [Mb/s]",
                         "Throughput by link model (default DualPI2)", figs_dir,
                         "tput_link_model"))
    for link, g in mixed.groupby("link", sort=False):
        g = g[g["link_model"] == "smooth"].copy()
        g["variant"] = g["step_thresh"] + " / " + g["target"]
        if len(g):
            safe = "".join(c if c.isalnum() else "_" for c in str(link))
            figs.append(bars(g, "variant", None, "sojourn_C_ms" if g["sojourn_C_ms"].notna().any()
                             else "sojourn_L_ms", "mean sojourn [ms]",
                             f"{link}: sojourn by step_thresh / target (smooth link)", figs_dir,
                             f"sojourn_variants_{safe}"))
    return Analysis([results, link_models, variants], figs)


def other_keys() -> list[str]:
    """The result-table keys other than the link model (the link-model test pairs rows on them)."""
    return [k for k in KEYS if k != "link_model"]


def part_analyse(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The validation tests of one part (one link and traffic mix), in the part's worker:
    smooth vs txop1ms at every variant, and every variant against the default per link
    model."""
    runs = rename_params(runs)
    series = {p: binned_series(Path(p)) for p in runs["run_path"]}

    def group(g: pd.DataFrame) -> list[dict[str, Any]]:
        return [series[p] for p in g["run_path"]]

    other = other_keys()
    lm_rows = []
    for key, g in runs.groupby(other, sort=False):
        a = g[g["link_model"] == "smooth"]
        b = g[g["link_model"] == "txop1ms"]
        if a.empty or b.empty:
            continue
        for r in series_validation(group(a), group(b), METRICS, a, b):
            lm_rows.append({**dict(zip(other, key, strict=True)), **r})
    var_rows = []
    base_keys = ["link", "traffic", "link_model"]
    for key, g in runs.groupby(base_keys, sort=False):
        dflt = g[(g["step_thresh"] == DEFAULT["step_thresh"]) & (g["target"] == DEFAULT["target"])]
        if dflt.empty:
            continue
        for (st, tg), v in g.groupby(["step_thresh", "target"], sort=False):
            if (st, tg) == (DEFAULT["step_thresh"], DEFAULT["target"]):
                continue
            for r in series_validation(group(dflt), group(v), METRICS, dflt, v):
                var_rows.append({**dict(zip(base_keys, key, strict=True)), "step_thresh": st,
                                 "target": tg, **r})
    return {"link_models": pd.DataFrame(lm_rows), "variants": pd.DataFrame(var_rows)}


def _validation_frame(df: pd.DataFrame, keys: list[str], a: str, b: str) -> pd.DataFrame:
    if df.empty:
        return pd.DataFrame(columns=[*keys, "metric", a, b, "difference", "p_hat_max", "ci_low",
                                     "ci_high", "similar", "perm_p", "verdict", "n_a",
                                     "n_b"])
    df = df.rename(columns={"mean_a": a, "mean_b": b})
    return df[[*keys, "metric", a, b, "difference", "p_hat_max", "ci_low", "ci_high",
               "similar", "perm_p", "verdict", "n_a", "n_b"]]


SUITE = Suite(
    name="bdp-regimes",
    title="DualPI2 across bandwidth-delay regimes, link models and variants",
    description="DualPI2 (Linux defaults) at 12 Mb/s/20 ms, 50 Mb/s/40 ms and 200 Mb/s/100 ms "
                "with one Prague flow, one Cubic flow or one of each; step_thresh × target; "
                "smooth vs Mahimahi-style 1 ms txop link; 100 replications of 30 s (5 s "
                "warm-up). Validation tables use the toolkit's exceedance test on each run's "
                "time series (throughput, queue occupancy, CE marks and drops per second; "
                f"{SERIES_BINS} bins per run, normalised DTW).",
    parts=[Part(f"{ln}-{tn}", f"{ln}-{tn}.toml", {"link": ld, "traffic": td})
           for ln, ld in LINKS for tn, td in TRAFFIC],
    quick={"replications": 3, "set": {"duration": "4s", "warmup": "1s"},
           "grid": {"aqm.step_thresh": ["1ms", "5ms"], "aqm.target": ["15ms", "30ms"]}},
    analyse=analyse,
    extract=extract,
    part_analyse=part_analyse,
    tables=[TableShape("results", KEYS, list(RESULT_VALUES)),
            TableShape("link_models", other_keys() + ["metric"], LINK_MODEL_VALUES),
            TableShape("variants", KEYS + ["metric"], VARIANT_VALUES)],
    headline="results",
    emulate_not="its link-model comparison needs 1 ms txops on the data direction only, which "
                "the emulator would apply to the ACKs too (and 16 200 runs of 30 s are 5.6 days "
                "of real time)",
)

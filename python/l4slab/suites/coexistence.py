"""coexistence: one L4S sender (Prague; BBRv3 with L4S ECN) against 1, 2, 4 or 8 Classic senders
(Cubic; BBRv1; BBRv3) at a 100 Mb/s bottleneck, for FIFO, FIFO+ECN, CoDel+ECN, PIE,
FQ-CoDel (L4S-aware) and DualPI2, each at buffers of 0.5, 1, 2, 4 and 8 BDP: a throughput
matrix (each flow's throughput with the competitor's in parentheses), a harm view against solo
runs (Ware et al., HotNets 2019: harm = 1 − throughput with the competitor / throughput alone,
each sender alone at the same AQM and buffer) and a share view against the equal share."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from l4slab.suites.core import (
    UNIT,
    Analysis,
    Figure,
    Part,
    Suite,
    SuiteData,
    Table,
    TableShape,
    aggregate,
    suites_dir,
)
from l4slab.suites.figures import save

AQMS = [("fifo", "FIFO"), ("fifo_ecn", "FIFO+ECN"), ("codel", "CoDel+ECN"), ("pie", "PIE+ECN"),
        ("fq_codel", "FQ-CoDel(L4S)"), ("dualpi2", "DualPI2")]
#: aqm.limit in packets -> buffer in BDPs (100 Mb/s x 20 ms = 166.7 packets of 1500 B).
BDP_PKTS = 100e6 * 0.020 / 8 / 1500
KEYS = ["aqm", "buffer_bdp", "classic_flows", "l4s_cc", "classic_cc"]
#: Metric columns of the three result tables.
THROUGHPUT = ["l4s_mbps", "classic_mbps", "jain", "utilisation"]
HARM = ["harm_to_l4s", "harm_to_classic"]
SHARE = ["short_l4s", "short_classic"]


def solo_sweep(spec: dict[str, Any]) -> dict[str, Any]:
    """The solo-run variant of one AQM's sweep: the same AQM, buffers, replications and seeds,
    but each sender of the grid alone (every L4S sender; every Classic sender at every flow
    count), so harm can be measured against what a sender gets without its competitor."""
    spec = copy.deepcopy(spec)
    base = tomllib.loads((suites_dir() / "coexistence" / "base.toml").read_text())
    l4s_flow, classic_flow = base["flows"][0], base["flows"][1]
    grid = spec["grid"]
    alone: list[list[dict[str, Any]]] = [[{**l4s_flow, "cc": cc}]
                                         for cc in grid.pop("flows.0.cc")]
    counts = grid.pop("flows.1.count")
    alone += [[{**classic_flow, "cc": cc, "count": n}] for cc in grid.pop("flows.1.cc")
              for n in counts]
    grid["flows"] = alone
    return spec


def _solo(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean per-flow throughput of each sender alone: (aqm, buffer_bdp, class, cc, flows)."""
    r = runs.copy()
    r["buffer_bdp"] = (r["aqm.limit"].astype(float) / BDP_PKTS).round(1)
    r["cc"] = r["flows.0.cc"].astype(str)
    r["class"] = r["flows.0.class"].astype(str)
    tput = [c for c in r.columns if c.startswith("flows.") and c.endswith(".tput_mbps")]
    r["n_flows"] = r[tput].notna().sum(axis=1)
    r["solo_mbps"] = r[tput].sum(axis=1, min_count=1) / r["n_flows"]
    return (r.groupby(["aqm", "buffer_bdp", "class", "cc", "n_flows"], observed=True)
            ["solo_mbps"].mean().reset_index())


def _prep(runs: pd.DataFrame, solo: pd.DataFrame | None = None) -> pd.DataFrame:
    r = runs.copy()
    r["buffer_bdp"] = (r["aqm.limit"].astype(float) / BDP_PKTS).round(1)
    r["l4s_cc"] = r["flows.0.cc"].astype(str)
    r["classic_cc"] = r["flows.1.cc"].astype(str)
    r["classic_flows"] = r["flows.1.count"].astype(int)
    r["l4s_mbps"] = r["flows.0.tput_mbps"].astype(float)
    classic = [c for c in r.columns if c.startswith("flows.") and c.endswith(".tput_mbps")
               and c != "flows.0.tput_mbps"]
    r["classic_total_mbps"] = r[classic].sum(axis=1, min_count=1)
    r["classic_mbps"] = r["classic_total_mbps"] / r["classic_flows"]
    # Below the equal share of what the bottleneck delivered (a fairness view): 1 - x / share,
    # floored at 0.
    share = (r["l4s_mbps"] + r["classic_total_mbps"]) / (r["classic_flows"] + 1)
    r["short_l4s"] = np.maximum(0.0, 1.0 - r["l4s_mbps"] / share)
    r["short_classic"] = np.maximum(0.0, 1.0 - r["classic_mbps"] / share)
    # Ware et al.'s harm: 1 - throughput with the competitor / throughput alone (same AQM,
    # buffer and flow count), floored at 0; NaN where the solo run is missing.
    r["harm_to_l4s"] = np.nan
    r["harm_to_classic"] = np.nan
    if solo is not None and len(solo):
        on = ["aqm", "buffer_bdp"]
        l4s = solo[solo["class"] == "L4S"].rename(columns={"cc": "l4s_cc",
                                                           "solo_mbps": "l4s_solo_mbps"})
        cls = solo[solo["class"] == "Classic"].rename(
            columns={"cc": "classic_cc", "n_flows": "classic_flows",
                     "solo_mbps": "classic_solo_mbps"})
        r = r.merge(l4s[[*on, "l4s_cc", "l4s_solo_mbps"]], on=[*on, "l4s_cc"], how="left")
        r = r.merge(cls[[*on, "classic_cc", "classic_flows", "classic_solo_mbps"]],
                    on=[*on, "classic_cc", "classic_flows"], how="left")
        r["harm_to_l4s"] = np.maximum(0.0, 1.0 - r["l4s_mbps"] / r["l4s_solo_mbps"])
        r["harm_to_classic"] = np.maximum(0.0, 1.0 - r["classic_mbps"]
                                          / r["classic_solo_mbps"])
    return r


def analyse(data: SuiteData) -> Analysis:
    """Throughput matrix, solo-run harm and equal-share tables, and the L4S-share heat map."""
    is_solo = data.runs["part"].astype(str).str.startswith("solo-")
    runs = _prep(data.runs[~is_solo], _solo(data.runs[is_solo]) if is_solo.any() else None)
    cols = {"l4s_mbps": "l4s_mbps", "classic_mbps": "classic_mbps",
            "harm_to_l4s": "harm_to_l4s", "harm_to_classic": "harm_to_classic",
            "short_l4s": "short_l4s", "short_classic": "short_classic",
            "jain": "jain", "utilisation": "link.utilisation"}
    # harm and shortfall are fractions 1 - x/y cut at 0 per run: their means lie in [0, 1].
    res = aggregate(runs, KEYS, cols, domains={c: UNIT for c in
                                               ("harm_to_l4s", "harm_to_classic",
                                                "short_l4s", "short_classic")})
    order = {a: i for i, (_, a) in enumerate(AQMS)}
    res["_o"] = res["aqm"].map(order)
    res = res.sort_values(["classic_flows", "_o", "buffer_bdp", "l4s_cc", "classic_cc"],
                          kind="stable").drop(columns="_o").reset_index(drop=True)
    pair = res["l4s_cc"] + " vs " + res["classic_cc"]
    disp = _matrix(res, pair, [f"{a:.1f} ({b:.1f})" for a, b in
                               zip(res["l4s_mbps"], res["classic_mbps"], strict=True)])
    hdisp = _matrix(res, pair, [_harm_cell(a, b) for a, b in
                                zip(res["harm_to_l4s"], res["harm_to_classic"], strict=True)])
    sdisp = _matrix(res, pair, [_harm_cell(a, b) for a, b in
                                zip(res["short_l4s"], res["short_classic"], strict=True)])
    def only(values: list[str]) -> pd.DataFrame:
        # Each table's CSV holds its own columns (they all came out identical when each
        # table was handed the whole `res`).
        return res[KEYS + [c for v in values for c in (v, f"{v}_lo", f"{v}_hi")] + ["n"]]

    tables = [
        Table("throughput", "Throughput matrix: L4S flow Mb/s (mean Classic flow Mb/s)",
              only(THROUGHPUT), KEYS, THROUGHPUT,
              display=disp,
              note="Rows: number of Classic flows, AQM, buffer in BDPs; columns: L4S sender vs "
                   "Classic sender. Means over runs; CIs in tables/throughput.csv."),
        Table("harm", "Harm (Ware et al.): 1 − throughput with the competitor / throughput "
              "alone, for the more harmed side", only(HARM), KEYS, HARM,
              display=hdisp,
              note="Throughput alone: the same sender (and number of Classic flows) alone at "
                   "the same AQM and buffer, the same seeds (parts solo-*). 'C 0.60' means the "
                   "mean Classic flow got 40 % of what it gets alone; '0' means neither side "
                   "lost throughput. Both harms are in tables/harm.csv."),
        Table("share", "Below the equal share: 1 − throughput / equal share, for the side "
              "below it", only(SHARE), KEYS, SHARE, display=sdisp,
              note="Equal share = delivered total / (1 + Classic flows): a fairness view that "
                   "needs no solo run."),
    ]
    figs = []
    one = res[res["classic_flows"] == 1]
    if len(one):
        figs.append(_heatmap(one, data.out / "figures"))
    return Analysis(tables, figs)


def _matrix(res: pd.DataFrame, pair: pd.Series, cells: list[str]) -> pd.DataFrame:
    """The report's view of one table: rows (Classic flows, AQM, buffer), one column per
    sender pair, `cells` (one per row of `res`) as the entries."""
    m = res.assign(pair=pair, cell=cells).pivot_table(
        index=["classic_flows", "aqm", "buffer_bdp"], columns="pair", values="cell",
        aggfunc="first", sort=False).reset_index()
    m.columns.name = None
    return m


def _harm_cell(h_l: float, h_c: float) -> str:
    if h_c >= h_l:
        return f"C {h_c:.2f}" if h_c > 0 else "0"
    return f"L {h_l:.2f}"


def _heatmap(one: pd.DataFrame, out: Path) -> Figure:
    """L4S flow's share of the total, rows AQM × buffer, columns sender pairs (1 Classic)."""
    one = one.assign(pair=one["l4s_cc"] + " vs " + one["classic_cc"],
                     row=one["aqm"] + " " + one["buffer_bdp"].map(lambda b: f"{b:g} BDP"),
                     share=one["l4s_mbps"] / (one["l4s_mbps"] + one["classic_mbps"]))
    grid = one.pivot_table(index="row", columns="pair", values="share", sort=False)
    fig = MplFigure(figsize=(1.5 * len(grid.columns) + 3.5, 0.36 * len(grid) + 1.8))
    ax = fig.add_subplot()
    values = grid.to_numpy(dtype=float)
    im = ax.imshow(values, cmap="coolwarm_r", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(grid.columns)), list(grid.columns), rotation=20, ha="right",
                  fontsize=9)
    ax.set_yticks(range(len(grid.index)), list(grid.index), fontsize=9)
    # Each cell's value written in it: a colour alone cannot be read to two digits.
    for (i, j), v in np.ndenumerate(values):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if abs(v - 0.5) > 0.3 else "black")
    fig.colorbar(im, ax=ax, label="L4S share of throughput")
    ax.set_xlabel("L4S sender vs Classic sender", fontsize=9)
    ax.set_title("L4S flow's share against one Classic flow (0.5 = equal)", fontsize=10)
    return save(fig, out, "l4s_share_1classic", "L4S flow's share against one Classic flow")


SUITE = Suite(
    name="coexistence",
    title="L4S and Classic senders across AQMs and buffer sizes",
    description="One L4S sender (Prague; BBRv3 with L4S ECN) and 1, 2, 4 or 8 Classic senders "
                "(Cubic; BBRv1; BBRv3; RFC 3168 ECN) at a 100 Mb/s bottleneck with 20 ms base "
                "RTT, 60 s (5 s warm-up), 5 replications, for FIFO, FIFO+ECN (1 ms sojourn "
                "CE step), CoDel+ECN, PIE+ECN, FQ-CoDel (ce_threshold 1 ms on ECT(1)) and "
                "DualPI2, at buffers of 0.5, 1, 2, 4 and 8 BDP (aqm.limit in packets); plus "
                "every sender alone at each AQM and buffer for the harm table.",
    parts=[Part(a, f"{a}.toml", {"aqm": ad}) for a, ad in AQMS]
    + [Part(f"solo-{a}", f"{a}.toml", {"aqm": ad}, rewrite=solo_sweep) for a, ad in AQMS],
    quick={"replications": 1, "set": {"duration": "8s", "warmup": "2s"},
           "grid": {"aqm.limit": [167, 667], "flows.1.count": [1, 4],
                    "flows.1.cc": ["cubic", "bbr3"]}},
    analyse=analyse,
    tables=[TableShape("throughput", KEYS, THROUGHPUT), TableShape("harm", KEYS, HARM),
            TableShape("share", KEYS, SHARE)],
    headline="throughput",
    flow_fields=("cc", "class", "tput_mbps"),
    # Real time: one buffer size, one Classic Cubic flow (12 runs of 4 s).
    quick_emulate={"replications": 1, "grid": {"aqm.limit": [667], "flows.1.count": [1],
                                               "flows.1.cc": ["cubic"]}},
)

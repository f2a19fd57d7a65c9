"""Sweep grids whose values are whole tables, and tables over several sweeps.

A grid key may list whole tables instead of scalars: ``[[grid.aqm]]`` variants, each a full
``[aqm]`` table with its own keys (CoDel with ``ecn = true``, DualPI2 with a ``target``), are
the values of the grid key ``aqm`` and combine with the other keys by product. A variant is
applied before the grid's deeper keys (``"aqm.limit" = ["1bdp", "2bdp"]`` lands inside every
variant). In the index each such key becomes one column per effective key (``aqm.kind``,
``aqm.ecn``, ``aqm.target``; ``(default)`` where a variant leaves the key out), so reports and
``l4slab summary`` group by what actually differs.

Several sweep directories merge into one index with a ``source`` column (the directory).
Groups of replications whose runs are identical (zero spread in every metric) are flagged:
their 95% CIs would read ± 0 because the runs are copies, not because they agree.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["UNSET", "ordered_overrides", "effective_params", "expand_params", "check_grid",
           "merged_index", "group_table", "identical_groups", "SPREAD_METRICS",
           "SWEEP_METRICS"]

#: Index label of a key a table variant leaves out (the AQM's own default applies).
UNSET = "(default)"

#: The per-run metrics sweep figures and reports show (metric key, label).
SWEEP_METRICS = [
    ("class.L4S.tput_mbps", "L4S throughput [Mb/s]"),
    ("class.Classic.tput_mbps", "Classic throughput [Mb/s]"),
    ("queues.L.sojourn_ms.p99", "L sojourn p99 [ms]"),
    ("queues.C.sojourn_ms.p99", "C sojourn p99 [ms]"),
    ("queues.single.sojourn_ms.p99", "sojourn p99 [ms]"),
    ("queues.fq.sojourn_ms.p99", "FQ sojourn p99 [ms]"),
    ("queues.L.sojourn_ms.mean", "L sojourn mean [ms]"),
    ("queues.C.sojourn_ms.mean", "C sojourn mean [ms]"),
    ("link.utilisation", "link utilisation"),
    ("jain", "Jain's fairness index"),
]


#: Metrics whose spread over replications tells copies from independent runs (per-run
#: scalars of sweep.parquet; runs whose flows' throughputs differ also differ, in practice,
#: in the packets sent).
SPREAD_METRICS = ("class.L4S.tput_mbps", "class.Classic.tput_mbps",
                  "queues.L.sojourn_ms.p99", "queues.C.sojourn_ms.p99",
                  "queues.single.sojourn_ms.p99", "queues.fq.sojourn_ms.p99",
                  "link.utilisation", "jain", "packets.sent")


def _is_table(v: Any) -> bool:
    return isinstance(v, Mapping)


def check_grid(grid: Mapping[str, list[Any]], origin: str) -> None:
    """A key with table variants cannot also be swept key by key through `KEY.kind`."""
    from l4slab.scenario import ScenarioError

    for k, vals in grid.items():
        if any(_is_table(v) for v in vals):
            if not all(_is_table(v) for v in vals):
                raise ScenarioError(f'{origin}: grid."{k}" mixes tables and plain values; '
                                    "give every variant as a full table")
            if f"{k}.kind" in grid:
                raise ScenarioError(f'{origin}: grid."{k}.kind" and [[grid.{k}]] variants both '
                                    "choose the kind; give the kind inside each variant")
            # The grid's deeper key lands inside every variant (ordered_overrides), so a
            # variant's own value for it would never run while the index showed it.
            for i, v in enumerate(vals):
                for s in v:
                    if f"{k}.{s}" in grid:
                        raise ScenarioError(
                            f'{origin}: [[grid.{k}]] variant {i} sets {s} = {v[s]!r} and '
                            f'grid."{k}.{s}" sweeps it too; set {k}.{s} in one place only')


def ordered_overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """The grid point's overrides, whole tables first (so deeper keys land inside them), each
    value a deep copy (runs never share a grid value's objects)."""
    keys = sorted(params, key=lambda k: not _is_table(params[k]))
    return {k: copy.deepcopy(params[k]) for k in keys}


def effective_params(grid: Mapping[str, list[Any]]) -> list[str]:
    """Index columns of a grid: a key with table variants becomes one column per key of
    its variants (first-seen order), others stay as they are."""
    out: list[str] = []
    for k, vals in grid.items():
        if vals and all(_is_table(v) for v in vals):
            sub = dict.fromkeys(s for v in vals for s in v)
            out += [f"{k}.{s}" for s in sub if f"{k}.{s}" not in grid]
        else:
            out.append(k)
    return out


def expand_params(params: Mapping[str, Any], grid_keys: Iterable[str] | None = None
                  ) -> dict[str, Any]:
    """One grid point's parameters by index column: table values spread over their keys
    (`UNSET` for keys of other variants listed in `grid_keys`)."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if _is_table(v):
            for s, x in v.items():
                out.setdefault(f"{k}.{s}", x)
        else:
            out[k] = v
    # A deeper grid key overrides a table's value in the run (ordered_overrides), so it does
    # in the label too (the columns keep the grid's order).
    out.update((k, v) for k, v in params.items() if not _is_table(v))
    for c in grid_keys or ():
        out.setdefault(c, UNSET)
    return out


def fix_columns(df: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """Parquet wants one type per column: a column mixing types (limit 100 and "2bdp", or a
    value and `UNSET`) holds strings."""
    for c in columns:
        if c in df and df[c].map(type).nunique() > 1:
            df[c] = df[c].map(lambda v: v if isinstance(v, str) else str(v))
    return df


def merged_index(dirs: list[Path]) -> tuple[pd.DataFrame, list[str]]:
    """The indexes of several sweep directories as one, with a `source` column (the
    directory) first among the grouping columns; the union of their parameters."""
    from l4slab.sweeps import load_sweep

    frames, params = [], []
    for d in dirs:
        data = load_sweep(d)
        df = data.index.copy()
        df.insert(0, "source", str(d))
        frames.append(df)
        params += [p for p in data.params if p not in params]
    df = pd.concat(frames, ignore_index=True, sort=False)
    for p in params:
        if p in df:
            df[p] = df[p].astype(object).where(df[p].notna(), UNSET)
    return fix_columns(df, params), (["source"] if len(dirs) > 1 else []) + params


def identical_groups(index: pd.DataFrame, params: list[str]) -> list[tuple[Any, ...]]:
    """Grid points with ≥ 2 ok runs whose metrics are all equal: the runs are copies."""
    ok = index[index["status"] == "ok"] if "status" in index else index
    metrics = [m for m in SPREAD_METRICS if m in ok]
    if not metrics:
        return []
    out = []
    groups = ok.groupby(params, sort=False, dropna=False) if params else [((), ok)]
    for key, g in groups:
        if len(g) < 2:
            continue
        vals = g[metrics].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
        same = np.all((vals == vals[0]) | (np.isnan(vals) & np.isnan(vals[0])))
        if same:
            out.append(key if isinstance(key, tuple) else (key,))
    return out


def group_table(index: pd.DataFrame, params: list[str], metrics: list[tuple[str, str]]
                ) -> tuple[list[str], list[list[Any]], list[tuple[Any, ...]]]:
    """(header, rows, identical groups): per grid point, the number of ok runs and each
    metric's mean ± 95% CI over them; a group whose runs are copies says so instead of ± 0."""
    from l4slab.plots import _ci95

    ok = index[index["status"] == "ok"] if "status" in index else index
    metrics = [(m, lab) for m, lab in metrics if m in ok
               and pd.to_numeric(ok[m], errors="coerce").notna().any()]
    copies = set(identical_groups(index, params))
    header = list(params) + ["runs"] + [lab for _, lab in metrics]
    rows: list[list[Any]] = []
    groups = ok.groupby(params, sort=False, dropna=False) if params else [((), ok)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        same = key in copies
        row: list[Any] = list(key) + [f"{len(g)} identical" if same else len(g)]
        for m, _ in metrics:
            # Copies are named once in the runs column; a metric that happens not to vary
            # between otherwise different runs shows its value without a zero-width interval.
            mean, half = _ci95(pd.to_numeric(g[m], errors="coerce").to_numpy(dtype=float))
            if not np.isfinite(mean):
                row.append("")
            elif len(g) < 2:
                row.append(f"{mean:.4g} (n = 1)")
            elif same or half == 0:
                row.append(f"{mean:.4g}")
            else:
                row.append(f"{mean:.4g} ± {half:.2g}")
        rows.append(row)
    return header, rows, sorted(copies, key=str)

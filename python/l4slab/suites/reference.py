"""`--reference FILE.csv`: numbers from elsewhere (a paper, a kernel testbed) beside l4slab's.

The reference CSV has a header row and the key columns of one of the suite's result tables
(e.g. ``link,traffic,step_thresh,target,link_model``) plus one or more of that table's metric
columns (e.g. ``tput_mbps``). Every table whose keys are all present and which shares at least
one metric is compared: one row per (key, metric) with l4slab's mean, its 95 % CI, the
reference value and ``difference = l4slab - reference``. Rows whose keys l4slab did not run
are listed with an empty l4slab value, so nothing in the reference is silently dropped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from l4slab.suites.types import SuiteError, Table, TableShape

__all__ = ["read_reference", "check_reference", "compare_reference"]


def read_reference(path: str | Path) -> pd.DataFrame:
    """A --reference CSV as a frame; SuiteError when it is missing, unreadable or empty."""
    p = Path(path)
    try:
        df = pd.read_csv(p)
    except FileNotFoundError:
        raise SuiteError(f"--reference {p}: no such file") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise SuiteError(f"--reference {p}: not a readable CSV ({e})") from None
    if df.empty:
        raise SuiteError(f"--reference {p}: no rows")
    return df


def _no_match(path: object, ref: pd.DataFrame, tables: list[Table] | list[TableShape]) -> str:
    options = "; ".join(f"{t.name}: keys {', '.join(t.keys)}; metrics {', '.join(t.values)}"
                        for t in tables if t.keys)
    return (f"--reference {path}: its columns ({', '.join(ref.columns)}) match no result "
            "table; a reference needs a table's key columns and at least one of its metrics: "
            f"{options}")


def check_reference(ref: pd.DataFrame, shapes: list[TableShape], path: object) -> None:
    """What can be checked before the suite runs: the CSV names the keys and at least one
    metric of a result table, every other column is a metric of such a table, metric columns
    are numbers, and no two rows share their keys. SuiteError naming the column otherwise."""
    cols = list(ref.columns)
    matched = [t for t in shapes if t.keys and set(t.keys) <= set(cols)
               and any(m in cols for m in t.values)]
    if not matched:
        raise SuiteError(_no_match(path, ref, shapes))
    known = {c for t in matched for c in (*t.keys, *t.values)}
    unknown = [c for c in cols if c not in known]
    if unknown:
        metrics = sorted({m for t in matched for m in t.values})
        raise SuiteError(f"--reference {path}: column {unknown[0]!r} is neither a key nor a "
                         f"metric of table {', '.join(t.name for t in matched)} (metrics: "
                         f"{', '.join(metrics)})")
    for t in matched:
        for m in (m for m in t.values if m in cols):
            if not pd.api.types.is_numeric_dtype(ref[m]):
                bad = ref[m][pd.to_numeric(ref[m], errors="coerce").isna() & ref[m].notna()]
                where = f" (row {int(bad.index[0]) + 2}: {bad.iloc[0]!r})" if len(bad) else ""
                raise SuiteError(f"--reference {path}: column {m} is not numeric{where}")
        keys = [k for k in t.keys]
        dup = ref.astype({k: str for k in keys}).duplicated(keys)
        if dup.any():
            first = ref.loc[dup, keys].iloc[0].to_dict()
            raise SuiteError(f"--reference {path}: two rows for the same keys {first}")


def _key_str(v: object) -> str:
    """Keys compare as text ("1ms" == "1ms", 12 == 12.0), so a CSV's number types do not
    matter."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def compare_reference(tables: list[Table], ref: pd.DataFrame, path: object) -> Table:
    """The comparison table (see the module docstring); SuiteError when no table matches."""
    cols = set(ref.columns)
    rows = []
    matched = []
    for t in tables:
        if not t.keys or not set(t.keys) <= cols:
            continue
        metrics = [m for m in t.values if m in cols]
        if not metrics:
            continue
        matched.append(t.name)
        ours = t.df.copy()
        for k in t.keys:
            ours[k] = ours[k].map(_key_str)
        theirs = ref.copy()
        for k in t.keys:
            theirs[k] = theirs[k].map(_key_str)
        bad = [m for m in metrics if not pd.api.types.is_numeric_dtype(theirs[m])]
        if bad:
            raise SuiteError(f"--reference {path}: column {bad[0]} is not numeric")
        dup = theirs.duplicated(t.keys)
        if dup.any():
            first = theirs.loc[dup, t.keys].iloc[0].to_dict()
            raise SuiteError(f"--reference {path}: two rows for the same keys {first}")
        merged = theirs[t.keys + metrics].merge(ours, on=t.keys, how="left",
                                                suffixes=("_ref", ""))
        for _, r in merged.iterrows():
            for m in metrics:
                ref_v = float(r[f"{m}_ref"])
                ours_v = float(r[m]) if pd.notna(r[m]) else float("nan")
                row = {"table": t.name, **{k: r[k] for k in t.keys}, "metric": m,
                       "l4slab": ours_v,
                       "l4slab_lo": float(r.get(f"{m}_lo", np.nan)),
                       "l4slab_hi": float(r.get(f"{m}_hi", np.nan)),
                       "reference": ref_v,
                       "difference": ours_v - ref_v,
                       "n": r.get("n", np.nan)}
                rows.append(row)
    if not rows:
        raise SuiteError(_no_match(path, ref, tables))
    df = pd.DataFrame(rows)
    keys = [c for c in df.columns if c not in ("table", "metric", "l4slab", "l4slab_lo",
                                               "l4slab_hi", "reference", "difference", "n")]
    return Table(name="reference", title="l4slab beside the reference",
                 df=df, keys=["table", *keys, "metric"], values=["l4slab", "reference",
                                                                   "difference"],
                 note=f"reference: {path}; difference = l4slab - reference; compared tables: "
                      f"{', '.join(matched)}")

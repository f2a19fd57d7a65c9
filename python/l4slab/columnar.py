"""Large run tables (per-flow samples, per-packet records) kept as numpy columns until a
DataFrame is asked for: written to Parquet through pyarrow without pandas, and aggregated per
flow or per sample time with numpy, a bounded chunk of rows at a time.

A 10 000-flow run sampled every 16 ms has 6.25 M per-flow rows (375 MB of columns). The
simulator's columns arrive here as numpy arrays that own its buffers; pyarrow wraps them
without a copy, so writing flows.parquet needs no second copy of the table and no per-row
Python object. The file is the one `DataFrame.to_parquet(index=False)` writes for the same
frame (same Arrow schema and pandas metadata, so `pd.read_parquet` gives the same dtypes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["Categorical", "ColumnTable", "CHUNK_ROWS", "chunk_slices", "distinct_times",
           "grouped_by_time", "per_flow_mean", "select_rows"]

#: Rows per chunk in aggregations: bounds the temporaries (an index array of this many
#: 8-byte entries is 2 MB) whatever the table's length.
CHUNK_ROWS = 1 << 18


@dataclass
class Categorical:
    """A categorical column: small integer codes (-1 = missing) and the category names."""

    codes: np.ndarray
    categories: list[str]

    def to_pandas(self) -> pd.Categorical:
        """The pandas Categorical of these codes and categories."""
        return pd.Categorical.from_codes(self.codes, categories=self.categories)


Column = np.ndarray | Categorical


class ColumnTable:
    """Named columns of equal length, in order; numeric columns are numpy arrays (as the
    simulator produced them), categorical ones `Categorical`."""

    def __init__(self, columns: Mapping[str, Column]):
        self.columns: dict[str, Column] = dict(columns)
        lengths = {len(c.codes) if isinstance(c, Categorical) else len(c)
                   for c in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(lengths)}")
        self._len = lengths.pop() if lengths else 0

    def __len__(self) -> int:
        return self._len

    def __contains__(self, name: object) -> bool:
        return name in self.columns

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        return list(self.columns)

    def numeric(self, name: str) -> np.ndarray:
        """A numeric column (the array itself, not a copy)."""
        c = self.columns[name]
        if isinstance(c, Categorical):
            raise TypeError(f"column {name!r} is categorical")
        return c

    def categorical(self, name: str) -> Categorical:
        """A categorical column (codes and categories, not a copy)."""
        c = self.columns[name]
        if not isinstance(c, Categorical):
            raise TypeError(f"column {name!r} is not categorical")
        return c

    def _head(self, n: int) -> ColumnTable:
        return ColumnTable({k: Categorical(c.codes[:n], c.categories)
                            if isinstance(c, Categorical) else c[:n]
                            for k, c in self.columns.items()})

    def to_pandas(self) -> pd.DataFrame:
        """The DataFrame (its own copy of the data)."""
        return pd.DataFrame({k: c.to_pandas() if isinstance(c, Categorical) else c
                             for k, c in self.columns.items()}, columns=self.names)

    def to_arrow(self) -> Any:
        """The Arrow table `pa.Table.from_pandas(self.to_pandas(), preserve_index=False)`
        would give, built from the columns without a DataFrame: numeric columns are wrapped
        without a copy (NaN becomes null, as pandas' conversion does)."""
        import pyarrow as pa

        # The pandas metadata (dtypes, categories) depends on the dtypes only: take it from
        # an empty frame of the same columns.
        schema = pa.Schema.from_pandas(self._head(0).to_pandas(), preserve_index=False)
        arrays = [pa.array(c.to_pandas() if isinstance(c, Categorical) else c,
                           type=schema.field(k).type, from_pandas=True)
                  for k, c in self.columns.items()]
        return pa.Table.from_arrays(arrays, schema=schema)

    def write_parquet(self, path: str | Path) -> None:
        """Write the table as `DataFrame.to_parquet(path, index=False)` would (pyarrow,
        snappy), with no DataFrame in between."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(self.to_arrow(), str(path), compression="snappy")
        # The writer's encode buffers (a row group's worth, ~60 MB for the flows of a
        # 10 000-flow run) go back to the OS instead of staying in Arrow's pool.
        pa.default_memory_pool().release_unused()


def chunk_slices(n: int, rows: int | None = None) -> Iterator[slice]:
    """Slices covering `range(n)` in chunks of at most `rows` (default CHUNK_ROWS)."""
    rows = rows or CHUNK_ROWS
    for start in range(0, n, rows):
        yield slice(start, min(n, start + rows))


def per_flow_mean(flow: np.ndarray, values: np.ndarray, n_ids: int) -> np.ndarray:
    """Mean of `values` per flow id (NaN ignored; NaN for an id with no finite value), as
    `groupby("flow")[col].mean()` gives, over ids 0..n_ids-1."""
    total = np.zeros(n_ids)
    count = np.zeros(n_ids)
    for s in chunk_slices(len(flow)):
        f, v = flow[s], values[s]
        ok = ~np.isnan(v)
        total += np.bincount(f[ok], weights=v[ok], minlength=n_ids)[:n_ids]
        count += np.bincount(f[ok], minlength=n_ids)[:n_ids]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def grouped_by_time(t: np.ndarray, values: np.ndarray, how: str,
                    keep: Callable[[slice], np.ndarray] | None = None,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct times, `how` of `values` at each) over the rows `keep(chunk)` selects
    (all rows if None), as `groupby("t_s")[col].agg(how)`: "sum" ignores NaN (0 where all are
    NaN), "mean" ignores NaN (NaN where all are)."""
    if how not in ("sum", "mean"):
        raise ValueError(f"how={how!r}: 'sum' or 'mean'")
    parts_t: list[np.ndarray] = []
    parts_s: list[np.ndarray] = []
    parts_n: list[np.ndarray] = []
    for s in chunk_slices(len(t)):
        tc, vc = t[s], values[s]
        if keep is not None:
            rows = keep(s)
            tc, vc = tc[rows], vc[rows]
        if not tc.size:
            continue
        u, inv = np.unique(tc, return_inverse=True)
        ok = ~np.isnan(vc)
        parts_t.append(u)
        parts_s.append(np.bincount(inv[ok], weights=vc[ok], minlength=u.size))
        parts_n.append(np.bincount(inv[ok], minlength=u.size).astype(float))
    if not parts_t:
        return np.empty(0), np.empty(0)
    u, inv = np.unique(np.concatenate(parts_t), return_inverse=True)
    total = np.bincount(inv, weights=np.concatenate(parts_s), minlength=u.size)
    if how == "sum":
        return u, total
    count = np.bincount(inv, weights=np.concatenate(parts_n), minlength=u.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return u, np.where(count > 0, total / np.maximum(count, 1), np.nan)


def distinct_times(t: np.ndarray) -> np.ndarray:
    """Sorted distinct values of `t`, a chunk at a time."""
    parts = [np.unique(t[s]) for s in chunk_slices(len(t))]
    return np.unique(np.concatenate(parts)) if parts else np.empty(0)


def select_rows(column: np.ndarray, wanted: Sequence[int] | np.ndarray) -> np.ndarray:
    """Indices of the rows whose value is in `wanted` (in row order), a chunk at a time."""
    w = np.asarray(wanted)
    parts = [np.flatnonzero(np.isin(column[s], w)) + s.start for s in chunk_slices(len(column))]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.intp)

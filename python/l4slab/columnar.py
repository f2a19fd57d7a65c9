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

__all__ = ["Categorical", "ColumnTable", "UnreadableFileError", "CHUNK_ROWS", "chunk_slices",
           "distinct_times", "grouped_by_time", "per_flow_mean", "select_rows"]

class UnreadableFileError(ValueError):
    """A result file that cannot be read (corrupt, or not what its name says); the message
    names the file."""


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
    simulator produced them), categorical ones `Categorical`. A table opened with
    `from_parquet` reads each column from the file the first time it is asked for (column
    selection: a figure of two columns reads two)."""

    def __init__(self, columns: Mapping[str, Column], *, source: Path | bytes | None = None,
                 names: Sequence[str] | None = None, n_rows: int | None = None):
        self.columns: dict[str, Column] = dict(columns)
        #: The Parquet file (path, or its bytes) the columns not yet read come from.
        self._source = source
        self._names = list(names) if names is not None else list(self.columns)
        lengths = {len(c.codes) if isinstance(c, Categorical) else len(c)
                   for c in self.columns.values()}
        if n_rows is not None:
            lengths.add(n_rows)
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(lengths)}")
        self._len = lengths.pop() if lengths else 0

    @classmethod
    def from_parquet(cls, path: str | Path | bytes) -> ColumnTable | None:
        """Open a table written by `write_parquet` (or `to_parquet(index=False)`), a file or
        its bytes, without reading it; None when a column is not one this class holds
        exactly as pandas would read it (then read the file with pandas)."""
        import pyarrow as pa

        source = path if isinstance(path, bytes) else Path(path)
        pf = _parquet_file(source)
        schema = pf.schema_arrow
        meta = schema.pandas_metadata or {}
        if meta.get("index_columns"):
            return None
        for f in schema:
            t = f.type
            if pa.types.is_dictionary(t):
                if t.ordered or not (pa.types.is_string(t.value_type)
                                     or pa.types.is_null(t.value_type)):
                    return None
            elif not (pa.types.is_floating(t) or pa.types.is_integer(t)):
                return None
        return cls({}, source=source, names=schema.names, n_rows=pf.metadata.num_rows)

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (a sweep worker's result on its way to the parent) as the Parquet file
        # itself: ~10x smaller than the raw columns for per-flow samples, encoded in the
        # worker, and written by the parent as it is.
        # An empty table goes as it is: a categorical with no category at all is written as
        # Arrow's null type, which `from_parquet` does not read back as a categorical.
        if not len(self):
            return {"columns": self._all()}
        return {"parquet": self.parquet_bytes()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "columns" in state:
            self.__dict__.update(ColumnTable(state["columns"]).__dict__)
            return
        t = ColumnTable.from_parquet(state["parquet"])
        if t is None:
            raise ValueError("pickled ColumnTable holds columns it cannot read back")
        self.__dict__.update(t.__dict__)

    def _column(self, name: str) -> Column:
        c = self.columns.get(name)
        if c is None:
            if self._source is None or name not in self._names:
                raise KeyError(name)
            c = self._read(name)
            self.columns[name] = c
        return c

    def _read(self, name: str) -> Column:
        """One column from the source file: numbers as pandas reads them (integers with
        nulls become float64 with NaN), dictionaries as codes + categories."""
        import pyarrow as pa


        assert self._source is not None
        try:
            col = _parquet_file(self._source).read(columns=[name]).column(0)
        except (pa.ArrowException, ValueError, OSError) as e:  # corrupt pages: OSError
            where = self._source if isinstance(self._source, Path) else "Parquet bytes"
            raise UnreadableFileError(f"{where}: column {name!r} cannot be read ({e})") from None
        if pa.types.is_dictionary(col.type):
            cat = col.to_pandas()
            return Categorical(cat.cat.codes.to_numpy(),
                               [str(x) for x in cat.cat.categories])
        return col.to_numpy()

    def __len__(self) -> int:
        return self._len

    def __contains__(self, name: object) -> bool:
        return name in self._names

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        return list(self._names)

    def numeric(self, name: str) -> np.ndarray:
        """A numeric column (the array itself, not a copy)."""
        c = self._column(name)
        if isinstance(c, Categorical):
            raise TypeError(f"column {name!r} is categorical")
        return c

    def categorical(self, name: str) -> Categorical:
        """A categorical column (codes and categories, not a copy)."""
        c = self._column(name)
        if not isinstance(c, Categorical):
            raise TypeError(f"column {name!r} is not categorical")
        return c

    def _all(self) -> dict[str, Column]:
        return {k: self._column(k) for k in self._names}

    def _head(self, n: int) -> ColumnTable:
        return ColumnTable({k: Categorical(c.codes[:n], c.categories)
                            if isinstance(c, Categorical) else c[:n]
                            for k, c in self._all().items()})

    def to_pandas(self) -> pd.DataFrame:
        """The DataFrame (its own copy of the data)."""
        return pd.DataFrame({k: c.to_pandas() if isinstance(c, Categorical) else c
                             for k, c in self._all().items()}, columns=self.names)

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
                  for k, c in self._all().items()]
        return pa.Table.from_arrays(arrays, schema=schema)

    def write_parquet(self, path: str | Path) -> None:
        """Write the table as `DataFrame.to_parquet(path, index=False)` would (pyarrow,
        snappy), with no DataFrame in between."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if isinstance(self._source, bytes):
            Path(path).write_bytes(self._source)  # unpickled: the file as it was encoded
            return
        pq.write_table(self.to_arrow(), str(path), compression="snappy")
        # The writer's encode buffers (a row group's worth, ~60 MB for the flows of a
        # 10 000-flow run) go back to the OS instead of staying in Arrow's pool.
        pa.default_memory_pool().release_unused()

    def parquet_bytes(self) -> bytes:
        """The bytes `write_parquet` would write."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if isinstance(self._source, bytes):
            return self._source
        sink = pa.BufferOutputStream()
        pq.write_table(self.to_arrow(), sink, compression="snappy")
        data: bytes = sink.getvalue().to_pybytes()
        pa.default_memory_pool().release_unused()
        return data


def read_parquet(path: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """`pd.read_parquet(path, columns=...)`, read by path. pandas opens a local file itself
    and hands pyarrow a Python file object; a read through a file object leaves Arrow's CPU
    thread pool in a state in which the interpreter sometimes aborts at exit ("terminate
    called without an active exception", SIGABRT, after all output was written; one exit
    in five on a 2-vCPU VM; apache/arrow#50482, #34314). Reading by path does not."""
    import pyarrow.parquet as pq

    table = pq.read_table(str(path), columns=None if columns is None else list(columns),
                          use_pandas_metadata=True)
    return table.to_pandas()


def _parquet_file(source: Path | bytes) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pq.ParquetFile(pa.BufferReader(source) if isinstance(source, bytes) else str(source))


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

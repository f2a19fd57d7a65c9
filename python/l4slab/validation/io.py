"""Inputs of the validation toolkit: l4slab run directories, imported CSV traces, Mahimahi logs.

A *run* is turned into a mapping ``metric name -> 1-D float array`` (a time series, compared by
normalised DTW). Scalar metrics are derived on request with an aggregate prefix (see
:func:`select_metrics`) and compared by |x - y|.

Run directories (``samples.parquet`` / ``flows.parquet``, columns as DESIGN.md) give:

============================  =====================================================  ==========
metric                        source                                                 unit
============================  =====================================================  ==========
``tput_total``                sum of ``flows.tput_mbps`` over flows, per ``t_s``     Mbit/s
``tput_flow<id>``             ``flows.tput_mbps`` of flow ``<id>``                   Mbit/s
``ce_flow<id>``               ``flows.ce_acked`` (cumulative) differenced            CE / sample
``backlog_<queue>``           ``samples.backlog_pkts`` of queue ``L`` / ``C`` / ...  packets
``sojourn_<queue>``           ``samples.sojourn_ms``                                 ms
``marks_<queue>``             ``samples.marks`` (already per interval)               marks
``drops_<queue>``             ``samples.drops`` (already per interval)               drops
============================  =====================================================  ==========

Imported traces (e.g. from a kernel testbed) use the **CSV layout**: one file per run, a header
row, a ``t_s`` column (seconds, strictly increasing) and one column per metric; the column name
is the metric name. A column whose name ends in ``_cum`` holds a cumulative counter (bytes
delivered, packets marked so far): it is differenced before DTW and its metric is named without
the suffix (``delivered_bytes_cum`` -> ``delivered_bytes``). Empty cells / NaN are errors. Example::

    t_s,tput_total,sojourn_L,marks_L
    0.000,0.0,0.00,0
    0.016,48.7,0.41,3

Mahimahi's own link log (``mm-link --uplink-log=...``) is converted to that layout by
:func:`mahimahi_to_frame` / :func:`mahimahi_to_csv`.
"""

from __future__ import annotations

import glob
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from l4slab.columnar import read_parquet


class ValidationInputError(ValueError):
    """Bad input for a validation: the message names the group, run and metric at fault."""


@dataclass
class Run:
    """One run: where it came from and its metrics (name -> 1-D float array)."""

    source: Path
    metrics: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The run's name: the last component of its path."""
        return self.source.name


RUN_FILES = ("samples.parquet", "flows.parquet")
AGGREGATES = ("mean", "median", "p50", "p95", "p99", "max", "min")


def is_run_dir(path: Path) -> bool:
    """True for a directory holding samples.parquet or flows.parquet."""
    return path.is_dir() and any((path / f).is_file() for f in RUN_FILES)


def is_sweep_dir(path: Path) -> bool:
    """An `l4slab sweep` output directory (runs/ with one run directory per run)."""
    return path.is_dir() and (path / "runs").is_dir() and (
        (path / "sweep.parquet").is_file() or (path / "sweep.json").is_file())


def sweep_groups(path: Path, key: str) -> dict[str, list[Path]]:
    """The finished runs of a sweep directory grouped by the value of grid key `key` (from
    each run's params.json), in the order the values first appear."""
    import json

    if not is_sweep_dir(path):
        raise ValidationInputError(f"{path}: --by needs a sweep directory (runs/ and "
                                   "sweep.parquet)")
    groups: dict[str, list[Path]] = {}
    keys: set[str] = set()
    for rd in sorted((path / "runs").iterdir()):
        if not is_run_dir(rd):
            continue
        try:
            params = json.loads((rd / "params.json").read_text())["params"]
        except (OSError, ValueError, KeyError):
            continue
        keys.update(params)
        if key in params:
            groups.setdefault(str(params[key]), []).append(rd)
    if not groups:
        raise ValidationInputError(f"{path}: no run has grid key {key!r} (swept keys: "
                                   f"{', '.join(sorted(keys)) or 'none'})")
    return groups


def scenario_warmup_s(paths: Iterable[Path]) -> float:
    """The largest warm-up among run directories' summary.json (0 for CSV traces)."""
    import json

    w = 0.0
    for p in paths:
        try:
            w = max(w, float(json.loads((Path(p) / "summary.json").read_text())["warmup_s"]))
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return w


def _series(values: Iterable[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def read_run_dir(path: Path, warmup_s: float = 0.0) -> Run:
    """Metrics of an l4slab run directory (see the module table); rows with t_s < warmup_s
    are dropped first."""
    run = Run(Path(path))
    samples_path, flows_path = path / "samples.parquet", path / "flows.parquet"
    if flows_path.is_file():
        # Only the columns the metrics use: a 10 000-flow run's flows.parquet has 6.25 M rows.
        flows = read_parquet(flows_path, columns=_present(
            flows_path, ("t_s", "flow", "tput_mbps", "ce_acked")))
        _require(flows, ("t_s", "flow", "tput_mbps"), flows_path)
        _check_warmup(flows["t_s"], warmup_s, flows_path)
        flows = flows[flows["t_s"] >= warmup_s]
        total = flows.groupby("t_s", sort=True)["tput_mbps"].sum()
        run.metrics["tput_total"] = _series(total.to_numpy())
        for fid, g in flows.sort_values("t_s").groupby("flow", sort=True):
            run.metrics[f"tput_flow{fid}"] = _series(g["tput_mbps"].to_numpy())
            if "ce_acked" in g.columns and len(g) >= 2:
                run.metrics[f"ce_flow{fid}"] = np.diff(_series(g["ce_acked"].to_numpy()))
    if samples_path.is_file():
        samples = read_parquet(samples_path)
        _require(samples, ("t_s", "queue"), samples_path)
        _check_warmup(samples["t_s"], warmup_s, samples_path)
        samples = samples[samples["t_s"] >= warmup_s]
        for q, g in samples.sort_values("t_s").groupby("queue", sort=True, observed=True):
            for col, name in (
                ("backlog_pkts", "backlog"),
                ("sojourn_ms", "sojourn"),
                ("marks", "marks"),
                ("drops", "drops"),
            ):
                if col in g.columns:
                    run.metrics[f"{name}_{q}"] = _series(g[col].to_numpy())
    if not run.metrics:
        raise ValidationInputError(f"{path}: no samples.parquet or flows.parquet with data")
    return run


def _check_warmup(t_s: Iterable[float], warmup_s: float, path: Path) -> None:
    """A warm-up that leaves no sample is named as such (not as an empty metric later)."""
    t = np.asarray(t_s, dtype=float)
    if t.size and warmup_s > 0 and not (t >= warmup_s).any():
        raise ValidationInputError(
            f"{path}: the warm-up of {warmup_s:g} s leaves no sample (the last is at "
            f"t = {t.max():g} s); choose a smaller --warmup")


def _present(path: Path, cols: Sequence[str]) -> list[str]:
    """The columns of `cols` that the Parquet file at `path` has (read from its footer)."""
    import pyarrow.parquet as pq

    names = set(pq.ParquetFile(path).schema_arrow.names)
    return [c for c in cols if c in names]


def _require(df: pd.DataFrame, cols: Sequence[str], where: Path) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValidationInputError(f"{where}: missing column(s) {', '.join(missing)}")


def read_csv_run(path: Path, warmup_s: float = 0.0) -> Run:
    """Metrics of a CSV trace in the documented layout (module docstring)."""
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ValidationInputError(f"{path}: not a readable CSV ({e})") from None
    if "t_s" not in df.columns:
        raise ValidationInputError(f"{path}: no t_s column (CSV layout: t_s + metric columns)")
    # Line numbers in messages count the header as line 1, as an editor shows them.
    columns: dict[str, np.ndarray] = {}
    for col in df.columns:
        try:
            values = _series(pd.to_numeric(df[col], errors="raise").to_numpy())
        except (ValueError, TypeError):
            raise ValidationInputError(f"{path}: column {col} is not numeric") from None
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValidationInputError(
                f"{path}: line {i + 2}: column {col} has non-finite value {values[i]}; every "
                "value must be a finite number"
            )
        columns[col] = values
    t = columns["t_s"]
    steps = np.diff(t)
    if (steps <= 0).any():
        i = int(np.flatnonzero(steps <= 0)[0]) + 1
        what = "repeats" if steps[i - 1] == 0 else "decreases"
        raise ValidationInputError(
            f"{path}: line {i + 2}: t_s {what} ({t[i - 1]:g} then {t[i]:g}); t_s must strictly "
            "increase (one row per sampling instant)"
        )
    _check_warmup(t, warmup_s, path)
    keep = t >= warmup_s
    run = Run(Path(path))
    for col in df.columns:
        if col == "t_s":
            continue
        values = columns[col][keep]
        if col.endswith("_cum"):
            run.metrics[col[: -len("_cum")]] = np.diff(values)
        else:
            run.metrics[col] = values
    if not run.metrics:
        raise ValidationInputError(f"{path}: no metric columns besides t_s")
    return run


def read_run(path: Path, warmup_s: float = 0.0) -> Run:
    """Read one run (a run directory or a CSV trace), dropping the first ``warmup_s`` seconds."""
    path = Path(path)
    if is_run_dir(path):
        return read_run_dir(path, warmup_s)
    if path.is_file() and path.suffix.lower() == ".csv":
        return read_csv_run(path, warmup_s)
    raise ValidationInputError(
        f"{path}: neither a run directory (samples.parquet / flows.parquet) nor a .csv trace"
    )


def resolve_group(spec: str | Path) -> list[Path]:
    """Paths of the runs of a group. ``spec`` is a glob (``results/dualpi2-*``), a directory of
    run directories and/or CSV files (one level), a single run directory, or a single CSV file.
    Sorted by path for a stable order."""
    s = str(spec)
    if any(ch in s for ch in "*?["):
        paths = [Path(p) for p in sorted(glob.glob(s))]
        return [p for p in paths if is_run_dir(p) or (p.is_file() and p.suffix.lower() == ".csv")]
    p = Path(s)
    if not p.exists():
        raise ValidationInputError(f"{p}: no such file or directory")
    if is_run_dir(p) or p.is_file():
        return [p]
    if is_sweep_dir(p):  # a sweep directory: all its finished runs
        return sorted(c for c in (p / "runs").iterdir() if is_run_dir(c))
    return sorted(
        c for c in p.iterdir() if is_run_dir(c) or (c.is_file() and c.suffix.lower() == ".csv")
    )


def load_group(name: str, spec: str | Path | list[Path], warmup_s: float = 0.0,
               given: str | None = None) -> list[Run]:
    """Read the runs of group ``name``: a spec as ``resolve_group`` takes, or a list of run
    paths (then ``given``, the path the user gave, names the group in errors); none is an
    error."""
    paths = list(spec) if isinstance(spec, list) else resolve_group(spec)
    if not paths:
        raise ValidationInputError(
            f"group {name} ({given if given is not None else spec}): empty group, no run "
            "directories or CSV files found"
        )
    return [read_run(p, warmup_s) for p in paths]


_AGG = re.compile(r"^(mean|median|p50|p95|p99|max|min):(.+)$")


def _aggregate(kind: str, x: np.ndarray) -> float:
    if kind == "mean":
        return float(np.mean(x))
    if kind in ("median", "p50"):
        return float(np.percentile(x, 50))
    if kind in ("p95", "p99"):
        return float(np.percentile(x, float(kind[1:])))
    return float(np.max(x) if kind == "max" else np.min(x))


def metric_values(run: Run, metric: str, group: str) -> tuple[np.ndarray, bool]:
    """(values, is_scalar) of one metric of one run. ``agg:name`` (agg in mean, median, p50,
    p95, p99, max, min) turns series ``name`` into one value compared by |x - y|."""
    m = _AGG.match(metric)
    base = m.group(2) if m else metric
    if base not in run.metrics:
        have = ", ".join(sorted(run.metrics)) or "none"
        raise ValidationInputError(
            f"group {group} run {run.source}: no metric {base!r} (it has: {have}); "
            "choose metrics present in every run with --metrics"
        )
    x = run.metrics[base]
    if x.size == 0:
        raise ValidationInputError(f"group {group} run {run.source}: metric {base!r} is empty")
    bad = ~np.isfinite(x)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationInputError(
            f"group {group} run {run.source}: metric {base!r} has non-finite value {x[i]} at "
            f"sample {i}"
        )
    if m:
        return np.array([_aggregate(m.group(1), x)]), True
    return x, False


def common_metrics(groups: dict[str, list[Run]]) -> list[str]:
    """The metric set every run shares; a mismatch is an error naming the first odd run."""
    runs = [(g, r) for g, rs in groups.items() for r in rs]
    g0, r0 = runs[0]
    ref = set(r0.metrics)
    for g, r in runs[1:]:
        if set(r.metrics) != ref:
            only_ref = sorted(ref - set(r.metrics))
            only_r = sorted(set(r.metrics) - ref)
            raise ValidationInputError(
                f"mismatched metrics: group {g} run {r.source} differs from group {g0} run "
                f"{r0.source} (missing: {', '.join(only_ref) or '-'}; extra: "
                f"{', '.join(only_r) or '-'}); choose common metrics with --metrics"
            )
    return sorted(ref)


# --------------------------------------------------------------------------------------------
# Mahimahi link logs
# --------------------------------------------------------------------------------------------

MM_MTU_BYTES = 1504  # one delivery opportunity (DESIGN.md "Link models")
#: Largest IPv4/IPv6 (non-jumbo) packet: a size above it in a log is corrupt, not a packet.
MM_MAX_PACKET_BYTES = 65535
#: Bins per converted log (memory sanity: 6 float columns per bin).
MM_MAX_BINS = 10_000_000


def _check_mm_event(path: Path, lineno: int, line: str,
                    ev: tuple[float, str, float, float], prev_t: float) -> None:
    """Finite, ordered, plausible: mm-link writes integer ms in time order and one packet
    (<= 64 KiB) per +, -, # line; a drop line holds a packet count and their bytes."""
    t, kind, a, b = ev
    where = f"{path}:{lineno}: {line!r}"
    if not all(math.isfinite(x) for x in (t, a, b)):
        raise ValidationInputError(f"{where}: non-finite number; every field must be finite")
    if t < 0:
        raise ValidationInputError(f"{where}: negative timestamp")
    if t < prev_t:
        raise ValidationInputError(
            f"{where}: timestamp {t:g} ms is before the previous line's {prev_t:g} ms; "
            "Mahimahi logs are in time order"
        )
    if kind in ("+", "-", "#") and not 0 < a <= MM_MAX_PACKET_BYTES:
        raise ValidationInputError(
            f"{where}: packet size {a:g} bytes is out of range; expected 1..{MM_MAX_PACKET_BYTES}"
        )
    if kind == "-" and b < 0:
        raise ValidationInputError(f"{where}: negative queueing delay {b:g} ms")
    if kind == "d" and not (0 <= a and 0 <= b <= max(a, 1) * MM_MAX_PACKET_BYTES):
        raise ValidationInputError(
            f"{where}: {a:g} packets / {b:g} bytes dropped is out of range; expected "
            f"0..{MM_MAX_PACKET_BYTES} bytes per packet"
        )


def mahimahi_to_frame(log_path: str | Path, interval_ms: float = 100.0) -> pd.DataFrame:
    """Convert a Mahimahi link log to the CSV layout, one row per ``interval_ms`` bin.

    Log lines (times in integer ms): ``# base timestamp: T0`` (header; other ``#`` headers are
    ignored), ``t + size`` arrival, ``t - size delay`` departure after ``delay`` ms in the
    queue, ``t # size`` delivery opportunity, ``t d npkts size`` drop. Times are taken relative
    to the base timestamp (the first event's time when the header is absent).

    Columns: ``t_s`` (bin start), ``tput_mbps`` (departed bytes), ``capacity_mbps``
    (opportunity bytes), ``arrival_mbps``, ``qdelay_ms`` (mean queueing delay of the packets
    departing in the bin; a bin without departures repeats the previous bin's value, 0 before
    the first departure), ``drops`` (packets dropped in the bin).
    """
    if not (interval_ms > 0 and math.isfinite(interval_ms)):
        raise ValidationInputError(f"interval_ms = {interval_ms}: must be a finite number > 0")
    base: float | None = None
    events: list[tuple[float, str, float, float]] = []
    path = Path(log_path)
    prev_t = -math.inf
    try:
        f = path.open(encoding="utf-8")
    except OSError as e:
        raise ValidationInputError(f"{path}: cannot read: {e.strerror}") from None
    with f:
        try:
            lines = list(enumerate(f, 1))
        except UnicodeDecodeError:
            raise ValidationInputError(
                f"{path}: not a text file; expected a Mahimahi link log (mm-link --uplink-log)"
            ) from None
    for lineno, line in lines:
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            m = re.match(r"#\s*base timestamp:\s*(-?\d+)", line)
            if m:
                base = float(m.group(1))
            continue
        parts = line.split()
        try:
            t, kind = float(parts[0]), parts[1]
            if kind in ("+", "#"):
                ev = (t, kind, float(parts[2]), 0.0)
            elif kind in ("-", "d"):
                ev = (t, kind, float(parts[2]), float(parts[3]))
            else:
                raise ValueError(kind)
        except (IndexError, ValueError):
            raise ValidationInputError(
                f"{path}:{lineno}: not a Mahimahi log line: {line!r}"
            ) from None
        _check_mm_event(path, lineno, line, ev, prev_t)
        prev_t = t
        events.append(ev)
    if not events:
        raise ValidationInputError(f"{path}: no events in the Mahimahi log")
    t0 = base if base is not None else events[0][0]
    last = max(e[0] for e in events) - t0
    nbins = max(1, int(math.floor(last / interval_ms)) + 1)
    if nbins > MM_MAX_BINS:
        raise ValidationInputError(
            f"interval_ms = {interval_ms:g}: gives {nbins} bins over the log's span of "
            f"{last:g} ms; at most {MM_MAX_BINS}, i.e. interval_ms ≥ {last / MM_MAX_BINS:.3g}"
        )
    dep_bytes = np.zeros(nbins)
    opp_bytes = np.zeros(nbins)
    arr_bytes = np.zeros(nbins)
    delay_sum = np.zeros(nbins)
    delay_n = np.zeros(nbins)
    drops = np.zeros(nbins)
    for t, kind, a, b in events:
        k = int((t - t0) // interval_ms)
        if k < 0:
            raise ValidationInputError(f"{path}: event at {t} ms precedes the base timestamp {t0}")
        if kind == "+":
            arr_bytes[k] += a
        elif kind == "#":
            opp_bytes[k] += a
        elif kind == "-":
            dep_bytes[k] += a
            delay_sum[k] += b
            delay_n[k] += 1
        else:
            drops[k] += a
    to_mbps = 8.0 / (interval_ms * 1e3)  # bytes per bin -> Mbit/s
    qdelay = np.zeros(nbins)
    prev = 0.0
    for k in range(nbins):
        if delay_n[k] > 0:
            prev = delay_sum[k] / delay_n[k]
        qdelay[k] = prev
    return pd.DataFrame(
        {
            "t_s": np.arange(nbins) * interval_ms / 1e3,
            "tput_mbps": dep_bytes * to_mbps,
            "capacity_mbps": opp_bytes * to_mbps,
            "arrival_mbps": arr_bytes * to_mbps,
            "qdelay_ms": qdelay,
            "drops": drops,
        }
    )


def mahimahi_to_csv(log_path: str | Path, csv_path: str | Path, interval_ms: float = 100.0) -> Path:
    """Write :func:`mahimahi_to_frame` of ``log_path`` to ``csv_path``; returns the path."""
    out = Path(csv_path)
    frame = mahimahi_to_frame(log_path, interval_ms)
    with out.open("w", newline="") as f:  # an OSError here names the file
        frame.to_csv(f, index=False)
    return out

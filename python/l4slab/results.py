"""Run results in Python: DataFrames built from the simulator's columns, the run directory
(samples.parquet, flows.parquet, packets.parquet, summary.json, scenario.toml, figures) and
`load(dir)` to read one back.

Column names follow DESIGN.md. `queue` is a categorical of the simulator's queue names;
`flows.parquet` carries `cc` and `class` per row so a table can be filtered without the summary.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from pyarrow import ArrowException

from l4slab.columnar import (
    Categorical,
    Column,
    ColumnTable,
    UnreadableFileError,
    read_parquet,
)
from l4slab.interactive import APP_TABLES, app_tables, load_app_tables, write_app_tables
from l4slab.scenario import dumps_toml

T = TypeVar("T")

__all__ = ["UnreadableFileError", "RunData", "from_core", "load", "load_run", "write_run_dir",
           "VERDICTS", "OutputDirError", "prepare_run_dir"]

SAMPLE_COLUMNS = ["t_s", "queue", "backlog_pkts", "backlog_bytes", "sojourn_ms", "marks",
                  "drops", "p_prime", "p_c", "p_cl"]
FLOW_COLUMNS = ["t_s", "flow", "cc", "class", "delivered_bytes", "tput_mbps", "cwnd_pkts",
                "srtt_ms", "pacing_mbps", "ce_acked", "target_mbps", "acked_mbps"]
PACKET_COLUMNS = ["t_s", "flow", "queue", "sojourn_ms", "verdict"]
#: Codes of `PacketColumns::verdict` in l4s-sim (0 pass, 1 CE-marked, 2 dropped).
VERDICTS = ["pass", "mark", "drop"]


class RunData:
    """One run: `.samples`, `.flows`, `.packets` (or None) DataFrames, `.summary` dict and the
    effective `.scenario` dict; `.path` is the run directory when it was written or loaded.

    Fresh from the simulator, the per-flow and per-packet tables stay numpy columns
    (`.flow_columns`, `.packet_columns`, see `l4slab.columnar`): the run directory is written
    and the figures are drawn from them, and the `.flows` / `.packets` DataFrame is built the
    first time it is read (from then on it is the table: edits to it are what gets written)."""

    def __init__(self, samples: pd.DataFrame, flows: pd.DataFrame | ColumnTable,
                 summary: dict[str, Any], scenario: dict[str, Any] | None = None,
                 packets: pd.DataFrame | ColumnTable | None = None, path: Path | None = None,
                 events: int | None = None):
        self.samples = samples
        self.summary = summary
        self.scenario = scenario if scenario is not None else {}
        self.path = path
        self.events = events
        #: The pcapng capture (bytes) when the run was asked for one (`run --pcap`).
        self.pcapng: bytes | None = None
        self.flows = flows  # type: ignore[assignment]
        self.packets = packets  # type: ignore[assignment]
        #: frames / fct / probes tables of interactive traffic (`l4slab.interactive`).
        self.app: dict[str, pd.DataFrame] = {}

    @property
    def flows(self) -> pd.DataFrame:
        """Per-flow samples (flows.parquet's rows) as a DataFrame, built on first access."""
        if self._flows is None:
            assert self.flow_columns is not None
            self._flows = self.flow_columns.to_pandas()
            self.flow_columns = None
        return self._flows

    @flows.setter
    def flows(self, value: pd.DataFrame | ColumnTable) -> None:
        self._flows: pd.DataFrame | None = None if isinstance(value, ColumnTable) else value
        self.flow_columns: ColumnTable | None = value if isinstance(value, ColumnTable) else None

    @property
    def packets(self) -> pd.DataFrame | None:
        """Per-packet records as a DataFrame (None unless recorded), built on first access."""
        if self._packets is None and self.packet_columns is not None:
            self._packets = self.packet_columns.to_pandas()
            self.packet_columns = None
        return self._packets

    @packets.setter
    def packets(self, value: pd.DataFrame | ColumnTable | None) -> None:
        self._packets: pd.DataFrame | None = None if isinstance(value, ColumnTable) else value
        self.packet_columns: ColumnTable | None = (value if isinstance(value, ColumnTable)
                                                   else None)

    def flow_rows(self) -> int:
        """Rows of the per-flow table, without building its DataFrame."""
        return len(self.flow_columns) if self.flow_columns is not None else len(self.flows)

    def has_packets(self) -> bool:
        """Whether per-packet records exist (without building their DataFrame)."""
        return self.packet_columns is not None or self._packets is not None

    def packet_rows(self) -> int:
        """Rows of the per-packet table (0 when not recorded), without building a DataFrame."""
        if self.packet_columns is not None:
            return len(self.packet_columns)
        return 0 if self._packets is None else len(self._packets)

    def __repr__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return (f"RunData({len(self.samples)} samples, {self.flow_rows()} flow rows, "
                f"{self.packet_rows() if self.has_packets() else 'no'} packets{where})")


def _array(col: Any) -> np.ndarray:
    """A column from `_core` (a numpy array owning the simulator's buffer), or a
    `(dtype, bytes)` pair (the emulator's JSON columns) viewed as a read-only array."""
    if isinstance(col, np.ndarray):
        return col
    dtype, raw = col
    return np.frombuffer(raw, dtype=np.dtype(dtype))


def _check_codes(codes: np.ndarray, names: list[str], what: str) -> None:
    if codes.size and int(codes.max()) >= len(names):
        raise ValueError(f"{what} code {int(codes.max())} has no name in {names}")


def _codes(codes: np.ndarray, names: list[str], what: str) -> pd.Categorical:
    _check_codes(codes, names, what)
    return pd.Categorical.from_codes(codes.astype(np.int16), categories=names)


def _category_codes(codes: np.ndarray, names: list[str], what: str) -> Categorical:
    """Simulator codes into `names` → a Categorical column with pandas' code width."""
    _check_codes(codes, names, what)
    return Categorical(codes.astype(_code_dtype(len(names))), list(names))


def _code_dtype(n: int) -> np.dtype:
    """The integer width pandas gives the codes of `n` categories."""
    return pd.Categorical.from_codes([], categories=[str(i) for i in range(n)]).codes.dtype


def _per_flow_category(ids: np.ndarray, per_flow: list[str], categories: list[str] | None,
                       ) -> Categorical:
    """A per-row categorical from a per-flow name: categories are `categories`, or (as
    `pd.Categorical(values)` gives) the sorted names of the flows present in `ids`."""
    present = np.zeros(len(per_flow), dtype=bool)
    present[ids] = True
    if categories is None:
        categories = sorted({per_flow[i] for i in np.flatnonzero(present)})
    index = {c: i for i, c in enumerate(categories)}
    dt = _code_dtype(len(categories))
    of_flow = np.asarray([index.get(c, -1) for c in per_flow], dtype=dt)
    return Categorical(of_flow[ids] if ids.size else np.empty(0, dtype=dt), categories)


def _hop_column(codes: np.ndarray, queue_names: list[str]) -> pd.Categorical | None:
    """A [[links]] chain names its queues "hop/queue": the hop of each sample row as a column
    of its own (hops in chain order); None for one link, whose queue names have no "/"."""
    if not queue_names or not all("/" in n for n in queue_names):
        return None
    of_queue = [n.split("/", 1)[0] for n in queue_names]
    hops = list(dict.fromkeys(of_queue))
    index = np.asarray([hops.index(h) for h in of_queue], dtype=np.int16)
    return pd.Categorical.from_codes(index[codes.astype(np.intp)], categories=hops)


def from_core(raw: dict[str, Any], scenario: dict[str, Any] | None = None) -> RunData:
    """Build a RunData from the dict `_core.run_scenario` returns. The per-flow and
    per-packet columns are kept as they came (no copy); see `RunData`."""
    queue_names = list(raw["queue_names"])
    flow_cc = list(raw["flow_cc"])
    flow_class = list(raw["flow_class"])

    s = {k: _array(v) for k, v in raw["samples"].items()}
    samples = pd.DataFrame({k: s[k] for k in SAMPLE_COLUMNS if k != "queue"})
    samples.insert(1, "queue", _codes(s["queue"], queue_names, "queue"))
    hop = _hop_column(s["queue"], queue_names)
    if hop is not None:
        samples.insert(2, "hop", hop)

    f = {k: _array(v) for k, v in raw["flows"].items()}
    ids = f["flow"]
    if ids.size and int(ids.max()) >= len(flow_cc):
        raise ValueError(f"flow id {int(ids.max())} has no cc name ({len(flow_cc)} flows)")
    fc: dict[str, Column] = {}
    for k in FLOW_COLUMNS:
        if k == "cc":
            fc[k] = _per_flow_category(ids, flow_cc, None)
        elif k == "class":
            fc[k] = _per_flow_category(ids, flow_class, ["L4S", "Classic"])
        elif k in f:
            fc[k] = f[k]
    flows = ColumnTable(fc)

    packets = None
    if raw.get("packets") is not None:
        p = {k: _array(v) for k, v in raw["packets"].items()}
        packets = ColumnTable({
            "t_s": p["t_s"], "flow": p["flow"],
            "queue": _category_codes(p["queue"], queue_names, "queue"),
            "sojourn_ms": p["sojourn_ms"],
            "verdict": _category_codes(p["verdict"], VERDICTS, "verdict")})

    summary = json.loads(raw["summary_json"])
    run = RunData(samples=samples, flows=flows, summary=summary, scenario=scenario or {},
                  packets=packets, events=raw.get("events"))
    run.app = app_tables(raw)
    return run


def _atomic_write(path: Path, text: str) -> None:
    """Write then rename, so a reader (or a resumed sweep) never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class OutputDirError(ValueError):
    """An output directory that must not be written: it holds another run, or is in use."""


#: Files a run directory holds (besides figures, *.png / *.svg named after `plots`).
RUN_DIR_FILES = ("summary.json", "samples.parquet", "flows.parquet", "packets.parquet",
                 "scenario.toml", "report.html", "error.txt", "params.json",
                 *(f"{n}.parquet" for n in APP_TABLES))


def _figure_names() -> set[str]:
    from l4slab.interactive import APP_FIGURES
    from l4slab.plots import FORMATS, RUN_FIGURES

    return {f"{n}.{ext}" for n in (*RUN_FIGURES, *APP_FIGURES) for ext in FORMATS}


def _same_run(out: Path, scenario: dict[str, Any]) -> bool:
    """The directory's scenario.toml is this scenario (the simulator is deterministic, so
    rerunning it gives the same files)."""
    import tomllib

    try:
        have = tomllib.loads((out / "scenario.toml").read_text())
        want = tomllib.loads(dumps_toml(scenario))
    except (OSError, ValueError):
        return False
    return bool(have == want)


def clear_run_files(out: Path) -> None:
    """Remove the files of an earlier run (and only those: a user's other files stay)."""
    for name in (*RUN_DIR_FILES, *_figure_names()):
        (out / name).unlink(missing_ok=True)


def prepare_run_dir(out_dir: str | Path, scenario: dict[str, Any], force: bool = False) -> Path:
    """Make `out_dir` ready for a run of `scenario`, before it is simulated: a missing or
    empty directory is fine; one holding the same scenario (a rerun) or, with `force`, any
    run has its old run files removed (so no stale figure survives `--no-figures`);
    anything else raises OutputDirError naming the directory."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"{out}: exists and is not a directory")
    if not out.exists() or not any(out.iterdir()):
        return out
    if force or _same_run(out, scenario):
        clear_run_files(out)
        return out
    what = ("another run (its scenario.toml differs)" if (out / "scenario.toml").exists()
            else "other files")
    raise OutputDirError(f"{out}: not empty, it holds {what}; choose another output "
                         "directory, or pass --force (Python: force=True) to replace its run files")


def write_run_dir(run: RunData, out_dir: str | Path, figures: bool = True,
                  report: bool = True, figure_files: dict[str, bytes] | None = None) -> Path:
    """Write a run directory. The data (parquet tables, scenario.toml, then summary.json,
    atomically) come first, so a run interrupted while its figures are drawn is still a
    complete result (`l4slab plot DIR` redraws them); summary.json marks a finished run, which
    is what sweep resume relies on. `figure_files` are figures already rendered elsewhere (a
    sweep worker), written as they are instead of drawing them here."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").unlink(missing_ok=True)
    run.samples.to_parquet(out / "samples.parquet", index=False)
    # Columns straight to Parquet (no DataFrame) unless the DataFrame has been built.
    if run.flow_columns is not None:
        run.flow_columns.write_parquet(out / "flows.parquet")
    else:
        run.flows.to_parquet(out / "flows.parquet", index=False)
    if run.packet_columns is not None:
        run.packet_columns.write_parquet(out / "packets.parquet")
    elif run.packets is not None:
        run.packets.to_parquet(out / "packets.parquet", index=False)
    else:
        (out / "packets.parquet").unlink(missing_ok=True)
    write_app_tables(run.app, out)
    _atomic_write(out / "scenario.toml",
                  dumps_toml(run.scenario, header="effective scenario of this run "
                             "(file + overrides), written by l4slab"))
    _atomic_write(out / "summary.json", json.dumps(run.summary, indent=2) + "\n")
    run.path = out
    if figure_files is not None:
        for name, data in figure_files.items():
            (out / name).write_bytes(data)
    elif figures:
        from l4slab.plots import plot_run

        plot_run(run, out)
    if report:
        from l4slab.report import run_report

        run_report(run, out, embed_figures=figures or figure_files is not None)
    return out


def _readable(path: Path, read: Callable[[Path], T]) -> T:
    """`read(path)`, with a corrupt file (bad JSON/TOML, not Parquet) reported as one
    UnreadableFileError naming it; a missing file stays an OSError."""
    try:
        return read(path)
    except UnreadableFileError:
        raise
    except (ValueError, ArrowException) as e:  # JSON, TOML and Arrow errors are ValueErrors
        raise UnreadableFileError(f"{path}: cannot be read ({e})") from None


def _open_table(path: Path) -> ColumnTable | pd.DataFrame:
    """A large table opened column by column (read when a column is first used), or, when
    it holds columns `ColumnTable` does not, the DataFrame."""
    return ColumnTable.from_parquet(path) or read_parquet(path)


def load_run(run_dir: str | Path) -> RunData:
    """Read a run directory written by `write_run_dir` (or by the emulator). flows.parquet
    and packets.parquet are opened, not read: figures read the columns they draw, and
    `.flows` / `.packets` read the whole table when first used."""
    import tomllib

    d = Path(run_dir)
    summary_path = d / "summary.json"
    if not summary_path.exists():
        raise FileNotFoundError(f"{d} is not a finished run directory (no summary.json)")
    summary = _readable(summary_path, lambda p: json.loads(p.read_text()))
    samples = _readable(d / "samples.parquet", read_parquet)
    flows = _readable(d / "flows.parquet", _open_table)
    packets = (_readable(d / "packets.parquet", _open_table)
               if (d / "packets.parquet").exists() else None)
    scenario: dict[str, Any] = {}
    if (d / "scenario.toml").exists():
        scenario = _readable(d / "scenario.toml", lambda p: tomllib.loads(p.read_text()))
    run = RunData(samples=samples, flows=flows, summary=summary, scenario=scenario,
                  packets=packets, path=d)
    run.app = load_app_tables(d)
    return run


def load(path: str | Path) -> Any:
    """A run directory → RunData; a sweep directory (sweep.parquet) → SweepData."""
    p = Path(path)
    if (p / "sweep.parquet").exists():
        from l4slab.sweeps import load_sweep

        return load_sweep(p)
    return load_run(p)

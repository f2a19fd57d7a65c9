"""Run results in Python: DataFrames built from the simulator's columns, the run directory
(samples.parquet, flows.parquet, packets.parquet, summary.json, scenario.toml, figures) and
`load(dir)` to read one back.

Column names follow DESIGN.md. `queue` is a categorical of the simulator's queue names;
`flows.parquet` carries `cc` and `class` per row so a table can be filtered without the summary.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from l4slab.scenario import dumps_toml

__all__ = ["RunData", "from_core", "load", "load_run", "write_run_dir", "VERDICTS",
           "OutputDirError", "prepare_run_dir"]

SAMPLE_COLUMNS = ["t_s", "queue", "backlog_pkts", "backlog_bytes", "sojourn_ms", "marks",
                  "drops", "p_prime", "p_c", "p_cl"]
FLOW_COLUMNS = ["t_s", "flow", "cc", "class", "delivered_bytes", "tput_mbps", "cwnd_pkts",
                "srtt_ms", "pacing_mbps", "ce_acked"]
PACKET_COLUMNS = ["t_s", "flow", "queue", "sojourn_ms", "verdict"]
#: Codes of `PacketColumns::verdict` in l4s-sim (0 pass, 1 CE-marked, 2 dropped).
VERDICTS = ["pass", "mark", "drop"]


@dataclass
class RunData:
    """One run: `.samples`, `.flows`, `.packets` (or None) DataFrames, `.summary` dict and the
    effective `.scenario` dict; `.path` is the run directory when it was written or loaded."""

    samples: pd.DataFrame
    flows: pd.DataFrame
    summary: dict[str, Any]
    scenario: dict[str, Any] = field(default_factory=dict)
    packets: pd.DataFrame | None = None
    path: Path | None = None
    events: int | None = None

    def __repr__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return (f"RunData({len(self.samples)} samples, {len(self.flows)} flow rows, "
                f"{'no' if self.packets is None else len(self.packets)} packets{where})")


def _array(col: Any) -> np.ndarray:
    """`(dtype, bytes)` from `_core` → a read-only numpy view of the bytes (no copy)."""
    dtype, raw = col
    return np.frombuffer(raw, dtype=np.dtype(dtype))


def _codes(codes: np.ndarray, names: list[str], what: str) -> pd.Categorical:
    if codes.size and int(codes.max()) >= len(names):
        raise ValueError(f"{what} code {int(codes.max())} has no name in {names}")
    return pd.Categorical.from_codes(codes.astype(np.int16), categories=names)


def from_core(raw: dict[str, Any], scenario: dict[str, Any] | None = None) -> RunData:
    """Build a RunData from the dict `_core.run_scenario` returns."""
    queue_names = list(raw["queue_names"])
    flow_cc = list(raw["flow_cc"])
    flow_class = list(raw["flow_class"])

    s = {k: _array(v) for k, v in raw["samples"].items()}
    samples = pd.DataFrame({k: s[k] for k in SAMPLE_COLUMNS if k != "queue"})
    samples.insert(1, "queue", _codes(s["queue"], queue_names, "queue"))

    f = {k: _array(v) for k, v in raw["flows"].items()}
    flow_ids = f["flow"]
    flows = pd.DataFrame({k: f[k] for k in FLOW_COLUMNS if k in f})
    ids = flow_ids.astype(np.int64)
    if ids.size and int(ids.max()) >= len(flow_cc):
        raise ValueError(f"flow id {int(ids.max())} has no cc name ({len(flow_cc)} flows)")
    flows.insert(2, "cc", pd.Categorical(np.asarray(flow_cc, dtype=object)[ids]
                                         if ids.size else []))
    flows.insert(3, "class", pd.Categorical(np.asarray(flow_class, dtype=object)[ids]
                                            if ids.size else [],
                                            categories=["L4S", "Classic"]))

    packets = None
    if raw.get("packets") is not None:
        p = {k: _array(v) for k, v in raw["packets"].items()}
        packets = pd.DataFrame({"t_s": p["t_s"], "flow": p["flow"]})
        packets["queue"] = _codes(p["queue"], queue_names, "queue")
        packets["sojourn_ms"] = p["sojourn_ms"]
        packets["verdict"] = _codes(p["verdict"], VERDICTS, "verdict")

    summary = json.loads(raw["summary_json"])
    return RunData(samples=samples, flows=flows, summary=summary, scenario=scenario or {},
                   packets=packets, events=raw.get("events"))


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
                 "scenario.toml", "report.html", "error.txt", "params.json")


def _figure_names() -> set[str]:
    from l4slab.plots import FORMATS, RUN_FIGURES

    return {f"{n}.{ext}" for n in RUN_FIGURES for ext in FORMATS}


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
                         "directory, or pass --force (force=True) to replace its run files")


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
    run.flows.to_parquet(out / "flows.parquet", index=False)
    if run.packets is not None:
        run.packets.to_parquet(out / "packets.parquet", index=False)
    else:
        (out / "packets.parquet").unlink(missing_ok=True)
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


def load_run(run_dir: str | Path) -> RunData:
    """Read a run directory written by `write_run_dir` (or by the emulator)."""
    import tomllib

    d = Path(run_dir)
    summary_path = d / "summary.json"
    if not summary_path.exists():
        raise FileNotFoundError(f"{d} is not a finished run directory (no summary.json)")
    summary = json.loads(summary_path.read_text())
    samples = pd.read_parquet(d / "samples.parquet")
    flows = pd.read_parquet(d / "flows.parquet")
    packets = pd.read_parquet(d / "packets.parquet") if (d / "packets.parquet").exists() else None
    scenario: dict[str, Any] = {}
    if (d / "scenario.toml").exists():
        scenario = tomllib.loads((d / "scenario.toml").read_text())
    return RunData(samples=samples, flows=flows, summary=summary, scenario=scenario,
                   packets=packets, path=d)


def load(path: str | Path) -> Any:
    """A run directory → RunData; a sweep directory (sweep.parquet) → SweepData."""
    p = Path(path)
    if (p / "sweep.parquet").exists():
        from l4slab.sweeps import load_sweep

        return load_sweep(p)
    return load_run(p)

"""Run one scenario through the Rust simulator (`l4slab._core.run_scenario`).

Python reads the TOML (tomllib reports syntax errors with line numbers), applies overrides and
sends the effective scenario to Rust as JSON, where serde validates it and names the field path
of any error. The GIL is released while the simulation runs.
"""

from __future__ import annotations

import ctypes
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from l4slab import _core
from l4slab.results import OutputDirError, RunData, from_core, prepare_run_dir, write_run_dir
from l4slab.scenario import ScenarioError, ScenarioSource, apply_overrides, load_scenario

__all__ = ["run", "simulate", "validate", "effective_scenario"]

#: Scenario keys holding file paths relative to the scenario file.
PATH_KEYS = (("link", "trace"),)


def effective_scenario(source: ScenarioSource,
                       overrides: Mapping[str, Any] | Iterable[str] | None = None,
                       unset: Iterable[str] = ()) -> dict[str, Any]:
    """The scenario dict after overrides, with existing relative trace paths made absolute so
    the scenario.toml written into a run directory still points at the trace."""
    data = apply_overrides(source.data, overrides, unset)
    for table, key in PATH_KEYS:
        t = data.get(table)
        # [[links]]: each hop may name a trace too.
        hops = data.get("links") if table == "link" else None
        tables = [t, *(hops if isinstance(hops, list) else [])]
        for t in tables:
            if isinstance(t, dict) and isinstance(t.get(key), str):
                p = Path(t[key])
                if not p.is_absolute() and (source.base_dir / p).exists():
                    t[key] = str((source.base_dir / p).resolve())
    # [[workloads]] sizes = a CDF file (the named distributions are not files).
    for w in data.get("workloads") or []:
        if isinstance(w, dict) and isinstance(w.get("sizes"), str):
            p = Path(w["sizes"])
            if not p.is_absolute() and (source.base_dir / p).is_file():
                w["sizes"] = str((source.base_dir / p).resolve())
    return data


def _check_finite(node: Any, path: str = "") -> None:
    """NaN / inf have no JSON form: name the key instead of a JSON parser position."""
    if isinstance(node, float) and not math.isfinite(node):
        raise ScenarioError(f"{path or 'scenario'}: {node} is not a finite number")
    if isinstance(node, Mapping):
        for k, v in node.items():
            _check_finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _check_finite(v, f"{path}[{i}]")


def _trim_heap() -> None:
    """Give the simulator's freed memory back to the OS (glibc's `malloc_trim`).

    The engine's per-flow state (tens of MB with 10 000 flows) is freed when a run ends, but
    glibc keeps free pages inside its heap, where the Parquet writer (its own allocator) and
    numpy's large buffers (mmap) do not reuse them: without this the process keeps them
    for the rest of the run and they add to its peak. A no-op where there is no glibc."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            # The process's own symbols (libc is loaded): no library search, no subprocess.
            _MALLOC_TRIM = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM: Any = None


def simulate(data: Mapping[str, Any], base_dir: str | Path, *, pcap: bool = False,
             progress: Any = None) -> RunData:
    """Run a scenario dict; raises `l4slab.ScenarioError` naming the field on bad input.
    `pcap`: keep the pcapng capture as `.pcapng` (bytes); `progress`: a `_core.Progress` the
    simulator updates (see `l4slab.progress`)."""
    _check_finite(data)
    text = json.dumps(data)
    raw = _core.run_scenario(text, "json", str(base_dir), pcap=pcap, progress=progress)
    _trim_heap()
    result = from_core(raw, scenario=dict(data))
    result.pcapng = raw.get("pcapng")
    return result


def validate(scenario: str | Path | Mapping[str, Any],
             overrides: Mapping[str, Any] | Iterable[str] | None = None) -> dict[str, Any]:
    """Check a scenario (after overrides) without running it; returns the effective dict."""
    src = load_scenario(scenario)
    data = effective_scenario(src, overrides)
    _check_finite(data)
    _core.validate_scenario(json.dumps(data), "json", str(src.base_dir))
    return data


def check_pcap_path(pcap: Path, out_dir: Path | None) -> None:
    """Refuse, before anything runs, a pcapng path that exists, whose directory does not, or
    that lies in the run directory (`-o` owns every file there: an output of one flag may
    not be another's file)."""
    if pcap.exists():
        raise OutputDirError(f"--pcap {pcap}: exists; results are never overwritten, "
                             "choose another file")
    if out_dir is not None and pcap.resolve().is_relative_to(out_dir.resolve()):
        raise OutputDirError(f"--pcap {pcap}: inside the run directory {out_dir}, whose "
                             "files belong to -o; write the capture outside it")
    parent = pcap.parent
    if not parent.is_dir():
        raise OutputDirError(f"--pcap {pcap}: the directory {parent} does not exist; "
                             "create it or choose another path")


def run(scenario: str | Path | Mapping[str, Any], out_dir: str | Path | None = None,
        overrides: Mapping[str, Any] | Iterable[str] | None = None, *,
        figures: bool = True, report: bool = True,
        base_dir: str | Path | None = None, force: bool = False,
        unset: Iterable[str] = (), pcap: str | Path | None = None,
        progress: Any = None) -> RunData:
    """Run a scenario file or dict. With `out_dir`, write the run directory there (parquet
    tables, summary.json, scenario.toml, figures, report.html). `overrides` is a mapping of
    dotted keys or a list of ``"key=value"`` strings, as `l4slab run --set`. An `out_dir`
    that holds another run raises `OutputDirError` before anything runs, unless `force`
    (then that run's files are removed first). `unset` keys are removed first (`--unset`).
    `pcap`: also write a pcapng trace of the bottleneck there (an existing file is refused
    before anything runs); `progress`: a `_core.Progress` to update."""
    from l4slab.sweeps import refuse_while_a_worker_imports

    refuse_while_a_worker_imports("l4slab.run")
    src = load_scenario(scenario, Path(base_dir) if base_dir else None)
    data = effective_scenario(src, overrides, unset)
    if pcap is not None:
        check_pcap_path(Path(pcap), None if out_dir is None else Path(out_dir))
    if out_dir is not None:
        prepare_run_dir(out_dir, data, force=force)
    result = simulate(data, src.base_dir, pcap=pcap is not None, progress=progress)
    if out_dir is not None:
        write_run_dir(result, out_dir, figures=figures, report=report)
    if pcap is not None and result.pcapng is not None:
        Path(pcap).write_bytes(result.pcapng)
    return result

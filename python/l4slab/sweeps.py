"""Parameter sweeps: a grid over any scenario keys × replications, run on a local process pool
or a Dask cluster, resumable, indexed in `sweep.parquet`.

Sweep file (TOML)::

    base = "prague_vs_cubic_50M_40ms.toml"   # relative to the sweep file
    replications = 5
    seed = 1                     # base seed (default: the base scenario's seed, else 1)
    [grid]
    "aqm.step_thresh" = ["1ms", "5ms", "10ms"]
    "flows.0.cc" = ["prague", "dctcp"]
    [set]                                     # optional fixed overrides for every run
    duration = "10s"

Runs are the cartesian product of the grid lists (first key varies slowest) times the
replications. Seed derivation: replication r (0-based) of every grid point runs with

    seed_r = splitmix64(base_seed, r) >> 1

i.e. the (r+1)-th output of the SplitMix64 generator seeded with base_seed (state advanced by
0x9E3779B97F4A7C15 per step, then the Stafford "mix13" finaliser), shifted right by one bit
so it fits a TOML integer. The same r gets the same seed at every grid point (common random
numbers: differences between grid points are not masked by seed noise), and results do not
depend on the executor, the number of workers or the order runs finish in.

Layout: OUT/runs/p{point:03d}-r{rep:02d}/ (a run directory plus params.json), OUT/sweep.parquet
(one row per run: parameters, seed, run_dir, status, error, flattened summary metrics),
OUT/sweep.json (the plan), OUT/report.html and the sweep figures. A run counts as finished when
its summary.json exists and its params.json (parameters, seed and a digest of the effective
scenario) matches the plan; resuming skips those and reruns the rest.

Executors: a local process pool (default, all cores) or Dask. With a remote Dask scheduler the
workers need l4slab installed; results come back to this process, which writes every file, so
the workers need no shared file system.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import multiprocessing
import os
import re
import shutil
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from l4slab import _core
from l4slab.columnar import read_parquet
from l4slab.results import OutputDirError, RunData, load_run, write_run_dir
from l4slab.scenario import (
    ScenarioError,
    ScenarioSource,
    apply_overrides,
    load_scenario,
    normalise_key,
    parse_override,
)
from l4slab.sweepgrid import check_grid, effective_params, expand_params, ordered_overrides

__all__ = ["SweepFailed", "plan_digest", "SweepSpec", "RunTask", "RunOutcome", "SweepResult",
           "SweepData", "derive_seed", "load_sweep_spec", "plan", "execute_task",
           "flatten_summary", "flow_records", "sweep", "load_sweep", "read_flow_table",
           "wide_flow_columns", "FLOW_TABLE"]

_MASK64 = (1 << 64) - 1


def derive_seed(base_seed: int, replication: int) -> int:
    """Seed of replication `replication` (0-based): SplitMix64 output r+1 from `base_seed`,
    >> 1 to fit a signed 64-bit TOML integer."""
    z = (base_seed + (replication + 1) * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    z ^= z >> 31
    return z >> 1


@dataclass
class SweepSpec:
    """A loaded sweep file: base scenario, grid, replications, seed and fixed overrides."""
    base: ScenarioSource
    grid: dict[str, list[Any]]
    replications: int
    seed: int
    fixed: dict[str, Any] = field(default_factory=dict)
    origin: str = "<dict>"


@dataclass
class RunTask:
    """One run of a sweep: grid point, replication, parameters, seed and effective scenario."""
    index: int
    point: int
    rep: int
    params: dict[str, Any]
    seed: int
    name: str
    scenario: dict[str, Any]
    base_dir: str
    #: Draw the run's figures in the worker (in parallel) and send them back as bytes.
    figures: bool = False
    #: "simulator", or "emulator" for `--emulate` (named in params.json so neither kind of
    #: run resumes as the other).
    engine: str = "simulator"

    def identity(self) -> dict[str, Any]:
        """What params.json holds; resume compares it with the plan. The digest covers the
        whole effective scenario, so a changed base file or [set] reruns the run."""
        digest = hashlib.sha256(json.dumps(self.scenario, sort_keys=True, default=str)
                                .encode()).hexdigest()[:16]
        ident = {"point": self.point, "rep": self.rep, "params": self.params,
                 "seed": self.seed, "scenario_sha256": digest}
        if self.engine != "simulator":
            ident["engine"] = self.engine
        return ident


@dataclass
class RunOutcome:
    """How one run ended: ok, failed (with the error) or skipped (finished earlier)."""
    task: RunTask
    status: str  # "ok" | "failed" | "skipped" (finished earlier, resumed)
    error: str | None = None
    run: RunData | None = None
    elapsed_s: float = 0.0
    figure_files: dict[str, bytes] | None = None


def load_sweep_spec(sweep: str | Path | Mapping[str, Any],
                    base_dir: Path | None = None) -> SweepSpec:
    """Read a sweep file or dict; every problem raises ScenarioError naming the field."""
    import tomllib

    if isinstance(sweep, Mapping):
        data = dict(sweep)
        root = Path(base_dir or Path.cwd())
        origin = "<dict>"
    else:
        path = Path(sweep)
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ScenarioError(f"sweep file not found: {path}") from None
        except UnicodeDecodeError:
            raise ScenarioError(f"{path}: not a text file; a sweep is a TOML file") from None
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"{path}: not valid TOML: {e}") from None
        root = path.resolve().parent
        origin = str(path)
    allowed = {"base", "grid", "replications", "seed", "set", "name"}
    for k in data:
        if k not in allowed:
            raise ScenarioError(f"{origin}: unknown sweep key {k!r} (allowed: "
                                f"{', '.join(sorted(allowed))})")
    if "base" not in data:
        raise ScenarioError(f"{origin}: missing 'base' (the scenario file to sweep over)")
    base_val = data["base"]
    if isinstance(base_val, Mapping):
        base = load_scenario(base_val, root)
    elif isinstance(base_val, str):
        p = Path(base_val)
        base = load_scenario(p if p.is_absolute() else root / p)
    else:
        raise ScenarioError(f"{origin}: 'base' must be a file name or a table")

    grid_raw = data.get("grid", None)
    grid: dict[str, list[Any]] = {}
    if grid_raw is not None:
        if not isinstance(grid_raw, Mapping):
            raise ScenarioError(f"{origin}: 'grid' must be a table of key = [values]")
        if not grid_raw:
            raise ScenarioError(f"{origin}: the sweep grid is empty: give at least one "
                                '"dotted.key" = [values], or leave out [grid] to only replicate')
        for k, v in _flatten_grid(grid_raw):
            if k == "seed":
                raise ScenarioError(f"{origin}: grid.seed: seeds come from 'seed' and "
                                    "'replications', not from the grid")
            if not isinstance(v, list):
                raise ScenarioError(f'{origin}: grid."{k}" must be a list of values, got {v!r}')
            if not v:
                raise ScenarioError(f'{origin}: grid."{k}" is an empty list: the sweep grid '
                                    "has no runs")
            dup = [x for i, x in enumerate(v) if x in v[:i]]
            if dup:
                raise ScenarioError(f'{origin}: grid."{k}" lists {dup[0]!r} more than once; '
                                    "each value must appear once (use replications for "
                                    "repeated runs)")
            grid[k] = v
    check_grid(grid, origin)
    reps = data.get("replications", 1)
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise ScenarioError(f"{origin}: replications must be an integer ≥ 1, got {reps!r}")
    seed = data.get("seed", base.data.get("seed", 1))
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ScenarioError(f"{origin}: seed must be a non-negative integer, got {seed!r}")
    fixed = data.get("set", {})
    if not isinstance(fixed, Mapping):
        raise ScenarioError(f"{origin}: 'set' must be a table of key = value")
    fixed_flat = dict(_flatten_grid(fixed))
    both = [k for k in fixed_flat if normalise_key(k) in {normalise_key(g) for g in grid}]
    if both:
        raise ScenarioError(f'{origin}: "{both[0]}" is in both [grid] and [set]; a key is '
                            "either swept or fixed, not both")
    return SweepSpec(base=base, grid=grid, replications=reps, seed=seed,
                     fixed=fixed_flat, origin=origin)



def _flatten_grid(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """`{"aqm.target": [...]}` and `{aqm = {target = [...]}}` both give ("aqm.target", [...])."""
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            yield from _flatten_grid(v, key + ".")
        else:
            yield key, v


def plan(spec: SweepSpec) -> list[RunTask]:
    """Every run of the sweep, in a stable order (grid points, then replications)."""
    from l4slab.runner import effective_scenario

    keys = list(spec.grid)
    points = list(itertools.product(*(spec.grid[k] for k in keys))) if keys else [()]
    tasks: list[RunTask] = []
    base_with_fixed = ScenarioSource(apply_overrides(spec.base.data, spec.fixed),
                                     spec.base.base_dir, spec.base.origin)
    for p_idx, values in enumerate(points):
        params = dict(zip(keys, values, strict=True))
        for rep in range(spec.replications):
            seed = derive_seed(spec.seed, rep)
            try:
                scenario = effective_scenario(base_with_fixed,
                                              {**ordered_overrides(params), "seed": seed})
            except ScenarioError as e:
                raise point_error(spec, params, e) from None
            tasks.append(RunTask(index=len(tasks), point=p_idx, rep=rep, params=params,
                                 seed=seed, name=f"p{p_idx:03d}-r{rep:02d}",
                                 scenario=scenario, base_dir=str(spec.base.base_dir)))
    return tasks


def point_label(params: Mapping[str, Any]) -> str:
    """A grid point as reports label it: each swept value (a table variant by its values),
    joined by " · " (`fifo · 0.5bdp`)."""
    def one(v: Any) -> str:
        if isinstance(v, Mapping):
            return " ".join(str(x) if k == "kind" else f"{k}={param_label(x)}"
                            for k, x in v.items())
        return str(param_label(v))
    return " · ".join(one(v) for v in params.values()) or "(base scenario)"


def _base_error(spec: SweepSpec) -> str | None:
    """The error of the base scenario with [set] and --set alone (no grid value), if any."""
    from l4slab.runner import _check_finite, effective_scenario

    src = ScenarioSource(apply_overrides(spec.base.data, spec.fixed), spec.base.base_dir,
                         spec.base.origin)
    try:
        data = effective_scenario(src, {"seed": derive_seed(spec.seed, 0)})
        _check_finite(data)
        _core.validate_scenario(json.dumps(data), "json", str(spec.base.base_dir))
    except ScenarioError as e:
        return str(e)
    return None


def point_error(spec: SweepSpec | None, params: Mapping[str, Any], e: Exception
                ) -> ScenarioError:
    """A grid point's error, or, when the base scenario alone fails the same way, the base
    scenario's (every run has it: reported once, as such, not against one grid point)."""
    if spec is not None and params and _base_error(spec) == str(e):
        return ScenarioError(f"{spec.origin}: the base scenario (with [set] and --set), "
                             f"before any grid value: {e}")
    return ScenarioError(f"grid point {point_label(params)}: {e}")


def validate_tasks(tasks: Iterable[RunTask], spec: SweepSpec | None = None) -> None:
    """Validate each distinct grid point in Rust before anything runs (cheap: no simulation);
    `spec` tells a base-scenario error from a grid point's (`point_error`)."""
    seen: set[int] = set()
    for t in tasks:
        if t.point in seen:
            continue
        seen.add(t.point)
        try:
            from l4slab.runner import _check_finite

            _check_finite(t.scenario)
            _core.validate_scenario(json.dumps(t.scenario), "json", t.base_dir)
        except ScenarioError as e:
            if t.params:
                raise point_error(spec, t.params, e) from None
            raise


def execute_task(task: RunTask) -> RunOutcome:
    """Run one sweep task (in a worker process or on a Dask worker). Never raises: failures
    come back as status "failed" with the error text, so one bad run cannot stop a sweep."""
    from l4slab.runner import simulate

    t0 = time.perf_counter()
    try:
        run = simulate(task.scenario, task.base_dir)
    except ScenarioError as e:
        return RunOutcome(task, "failed", f"ScenarioError: {e}",
                          elapsed_s=time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 - reported per run, the sweep goes on
        tb = traceback.format_exception_only(type(e), e)
        return RunOutcome(task, "failed", "".join(tb).strip(),
                          elapsed_s=time.perf_counter() - t0)
    elapsed = time.perf_counter() - t0
    files = None
    if task.figures:
        from l4slab.plots import render_run

        files = render_run(run)
    return RunOutcome(task, "ok", run=run, elapsed_s=elapsed, figure_files=files)


# --- executors --------------------------------------------------------------------------------

def _dask_ready(client: Any, where: str, wait_s: float,
                note: Callable[[str], None] | None) -> None:
    """Say what the cluster has (workers, threads); with no worker, say so, wait up to
    `wait_s` for one and then give up with an error, instead of queueing runs that nothing
    will ever pick up."""
    note = note or (lambda _msg: None)
    nthreads = client.nthreads()
    if not nthreads:
        note(f"dask {where}: the scheduler has no workers; waiting up to {wait_s:g} s for one "
             "(--dask-wait SECONDS)")
        try:
            client.wait_for_workers(1, timeout=wait_s)
        except (TimeoutError, OSError):
            raise ScenarioError(f"--dask {where}: no worker joined the scheduler within "
                                f"{wait_s:g} s; start workers (`dask worker ADDRESS`) or wait "
                                "longer with --dask-wait SECONDS") from None
        nthreads = client.nthreads()
    note(f"dask {where}: {len(nthreads)} worker{'s' if len(nthreads) != 1 else ''}, "
         f"{sum(nthreads.values())} threads")


Executor = Callable[[list[RunTask]], Iterator[RunOutcome]]


def _inline(tasks: list[RunTask]) -> Iterator[RunOutcome]:
    for t in tasks:
        yield execute_task(t)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent_pid: int) -> None:
    """Initializer of every pool worker: end this worker when the sweep process that started
    it dies, even by SIGKILL (no chance to shut the pool down), instead of letting it finish
    its run and idle on (~145 MB each). Linux: prctl(PR_SET_PDEATHSIG, SIGTERM). Everywhere,
    and for a parent that died before the prctl, a daemon thread that watches the parent
    pid (re-parenting changes getppid())."""
    import signal
    import threading

    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(1.0)

    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=watch, name="l4slab-parent-watch", daemon=True).start()


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Hold SIGINT in this thread while it spawns pool workers. A child inherits the signal
    mask, so a Ctrl-C at the terminal (sent to the whole process group) reaches the sweep
    alone, which stops the workers itself; a worker that got it would print its own
    KeyboardInterrupt traceback from the middle of its start-up. A Ctrl-C that arrives
    meanwhile is delivered when the block ends."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


#: The resource tracker's warning when its parent dies holding semaphores (a SIGKILLed sweep):
#: it unlinks them all the same (multiprocessing/resource_tracker.py, main()).
_TRACKER_WARNING = "ignore:resource_tracker:UserWarning:multiprocessing.resource_tracker"


def quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (if not yet running) without its "There
    appear to be N leaked semaphore objects to clean up at shutdown" warning: after a SIGKILL
    of the sweep the tracker still unlinks the pool's semaphores, which is all a user needs.
    The filter reaches the tracker alone (its environment at spawn), not the workers."""
    from multiprocessing import resource_tracker

    old = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = ",".join(x for x in (old, _TRACKER_WARNING) if x)
    try:
        resource_tracker.ensure_running()
    finally:
        if old is None:
            del os.environ["PYTHONWARNINGS"]
        else:
            os.environ["PYTHONWARNINGS"] = old


def start_pool(jobs: int, fn: Callable[..., Any], calls: Iterable[tuple[Any, ...]]
               ) -> tuple[ProcessPoolExecutor, dict[Any, tuple[Any, ...]]]:
    """A spawn pool of `jobs` workers (each ends with its parent: `die_with_parent`), started
    with SIGINT held (`sigint_held`), and the futures of `fn(*args)` for each of `calls`."""
    # spawn: workers start clean (no inherited threads from rich/dask/matplotlib).
    ctx = multiprocessing.get_context("spawn")
    # The pool's semaphores start multiprocessing's resource tracker, whose start-up ends with
    # SIG_UNBLOCK of SIGINT in this thread: start it before holding SIGINT.
    quiet_resource_tracker()
    with sigint_held():
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx,
                                   initializer=die_with_parent, initargs=(os.getpid(),))
        futures = {pool.submit(fn, *args): args for args in calls}
    return pool, futures


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """End a pool now (Ctrl-C, SIGTERM, the consumer stopped): drop queued calls and end the
    workers, whose runs in progress a resume redoes, so that the process exits at once and
    the pool's semaphores are released (no resource-tracker warning about leaked ones)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(Exception):
            p.terminate()
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(timeout=5)


@contextlib.contextmanager
def signals_interrupt() -> Iterator[dict[str, int]]:
    """While a sweep or suite runs, SIGTERM and SIGHUP stop it as Ctrl-C does (raised as
    KeyboardInterrupt: queued runs dropped, workers ended, finished runs kept) instead of
    killing it mid-write; the dict's "signal" is the number received (SIGINT unless set),
    for an exit status of 128 + signal."""
    import signal
    import threading

    got = {"signal": int(signal.SIGINT)}
    if threading.current_thread() is not threading.main_thread():
        yield got
        return

    def handler(signum: int, _frame: Any) -> None:
        got["signal"] = signum
        raise KeyboardInterrupt

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield got
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _process_pool(jobs: int) -> Executor:
    def run_all(tasks: list[RunTask]) -> Iterator[RunOutcome]:
        pool, futures = None, {}
        try:
            pool, futures = start_pool(jobs, execute_task, ((t,) for t in tasks))
            for fut in as_completed(futures):
                try:
                    yield fut.result()
                except Exception as e:  # noqa: BLE001 - worker died (e.g. killed)
                    yield RunOutcome(futures[fut][0], "failed", f"worker failed: {e!r}")
        except BaseException:
            # Ctrl-C, SIGTERM or the consumer stopped: do not wait for the runs.
            if pool is not None:
                stop_pool(pool)
            raise
        pool.shutdown(wait=True)
    return run_all


def _dask(client: Any) -> Executor:
    def run_all(tasks: list[RunTask]) -> Iterator[RunOutcome]:
        from distributed import as_completed as dask_as_completed

        futures = client.map(execute_task, tasks, pure=False)
        by_key = {f.key: t for f, t in zip(futures, tasks, strict=True)}
        try:
            for fut in dask_as_completed(futures):
                try:
                    yield fut.result()
                except Exception as e:  # noqa: BLE001 - worker lost, serialisation, ...
                    yield RunOutcome(by_key[fut.key], "failed", f"dask: {e!r}")
        except BaseException:
            client.cancel(futures)
            raise
    return run_all


# --- index ------------------------------------------------------------------------------------

def _flat(prefix: str, v: Any, out: dict[str, Any]) -> None:
    """Nested tables → dotted keys; scalars kept, lists dropped."""
    if isinstance(v, Mapping):
        for k, x in v.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), x, out)
    elif isinstance(v, (int, float, str, bool)) or v is None:
        out[prefix] = v


def flow_records(summary: Mapping[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """summary.json's `flows` entries as (flow id, flat fields): ``tput_mbps``, ``cc``,
    ``host.tso``... (nested tables as dotted keys, lists left out), one per flow."""
    flows = summary.get("flows")
    out: list[tuple[Any, dict[str, Any]]] = []
    for i, f in enumerate(flows if isinstance(flows, list) else []):
        fields: dict[str, Any] = {}
        _flat("", {kk: vv for kk, vv in f.items() if kk != "id"}, fields)
        out.append((f.get("id", i), fields))
    return out


def flatten_summary(summary: Mapping[str, Any], *, per_flow: bool = True) -> dict[str, Any]:
    """summary.json → flat metrics: ``jain``, ``link.utilisation``, ``flows.0.tput_mbps``,
    ``queues.L.sojourn_ms.p99``, plus per-class sums ``class.L4S.tput_mbps``. With
    `per_flow=False`, the per-run scalars alone (what sweep.parquet holds; the per-flow
    entries go to sweep_flows.parquet, one row per flow: `flow_records`)."""
    out: dict[str, Any] = {}
    for k, v in summary.items():
        if k == "scenario":
            continue
        if k == "flows" and isinstance(v, list):
            if per_flow:
                for fid, fields in flow_records(summary):
                    out.update({f"flows.{fid}.{kk}": vv for kk, vv in fields.items()})
        elif k == "queues" and isinstance(v, list):
            for i, q in enumerate(v):
                name = q.get("name", str(i))
                _flat(f"queues.{name}", {kk: vv for kk, vv in q.items() if kk != "name"}, out)
        elif isinstance(v, list):
            continue
        else:
            _flat(k, v, out)
    flows = summary.get("flows") or []
    for cls in ("L4S", "Classic"):
        tputs = [f.get("tput_mbps") for f in flows if f.get("class") == cls]
        tputs = [x for x in tputs if isinstance(x, (int, float))]
        if tputs:
            out[f"class.{cls}.tput_mbps"] = float(sum(tputs))
            out[f"class.{cls}.flows"] = len(tputs)
    return out


@dataclass
class SweepResult:
    """What `sweep` did: the index, swept parameters, failures, run counts and wall time."""
    out_dir: Path
    index: pd.DataFrame
    params: list[str]
    failed: list[RunOutcome]
    ran: int
    skipped: int
    elapsed_s: float

    @property
    def ok(self) -> bool:
        """True when no run failed."""
        return not self.failed


@dataclass
class SweepData:
    """A sweep directory loaded back: `.index` (sweep.parquet), `.params`, `.run(name)`."""

    path: Path
    index: pd.DataFrame
    params: list[str]
    meta: dict[str, Any]

    def run(self, name_or_row: str | int) -> RunData:
        """The run directory of one run, by name or by row number of the index."""
        if isinstance(name_or_row, int):
            name_or_row = str(self.index.iloc[name_or_row]["run"])
        return load_run(self.path / "runs" / name_or_row)

    def flows(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """sweep_flows.parquet: one row per finished run and flow (`read_flow_table`)."""
        return read_flow_table(self.path, columns)


def load_sweep(path: str | Path) -> SweepData:
    """A finished (or partial) sweep directory: its index, swept parameters and metadata."""
    p = Path(path)
    meta = json.loads((p / "sweep.json").read_text()) if (p / "sweep.json").exists() else {}
    return SweepData(path=p, index=read_parquet(p / "sweep.parquet"),
                     params=list(meta.get("params", [])), meta=meta)


def read_flow_table(path: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A sweep's per-flow results, sweep_flows.parquet: one row per finished run and flow;
    columns run, point, rep, the swept parameters, seed, flow, then summary.json's per-flow
    fields (tput_mbps, srtt_ms, cc, class, ...). Only `columns` are read (Parquet is stored
    column by column), so one field of a 100 × 10 000-flow sweep costs 1 M values, not the
    table."""
    import pyarrow.parquet as pq

    f = Path(path) / FLOW_TABLE
    if not f.exists():
        raise OutputDirError(f"{path}: no {FLOW_TABLE} (the sweep has not finished once, or "
                             "it was written before per-flow results left sweep.parquet); "
                             "rerun the same `l4slab sweep` command into it to rebuild the "
                             "index (finished runs are kept, not rerun)")
    if columns is not None:
        have = pq.read_schema(f).names
        missing = [c for c in columns if c not in have]
        if missing:
            raise OutputDirError(f"{f}: no column {missing[0]!r} (columns: {', '.join(have)})")
    return read_parquet(f, columns)


def wide_flow_columns(path: str | Path, fields: Sequence[str]) -> pd.DataFrame:
    """Per-flow `fields` of a sweep of few flows as per-run columns ``flows.<id>.<field>``
    (flows in the order they first appear, then `fields`' order) beside `run`: for analyses
    that compare flow 0 with flow 1 run by run. Fields no run has are left out."""
    import pyarrow.parquet as pq

    have = set(pq.read_schema(Path(path) / FLOW_TABLE).names)
    # A field named like an identity column is stored as flow.<name> (FLOW_TABLE).
    src = {c: f"flow.{c}" if f"flow.{c}" in have else c for c in fields}
    cols = [c for c in fields if src[c] in have]
    long = read_flow_table(path, ["run", "flow", *(src[c] for c in cols)])
    runs = list(dict.fromkeys(long["run"]))
    field_of = {src[c]: c for c in cols}
    parts = [g.set_index("run")[[src[c] for c in cols]]
             .rename(columns=lambda s, i=fid: f"flows.{i}.{field_of[s]}")
             for fid, g in long.groupby("flow", sort=False)]
    wide = pd.concat(parts, axis=1) if parts else pd.DataFrame(index=pd.Index([], name="run"))
    return wide.reindex(runs).rename_axis("run").reset_index()


def _index_frame(tasks: list[RunTask], status: dict[int, RunOutcome], out: Path,
                 params: list[str]) -> tuple[pd.DataFrame, dict[str, set[type]]]:
    """sweep.parquet's frame (one row per run, per-run scalars) and the type(s) of each
    per-flow field over all finished runs (for sweep_flows.parquet's schema)."""
    rows = []
    flow_types: dict[str, set[type]] = {}
    for t in tasks:
        o = status.get(t.index)
        row: dict[str, Any] = {"run": t.name, "point": t.point, "rep": t.rep}
        row.update(expand_params(t.params, params))
        row["seed"] = t.seed
        row["run_dir"] = str(Path("runs") / t.name)
        row["status"] = "pending" if o is None else ("ok" if o.status == "skipped" else o.status)
        row["resumed"] = o is not None and o.status == "skipped"
        row["error"] = o.error if o else None
        row["elapsed_s"] = o.elapsed_s if o else None
        summary = _finished_summary(t, status, out)
        if summary is not None:
            for k, v in flatten_summary(summary, per_flow=False).items():
                if k not in row:
                    row[k] = v
            for _, fields in flow_records(summary):
                for k, v in fields.items():
                    # An integer beyond 64 bits (JSON allows it) makes its column float.
                    big = type(v) is int and not -2**63 <= v < 2**63
                    flow_types.setdefault(k, set()).add(float if big else type(v))
        rows.append(row)
    df = pd.DataFrame(rows)
    # Parquet wants one type per column and figures group by value: list or table values
    # (a swept `flows` list) become readable labels, mixed-type columns strings.
    for k in params:
        if k in df and df[k].map(lambda v: isinstance(v, (list, dict))).any():
            df[k] = df[k].map(param_label)
        if k in df and df[k].map(type).nunique() > 1:
            df[k] = df[k].map(str)
    return df, flow_types


def _finished_summary(t: RunTask, status: dict[int, RunOutcome], out: Path
                      ) -> dict[str, Any] | None:
    o = status.get(t.index)
    summ = out / "runs" / t.name / "summary.json"
    if o is None or o.status not in ("ok", "skipped") or not summ.exists():
        return None
    return json.loads(summ.read_text())


#: sweep_flows.parquet: the run's identity columns (then the swept parameters), `flow`, and one
#: column per per-flow field of summary.json; a field named like an identity column (an
#: emulated run's `flow`, its 5-tuple label) is the column `flow.<name>`.
FLOW_TABLE = "sweep_flows.parquet"
FLOW_KEYS = ("run", "point", "rep")
#: Rows gathered before they are written as one row group (bounds the parent's memory).
_FLOW_ROW_GROUP = 1 << 16


def _arrow_type(types: set[type]) -> Any:
    """One Arrow type for a per-flow field's JSON values over all runs."""
    import pyarrow as pa

    kinds = types - {type(None)}
    if not kinds:
        return pa.null()
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {int}:
        return pa.int64()
    if kinds <= {int, float}:
        return pa.float64()
    return pa.string()


def _column(values: list[Any], typ: Any) -> Any:
    import pyarrow as pa

    if pa.types.is_string(typ):
        values = [v if v is None or isinstance(v, str) else str(v) for v in values]
    elif pa.types.is_float64(typ):
        values = [v if v is None else float(v) for v in values]
    return pa.array(values, type=typ)


def _write_flow_table(tasks: list[RunTask], status: dict[int, RunOutcome], out: Path,
                      index: pd.DataFrame, params: list[str],
                      flow_types: dict[str, set[type]]) -> None:
    """out/sweep_flows.parquet: one row per (finished run, flow), read from each run's
    summary.json one run at a time and written in row groups of about 64 k rows, so the
    parent never holds more than a row group and one run's summary (a sweep of 10 000-flow
    runs stays small in memory however many runs it has)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = {k: _arrow_type(v) for k, v in flow_types.items()}
    run_cols = [c for c in (*FLOW_KEYS, *params, "seed") if c in index]
    identity = {*run_cols, "flow"}
    run_schema = pa.Schema.from_pandas(index[run_cols], preserve_index=False)
    schema = pa.schema([*(run_schema.field(c).remove_metadata() for c in run_cols),
                        pa.field("flow", pa.int64()),
                        *(pa.field(f"flow.{k}" if k in identity else k, t)
                          for k, t in fields.items())])
    by_name = {r["run"]: r for r in index[run_cols].to_dict("records")}
    tmp = out / (FLOW_TABLE + ".tmp")
    pending: list[pa.Table] = []
    n_pending = 0
    with pq.ParquetWriter(tmp, schema) as writer:
        for t in tasks:
            summary = _finished_summary(t, status, out)
            recs = flow_records(summary) if summary is not None else []
            if not recs:
                continue
            n = len(recs)
            row = by_name[t.name]
            cols = [pa.array([row[c]] * n, type=schema.field(c).type) for c in run_cols]
            cols.append(pa.array([fid for fid, _ in recs], type=pa.int64()))
            cols += [_column([f.get(k) for _, f in recs], typ) for k, typ in fields.items()]
            pending.append(pa.Table.from_arrays(cols, schema=schema))
            n_pending += n
            del summary, recs
            if n_pending >= _FLOW_ROW_GROUP:
                writer.write_table(pa.concat_tables(pending))
                pending, n_pending = [], 0
        if pending:
            writer.write_table(pa.concat_tables(pending))
    tmp.replace(out / FLOW_TABLE)


def param_label(v: Any) -> Any:
    """A short, hashable label for a swept value: scalars as they are; a `flows` list as
    its CCs ("prague+2×cubic"); any other list or table as compact TOML-like text."""
    if isinstance(v, list) and v and all(isinstance(f, Mapping) and "cc" in f for f in v):
        return "+".join(f"{f.get('count', 1)}×{f['cc']}" if f.get("count", 1) != 1
                        else str(f["cc"]) for f in v)
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k}={param_label(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(str(param_label(x)) for x in v) + "]"
    return v


def sweep(sweep_file: str | Path | Mapping[str, Any], out_dir: str | Path, *,
          jobs: int | None = None, dask: str | Any | None = None, dask_local: bool = False,
          figures: bool = False, resume: bool = True, report: bool = True,
          overrides: Mapping[str, Any] | Iterable[str] | None = None,
          on_progress: Callable[[RunOutcome, int, int], None] | None = None,
          on_start: Callable[[int, int], None] | None = None,
          unset: Iterable[str] = (), engine: Any = None, force: bool = False,
          raise_on_failure: bool | None = None, dask_wait_s: float = 60.0,
          on_note: Callable[[str], None] | None = None) -> SweepResult:
    """Run a sweep. `jobs` workers (default: all cores) in a local process pool, or on Dask:
    `dask` is a scheduler address or a `distributed.Client`; `dask_local=True` starts a
    LocalCluster with `jobs` single-threaded worker processes. `figures` also draws per-run
    figures; `report=False` skips the sweep figures and report.html (a caller that reports
    on its own, e.g. a study suite). `overrides` (dotted keys, as
    `run`) apply to every run on top of the sweep file's [set]; `unset` keys are removed from
    the base scenario first (`--unset`). Finished runs are skipped. `engine` runs the grid
    elsewhere than the simulator (`l4slab.emulate.EmulatorEngine`: one run at a time through
    the emulator, its own checks first). On Dask, `on_note` hears the cluster's size
    (workers, threads); a scheduler without workers is waited on for `dask_wait_s` seconds,
    then ScenarioError. Raises ScenarioError on bad input before any run
    starts. A directory holding a different sweep (another plan digest) raises OutputDirError
    unless `force` (then that sweep's runs this plan does not have are removed); the same
    sweep resumes. When runs fail, raises SweepFailed (its message names the first failure,
    `.result` is the SweepResult) unless `raise_on_failure=False`; the default (None) raises
    except with an `engine`, whose caller lists the failures itself."""
    refuse_while_a_worker_imports("l4slab.sweep")
    t_start = time.perf_counter()
    spec = load_sweep_spec(sweep_file)
    _apply_unset(spec, unset)
    if overrides:
        _apply_overrides(spec, overrides)
    tasks = plan(spec)
    if not tasks:
        raise ScenarioError(f"{spec.origin}: the sweep grid has no runs")
    if engine is not None and (dask is not None or dask_local or (jobs or 1) > 1):
        raise ScenarioError(f"the {engine.name} runs a sweep one run at a time on this "
                            "machine; -j/--dask do not apply")
    if engine is None:
        validate_tasks(tasks, spec)
    else:
        engine.validate(tasks)
    for t in tasks:
        t.figures = figures
        t.engine = engine.name if engine is not None else "simulator"
    out = Path(out_dir)
    _check_engine(out, tasks[0].engine)
    _previous_sweep(out, tasks, force)  # refuse before creating anything
    (out / "runs").mkdir(parents=True, exist_ok=True)
    with _sweep_lock(out):
        # Again under the lock: only now may stale runs be removed.
        for stale in _previous_sweep(out, tasks, force):
            shutil.rmtree(stale)
        res = _sweep_locked(spec, tasks, out, t_start, jobs=jobs, dask=dask,
                            dask_local=dask_local, figures=figures, resume=resume,
                            report=report, on_progress=on_progress, on_start=on_start,
                            engine=engine, dask_wait_s=dask_wait_s, on_note=on_note)
    if res.failed and (raise_on_failure or (raise_on_failure is None and engine is None)):
        raise SweepFailed(res)
    return res


class SweepFailed(RuntimeError):
    """Some runs of a sweep failed (`sweep(..., raise_on_failure=True)`, the default). The
    finished runs are kept; `.result` is the SweepResult, the message names the first
    failure."""

    def __init__(self, result: SweepResult) -> None:
        first = min(result.failed, key=lambda o: o.task.index)
        hint = f"; {MAIN_GUARD}" if "BrokenProcessPool" in (first.error or "") else ""
        super().__init__(f"{len(result.failed)} of {len(result.index)} sweep runs failed "
                         f"(finished runs are kept in {result.out_dir}); first: "
                         f"{first.task.name} ({point_label(first.task.params)}): {first.error}"
                         f"{hint}")
        self.result = result


#: What a script that starts a sweep must do, named wherever its absence shows.
MAIN_GUARD = ("a script that runs a sweep must keep its code under "
              "`if __name__ == \"__main__\":` (sweep workers start by importing the script)")


def refuse_while_a_worker_imports(what: str) -> None:
    """Raise when called while a spawned worker imports the main script (multiprocessing's
    bootstrapping phase): an unguarded script would otherwise rerun its runs and sweeps in
    every worker, which then collide on the sweep lock."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError(f"{what} called while a sweep worker imports the main script: "
                           f"{MAIN_GUARD}")


def plan_digest(tasks: list[RunTask]) -> str:
    """SHA-256 of every run's identity (parameters, seed, effective-scenario digest, engine):
    two sweeps with the same digest run exactly the same experiments."""
    idents = [t.identity() for t in tasks]
    return hashlib.sha256(json.dumps(idents, sort_keys=True, default=str).encode()).hexdigest()


_RUN_DIR = re.compile(r"^p\d{3,}-r\d{2,}$")


def _previous_sweep(out: Path, tasks: list[RunTask], force: bool) -> list[Path]:
    """What `out` holds before this sweep writes to it. Empty or the same sweep (same plan
    digest): nothing to do. Another sweep: OutputDirError unless `force`; with `force`, the run
    directories this plan does not have (other names or other identities) are returned to be
    removed, so no stale `p00N` dir outlives its sweep. Files that are no sweep's: refused
    (even with `force`, nothing of them is removed)."""
    if not out.is_dir():
        return []
    entries = [p for p in out.iterdir() if p.name != LOCK_FILE
               and not (p.name == "runs" and p.is_dir() and not any(p.iterdir()))]
    if not entries:
        return []
    try:
        meta = json.loads((out / "sweep.json").read_text())
    except (OSError, ValueError):
        meta = None
    if not isinstance(meta, dict):
        if force:
            return []
        raise OutputDirError(f"{out}: not empty and holds no sweep (no readable sweep.json); "
                             "choose another -o, or pass --force (Python: force=True) to write the "
                             "sweep beside those files")
    if meta.get("plan_sha256") == plan_digest(tasks):
        return []
    want = {t.name: json.loads(json.dumps(t.identity(), default=str)) for t in tasks}
    stale = []
    runs = out / "runs"
    for rd in sorted(runs.iterdir()) if runs.is_dir() else []:
        if not (rd.is_dir() and _RUN_DIR.match(rd.name)):
            continue
        try:
            have = json.loads((rd / "params.json").read_text())
        except (OSError, ValueError):
            have = None
        if want.get(rd.name) != have:
            stale.append(rd)
    if "plan_sha256" not in meta and not stale:
        return []  # written before plans had digests, and every run is one of this plan
    if force:
        return stale
    raise OutputDirError(
        f"{out}: holds a different sweep ({meta.get('origin', '?')}, {meta.get('runs', '?')} "
        f"runs; {len(stale)} of its run directories are not runs of this sweep); choose another "
        "-o, or pass --force (Python: force=True) to replace those runs (results are never "
        "overwritten silently)")


def _check_engine(out: Path, engine: str) -> None:
    """A sweep directory holds simulator runs or emulator runs, never both."""
    try:
        have = json.loads((out / "sweep.json").read_text()).get("engine", "simulator")
    except (OSError, ValueError, AttributeError):
        return
    if have != engine:
        raise OutputDirError(f"{out}: holds {have} runs; this sweep runs on the {engine}, so "
                             "choose another -o (results are never overwritten)")


def _apply_unset(spec: SweepSpec, unset: Iterable[str]) -> None:
    """Remove `--unset` keys from the base scenario; keys the sweep file's grid or [set]
    gives cannot be unset."""
    for k in unset:
        if k in spec.grid or k in spec.fixed:
            where = "grid" if k in spec.grid else "[set]"
            raise ScenarioError(f"--unset {k}: that key is set by the sweep file's {where}; "
                                "change it there")
    if unset:
        spec.base = ScenarioSource(apply_overrides(spec.base.data, {}, unset),
                                   spec.base.base_dir, spec.base.origin)


def _apply_overrides(spec: SweepSpec, overrides: Mapping[str, Any] | Iterable[str]) -> None:
    """Put `--set` overrides into the sweep's fixed keys; the grid's keys and the derived
    seed cannot be overridden."""
    pairs = (overrides.items() if isinstance(overrides, Mapping)
             else (parse_override(o) for o in overrides))
    for k, v in pairs:
        if k in spec.grid or k == "seed":
            raise ScenarioError(f"--set {k}: that key is swept by the grid or derived "
                                "(seed); change it in the sweep file")
        spec.fixed[k] = v


LOCK_FILE = ".l4slab-sweep.lock"


@contextlib.contextmanager
def _sweep_lock(out: Path) -> Iterator[None]:
    """An exclusive lock on out/.l4slab-sweep.lock for the sweep's lifetime: a second sweep
    into the same directory gets OutputDirError. flock is released by the kernel when the
    process dies, so a killed sweep leaves no stale lock and resume works."""
    import fcntl

    f = (out / LOCK_FILE).open("a+")
    try:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise OutputDirError(f"{out}: another sweep is writing this directory ({holder}); "
                                 "wait for it to finish or choose another -o") from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}\n")
        f.flush()
        yield
    finally:
        f.close()


def _sweep_locked(spec: SweepSpec, tasks: list[RunTask], out: Path, t_start: float, *,
                  jobs: int | None, dask: str | Any | None, dask_local: bool, figures: bool,
                  resume: bool, report: bool,
                  on_progress: Callable[[RunOutcome, int, int], None] | None,
                  on_start: Callable[[int, int], None] | None,
                  engine: Any = None, dask_wait_s: float = 60.0,
                  on_note: Callable[[str], None] | None = None) -> SweepResult:
    params = effective_params(spec.grid)
    meta = _write_sweep_meta(spec, tasks, out)
    status, todo = _resume_split(tasks, out, resume)
    jobs = max(1, jobs or os.cpu_count() or 1)
    cluster = client = None
    try:
        if dask is not None or dask_local:
            try:
                from distributed import Client, LocalCluster
            except ImportError:
                raise ScenarioError("Dask executors need the 'distributed' package "
                                    "(pip install 'l4slab[dask]')") from None

            if dask is None:
                cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
                client = Client(cluster)
            elif isinstance(dask, str):
                try:
                    client = Client(dask, timeout="10s")
                except (OSError, TimeoutError) as e:
                    raise ScenarioError(f"--dask {dask}: cannot reach the scheduler ({e})"
                                        ) from None
            else:
                client = dask
            _dask_ready(client, dask if isinstance(dask, str) else "cluster", dask_wait_s,
                        on_note)
            executor = _dask(client)
        elif engine is not None:
            executor = engine.executor(out)
        elif jobs == 1 or len(todo) <= 1:
            executor = _inline
        else:
            executor = _process_pool(min(jobs, len(todo)))
        if on_start:
            on_start(len(tasks), len(tasks) - len(todo))

        for outcome in executor(todo) if todo else iter(()):
            _store(outcome, out, figures)
            status[outcome.task.index] = outcome
            outcome.run = outcome.figure_files = None  # free memory once on disk
            if on_progress:
                on_progress(outcome, sum(1 for o in status.values() if o.status != "skipped"),
                            len(todo))
    finally:
        if client is not None and (cluster is not None or isinstance(dask, str)):
            client.close()
        if cluster is not None:
            cluster.close()
        index, flow_types = _index_frame(tasks, status, out, params)
        index.to_parquet(out / "sweep.parquet", index=False)
        _write_flow_table(tasks, status, out, index, params, flow_types)

    if report:
        _sweep_figures_and_report(SweepData(path=out, index=index, params=params, meta=meta))
    failed = [o for o in status.values() if o.status == "failed"]
    return SweepResult(out_dir=out, index=index, params=params, failed=failed,
                       ran=sum(1 for o in status.values() if o.status != "skipped"),
                       skipped=sum(1 for o in status.values() if o.status == "skipped"),
                       elapsed_s=time.perf_counter() - t_start)


def _write_sweep_meta(spec: SweepSpec, tasks: list[RunTask], out: Path) -> dict[str, Any]:
    """Write out/sweep.json (grid, fixed keys, seeds, run count, engine); return its content."""
    meta = {"origin": spec.origin, "base": spec.base.origin,
            "params": effective_params(spec.grid),
            "grid": spec.grid, "set": spec.fixed, "replications": spec.replications,
            "seed": spec.seed, "seed_derivation": "splitmix64(seed, rep) >> 1",
            "runs": len(tasks), "engine": tasks[0].engine, "plan_sha256": plan_digest(tasks)}
    (out / "sweep.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return meta


def _resume_split(tasks: list[RunTask], out: Path,
                  resume: bool) -> tuple[dict[int, RunOutcome], list[RunTask]]:
    """With `resume`, runs already finished with the same identity count as skipped; the
    rest is to do."""
    status: dict[int, RunOutcome] = {}
    todo: list[RunTask] = []
    for t in tasks:
        rd = out / "runs" / t.name
        if resume and (rd / "summary.json").exists() and _same_identity(rd, t):
            status[t.index] = RunOutcome(t, "skipped")
        else:
            todo.append(t)
    return status, todo


def _sweep_figures_and_report(data: SweepData) -> None:
    """The sweep's figures and report.html in its directory."""
    from l4slab.plots import plot_sweep
    from l4slab.report import sweep_report

    plot_sweep(data, data.path)
    sweep_report(data, data.path)


def _same_identity(run_dir: Path, task: RunTask) -> bool:
    try:
        have = json.loads((run_dir / "params.json").read_text())
    except (OSError, ValueError):
        return False
    return have == json.loads(json.dumps(task.identity(), default=str))


def _store(outcome: RunOutcome, out: Path, figures: bool) -> None:
    rd = out / "runs" / outcome.task.name
    rd.mkdir(parents=True, exist_ok=True)
    (rd / "params.json").write_text(
        json.dumps(outcome.task.identity(), indent=2, default=str) + "\n")
    if outcome.status == "ok" and outcome.run is not None:
        (rd / "error.txt").unlink(missing_ok=True)
        try:
            write_run_dir(outcome.run, rd, figures=figures, report=True,
                          figure_files=outcome.figure_files)
        except Exception as e:  # noqa: BLE001 - a write failure fails this run only
            outcome.status = "failed"
            outcome.error = f"writing {rd}: {e!r}"
    if outcome.status == "failed":
        (rd / "summary.json").unlink(missing_ok=True)
        (rd / "error.txt").write_text((outcome.error or "unknown error") + "\n")

"""Study suites: a suite is a set of sweep files (its *parts*) under scenarios/suites/NAME/, run
with the sweep machinery (`l4slab.sweeps.sweep`: process pool or Dask, resume by the run's
parameter digest), then turned into result tables, figures and report.html + report.md.

Layout of a suite directory (``-o DIR``)::

    suite.json              what ran: suite, quick or full, parts, seeds, provenance, wall time
    parts/<part>/           one sweep directory per part (runs/, sweep.parquet, report.html)
    parts/<part>/runmetrics.parquet   per-run metrics read from the run files (not in summary.json)
    tables/<table>.csv      result tables (keys, metric means, 95 % CI bounds, run counts)
    figures/*.png           figures
    reference.csv           l4slab beside --reference, with the difference (when given)
    report.md, report.html

A rerun of the same suite into the same directory resumes: finished runs are skipped (the
sweep's own resume), tables and reports are rebuilt. A directory that holds another suite, or
the other size (quick vs full), is refused instead of being overwritten.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from l4slab.columnar import read_parquet
from l4slab.scenario import ScenarioError
from l4slab.suites.types import (
    Analysis,
    Figure,
    Part,
    Suite,
    SuiteData,
    SuiteError,
    Table,
    TableShape,
    suites_dir,
)

__all__ = ["Part", "Suite", "Table", "Figure", "SuiteData", "SuiteResult", "run_suite",
           "suites_dir", "mean_ci", "aggregate", "metric_domain", "NONNEGATIVE", "UNIT",
           "SuiteError", "TableShape", "Analysis"]


# --- statistics -------------------------------------------------------------------------------

def mean_ci(x: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): Student-t confidence interval of the mean over runs (NaNs dropped);
    one run gives NaN bounds (no spread to estimate: empty in a CSV, not a zero-width CI)."""
    from scipy import stats

    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return float("nan"), float("nan"), float("nan")
    m = float(a.mean())
    if a.size < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))
    return m, m - half, m + half


#: Where a metric's mean can lie: throughputs, delays, counts and probabilities are never
#: negative; Jain's index and link utilisation are at most 1. A Student-t interval ignores
#: this and, over skewed runs (a flow starved in most seeds), reaches below 0; the interval is
#: therefore cut to the metric's domain, which keeps its coverage (the true mean lies inside).
NONNEGATIVE = (0.0, math.inf)
UNIT = (0.0, 1.0)


def aggregate(runs: pd.DataFrame, keys: list[str], metrics: Mapping[str, str],
              domains: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """One row per distinct `keys`: for each output column name -> run column in `metrics`,
    the mean over the group's runs and its 95 % CI (``_lo``, ``_hi``), plus ``n`` runs.

    The CI is cut to the output's domain: ``domains[out]`` if given, else [0, 1] for
    ``jain`` and ``utilisation`` and [0, inf) for every other output."""
    rows = []
    for k, g in runs.groupby(keys, sort=False, dropna=False):
        kv = k if isinstance(k, tuple) else (k,)
        row: dict[str, Any] = dict(zip(keys, kv, strict=True))
        for out, col in metrics.items():
            vals = g[col].to_numpy(dtype=float) if col in g else np.array([np.nan])
            m, lo, hi = mean_ci(vals)
            dlo, dhi = metric_domain(out, domains)
            row[out], row[f"{out}_lo"], row[f"{out}_hi"] = m, max(lo, dlo), min(hi, dhi)
        row["n"] = len(g)
        rows.append(row)
    return pd.DataFrame(rows)


def metric_domain(out: str, domains: Mapping[str, tuple[float, float]] | None = None
                  ) -> tuple[float, float]:
    """The interval an output's mean can take (see `aggregate`)."""
    if domains and out in domains:
        return domains[out]
    return UNIT if out in ("jain", "utilisation") else NONNEGATIVE


# --- provenance ---------------------------------------------------------------------------------

def git_commit() -> str | None:
    """The commit of the checkout the suite files come from (with '+dirty' for local edits)."""
    try:
        top = subprocess.run(["git", "-C", str(suites_dir()), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=5)
        if top.returncode != 0:
            return None  # an installed package, not a checkout
        root = top.stdout.strip()
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--",
                                "python", "crates", "scenarios"],
                               capture_output=True, text=True, timeout=10)
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError, SuiteError):
        return None


def kernel_profile(summary: Mapping[str, Any]) -> str:
    """The DualPI2 code line a run modelled, as its summary.json or effective scenario records
    it (``aqm.profile``); runs without the key used the default (Linux mainline). Only
    DualPI2 has profiles: other AQMs give "n/a (<kind>)"."""
    kind = summary.get("aqm")
    if isinstance(kind, str) and kind != "dualpi2":
        return f"n/a ({kind})"
    for where in (summary.get("aqm_params"), summary.get("aqm"),
                  (summary.get("scenario") or {}).get("aqm")):
        if isinstance(where, Mapping) and where.get("profile"):
            return str(where["profile"])
    for k in ("aqm_profile", "profile", "kernel_profile"):
        if summary.get(k):
            return str(summary[k])
    return "default (no aqm.profile recorded)"


# --- running ----------------------------------------------------------------------------------

@dataclass
class PartOutcome:
    name: str
    runs: int
    ran: int
    skipped: int
    failed: list[tuple[str, str]]
    elapsed_s: float


#: `--quick --emulate` for every suite: real-time runs of a few seconds (then the suite's own
#: `quick_emulate`).
EMULATE_QUICK: dict[str, Any] = {"replications": 2, "set": {"duration": "4s", "warmup": "1s"}}


def _reduce(spec: dict[str, Any], q: Mapping[str, Any]) -> dict[str, Any]:
    if "replications" in q:
        spec["replications"] = q["replications"]
    spec["set"] = {**spec.get("set", {}), **q.get("set", {})}
    for k, vals in q.get("grid", {}).items():
        if k in spec.get("grid", {}):
            spec["grid"][k] = list(vals)
    return spec


def part_spec(suite: Suite, part: Part, quick: bool, emulate: bool = False) -> dict[str, Any]:
    """The sweep dict of one part: its file with `base` made absolute and, for --quick, the
    suite's reductions applied (and, with `emulate`, the real-time ones)."""
    import tomllib

    path = suite.folder / part.sweep
    try:
        spec = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SuiteError(f"suite {suite.name}: sweep file {path} not found") from None
    except tomllib.TOMLDecodeError as e:
        raise SuiteError(f"{path}: not valid TOML: {e}") from None
    base = Path(str(spec.get("base", "")))
    if not base.is_absolute():
        spec["base"] = str((path.parent / base).resolve())
    if quick and callable(suite.quick):
        spec = suite.quick(spec)
    elif quick:
        spec = _reduce(spec, suite.quick)
    if quick and emulate:
        spec = _reduce(_reduce(spec, EMULATE_QUICK), suite.quick_emulate)
    if part.rewrite is not None:
        spec = part.rewrite(spec)
    if suite.prepare is not None:
        spec = suite.prepare(spec, suite.folder)
    return spec


def run_part(suite_name: str, part_name: str, spec: dict[str, Any], out: str, jobs: int,
             dask: Any = None, engine: Any = None) -> PartOutcome:
    """Run one part (a sweep) into `out`, then write runmetrics.parquet and the part's own
    analysis tables (analysis-<name>.parquet). Module-level so a process pool can call it;
    failures of single runs come back in `failed`. When the sweep ran nothing new, existing
    runmetrics and analysis files are reused."""
    from l4slab.suites.registry import get_suite
    from l4slab.sweeps import sweep

    t0 = time.perf_counter()
    suite = get_suite(suite_name)
    res = sweep(spec, out, jobs=jobs, dask=dask, report=False, engine=engine,
                raise_on_failure=False)
    failed = [(o.task.name, o.error or "") for o in res.failed]
    pdir = Path(out)
    fresh = res.ran > 0
    if suite.extract is not None and (fresh or not (pdir / "runmetrics.parquet").exists()):
        fresh = True
        rows = []
        for _, r in res.index.iterrows():
            if r["status"] != "ok":
                continue
            rd = pdir / str(r["run_dir"])
            try:
                scen = json.loads((rd / "summary.json").read_text()).get("scenario", {})
                rows.append({"run": r["run"], **suite.extract(rd, scen)})
            except Exception as e:  # noqa: BLE001 - a run's files unreadable: report, go on
                failed.append((str(r["run"]), f"reading run files: {e!r}"))
        pd.DataFrame(rows).to_parquet(pdir / "runmetrics.parquet", index=False)
    if suite.part_analyse is not None:
        done = pdir / "analysis.done"
        if fresh or not done.exists():
            done.unlink(missing_ok=True)
            part = next(p for p in suite.parts if p.name == part_name)
            for name, df in suite.part_analyse(part_runs(part, pdir, suite.flow_fields)).items():
                df.to_parquet(pdir / f"analysis-{name}.parquet", index=False)
            done.write_text("ok\n")
    return PartOutcome(part_name, len(res.index), res.ran, res.skipped, failed,
                       time.perf_counter() - t0)


def part_runs(part: Part, pdir: Path, flow_fields: Sequence[str] = ()) -> pd.DataFrame | None:
    """The finished runs of one part: sweep.parquet rows with status ok, joined with the
    per-flow `flow_fields` as ``flows.<id>.<field>`` columns (a swept key of the same name,
    e.g. ``flows.0.cc``, keeps its column) and runmetrics.parquet, plus the part name and
    labels in front."""
    from l4slab.sweeps import wide_flow_columns

    if not (pdir / "sweep.parquet").exists():
        return None
    idx = read_parquet(pdir / "sweep.parquet")
    idx = idx[idx["status"] == "ok"].copy()
    if flow_fields and len(idx):
        wide = wide_flow_columns(pdir, flow_fields)
        new = [c for c in wide.columns if c not in idx]
        idx = idx.merge(wide[["run", *new]], on="run", how="left")
    rm = pdir / "runmetrics.parquet"
    if rm.exists():
        extra = read_parquet(rm)
        if len(extra.columns):
            idx = idx.merge(extra, on="run", how="left", suffixes=("", "_x"))
    idx["run_path"] = [str(pdir / str(d)) for d in idx["run_dir"]]
    idx.insert(0, "part", part.name)
    for i, (k, v) in enumerate(part.labels.items()):
        # A label wins over a summary key of the same name (e.g. "aqm").
        idx = idx.drop(columns=[k], errors="ignore")
        idx.insert(1 + i, k, v)
    return idx


def _check_out_dir(out: Path, suite: Suite, quick: bool, engine: str = "simulator") -> None:
    meta_path = out / "suite.json"
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
        except ValueError:
            raise SuiteError(f"{meta_path} is not readable JSON; choose another -o") from None
        if meta.get("suite") != suite.name or bool(meta.get("quick")) != quick:
            size = "quick" if meta.get("quick") else "full-size"
            raise SuiteError(f"-o {out}: holds the {size} results of suite "
                             f"{meta.get('suite')!r}; choose another -o (results are never "
                             "overwritten)")
        if meta.get("engine", "simulator") != engine:
            raise SuiteError(f"-o {out}: holds {meta.get('engine', 'simulator')} runs of this "
                             f"suite and this invocation runs on the {engine}; choose another "
                             "-o (results are never overwritten)")
    elif out.exists() and any(p.name != LOCK_FILE for p in out.iterdir()):
        raise SuiteError(f"-o {out}: exists, is not empty and holds no suite results; choose "
                         "a new or empty directory")


@dataclass
class SuiteResult:
    """What `run_suite` did: run counts, failures, tables, figures and report paths."""
    out_dir: Path
    runs: int
    ran: int
    skipped: int
    failed: list[tuple[str, str, str]]
    elapsed_s: float
    analysis: Analysis | None
    report_html: Path | None
    report_md: Path | None
    reference: pd.DataFrame | None = None

    @property
    def ok(self) -> bool:
        """True when no run failed."""
        return not self.failed


def _execute(suite: Suite, specs: list[tuple[Part, dict[str, Any]]], out: Path, jobs: int,
             dask: str | None, engine: Any = None) -> Iterator[PartOutcome]:
    """Parts run one per worker (each part's sweep inline in its worker); with Dask, parts run
    one after the other, each spreading its runs over the cluster; with an `engine` (the
    emulator), one run at a time here."""
    if engine is not None:
        for part, spec in specs:
            yield run_part(suite.name, part.name, spec, str(out / "parts" / part.name), 1,
                           engine=engine)
        return
    if dask is not None:
        try:
            from distributed import Client
        except ImportError:
            raise SuiteError("--dask needs the 'distributed' package (pip install "
                             "'l4slab[dask]')") from None
        try:
            client = Client(dask, timeout="10s")
        except (OSError, TimeoutError) as e:
            raise SuiteError(f"--dask {dask}: cannot reach the scheduler ({e})") from None
        try:
            for part, spec in specs:
                yield run_part(suite.name, part.name, spec, str(out / "parts" / part.name),
                               jobs, dask=client)
        finally:
            client.close()
        return
    if jobs <= 1 or len(specs) <= 1:
        for part, spec in specs:
            yield run_part(suite.name, part.name, spec, str(out / "parts" / part.name),
                           jobs if len(specs) <= 1 else 1)
        return
    from l4slab.sweeps import start_pool, stop_pool

    pool = None
    try:
        pool, futs = start_pool(min(jobs, len(specs)), run_part,
                                ((suite.name, p.name, s, str(out / "parts" / p.name), 1)
                                 for p, s in specs))
        for fut in as_completed(futs):
            try:
                yield fut.result()
            except ScenarioError:
                raise
            except Exception as e:  # noqa: BLE001 - the worker died: report the part
                yield PartOutcome(futs[fut][1], 0, 0, 0, [("*", f"worker: {e!r}")], 0.0)
    except BaseException:
        if pool is not None:
            stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def collect_runs(suite: Suite, out: Path) -> pd.DataFrame:
    """All finished runs of all parts as one frame (see `SuiteData.runs`)."""
    frames = [f for p in suite.parts if (f := part_runs(p, out / "parts" / p.name,
                                                         suite.flow_fields)) is not None]
    if not frames:
        return pd.DataFrame(columns=["part", "run", "seed", "run_dir"])
    with warnings.catch_warnings():
        # Parts differ in their metric columns (e.g. no C queue without a Classic flow).
        warnings.simplefilter("ignore", FutureWarning)
        return pd.concat(frames, ignore_index=True)


def run_suite(suite: Suite, out_dir: str | Path, *, quick: bool = False, jobs: int | None = None,
              dask: str | None = None, reference: str | Path | None = None,
              on_part: Callable[[PartOutcome, int, int], None] | None = None,
              emulate: bool = False) -> SuiteResult:
    """Run (or resume) a suite into `out_dir` and write its tables, figures and reports.
    `emulate` runs it through the emulator (scenario mode, one run at a time) where the
    suite allows it. Raises SuiteError / ScenarioError on bad input before any run starts."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    engine = None
    if emulate:
        if suite.emulate_not:
            raise SuiteError(f"--emulate: suite {suite.name}: {suite.emulate_not}")
        if dask is not None or (jobs or 1) > 1:
            raise SuiteError("--emulate runs one run at a time on this machine; -j/--dask do "
                             "not apply")
        from l4slab.emulate import EmulatorEngine

        engine = EmulatorEngine()
    _check_out_dir(out, suite, quick, "emulator" if emulate else "simulator")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with _suite_lock(out):
            return _run_suite_locked(suite, out, t0, quick=quick, jobs=jobs, dask=dask,
                                     reference=reference, on_part=on_part, engine=engine)
    except ScenarioError:
        # Refused before anything ran: leave no directory behind that we made.
        if created and {p.name for p in out.iterdir()} <= {LOCK_FILE}:
            (out / LOCK_FILE).unlink(missing_ok=True)
            out.rmdir()
        raise


LOCK_FILE = ".l4slab-suite.lock"


@contextlib.contextmanager
def _suite_lock(out: Path) -> Iterator[None]:
    """One suite invocation per directory at a time (flock: released when the process dies,
    so an interrupted suite resumes without a stale lock)."""
    import fcntl

    with (out / LOCK_FILE).open("a+") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SuiteError(f"-o {out}: another suite is writing this directory; wait for it "
                             "to finish or choose another -o") from None
        yield


def _run_suite_locked(suite: Suite, out: Path, t0: float, *, quick: bool, jobs: int | None,
                      dask: str | None, reference: str | Path | None,
                      on_part: Callable[[PartOutcome, int, int], None] | None,
                      engine: Any = None) -> SuiteResult:
    from l4slab.suites.reference import check_reference, compare_reference, read_reference
    from l4slab.suites.report import write_reports

    ref = read_reference(reference) if reference is not None else None
    if ref is not None and suite.tables:
        check_reference(ref, suite.tables, reference)  # before any run, not after all
    specs = [(p, part_spec(suite, p, quick, engine is not None)) for p in suite.parts]
    # Plan and validate every part before anything runs: bad input fails fast.
    from l4slab.sweeps import load_sweep_spec, plan, validate_tasks

    n_runs = 0
    for p, s in specs:
        try:
            spec = load_sweep_spec(s)
            tasks = plan(spec)
            if engine is None:
                validate_tasks(tasks, spec)
            else:
                engine.validate(tasks)
        except ScenarioError as e:
            raise SuiteError(f"suite {suite.name}, part {p.name} ({p.sweep}): {e}") from None
        n_runs += len(tasks)
    out.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {"suite": suite.name, "quick": quick,
                            "engine": "emulator" if engine is not None else "simulator",
                            "parts": {p.name: {"sweep": p.sweep, "labels": p.labels,
                                               "replications": s.get("replications", 1),
                                               "seed": s.get("seed"), "set": s.get("set", {}),
                                               "grid": s.get("grid", {})}
                                      for p, s in specs}}
    (out / "suite.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    jobs = max(1, jobs or os.cpu_count() or 1)
    outcomes: list[PartOutcome] = []
    for o in _execute(suite, specs, out, jobs, dask, engine):
        outcomes.append(o)
        if on_part:
            on_part(o, len(outcomes), len(specs))
    runs = collect_runs(suite, out)
    data = SuiteData(suite=suite, out=out, quick=quick, runs=runs)
    (out / "tables").mkdir(exist_ok=True)
    (out / "figures").mkdir(exist_ok=True)
    analysis = suite.analyse(data) if len(runs) else Analysis([], [], ["no finished runs"])
    for t in analysis.tables:
        t.df.to_csv(out / "tables" / f"{t.name}.csv", index=False)
    cmp = None
    if ref is not None:
        cmp = compare_reference(analysis.tables, ref, reference)
        cmp.df.to_csv(out / "reference.csv", index=False)
        analysis.tables.append(cmp)
        analysis.figures.extend(_reference_figures(cmp, out))
    elapsed = time.perf_counter() - t0
    prov = provenance(runs, out, elapsed, n_runs, outcomes, quick)
    prov["engine"] = meta["engine"]
    meta["provenance"] = prov
    (out / "suite.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    html_path, md_path = write_reports(suite, analysis, prov, out)
    failed = [(o.name, run, err) for o in outcomes for run, err in o.failed]
    return SuiteResult(out_dir=out, runs=n_runs, ran=sum(o.ran for o in outcomes),
                       skipped=sum(o.skipped for o in outcomes), failed=failed,
                       elapsed_s=elapsed, analysis=analysis, report_html=html_path,
                       report_md=md_path, reference=None if cmp is None else cmp.df)


def provenance(runs: pd.DataFrame, out: Path, elapsed: float, n_runs: int,
               outcomes: list[PartOutcome], quick: bool) -> dict[str, Any]:
    """What the report states about how the numbers were made."""
    from l4slab import __version__

    seeds = sorted({int(s) for s in runs["seed"]}) if len(runs) else []
    versions: set[str] = set()
    profiles: set[str] = set()
    # What ran: the run length and warm-up (one run per part: a part's runs share them, the
    # sweep's [set] or base) and the seeds per grid point (one per replication).
    ran: set[tuple[float, float, int]] = set()
    firsts = runs.groupby("part", sort=False).head(1) if len(runs) else runs
    for _, r in pd.concat([firsts, runs.head(50)]).iterrows():
        try:
            s = json.loads((out / "parts" / str(r["part"]) / str(r["run_dir"]) / "summary.json")
                           .read_text())
        except (OSError, ValueError):
            continue
        versions.add(str(s.get("l4slab_version", "?")))
        profiles.add(kernel_profile(s))
        reps = int(runs.loc[runs["part"] == r["part"], "seed"].nunique())
        ran.add((float(s.get("duration_s", float("nan"))), float(s.get("warmup_s", 0.0)), reps))
    return {"l4slab_version": __version__,
            "run_versions": sorted(versions),
            "git_commit": git_commit(),
            "kernel_profile": ", ".join(sorted(profiles)) or "n/a",
            "size": "quick" if quick else "full",
            "runs_planned": n_runs,
            "runs_finished": int(len(runs)),
            "runs_ran_now": sum(o.ran for o in outcomes),
            "runs_resumed": sum(o.skipped for o in outcomes),
            "runs_failed": sum(len(o.failed) for o in outcomes),
            "seeds": seeds,
            "ran": [{"duration_s": d, "warmup_s": w, "seeds_per_point": k}
                    for d, w, k in sorted(ran)],
            "wall_time_s": round(elapsed, 2),
            "run_time_s": round(sum(o.elapsed_s for o in outcomes), 2),
            "finished_at_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}


def _reference_figures(cmp: Table, out: Path) -> list[Figure]:
    from l4slab.suites.figures import reference_bars

    return reference_bars(cmp, out / "figures")

"""The definitions a suite is made of (`Suite`, `Part`, `Table`, `TableShape`, `Figure`,
`SuiteData`, `Analysis`) and `SuiteError`; the suite modules, figures, reference and report
import these, and `l4slab.suites.core` runs them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from l4slab.columnar import read_parquet
from l4slab.scenario import ScenarioError

__all__ = ["SuiteError", "Part", "Table", "TableShape", "Figure", "SuiteData", "Analysis",
           "Suite", "suites_dir"]


class SuiteError(ScenarioError):
    """Bad suite input (unknown suite, clashing output directory, bad reference table)."""


# --- definitions ------------------------------------------------------------------------------

@dataclass
class Part:
    """One sweep file of a suite; `labels` name it in the result tables (e.g. link, traffic)."""

    name: str
    sweep: str
    labels: dict[str, str] = field(default_factory=dict)
    #: Rewrites this part's sweep dict after the quick reductions (e.g. a solo-run variant
    #: of another part's sweep file).
    rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None


@dataclass
class Table:
    """A result table: `keys` identify a row, `values` are the metric columns (means over runs);
    `df` may also hold ``<value>_lo``/``<value>_hi`` (95 % CI of the mean) and ``n`` (runs)."""

    name: str
    title: str
    df: pd.DataFrame
    keys: list[str]
    values: list[str]
    note: str = ""
    #: Optional pre-formatted view for the report (e.g. "24.1 (22.3)" cells); the CSV is `df`.
    display: pd.DataFrame | None = None


@dataclass
class TableShape:
    """A result table's name, key columns and metric columns, known before anything runs (so
    a --reference CSV is checked before the suite runs)."""
    name: str
    keys: list[str]
    values: list[str]


@dataclass
class Figure:
    """A figure a suite wrote: its file name stem, caption and path."""
    name: str
    title: str
    path: Path


@dataclass
class SuiteData:
    """What a suite's analysis gets: `runs` (one row per finished run: part, labels, swept
    parameters, seed, flattened summary.json metrics, per-run extra metrics, run_dir), the
    output directory and whether this is the quick form."""

    suite: Suite
    out: Path
    quick: bool
    runs: pd.DataFrame

    def run_dir(self, row: Mapping[str, Any]) -> Path:
        """The run directory of one row of `runs`."""
        return self.out / "parts" / str(row["part"]) / str(row["run_dir"])

    def part_tables(self, name: str) -> pd.DataFrame:
        """The `part_analyse` table `name` of every part, concatenated."""
        frames = [read_parquet(f) for p in self.suite.parts
                  if (f := self.out / "parts" / p.name / f"analysis-{name}.parquet").exists()]
        frames = [f for f in frames if len(f)]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@dataclass
class Analysis:
    """What a suite's `analyse` returns: result tables, figures and report notes."""

    tables: list[Table]
    figures: list[Figure]
    notes: list[str] = field(default_factory=list)


@dataclass
class Suite:
    """A study suite. `quick` reduces each part's sweep: ``replications`` (int), ``set``
    (overrides for every run) and ``grid`` (replacement value lists for swept keys), or is a
    function that rewrites a part's sweep dict.
    `extract(run_dir, scenario)` reads per-run metrics that summary.json lacks (in the worker
    that ran the part); `analyse(data)` builds the tables and figures. `flow_fields` names the
    per-flow summary fields `analyse` reads per run as ``flows.<id>.<field>`` columns of
    `SuiteData.runs` (from each part's sweep_flows.parquet; sweep.parquet holds per-run
    scalars only)."""

    name: str
    title: str
    description: str
    parts: list[Part]
    quick: dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]
    analyse: Callable[[SuiteData], Analysis]
    extract: Callable[[Path, dict[str, Any]], dict[str, float]] | None = None
    #: Per-part analysis run in the part's worker (e.g. validation tests): its finished runs
    #: -> named tables, saved as parts/<part>/analysis-<name>.parquet (`SuiteData.part_tables`).
    part_analyse: Callable[[pd.DataFrame], dict[str, pd.DataFrame]] | None = None
    #: Rewrites a part's sweep dict before it runs (e.g. trace locations); gets the suite dir.
    prepare: Callable[[dict[str, Any], Path], dict[str, Any]] | None = None
    #: The shapes of the result tables `analyse` builds (what a --reference can name).
    tables: list[TableShape] = field(default_factory=list)
    headline: str = ""
    flow_fields: tuple[str, ...] = ()
    #: Why `--emulate` does not apply to this suite (one line), or "" when it does.
    emulate_not: str = ""
    #: `--quick --emulate`: reductions on top of `quick` (same keys), after EMULATE_QUICK.
    quick_emulate: dict[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        """The suite's sweep files: scenarios/suites/NAME."""
        return suites_dir() / self.name


def suites_dir() -> Path:
    """The shipped suite files (the package's data/scenarios/suites, which the source tree's
    scenarios/ links to), or $L4SLAB_SUITES_DIR."""
    env = os.environ.get("L4SLAB_SUITES_DIR")
    if env:
        p = Path(env)
    else:
        p = Path(__file__).resolve().parents[1] / "data" / "scenarios" / "suites"
    if not p.is_dir():
        raise SuiteError(f"suite files not found at {p}: set L4SLAB_SUITES_DIR to a folder "
                         "holding the suites (`l4slab scenarios copy DIR` writes DIR/suites)")
    return p

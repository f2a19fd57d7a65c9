"""Reports of a validation: a rich table (the shape of the published Table 3 / Table 5),
validation.csv, validation.md and per-metric histograms of the distance distributions."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from l4slab.validation.core import MetricResult
from l4slab.validation.interpret import effect_text


def _f(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def _yn(x: bool | None) -> str:
    return "-" if x is None else ("yes" if x else "no")


def _verdict(r: MetricResult, value: bool | None) -> str:
    """yes / no, or why there is no verdict: p_hat_max cannot go below 1 / (n_a·n_b + 1)."""
    if r.undecidable:
        return f"undecidable at this n (need ≥ {r.needed} runs per group)"
    return _yn(value)


#: What the columns mean (printed under the table and in validation.md).
COLUMNS_NOTE = (
    "p̂<0.05 (the published test's 'similar'): p̂_max < 0.05, i.e. cross-group distances"
    " rarely exceed the larger within-group 95th percentile ε_max. signif.: the bootstrap 95 %"
    " CI of p̂_max has its upper end < 0.05, i.e. that survives resampling the runs. With"
    " n_a·n_b cross pairs p̂_max ≥ 1/(n_a·n_b + 1), so groups smaller than 5 runs each cannot"
    " reach 0.05: undecidable. Identical groups give p̂_max near 0.05 by construction (ε_max"
    " is a 95th percentile), so p̂_max alone cannot say 'same' or 'different'. null p̂_max: the"
    " median [95th percentile] p̂_max of the pooled runs split at random into groups of these"
    " sizes, i.e. what identical groups give at this n. perm. p: permutation test of cross-"
    " vs within-group distances (energy distance); effect: median cross / median within"
    " distance, and for scalars the difference of means B − A with its Welch 95 % CI. verdict:"
    " 'different' when perm. p < 0.05, else 'indistinguishable at this n'; 'too few runs'"
    " when no split can reach p < 0.05."
)


def _null(r: MetricResult) -> str:
    i = r.interp
    return "-" if i is None else f"{_f(i.null_p_hat_median, 3)} [{_f(i.null_p_hat_p95, 3)}]"


def _perm(r: MetricResult) -> str:
    i = r.interp
    if i is None:
        return "-"
    return f"{_f(i.perm_p, 3)}" + ("" if i.exact else f" ({i.permutations - 1} perm.)")


def _effect(r: MetricResult) -> str:
    return "-" if r.interp is None else effect_text(r.interp, r.kind, metric_unit(r.metric))


def _reading(r: MetricResult) -> str:
    return "-" if r.interp is None else r.interp.verdict


def _ci(r: MetricResult) -> str:
    return "-" if r.ci_low is None else f"[{_f(r.ci_low)}, {_f(r.ci_high)}]"


def results_table(results: list[MetricResult], name_a: str = "A", name_b: str = "B") -> Table:
    """A rich table of the results: the exceedance-test columns, or the plain distances."""
    tests = any(r.p_hat is not None for r in results)
    if tests:
        r0 = results[0] if results else None
        title = f"Validation: {name_a} vs {name_b}" + (
            f" (n = {r0.n_a} / {r0.n_b} runs, B = {r0.bootstrap}, seed {r0.seed})" if r0 else ""
        )
    else:
        title = f"Distances: {name_a} vs {name_b}"
    t = Table(title=title, caption=COLUMNS_NOTE if tests else None, caption_justify="left")
    t.add_column("metric")
    t.add_column("distance")
    if tests:
        for c in ("ε_max", "p̂_max", "95% CI", "p̂<0.05", "signif.", "null p̂_max", "perm. p"):
            t.add_column(c, justify="right")
        t.add_column("effect")
        t.add_column("verdict")
        for r in results:
            t.add_row(
                r.metric,
                r.kind,
                _f(r.eps_max),
                _f(r.p_hat),
                _ci(r),
                _verdict(r, r.similar),
                "undecidable" if r.undecidable else _yn(r.significant),
                _null(r),
                _perm(r),
                _effect(r),
                _reading(r),
            )
    else:
        t.add_column("d(A, B)", justify="right")
        for r in results:
            t.add_row(r.metric, r.kind, _f(float(r.cross[0]) if r.cross.size else None))
    return t


def print_results(
    results: list[MetricResult], console: Console, name_a: str = "A", name_b: str = "B"
) -> None:
    """Print the results table to ``console``."""
    console.print(results_table(results, name_a, name_b))


def to_markdown(results: list[MetricResult], name_a: str, name_b: str) -> str:
    """The results as a Markdown report (validation.md)."""
    lines = [f"# Validation: `{name_a}` vs `{name_b}`", ""]
    if results and results[0].p_hat is not None:
        r0 = results[0]
        lines += [
            f"Runs: {r0.n_a} (A) / {r0.n_b} (B); bootstrap B = {r0.bootstrap}, seed {r0.seed}"
            + (f", Sakoe-Chiba band {r0.band}" if r0.band else ", no DTW window")
            + ".",
            "",
            "ε_max = max of the within-group 95th percentiles; p̂_max = (#{cross > ε_max} + 1)"
            " / (n_cross + 1). " + COLUMNS_NOTE,
            "",
            "| metric | distance | ε_max | p̂_max | 95% CI | p̂<0.05 | significant | null p̂_max"
            " | perm. p | effect | verdict |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
        ]
        for r in results:
            lines.append(
                f"| {r.metric} | {r.kind} | {_f(r.eps_max)} | {_f(r.p_hat)} | {_ci(r)} | "
                f"{_verdict(r, r.similar)} | "
                f"{'undecidable' if r.undecidable else _yn(r.significant)} | {_null(r)} | "
                f"{_perm(r)} | {_effect(r)} | {_reading(r)} |"
            )
    else:
        lines += ["| metric | distance | d(A, B) |", "|---|---|---:|"]
        for r in results:
            lines.append(f"| {r.metric} | {r.kind} | {_f(float(r.cross[0]))} |")
    return "\n".join(lines) + "\n"


def _slug(metric: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", metric)


#: Units of the metrics (validation.io's table); a distance has its metric's unit.
_UNITS = (("tput_", "Mb/s"), ("sojourn_", "ms"), ("qdelay", "ms"), ("backlog_", "packets"),
          ("marks_", "marks per sample"), ("drops", "drops per sample"),
          ("ce_flow", "CE per sample"), ("capacity", "Mb/s"), ("arrival", "Mb/s"))


def metric_unit(metric: str) -> str:
    """The unit of a metric name (``mean:tput_flow0`` -> Mb/s), or "" when unknown."""
    base = metric.split(":", 1)[-1]
    return next((u for prefix, u in _UNITS if base.startswith(prefix)), "")


def histogram_figure(r: MetricResult):
    """Within-A, within-B and cross distance histograms with ε_max marked (a matplotlib
    Figure, object API: no pyplot state)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    allv = np.concatenate([r.within_a, r.within_b, r.cross])
    bins = np.histogram_bin_edges(allv, bins=40) if allv.size else 10
    for data, label, color in (
        (r.within_a, "within A", "tab:blue"),
        (r.within_b, "within B", "tab:orange"),
        (r.cross, "cross A–B", "tab:gray"),
    ):
        if data.size:
            ax.hist(data, bins=bins, alpha=0.5, label=label, color=color, density=True)
    if r.eps_max is not None:
        ax.axvline(r.eps_max, color="black", linestyle="--", label=f"ε_max = {r.eps_max:.3g}")
    unit = metric_unit(r.metric)
    ax.set_xlabel(("normalised DTW distance" if r.kind == "dtw" else "|x − y|")
                  + (f" [{unit}]" if unit else ""))
    ax.set_ylabel("density")
    title = r.metric + (f"  (p̂_max = {r.p_hat:.3g})" if r.p_hat is not None else "")
    ax.set_title(title)
    ax.legend()
    return fig


def write_histogram(r: MetricResult, path: Path) -> Path:
    """Write :func:`histogram_figure` of ``r`` as a PNG."""
    histogram_figure(r).savefig(path, dpi=100)
    return path


def write_outputs(
    results: list[MetricResult], out_dir: Path, name_a: str = "A", name_b: str = "B"
) -> list[Path]:
    """validation.csv, validation.md and hist_<metric>.png in ``out_dir`` (created)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "validation.csv"
    pd.DataFrame([r.row() for r in results]).to_csv(csv_path, index=False)
    md_path = out_dir / "validation.md"
    md_path.write_text(to_markdown(results, name_a, name_b))
    written = [csv_path, md_path]
    for r in results:
        written.append(write_histogram(r, out_dir / f"hist_{_slug(r.metric)}.png"))
    return written

"""`l4slab validate GROUP_A GROUP_B`: the statistical validation from the command line.

The coordinator attaches :data:`validate_cmd` to the ``l4slab`` group. Bad input (empty group,
a single run, mismatched metrics, NaN, unreadable files) prints one ``Error: ...`` line naming
the problem and exits with status 2, without a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from l4slab.console import make_console, os_error_message
from l4slab.validation.core import DEFAULT_BOOTSTRAP, copy_groups, validate_groups
from l4slab.validation.io import (
    ValidationInputError,
    load_group,
    resolve_group,
    scenario_warmup_s,
    sweep_groups,
)
from l4slab.validation.report import _slug, print_results, write_outputs


class BadValidationInput(click.ClickException):
    """A ClickException with exit status 2 (bad input), printed as ``Error: <message>``."""

    exit_code = 2




def _split_metrics(values: tuple[str, ...]) -> list[str] | None:
    out = [m.strip() for v in values for m in v.split(",") if m.strip()]
    return out or None


@click.command("validate")
@click.argument("group_a")
@click.argument("group_b", required=False)
@click.option(
    "--metrics",
    "-m",
    multiple=True,
    help="Metrics to test (comma-separated or repeated), e.g. tput_total,sojourn_L or "
    "mean:tput_flow0 for a scalar. Default: every metric all runs share.",
)
@click.option(
    "--by",
    "by_key",
    metavar="KEY",
    default=None,
    help="GROUP_A is one sweep directory: compare its grid points by KEY (e.g. "
    "aqm.step_thresh), each value against the first.",
)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(min=2),
    default=DEFAULT_BOOTSTRAP,
    show_default=True,
    help="Bootstrap replicates B.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the bootstrap's resampling (same seed, same confidence intervals).",
)
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory for validation.csv, validation.md and the histograms (default: beside "
    "the inputs, validation-A_vs_B in the directory holding GROUP_A and GROUP_B, or "
    "SWEEP-validation-by-KEY beside a sweep).",
)
@click.option("--force", is_flag=True, help="Overwrite an earlier validation in --out.")
@click.option(
    "--band",
    type=click.IntRange(min=1),
    default=None,
    help="Sakoe-Chiba band half-width in samples (default: no window, as published).",
)
@click.option(
    "--warmup",
    "warmup_s",
    type=click.FloatRange(min=0.0),
    default=None,
    help="Drop samples with t_s below this many seconds (default: the runs' own warm-up "
    "from summary.json; 0 for CSV traces).",
)
def validate_cmd(
    group_a: str,
    group_b: str | None,
    metrics: tuple[str, ...],
    by_key: str | None,
    n_boot: int,
    seed: int,
    out_dir: Path | None,
    force: bool,
    band: int | None,
    warmup_s: float | None,
) -> None:
    """Test whether two groups of runs are statistically similar (DTW exceedance test).

    GROUP_A and GROUP_B are each a directory of run directories and/or CSV traces, a sweep
    directory, or a glob (quote it). Every group needs at least 2 runs (5 for a verdict at
    p < 0.05). With --by KEY, GROUP_A is a sweep and its grid points are the groups.
    """
    console = make_console()
    try:
        if by_key is not None:
            if group_b is not None:
                raise ValidationInputError("--by KEY takes one sweep directory, not two groups")
            groups = sweep_groups(Path(group_a), by_key)
            if len(groups) < 2:
                raise ValidationInputError(f"{group_a}: {by_key} has one value only "
                                           f"({next(iter(groups))}); nothing to compare")
            values = list(groups)
            pairs = [((f"{by_key}={values[0]}", groups[values[0]]),
                      (f"{by_key}={v}", groups[v])) for v in values[1:]]
        else:
            if group_b is None:
                raise ValidationInputError("give two groups (GROUP_A GROUP_B), or one sweep "
                                           "directory with --by KEY")
            pairs = [((group_a, resolve_group(group_a)), (group_b, resolve_group(group_b)))]
        if out_dir is None:
            out_dir = default_out_dir(group_a, group_b, by_key)
        _check_out(out_dir, force)
        for (name_a, paths_a), (name_b, paths_b) in pairs:
            w = warmup_s if warmup_s is not None else scenario_warmup_s(paths_a + paths_b)
            runs_a = load_group("A", paths_a, w, given=name_a)
            runs_b = load_group("B", paths_b, w, given=name_b)
            with console.status(f"{name_a} vs {name_b}: distances and {n_boot} bootstrap "
                                f"replicates per metric (warm-up {w:g} s) …"):
                results = validate_groups(runs_a, runs_b, _split_metrics(metrics), n_boot,
                                          seed, band)
            print_results(results, console, name_a, name_b)
            for g in copy_groups(results):
                console.print(f"[yellow]warning: the runs of group {g} "
                              f"({name_a if g == 'A' else name_b}) are identical in every "
                              "metric: they are one run repeated, not independent samples, so "
                              "p̂_max compares against copies. Vary something per seed "
                              "(flows' start_jitter, link loss or jitter).[/]")
            target = out_dir if len(pairs) == 1 else out_dir / _slug(f"{name_a}_vs_{name_b}")
            try:
                written = write_outputs(results, target, name_a, name_b)
            except OSError as e:
                raise BadValidationInput(os_error_message(e)) from None
            console.print(f"wrote {len(written)} files to {target}", highlight=False)
    except ValidationInputError as e:
        raise BadValidationInput(str(e)) from None


def default_out_dir(group_a: str, group_b: str | None, by_key: str | None) -> Path:
    """Where a validation goes without -o: beside its inputs, never into the working directory
    (a checkout would collect an untracked ./validation/). A group given as a glob counts
    from its pattern's directory."""
    a = Path(group_a.rstrip("/"))
    if by_key is not None or group_b is None:
        return a.parent / _slug(f"{a.name}-validation-by-{by_key}")
    b = Path(group_b.rstrip("/"))
    try:
        base = Path(os.path.commonpath([a.parent, b.parent]))
    except ValueError:  # one relative, one absolute
        base = Path(os.path.commonpath([a.parent.absolute(), b.parent.absolute()]))
    if base.name == "runs" and (base.parent / "sweep.json").is_file():
        base = base.parent  # beside a sweep's runs/, which holds its run directories only
    return base / _slug(f"validation-{a.name}_vs_{b.name}")


def _check_out(out_dir: Path, force: bool) -> None:
    """Never overwrite an earlier validation silently."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ValidationInputError(f"{out_dir}: exists and is not a directory")
    if not force and out_dir.is_dir() and any(out_dir.iterdir()):
        raise ValidationInputError(f"{out_dir}: not empty (an earlier validation?); choose "
                                   "another -o or pass --force to overwrite")


@click.command("import-mahimahi")
@click.argument("log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--out",
    "out_csv",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="CSV to write (default: LOG with a .csv suffix).",
)
@click.option(
    "--interval-ms",
    type=click.FloatRange(min=0.0, min_open=True),
    default=100.0,
    show_default=True,
    help="Bin width for throughput and queue delay.",
)
@click.option("--force", is_flag=True, help="Replace an existing CSV.")
def mahimahi_import_cmd(log: Path, out_csv: Path | None, interval_ms: float,
                        force: bool) -> None:
    """Convert a Mahimahi link log (mm-link --uplink-log/--downlink-log) to the validation CSV
    layout (t_s, tput_mbps, capacity_mbps, arrival_mbps, qdelay_ms, drops)."""
    from l4slab.validation.io import mahimahi_to_csv

    out = out_csv or log.with_suffix(".csv")
    if out.resolve() == log.resolve():
        raise BadValidationInput(f"-o {out}: that is the log being read; choose another file")
    if out.exists() and not force:
        raise BadValidationInput(f"{out}: exists (an earlier import?); choose another -o or "
                                 "pass --force to replace it")
    try:
        mahimahi_to_csv(log, out, interval_ms)
    except ValidationInputError as e:
        raise BadValidationInput(str(e)) from None
    except OSError as e:
        raise BadValidationInput(os_error_message(e)) from None
    click.echo(f"wrote {out}")

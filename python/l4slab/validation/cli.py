"""`l4slab validate GROUP_A GROUP_B`: the statistical validation from the command line.

The coordinator attaches :data:`validate_cmd` to the ``l4slab`` group. Bad input (empty group,
a single run, mismatched metrics, NaN, unreadable files) prints one ``Error: ...`` line naming
the problem and exits with status 2, without a traceback.
"""

from __future__ import annotations

from pathlib import Path

import click

from l4slab.console import make_console, os_error_message
from l4slab.validation.core import DEFAULT_BOOTSTRAP, load_group, validate_groups
from l4slab.validation.io import ValidationInputError
from l4slab.validation.report import print_results, write_outputs


class BadValidationInput(click.ClickException):
    """A ClickException with exit status 2 (bad input), printed as ``Error: <message>``."""

    exit_code = 2




def _split_metrics(values: tuple[str, ...]) -> list[str] | None:
    out = [m.strip() for v in values for m in v.split(",") if m.strip()]
    return out or None


@click.command("validate")
@click.argument("group_a")
@click.argument("group_b")
@click.option(
    "--metrics",
    "-m",
    multiple=True,
    help="Metrics to test (comma-separated or repeated), e.g. tput_total,sojourn_L or "
    "mean:tput_flow0 for a scalar. Default: every metric all runs share.",
)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(min=2),
    default=DEFAULT_BOOTSTRAP,
    show_default=True,
    help="Bootstrap replicates B.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("validation"),
    show_default=True,
    help="Directory for validation.csv, validation.md and the histograms.",
)
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
    default=0.0,
    show_default=True,
    help="Drop samples with t_s below this many seconds.",
)
def validate_cmd(
    group_a: str,
    group_b: str,
    metrics: tuple[str, ...],
    n_boot: int,
    seed: int,
    out_dir: Path,
    band: int | None,
    warmup_s: float,
) -> None:
    """Test whether two groups of runs are statistically similar (DTW exceedance test).

    GROUP_A and GROUP_B are each a directory of run directories and/or CSV traces, or a glob
    (quote it). Every group needs at least 2 runs.
    """
    console = make_console()
    try:
        runs_a = load_group("A", group_a, warmup_s)
        runs_b = load_group("B", group_b, warmup_s)
        results = validate_groups(runs_a, runs_b, _split_metrics(metrics), n_boot, seed, band)
    except ValidationInputError as e:
        raise BadValidationInput(str(e)) from None
    print_results(results, console, group_a, group_b)
    try:
        written = write_outputs(results, out_dir, group_a, group_b)
    except OSError as e:
        raise BadValidationInput(os_error_message(e)) from None
    console.print(f"wrote {len(written)} files to {out_dir}")


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
def mahimahi_import_cmd(log: Path, out_csv: Path | None, interval_ms: float) -> None:
    """Convert a Mahimahi link log (mm-link --uplink-log/--downlink-log) to the validation CSV
    layout (t_s, tput_mbps, capacity_mbps, arrival_mbps, qdelay_ms, drops)."""
    from l4slab.validation.io import mahimahi_to_csv

    out = out_csv or log.with_suffix(".csv")
    try:
        mahimahi_to_csv(log, out, interval_ms)
    except ValidationInputError as e:
        raise BadValidationInput(str(e)) from None
    except OSError as e:
        raise BadValidationInput(os_error_message(e)) from None
    click.echo(f"wrote {out}")

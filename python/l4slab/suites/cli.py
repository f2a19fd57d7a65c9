"""`l4slab suite NAME [--quick] [-o DIR] [--jobs N] [--dask ADDR] [--reference FILE.csv]
[--emulate]`: run a study suite and write its tables, figures and report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from l4slab.console import ERROR_PREFIX
from l4slab.results import OutputDirError
from l4slab.scenario import ScenarioError

EXIT_FAILED_RUNS = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def emulator_entry_point() -> Path | None:
    """The emulator binary as `l4slab emulate` finds it ($L4SLAB_EMU_BIN, the source tree's
    target/release/l4s-emu, PATH) if it is a working emulator: its --help exits 0 (the
    placeholder shipped before the emulator exited 2 on every invocation)."""
    try:
        from l4slab.emulate import EmulateError, find_binary
    except ImportError:  # a release without the emulator's front end
        return None
    try:
        binary = find_binary()
    except EmulateError:
        return None
    try:
        r = subprocess.run([str(binary), "--help"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return binary if r.returncode == 0 else None


@click.command("suite")
@click.argument("name")
@click.option("--quick", is_flag=True, help="Reduced size (each suite under a minute; CI).")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Suite directory (default: results/suite-NAME[-quick]); rerun to resume.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Parallel workers (default: all cores).")
@click.option("--dask", "dask_address", metavar="ADDRESS", default=None,
              help="Run on a Dask cluster (scheduler address, e.g. tcp://host:8786).")
@click.option("--reference", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="CSV with a result table's key columns and metrics (e.g. from a paper or "
                   "a kernel testbed): shown beside l4slab's numbers with the difference.")
@click.option("--emulate", is_flag=True,
              help="Run through the emulator (the scenarios' flows as l4slab flow senders, "
                   "real time, one run at a time) where the suite allows it; with --quick "
                   "each run lasts a few seconds.")
def suite_cmd(name: str, quick: bool, out_dir: Path | None, jobs: int | None,
              dask_address: str | None, reference: Path | None, emulate: bool) -> None:
    """Run the study suite NAME and write tables, figures, report.html and report.md (the
    suite names are filled in below from the registry)."""
    from rich.console import Console
    from rich.markup import escape

    from l4slab.suites import NAMES, get_suite, run_suite

    console = Console()
    err = Console(stderr=True)

    def fail(msg: str, code: int = EXIT_BAD_INPUT) -> None:
        err.print(f"[bold red]{ERROR_PREFIX}[/] {escape(msg)}", highlight=False, soft_wrap=True)
        sys.exit(code)

    if name not in NAMES:
        fail(f"unknown suite {name!r}; expected one of {', '.join(NAMES)}")
    if emulate and emulator_entry_point() is None:
        fail("--emulate: no working emulator (l4s-emu) is installed: build it with `make "
             "develop` (or set L4SLAB_EMU_BIN), or run without --emulate to use the simulator")
    if out_dir is None:
        out_dir = Path("results") / (f"suite-{name}{'-quick' if quick else ''}"
                                     f"{'-emu' if emulate else ''}")

    def on_part(o, done: int, total: int) -> None:  # noqa: ANN001 - PartOutcome
        bad = f", [red]{len(o.failed)} failed[/]" if o.failed else ""
        console.print(f"[{done}/{total}] {escape(o.name)}: {o.runs} runs ({o.ran} ran, "
                      f"{o.skipped} resumed{bad}) {o.elapsed_s:.1f} s", highlight=False)

    from l4slab.sweeps import signals_interrupt

    try:
        with signals_interrupt() as got:
            suite = get_suite(name)
            res = run_suite(suite, out_dir, quick=quick, jobs=jobs, dask=dask_address,
                            reference=reference, on_part=on_part, emulate=emulate)
    except (ScenarioError, OutputDirError) as e:
        fail(str(e))
    except KeyboardInterrupt:
        err.print(f"interrupted: finished runs are kept in {out_dir}; run the same command "
                  "again to resume.")
        # 130 for Ctrl-C (EXIT_INTERRUPTED), 128 + N for SIGTERM and SIGHUP.
        sys.exit(128 + got["signal"])
    console.print(f"suite {name}: {res.runs} runs ({res.ran} ran, {res.skipped} resumed, "
                  f"{len(res.failed)} failed) in {res.elapsed_s:.1f} s", highlight=False)
    if res.reference is not None:
        console.print(f"reference comparison: {out_dir / 'reference.csv'}", highlight=False)
    if suite.headline:
        console.print(f"headline table: {out_dir / 'tables' / (suite.headline + '.csv')}",
                      highlight=False)
    console.print(f"report: {res.report_html} and {res.report_md}", highlight=False)
    if res.failed:
        for part, run, e in res.failed[:20]:
            err.print(f"[red]failed[/] {escape(part)}/{escape(run)}: {escape(e)}",
                      highlight=False)
        if len(res.failed) > 20:
            err.print(f"… and {len(res.failed) - 20} more (see parts/*/runs/*/error.txt)")
        sys.exit(EXIT_FAILED_RUNS)


def _suite_help() -> str:
    """The command's help, naming every registered suite (never a list kept by hand)."""
    from l4slab.suites import NAMES

    return (f"Run the study suite NAME ({', '.join(NAMES)}) and write tables, figures, "
            "report.html and report.md.")


suite_cmd.help = _suite_help()

"""The `l4slab` command line: run, sweep, plot, summary, validate/compare, import-mahimahi, emulate.

Exit codes: 0 success; 1 some sweep runs failed (finished runs are kept); 2 bad input (the
message names the field) or a feature that is not available; 130 interrupted.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from l4slab import __version__
from l4slab.console import ERROR_PREFIX, error_line, make_console, os_error_message
from l4slab.results import OutputDirError, UnreadableFileError
from l4slab.scenario import ScenarioError

console = make_console()
err_console = make_console(stderr=True)

EXIT_FAILED_RUNS = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def _fail(msg: str, code: int = EXIT_BAD_INPUT) -> None:
    err_console.print(f"[bold red]{ERROR_PREFIX}[/] {msg}", highlight=False, markup=True,
                      soft_wrap=True)
    sys.exit(code)


def _friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Bad input becomes one message and exit code 2, never a traceback."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ScenarioError, OutputDirError, UnreadableFileError) as e:
            _fail(_escape(str(e)))
        except UnicodeDecodeError as e:
            _fail(_escape(f"not a text file ({e.reason} at byte {e.start})"))
        except OSError as e:
            _fail(_escape(os_error_message(e)))
    return wrapper


def _escape(s: str) -> str:
    from rich.markup import escape

    return escape(s)


class Interrupted(Exception):
    """Ctrl-C in a command that does not handle it itself (`entry` says so in one line)."""


class _Group(click.Group):
    """The `l4slab` group: a KeyboardInterrupt from a command leaves click as Interrupted,
    not as click's "Aborted!" (exit 1) after a blank line."""

    def invoke(self, ctx: click.Context) -> Any:
        from l4slab import interrupt

        try:
            interrupt.test_hook("command")
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="l4slab")
def main() -> None:
    """l4slab — an L4S lab: simulate DualPI2, Prague, Cubic & co., sweep parameters, plot,
    compare. Each command has --help."""


# --- run --------------------------------------------------------------------------------------

@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Run directory (default: results/<scenario>-<time>).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a scenario key, e.g. --set aqm.step_thresh=5ms --set "
                   "flows.0.cc=dctcp (or flows[0].cc; values are TOML scalars, bare words "
                   "are strings). Changing aqm.kind starts [aqm] from that AQM's defaults.")
@click.option("--unset", "unset", multiple=True, metavar="KEY",
              help="Remove a scenario key so its default applies, e.g. --unset "
                   "aqm.step_thresh (applied before --set).")
@click.option("--packets", is_flag=True,
              help="Also record packets.parquet (same as --set output.packets=true).")
@click.option("--no-figures", is_flag=True, help="Skip figures (tables and report only).")
@click.option("--force", is_flag=True,
              help="Replace the run in a non-empty -o directory (its run files are removed "
                   "first); without it only a rerun of the same scenario may write there.")
@click.option("--pcap", "pcap", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a pcapng trace (Wireshark, tshark) of every packet the AQM "
                   "passed, marked or dropped: synthetic IPv4/TCP headers with the ECN bits, "
                   "the verdict and queue as packet comments.")
@_friendly
def run(scenario: Path, out_dir: Path | None, overrides: tuple[str, ...], unset: tuple[str, ...],
        packets: bool, no_figures: bool, force: bool, pcap: Path | None) -> None:
    """Run one SCENARIO (TOML) and write its run directory."""
    from l4slab.runner import run as run_scenario

    if packets:
        overrides = (*overrides, "output.packets=true")
    if out_dir is None:
        out_dir = Path("results") / f"{scenario.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    from l4slab.progress import run_with_progress
    from l4slab.runner import effective_scenario
    from l4slab.scenario import load_scenario

    t0 = time.perf_counter()
    duration_s = _duration_s(effective_scenario(load_scenario(scenario), list(overrides), unset))
    result = run_with_progress(
        console, f"simulating {scenario.name}", duration_s,
        lambda prog: run_scenario(scenario, out_dir, list(overrides), figures=not no_figures,
                                  force=force, unset=unset, pcap=pcap, progress=prog))
    if pcap is not None:
        console.print(f"pcapng: {pcap}", highlight=False)
    elapsed = time.perf_counter() - t0
    _print_summaries([(str(out_dir), result.summary, result.scenario)])
    for msg in run_notes(result.summary, result.scenario):
        console.print(msg, highlight=False, markup=False)
    console.print(f"run directory: [bold]{out_dir}[/] ({elapsed:.1f} s); "
                  f"report: {out_dir / 'report.html'}", highlight=False)


def run_notes(summary: dict[str, Any], scenario: dict[str, Any]) -> list[str]:
    """What a finished simulator run tells its user beside the table: flows whose `stack` only
    the emulator runs, workloads that drew no arrival or whose offered load's 95 % interval
    leaves out the target."""
    notes = []
    other = [f"flows[{i}]" for i, f in enumerate(scenario.get("flows", []))
             if f.get("stack", "model") != "model"]
    if other:
        notes.append(f"note: {', '.join(other)}: stack applies to the emulator only; the "
                     "simulator ran the model")
    for w in summary.get("workloads") or []:
        i, ci, target = w.get("id"), w.get("offered_load_ci95"), w.get("target_load")
        if w.get("note"):
            notes.append(f"note: workloads[{i}]: {w['note']}")
        elif ci and target is not None and not ci[0] <= target <= ci[1]:
            notes.append(
                f"warning: workloads[{i}]: offered load {w['offered_load']:.3f} (95 % CI "
                f"{ci[0]:.3f}–{ci[1]:.3f} over {w['flows']} arrivals) leaves out the target "
                f"load {target:g}: heavy-tailed sizes need a longer start..stop (or lighter "
                "sizes) for the run to offer its target")
    return notes


def _duration_s(data: dict[str, Any]) -> float:
    """The scenario's duration in seconds (0 when unknown: no progress bar)."""
    from l4slab._core import parse_duration_ns

    try:
        return parse_duration_ns(str(data["duration"])) / 1e9
    except (KeyError, ValueError):
        return 0.0


# --- sweep ------------------------------------------------------------------------------------

@main.command()
@click.argument("sweep_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Parallel runs (default: all cores).")
@click.option("--dask", "dask_address", metavar="ADDRESS", default=None,
              help="Run on a Dask cluster (scheduler address, e.g. tcp://host:8786).")
@click.option("--dask-local", is_flag=True, help="Run on a local Dask cluster (-j workers).")
@click.option("--dask-wait", "dask_wait_s", type=click.FloatRange(min=0), default=60.0,
              show_default=True, metavar="SECONDS",
              help="How long to wait for a worker when the Dask scheduler has none.")
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Sweep directory (default: results/<sweep file name>); rerun to resume.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a key of the base scenario for every run (as `run --set`).")
@click.option("--unset", "unset", multiple=True, metavar="KEY",
              help="Remove a key of the base scenario so its default applies (as `run "
                   "--unset`; applied before --set).")
@click.option("--figures", is_flag=True, help="Also draw figures for every run.")
@click.option("--no-resume", is_flag=True, help="Rerun runs that already finished.")
@click.option("--force", is_flag=True,
              help="-o holds a different sweep: replace its runs (those of this sweep's plan "
                   "are kept and resumed).")
@click.option("--emulate", is_flag=True,
              help="Run the grid through the emulator (the scenario's flows as l4slab flow "
                   "senders, real time), one run at a time; default -o results/<name>-emu.")
@_friendly
def sweep(sweep_file: Path, jobs: int | None, dask_address: str | None, dask_local: bool,
          dask_wait_s: float, out_dir: Path | None, overrides: tuple[str, ...],
          unset: tuple[str, ...],
          figures: bool, no_resume: bool, force: bool, emulate: bool) -> None:
    """Run SWEEP_FILE: a grid over scenario keys × replications (format: `l4slab.sweeps`)."""
    from l4slab.progress import SweepProgress
    from l4slab.sweeps import point_label, signals_interrupt
    from l4slab.sweeps import sweep as run_sweep

    if dask_address and dask_local:
        raise click.UsageError("give --dask ADDRESS or --dask-local, not both")
    if out_dir is None:
        out_dir = Path("results") / (sweep_file.stem + ("-emu" if emulate else ""))
    engine = None
    if emulate:
        from l4slab.emulate import EmulatorEngine

        engine = EmulatorEngine()
    progress = SweepProgress(console, out_dir)
    try:
        with signals_interrupt() as got:
            res = run_sweep(sweep_file, out_dir, jobs=jobs, dask=dask_address,
                            dask_local=dask_local, figures=figures, resume=not no_resume,
                            overrides=list(overrides), unset=unset, engine=engine,
                            on_start=progress.on_start, on_progress=progress.on_progress,
                            force=force,
                            raise_on_failure=False, dask_wait_s=dask_wait_s,
                            on_note=lambda msg: err_console.print(msg, highlight=False))
    except KeyboardInterrupt:
        progress.stop()
        err_console.print(f"interrupted: finished runs are kept in {out_dir}; run the same "
                          "command again to resume.")
        # 130 for Ctrl-C (the CLI's convention), 128 + N for SIGTERM and SIGHUP.
        sys.exit(128 + got["signal"])
    finally:
        progress.stop()

    console.print(progress.summary(len(res.index), res.ran, res.skipped, len(res.failed)),
                  highlight=False, soft_wrap=True)
    console.print(f"index: {out_dir / 'sweep.parquet'}; report: {out_dir / 'report.html'}",
                  highlight=False)
    if res.failed:
        table = Table(title="failed runs", title_style="bold red")
        table.add_column("run")
        table.add_column("parameters")
        table.add_column("error", overflow="fold")
        for o in sorted(res.failed, key=lambda o: o.task.index):
            table.add_row(o.task.name, point_label(o.task.params), o.error or "")
        err_console.print(table)
        sys.exit(EXIT_FAILED_RUNS)


# --- plot -------------------------------------------------------------------------------------

@main.command()
@click.argument("dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@_friendly
def plot(dirs: tuple[Path, ...]) -> None:
    """(Re)draw figures and report.html of run or sweep directories DIRS."""
    from l4slab.plots import plot_run, plot_sweep
    from l4slab.report import run_report, sweep_report
    from l4slab.results import load_run
    from l4slab.sweeps import load_sweep

    for d in dirs:
        if (d / "sweep.parquet").exists():
            data = load_sweep(d)
            files = plot_sweep(data, d)
            report = sweep_report(data, d)
        else:
            run_data = load_run(d)
            files = plot_run(run_data, d)
            report = run_report(run_data, d)
        console.print(f"{d}: {len(files)} figure files, {report}", highlight=False)


# --- summary ----------------------------------------------------------------------------------

def _scenario_bits(summary: dict[str, Any], scenario: dict[str, Any]) -> tuple[str, str]:
    aqm = summary.get("aqm") or (scenario.get("aqm") or {}).get("kind", "?")
    if isinstance(aqm, dict):
        aqm = aqm.get("kind", "?")
    if summary.get("hops"):  # a [[links]] chain: every hop's AQM in path order
        aqm = " > ".join(str(h.get("aqm", "?")) for h in summary["hops"])
    ccs: dict[str, int] = {}
    for f in summary.get("flows") or []:
        ccs[str(f.get("cc", "?"))] = ccs.get(str(f.get("cc", "?")), 0) + 1
    return str(aqm), ", ".join(cc + (f"×{n}" if n > 1 else "") for cc, n in ccs.items())


def _summary_rows(rows: list[tuple[str, dict[str, Any], dict[str, Any]]],
                  title: str | None = None, params: list[dict[str, Any]] | None = None
                  ) -> tuple[str | None, list[str], list[list[Any]]]:
    """(title, header, rows) of the summary table: name, [swept parameters], AQM and flows
    (in the title when every row has the same), per-class throughput, p99 sojourn per queue,
    utilisation, Jain. Cells are numbers (None when absent) or strings."""
    from l4slab.sweeps import flatten_summary, param_label

    flat = [flatten_summary(r[1]) for r in rows]
    setups = [_scenario_bits(r[1], r[2]) for r in rows]
    same_setup = len(set(setups)) == 1
    if same_setup:
        title = " · ".join(x for x in (title, f"{setups[0][0]}: {setups[0][1]}") if x)
    queues = [q for q in ("L", "C", "single", "fq")
              if any(f"queues.{q}.sojourn_ms.p99" in m for m in flat)]
    pkeys = list(dict.fromkeys(k for p in params or [] for k in p))
    header = ["run", *pkeys] + ([] if same_setup else ["aqm", "flows"])
    # A limit given in BDP units shows what it resolved to (summary.json `buffer`).
    buffers = [r[1].get("buffer") if isinstance(r[1].get("buffer"), dict) else None
               for r in rows]
    if any(buffers):
        header.append("buffer")
    header += ["L4S Mb/s", "Classic Mb/s"] + [f"p99 {q} ms" for q in queues] + ["util", "Jain"]

    def num(v: Any) -> float | None:
        return float(v) if isinstance(v, (int, float)) and v == v else None

    out = []
    for i, ((name, _, _), m) in enumerate(zip(rows, flat, strict=True)):
        cells: list[Any] = [name] + [param_label((params or [{}] * len(rows))[i].get(k, ""))
                                     for k in pkeys]
        if not same_setup:
            cells += list(setups[i])
        if any(buffers):
            b = buffers[i]
            cells.append(f"{b['given']}={b['value']} {b['unit']}" if b else "")
        cells += [num(m.get("class.L4S.tput_mbps")), num(m.get("class.Classic.tput_mbps"))]
        cells += [num(m.get(f"queues.{q}.sojourn_ms.p99")) for q in queues]
        cells += [num(m.get("link.utilisation")), num(m.get("jain"))]
        out.append(cells)
    return title, header, out


def _print_summaries(rows: list[tuple[str, dict[str, Any], dict[str, Any]]],
                     title: str | None = None,
                     params: list[dict[str, Any]] | None = None, fmt: str = "table") -> None:
    """Print the summary table as a rich table, CSV, JSON (one object per run) or Markdown."""
    title, header, body = _summary_rows(rows, title, params)
    _emit_table(title, header, body, fmt)


def _emit_table(title: str | None, header: list[str], body: list[list[Any]],
                fmt: str) -> None:
    """Print a table as a rich table, CSV, JSON (one object per row) or Markdown."""
    import csv
    import io

    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows([["" if c is None else c for c in r] for r in body])
        click.echo(buf.getvalue(), nl=False)
        return
    if fmt == "json":
        click.echo(json.dumps([dict(zip(header, r, strict=True)) for r in body], indent=2))
        return
    nf = {"util": ".3f", "Jain": ".3f"}

    def cell(h: str, v: Any) -> str:
        if v is None:
            return "–"
        return format(v, nf.get(h, ".2f")) if isinstance(v, float) else str(v)

    if fmt == "markdown":
        lines = [f"**{title}**", ""] if title else []
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header)))
                     + "|")
        lines += ["| " + " | ".join(cell(h, v) for h, v in zip(header, r, strict=True)) + " |"
                  for r in body]
        click.echo("\n".join(lines))
        return
    table = Table(title=title, title_justify="left")
    for i, h in enumerate(header):
        if i == 0:
            table.add_column(h, overflow="fold")
        else:
            table.add_column(h.rsplit(".", 1)[-1], justify="right" if h in nf or " " in h
                             else "left")
    for r in body:
        table.add_row(*(cell(h, v) for h, v in zip(header, r, strict=True)))
    console.print(table)


@main.command()
@click.argument("dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "markdown"]),
              default="table", show_default=True,
              help="table: for a terminal (full width when piped); csv/json/markdown: for "
                   "files and other tools.")
@click.option("--group", is_flag=True,
              help="Sweeps: one row per grid point (mean ± 95% CI over its replications) "
                   "instead of one per run; several sweeps merge into one table.")
@_friendly
def summary(dirs: tuple[Path, ...], fmt: str, group: bool) -> None:
    """Table of the summaries of run or sweep directories DIRS (a sweep: one row per run;
    several sweeps: one table with a source column)."""
    import tomllib

    from l4slab.sweepgrid import expand_params

    sweeps = [d for d in dirs if (d / "sweep.parquet").exists() or (d / "runs").is_dir()]
    if group:
        _group_summary(list(dirs), sweeps, fmt)
        return
    merged = len(sweeps) > 1
    m_rows: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    m_params: list[dict[str, Any]] = []

    def read(rd: Path, name: str) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
        sp = rd / "summary.json"
        if not sp.exists():
            err = rd / "error.txt"
            pending.append(f"{rd}: " + (err.read_text().strip() if err.exists()
                                        else "not finished (no summary.json)"))
            return None
        scen = (tomllib.loads((rd / "scenario.toml").read_text())
                if (rd / "scenario.toml").exists() else {})
        return name, json.loads(sp.read_text()), scen

    pending: list[str] = []
    singles: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    shown = 0
    for d in dirs:
        if (d / "sweep.parquet").exists() or (d / "runs").is_dir():
            rows, params = [], []
            for rd in sorted(p for p in (d / "runs").iterdir() if p.is_dir()):
                row = read(rd, rd.name)
                if row:
                    rows.append(row)
                    try:
                        params.append(expand_params(
                            json.loads((rd / "params.json").read_text())["params"]))
                    except (OSError, ValueError, KeyError):
                        params.append({})
            if rows and merged:
                m_rows += rows
                m_params += [{"source": str(d), **p} for p in params]
            elif rows:
                _print_summaries(rows, title=f"sweep {d}", params=params, fmt=fmt)
                shown += len(rows)
        else:
            row = read(d, str(d))
            if row:
                singles.append(row)
    if m_rows:
        _print_summaries(m_rows, title="sweeps " + ", ".join(map(str, sweeps)),
                         params=m_params, fmt=fmt)
        shown += len(m_rows)
    if singles:
        _print_summaries(singles, fmt=fmt)
        shown += len(singles)
    for p in pending:
        err_console.print(f"[yellow]{_escape(p)}[/]")
    if not shown:
        _fail("no finished runs in " + ", ".join(map(str, dirs)))


#: Columns of `summary --group`: metric key and header.
GROUP_METRICS = [("class.L4S.tput_mbps", "L4S Mb/s"), ("class.Classic.tput_mbps", "Classic Mb/s"),
                 ("queues.L.sojourn_ms.p99", "p99 L ms"), ("queues.C.sojourn_ms.p99", "p99 C ms"),
                 ("queues.single.sojourn_ms.p99", "p99 single ms"),
                 ("queues.fq.sojourn_ms.p99", "p99 fq ms"), ("link.utilisation", "util"),
                 ("jain", "Jain")]


def _group_summary(dirs: list[Path], sweeps: list[Path], fmt: str) -> None:
    """`summary --group`: one row per grid point of the sweeps (merged, with a source column
    when there are several), mean ± 95% CI; warns about grid points whose runs are copies."""
    from l4slab.sweepgrid import group_table, merged_index

    if len(sweeps) != len(dirs):
        single = next(d for d in dirs if d not in sweeps)
        _fail(f"--group: {single} is not a sweep directory (no sweep.parquet); --group "
              "summarises sweeps")
    missing = [d for d in sweeps if not (d / "sweep.parquet").exists()]
    if missing:
        _fail(f"--group: {missing[0]} has no sweep.parquet (the sweep has not finished once)")
    idx, params = merged_index(sweeps)
    if not (idx["status"] == "ok").any():
        _fail("no finished runs in " + ", ".join(map(str, dirs)))
    header, rows, copies = group_table(idx, params, GROUP_METRICS)
    title = "sweeps " + ", ".join(map(str, sweeps)) + " (mean ± 95% CI over replications)"
    _emit_table(title, header, rows, fmt)
    if copies:
        err_console.print(f"[yellow]warning: the runs of {len(copies)} grid point(s) are "
                          "identical (zero spread: one run repeated, not independent samples); "
                          "no CI shown for them. Vary something per seed (flows' start_jitter, "
                          "link loss or jitter).[/]")


@main.command()
@click.argument("dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--out", "out_file", type=click.Path(dir_okay=False, path_type=Path),
              required=True, help="The HTML file to write.")
@_friendly
def report(dirs: tuple[Path, ...], out_file: Path) -> None:
    """One report.html over several sweep directories DIRS: their runs merged (a source
    column), mean ± 95% CI per grid point."""
    from l4slab.report import merged_sweep_report

    for d in dirs:
        if not (d / "sweep.parquet").exists():
            _fail(f"{d}: not a sweep directory (no sweep.parquet)")
    if out_file.exists():
        _fail(f"{out_file}: exists; results are never overwritten, choose another -o")
    console.print(f"{merged_sweep_report(list(dirs), out_file)}", highlight=False)


# --- commands that live in their own modules ---------------------------------------------------

from l4slab.emulate import emulate_cmd  # noqa: E402
from l4slab.flow import flow_cmd  # noqa: E402
from l4slab.suites.cli import suite_cmd  # noqa: E402
from l4slab.validation.cli import mahimahi_import_cmd, validate_cmd  # noqa: E402

# `validate` is the toolkit's own name; `compare` is the front end's word for the same test.
main.add_command(validate_cmd, name="validate")
main.add_command(validate_cmd, name="compare")
main.add_command(mahimahi_import_cmd, name="import-mahimahi")
from l4slab.shipped_cli import scenarios_cmd, trace_cmd  # noqa: E402

main.add_command(scenarios_cmd, name="scenarios")
main.add_command(trace_cmd, name="trace")
main.add_command(emulate_cmd, name="emulate")
main.add_command(flow_cmd, name="flow")
from l4slab.crosscheck import crosscheck_cmd  # noqa: E402

main.add_command(crosscheck_cmd, name="crosscheck")
main.add_command(suite_cmd, name="suite")


def entry() -> None:
    """The `l4slab` program (console script and `python -m l4slab`): `main` with every error
    on one line, "l4slab: error: <field>: <message>" (click's usage errors included), exit
    2, and Ctrl-C anywhere, the package's import included (l4slab/__init__.py holds it until
    here), as "l4slab: interrupted" and exit 130."""
    import signal

    from l4slab import interrupt

    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        rv = main(prog_name="l4slab", standalone_mode=False)
    except (KeyboardInterrupt, Interrupted, click.Abort):
        interrupt.exit_interrupted()
    except click.UsageError as e:
        where = f" (see {e.ctx.command_path} --help)" if e.ctx is not None else ""
        err_console.print(error_line(e.format_message()) + where, markup=False,
                          highlight=False, soft_wrap=True)
        sys.exit(e.exit_code)
    except click.ClickException as e:
        err_console.print(error_line(e.format_message()), markup=False, highlight=False,
                          soft_wrap=True)
        sys.exit(e.exit_code)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    entry()

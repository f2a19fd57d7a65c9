"""`l4slab scenarios list|copy` (the scenarios and traces shipped with l4slab) and
`l4slab trace constant|steps|onoff|cellular` (write a Mahimahi trace)."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from l4slab.traces import (
    TraceError,
    cellular,
    constant,
    data_dir,
    on_off,
    steps,
    trace_rate_mbps,
    write_trace,
)


class BadInput(click.ClickException):
    """Printed as one ``Error: ...`` line, exit status 2."""

    exit_code = 2


def scenarios_dir() -> Path:
    """The shipped scenarios: the package's data/scenarios (in a wheel and in the source tree,
    whose top-level scenarios/ links there)."""
    d = data_dir() / "scenarios"
    if not d.is_dir():
        raise BadInput(f"no shipped scenarios found in {d}: the installation is incomplete; "
                       "reinstall l4slab")
    return d


def _first_comment(p: Path) -> str:
    for line in p.read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


@click.group("scenarios")
def scenarios_cmd() -> None:
    """The scenario files (and traces) shipped with l4slab."""


@scenarios_cmd.command("list")
def scenarios_list() -> None:
    """List the shipped scenarios, sweeps and traces."""
    root = scenarios_dir()
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in (".toml", ".down", ".up"):
            click.echo(f"{p.relative_to(root)}\t{_first_comment(p) if p.suffix == '.toml' else ''}"
                       .rstrip())


@scenarios_cmd.command("copy")
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite files that already exist in DEST.")
def scenarios_copy(dest: Path, force: bool) -> None:
    """Copy every shipped scenario, sweep and trace into DEST (relative trace paths keep
    working), to edit and run them: `l4slab run DEST/prague_vs_cubic_50M_40ms.toml`."""
    root = scenarios_dir()
    files = [p for p in sorted(root.rglob("*")) if p.is_file()]
    clash = [p.relative_to(root) for p in files if (dest / p.relative_to(root)).exists()]
    if clash and not force:
        raise BadInput(f"{dest / clash[0]} exists ({len(clash)} files would be overwritten); "
                       "pass --force to overwrite them")
    try:
        for p in files:
            target = dest / p.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
    except OSError as e:
        from l4slab.console import os_error_message

        raise BadInput(os_error_message(e)) from None
    click.echo(f"copied {len(files)} files to {dest}")


def _write(trace, out: Path, force: bool) -> None:
    if out.exists() and not force:
        raise BadInput(f"{out}: exists; choose another -o, or pass --force to replace it "
                       "(a trace is never overwritten silently)")
    try:
        write_trace(trace, out)
    except OSError as e:
        from l4slab.console import os_error_message

        raise BadInput(os_error_message(e)) from None
    click.echo(f"wrote {out}: {trace.size} opportunities over {int(trace[-1])} ms, mean "
               f"{trace_rate_mbps(trace):.3f} Mb/s")


def _guard(fn):
    import functools

    @functools.wraps(fn)
    def wrapper(*a, **k):
        try:
            return fn(*a, **k)
        except TraceError as e:
            raise BadInput(str(e)) from None
    return wrapper


_OUT = click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path),
                    required=True, help="Trace file to write (Mahimahi format).")
_FORCE = click.option("--force", is_flag=True, help="Replace an existing -o file.")
#: A negative number is an argument (refused with its range), not an unknown option.
_NUMBERS = {"ignore_unknown_options": True}


@click.group("trace")
def trace_cmd() -> None:
    """Write a Mahimahi trace (1504-byte delivery opportunities per millisecond) for
    `link.trace`."""


@trace_cmd.command("constant", context_settings=_NUMBERS)
@click.argument("rate_mbps", type=float)
@click.option("--period-ms", type=int, default=1000, show_default=True)
@_OUT
@_FORCE
@_guard
def trace_constant(rate_mbps: float, period_ms: int, out: Path, force: bool) -> None:
    """A constant RATE_MBPS (Mb/s)."""
    _write(constant(rate_mbps, period_ms), out, force)


@trace_cmd.command("steps", context_settings=_NUMBERS)
@click.argument("segments", nargs=-1, required=True)
@_OUT
@_FORCE
@_guard
def trace_steps(segments: tuple[str, ...], out: Path, force: bool) -> None:
    """Rate steps, each DURATION_MS:RATE_MBPS, e.g. `5000:20 5000:5 5000:0`."""
    parsed = []
    for s in segments:
        d, sep, r = s.partition(":")
        try:
            parsed.append((int(d), float(r)))
        except ValueError:
            raise BadInput(f"segment {s!r}: expected DURATION_MS:RATE_MBPS, e.g. 5000:20"
                           ) from None
        if not sep:
            raise BadInput(f"segment {s!r}: expected DURATION_MS:RATE_MBPS, e.g. 5000:20")
    _write(steps(parsed), out, force)


@trace_cmd.command("onoff", context_settings=_NUMBERS)
@click.argument("rate_mbps", type=float)
@click.option("--on-ms", type=int, required=True)
@click.option("--off-ms", type=int, required=True)
@click.option("--cycles", type=int, default=1, show_default=True)
@_OUT
@_FORCE
@_guard
def trace_onoff(rate_mbps: float, on_ms: int, off_ms: int, cycles: int, out: Path,
                force: bool) -> None:
    """RATE_MBPS for --on-ms, then nothing for --off-ms (one opportunity marks the end of the
    last off period so the loop keeps it)."""
    _write(on_off(rate_mbps, on_ms, off_ms, cycles), out, force)


@trace_cmd.command("cellular", context_settings=_NUMBERS)
@click.argument("mean_mbps", type=float)
@click.option("--duration-ms", type=int, default=60_000, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--sigma", type=float, default=0.6, show_default=True,
              help="Standard deviation of the log-rate.")
@click.option("--coherence-ms", type=float, default=500.0, show_default=True,
              help="Correlation time of the log-rate (AR(1)).")
@click.option("--outage-prob", type=float, default=0.0, show_default=True,
              help="Probability that a 100 ms block is an outage.")
@_OUT
@_FORCE
@_guard
def trace_cellular(mean_mbps: float, duration_ms: int, seed: int, sigma: float,
                   coherence_ms: float, outage_prob: float, out: Path, force: bool) -> None:
    """A synthetic cellular link with mean MEAN_MBPS: log-normal rate with AR(1)
    correlation, Poisson opportunities per millisecond, optional outages (seeded)."""
    _write(cellular(mean_mbps, duration_ms, seed, sigma, coherence_ms, outage_prob), out,
           force)

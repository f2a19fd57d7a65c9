"""`make demo`: the default experiment and a small sweep, written to ./demo-out/.

1. Prague vs Cubic behind DualPI2 at 50 Mb/s, 40 ms base RTT, 30 s
   (scenarios/prague_vs_cubic_50M_40ms.toml) → demo-out/prague_vs_cubic/ with figures and
   report.html.
2. A sweep of the L-queue step threshold (aqm.step_thresh = 1, 5, 10 ms) × 5 replications of
   the same scenario → demo-out/sweep_step_thresh/ with sweep.parquet, metric-vs-parameter
   figures (95% CI over replications) and report.html.

If this build lacks Prague, Cubic or DualPI2 the demo falls back to the closest available
stand-in (DCTCP for Prague, Reno for Cubic, FIFO-ECN for DualPI2) and says so.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

from l4slab import _core
from l4slab.scenario import ScenarioError, dumps_toml, load_scenario

DEFAULT_SCENARIO = "scenarios/prague_vs_cubic_50M_40ms.toml"
STEP_THRESHOLDS = ["1ms", "5ms", "10ms"]
REPLICATIONS = 5


def find_scenario() -> Path:
    """The default scenario: from the current directory (make demo runs at the repo root),
    else the copy shipped in the package's data folder."""
    here = Path.cwd() / DEFAULT_SCENARIO
    if here.exists():
        return here
    shipped = Path(__file__).resolve().parent / "data" / DEFAULT_SCENARIO
    if shipped.exists():
        return shipped
    raise ScenarioError(f"{DEFAULT_SCENARIO} not found in {Path.cwd()} nor in {shipped}")


def _valid(data: dict[str, Any], base_dir: Path) -> str | None:
    try:
        _core.validate_scenario(json.dumps(data), "json", str(base_dir))
    except ScenarioError as e:
        return str(e)
    return None


def best_available(data: dict[str, Any], base_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """The scenario itself if this build runs it, else the closest stand-in; notes say what
    was replaced and why."""
    cc_fallback = {"prague": "dctcp", "cubic": "reno", "bbr3": "bbr1"}
    out = copy.deepcopy(data)
    notes: list[str] = []
    for _ in range(2 * len(out.get("flows", [])) + 2):
        err = _valid(out, base_dir)
        if err is None:
            return out, notes
        if not notes:
            notes.append(f"the default scenario does not run on this build ({err})")
        for i, f in enumerate(out.get("flows", [])):
            if (f"flows[{i}].cc" in err or f"flows.{i}.cc" in err) and f.get("cc") in cc_fallback:
                notes.append(f"flow {i}: {f['cc']} is not available, using {cc_fallback[f['cc']]}")
                f["cc"] = cc_fallback[f["cc"]]
                break
        else:
            aqm = out.get("aqm", {})
            if "aqm" in err and aqm.get("kind") == "dualpi2":
                out["aqm"] = {"kind": "fifo_ecn", "limit": aqm.get("limit", 10000)}
                notes.append("dualpi2 is not available, using fifo_ecn (the step-threshold "
                             "sweep then has no effect)")
                continue
            break
    raise ScenarioError(f"no runnable stand-in for the default scenario: {_valid(out, base_dir)}")


def _print_sweep_means(console: Any, index: Any) -> None:
    """Mean ± 95% CI over replications per step threshold."""
    from rich.table import Table

    from l4slab.plots import mean_ci_text

    ok = index[index["status"] == "ok"]
    metrics = [(m, h) for m, h in (("queues.L.sojourn_ms.p99", "L p99 ms"),
                                   ("queues.C.sojourn_ms.p99", "C p99 ms"),
                                   ("class.L4S.tput_mbps", "L4S Mb/s"),
                                   ("class.Classic.tput_mbps", "Classic Mb/s"))
               if m in ok]
    if ok.empty or not metrics:
        return
    table = Table(title="mean ± 95% CI over replications", title_justify="left")
    table.add_column("step_thresh")
    for _, h in metrics:
        table.add_column(h, justify="right")
    for value, g in ok.groupby("aqm.step_thresh", sort=False):
        cells = [str(value)]
        for m, _ in metrics:
            cells.append(mean_ci_text(g[m].to_numpy(dtype=float), ".2f", ".2f"))
        table.add_row(*cells)
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    """The `make demo` experiment: the default scenario at three step thresholds; returns the
    exit status."""
    from rich.console import Console

    from l4slab.cli import _print_summaries
    from l4slab.runner import run
    from l4slab.sweeps import point_label, sweep

    ap = argparse.ArgumentParser(prog="python -m l4slab.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", default="demo-out", help="output directory (demo-out)")
    ap.add_argument("-j", "--jobs", type=int, default=None, help="parallel sweep runs")
    args = ap.parse_args(argv)
    console = Console()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()

    try:
        path = find_scenario()
        src = load_scenario(path)
        scenario, notes = best_available(src.data, src.base_dir)
    except ScenarioError as e:
        console.print(f"[red]demo: {e}[/]")
        return 2
    for n in notes:
        console.print(f"[yellow]note:[/] {n}")
    flows = ", ".join(str(f.get("cc")) for f in scenario.get("flows", []))
    console.print(f"[bold]1/2[/] {path.name}: {flows} behind {scenario['aqm']['kind']} "
                  f"({scenario.get('duration')} simulated)")
    t0 = time.perf_counter()
    run_dir = out / "prague_vs_cubic"
    result = run(scenario, run_dir, base_dir=src.base_dir)
    console.print(f"    done in {time.perf_counter() - t0:.1f} s → {run_dir}")
    _print_summaries([(str(run_dir), result.summary, result.scenario)])

    base_file = out / "sweep_base.toml"
    base_file.write_text(dumps_toml(scenario, header=f"demo sweep base: {path}" +
                                    ("".join(f"\n{n}" for n in notes))))
    sweep_file = out / "sweep_step_thresh.toml"
    sweep_file.write_text(dumps_toml({
        "base": base_file.name, "replications": REPLICATIONS,
        "seed": int(scenario.get("seed", 1)),
        "grid": {"aqm.step_thresh": STEP_THRESHOLDS},
    }, header="demo sweep: L-queue step threshold x 5 replications"))
    n_runs = len(STEP_THRESHOLDS) * REPLICATIONS
    console.print(f"[bold]2/2[/] sweep aqm.step_thresh = {', '.join(STEP_THRESHOLDS)} × "
                  f"{REPLICATIONS} seeds ({n_runs} runs of {scenario.get('duration')})")
    t0 = time.perf_counter()
    sweep_dir = out / "sweep_step_thresh"

    def progress(outcome: Any, done: int, total: int) -> None:
        mark = "✓" if outcome.status == "ok" else "✗"
        console.print(f"    {mark} {outcome.task.name} {point_label(outcome.task.params)} "
                      f"({outcome.elapsed_s:.1f} s) [{done}/{total}]", highlight=False)

    res = sweep(sweep_file, sweep_dir, jobs=args.jobs, on_progress=progress,
                raise_on_failure=False)
    console.print(f"    done in {time.perf_counter() - t0:.1f} s → {sweep_dir}")
    if res.failed:
        for o in res.failed:
            console.print(f"[red]    failed {o.task.name}: {o.error}[/]")
    _print_sweep_means(console, res.index)
    console.print()
    console.print(f"[bold]demo finished in {time.perf_counter() - t_all:.1f} s[/]")
    console.print(f"  run:   {run_dir}/report.html (figures: {run_dir}/*.png, *.svg)")
    console.print(f"  sweep: {sweep_dir}/report.html, index {sweep_dir}/sweep.parquet")
    console.print("  next:  l4slab summary demo-out/prague_vs_cubic  ·  l4slab --help")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())

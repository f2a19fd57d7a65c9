"""`l4slab crosscheck SCENARIO`: the same scenario n times in the simulator and n times in the
emulator with real stacks (the kernel's TCP for every flow whose cc the kernel has, or an
external program), validated per metric and written up as one report.

Runs go to OUT/sim/run-K and OUT/emu/run-K (run K uses seed + K on both sides); a run that
finished earlier is kept and reused (said so), never overwritten. The validation is the
project's (l4slab.validation: DTW distances, p̂_max, bootstrap CI) on per-flow throughput and
srtt, and per-queue sojourn, backlog, marks and drops; the per-flow mean ratios (emulator /
simulator, summary.json's window) get percentile bootstrap CIs over runs.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from l4slab.columnar import read_parquet
from l4slab.console import error_line
from l4slab.scenario import ScenarioError

__all__ = ["CrossPlan", "plan_crosscheck", "crosscheck", "CROSSCHECK_FILE"]

#: The machine-readable result beside crosscheck.md.
CROSSCHECK_FILE = "crosscheck.json"
#: Bootstrap replicates of the mean-ratio CIs (as the validation's default).
RATIO_BOOTSTRAP = 2000
#: A mean ratio whose CI lies outside [1 - TOL, 1 + TOL] is called a departure.
RATIO_TOLERANCE = 0.10


@dataclass
class CrossPlan:
    """Both sides' scenario documents and what runs each flow in the emulator."""

    sim_doc: dict[str, Any]
    emu_doc: dict[str, Any]
    stacks: list[str]                      # per [[flows]] entry, in the emulator
    notes: list[str] = field(default_factory=list)


def plan_crosscheck(doc: dict[str, Any], stack: str = "kernel", command: str | None = None,
                    server_command: str | None = None) -> CrossPlan:
    """The emulator side of `doc`: with stack "kernel", every TCP flow whose cc the kernel
    offers (and whose ecn it can send) runs on the kernel's TCP, the rest on the model (a
    note says which and why); with stack "command", every TCP flow runs `command`."""
    from l4slab.stacks import StackError, kernel_cc, kernel_ccs, tcp_ecn_of

    if stack not in ("kernel", "command", "model"):
        raise ScenarioError(f"--stack: \"{stack}\" is not a stack; expected kernel, command "
                            "or model")
    if stack == "command" and not command:
        raise ScenarioError("--command: --stack command needs a client template, e.g. "
                            "--command 'udp_prague -c {server} -p {port}'")
    if stack == "command":
        from l4slab.stacks import StackError, check_template

        try:
            check_template("--command", command or "")
            if server_command:
                check_template("--server-command", server_command)
        except StackError as e:
            raise ScenarioError(str(e)) from None
    sim = copy.deepcopy(doc)
    for fl in sim.get("flows", []):
        for k in ("stack", "command", "server_command"):
            fl.pop(k, None)
    emu = copy.deepcopy(sim)
    have = kernel_ccs()
    stacks, notes = [], []
    tcp_ecn: int | None = None
    for i, fl in enumerate(emu.get("flows", [])):
        cc = fl["cc"]
        chosen = "model"
        if cc == "cbr":
            notes.append(f"flows[{i}] (cbr): no TCP stack; the emulator cannot run it")
        elif stack == "command":
            chosen = "command"
            fl["command"] = command
            if server_command:
                fl["server_command"] = server_command
        elif stack == "kernel":
            e = None
            if kernel_cc(cc) not in have:
                notes.append(f"flows[{i}] ({cc}): runs as the model (l4slab flow): this "
                             f"kernel offers {' '.join(have) or 'nothing readable'}")
            else:
                try:
                    e = tcp_ecn_of(f"flows[{i}].ecn", fl.get("ecn"))
                except StackError as err:
                    notes.append(f"flows[{i}] ({cc}): runs as the model: {err}")
            if e is not None and tcp_ecn is not None and e != tcp_ecn:
                notes.append(f"flows[{i}] ({cc}): runs as the model: the kernel flows share "
                             "one net.ipv4.tcp_ecn and an earlier one asks for another ecn")
            elif e is not None:
                chosen, tcp_ecn = "kernel", e
        if chosen != "model":
            fl["stack"] = chosen
        stacks.append(chosen)
    return CrossPlan(sim_doc=sim, emu_doc=emu, stacks=stacks, notes=notes)


def _finished(rd: Path) -> bool:
    return (rd / "summary.json").is_file()


def _run_sim(doc: dict[str, Any], base_dir: Path, rd: Path) -> None:
    from l4slab.runner import run

    run(doc, rd, figures=False, report=False, base_dir=base_dir)


def _run_emu(doc: dict[str, Any], base_dir: Path, rd: Path) -> None:
    import shutil
    import signal

    from l4slab.emulate import EmulateError, emulate_doc

    stage = rd.with_name(f".{rd.name}.emulating")
    shutil.rmtree(stage, ignore_errors=True)
    rc = emulate_doc(doc, base_dir, stage, ["--quiet"], report_flows=False)
    if rc == 128 + signal.SIGINT:
        raise KeyboardInterrupt  # Ctrl-C reached the emulator: stop the crosscheck
    if rc in (128 + signal.SIGTERM, 128 + signal.SIGHUP):
        raise SystemExit(rc)
    if not _finished(stage) or rc != 0:
        raise EmulateError(f"{rd}: the emulation failed (exit status {rc}); its output is "
                           f"kept in {stage}")
    stage.rename(rd)


#: Each side's scenario document, beside its runs: runs are reused only for the same one.
SIDE_FILE = "crosscheck-scenario.json"


def _claim(side_dir: Path, doc: dict[str, Any]) -> None:
    """Record `doc` as the scenario of the runs in `side_dir`, or refuse (ScenarioError) when
    the directory holds runs of another one (results are never mixed or overwritten)."""
    side_dir.mkdir(parents=True, exist_ok=True)
    f = side_dir / SIDE_FILE
    text = json.dumps(doc, sort_keys=True)
    if f.exists():
        if f.read_text() != text:
            raise ScenarioError(f"-o: {side_dir} holds runs of another scenario (its "
                                f"{SIDE_FILE} differs); choose a new output directory")
        return
    if any(side_dir.iterdir()):
        raise ScenarioError(f"-o: {side_dir} exists and holds files that are not a "
                            "crosscheck's runs; choose a new output directory")
    f.write_text(text)


def _check_out(out: Path) -> None:
    """-o names a new or empty directory, or a crosscheck's own (whose finished runs are
    reused); anything else (a run directory, a sweep, a file) is refused, as every other
    command refuses to write into another command's results."""
    if out.exists() and not out.is_dir():
        raise ScenarioError(f"-o: {out} exists and is not a directory; choose a new output "
                            "directory")
    if not out.is_dir() or not any(out.iterdir()):
        return
    if any((out / side / SIDE_FILE).is_file() for side in ("sim", "emu")):
        return
    what = "a run directory" if (out / "summary.json").exists() else "other files"
    raise ScenarioError(f"-o: {out} is not empty and holds {what}, not a crosscheck's runs; "
                        "choose a new output directory (results are never overwritten)")


def _seeded(doc: dict[str, Any], k: int) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    d["seed"] = int(d.get("seed", 1)) + k
    return d


def _extra_metrics(run: Any, rd: Path, warmup_s: float) -> None:
    """srtt per flow (the validation reads throughput and queue series; the stacks differ in
    srtt first)."""
    fl = read_parquet(rd / "flows.parquet", columns=["t_s", "flow", "srtt_ms"])
    fl = fl[fl["t_s"] >= warmup_s].sort_values("t_s")
    for fid, g in fl.groupby("flow", sort=True):
        run.metrics[f"srtt_flow{fid}"] = g["srtt_ms"].to_numpy(dtype=np.float64)


def _load(paths: list[Path], warmup_s: float) -> list[Any]:
    from l4slab.validation.io import read_run_dir

    runs = []
    for p in paths:
        r = read_run_dir(p, warmup_s)
        _extra_metrics(r, p, warmup_s)
        runs.append(r)
    return runs


def _ratio_ci(emu: np.ndarray, sim: np.ndarray, rng: np.random.Generator
              ) -> tuple[float, float, float]:
    """mean(emu)/mean(sim) and its 95 % percentile bootstrap CI (runs resampled per group)."""
    if emu.size == 0 or sim.size == 0 or sim.mean() == 0:
        return (float("nan"),) * 3
    ratio = float(emu.mean() / sim.mean())
    be = rng.choice(emu, size=(RATIO_BOOTSTRAP, emu.size)).mean(axis=1)
    bs = rng.choice(sim, size=(RATIO_BOOTSTRAP, sim.size)).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = be / bs
    r = r[np.isfinite(r)]
    if not r.size:
        return ratio, float("nan"), float("nan")
    return ratio, float(np.percentile(r, 2.5)), float(np.percentile(r, 97.5))


#: A kernel flow application-limited in more than this share of its samples after warm-up
#: is reported: its sender could not keep the socket full (tcp_is_cwnd_limited then stops
#: cwnd growth), which the models never are.
APP_LIMITED_SHARE = 0.05


def kernel_warnings(paths: list[Path], warmup_s: float) -> list[str]:
    """Kernel flows of emulator runs whose sender was application-limited or not real-time."""
    import pandas as pd

    out = []
    for p in paths:
        for csv in sorted((p / "flows").glob("flow-*.csv")):
            try:
                df = pd.read_csv(csv)
            except (OSError, ValueError):
                continue
            if "app_limited" not in df.columns:
                continue
            w = df[df["t_s"] >= warmup_s]
            share = float(w["app_limited"].mean()) if len(w) else 0.0
            if share > APP_LIMITED_SHARE or not bool((df["realtime"] == 1).all()):
                out.append(f"{p.name}: kernel flow {df['flow'].iloc[0]}: application-limited "
                           f"in {share:.0%} of its samples after warm-up (SCHED_FIFO "
                           f"{'granted' if (df['realtime'] == 1).all() else 'refused'}); its "
                           "throughput is the host's, not the stack's")
    return out


def _summaries(paths: list[Path]) -> list[dict[str, Any]]:
    return [json.loads((p / "summary.json").read_text()) for p in paths]


def mean_ratios(sim: list[dict[str, Any]], emu: list[dict[str, Any]], seed: int
                ) -> list[dict[str, Any]]:
    """Per flow (throughput, srtt) and per queue (mean sojourn): emulator/simulator means
    with bootstrap CIs."""
    rng = np.random.default_rng(seed)
    rows = []

    def vals(ss: list[dict[str, Any]], kind: str, i: int, key: str) -> np.ndarray:
        out = []
        for s in ss:
            items = s.get(kind, [])
            if i < len(items):
                v = items[i].get(key)
                if isinstance(v, dict):
                    v = v.get("mean")
                if v is not None and math.isfinite(float(v)):
                    out.append(float(v))
        return np.asarray(out)

    for i, f in enumerate(sim[0].get("flows", [])):
        for key, what in (("tput_mbps", "throughput Mb/s"), ("srtt_ms", "srtt ms")):
            e, s = vals(emu, "flows", i, key), vals(sim, "flows", i, key)
            r, lo, hi = _ratio_ci(e, s, rng)
            rows.append({"what": f"flow {i} ({f['cc']}) {what}", "sim_mean": _mean(s),
                         "emu_mean": _mean(e), "ratio": r, "ci_low": lo, "ci_high": hi})
    for i, q in enumerate(sim[0].get("queues", [])):
        e, s = vals(emu, "queues", i, "sojourn_ms"), vals(sim, "queues", i, "sojourn_ms")
        r, lo, hi = _ratio_ci(e, s, rng)
        rows.append({"what": f"queue {q['name']} mean sojourn ms", "sim_mean": _mean(s),
                     "emu_mean": _mean(e), "ratio": r, "ci_low": lo, "ci_high": hi})
    return rows


def _mean(x: np.ndarray) -> float | None:
    return float(x.mean()) if x.size else None


def _figure(sim: list[Path], emu: list[Path], out: Path, flow_names: list[str]) -> Path:
    """Side-by-side time series (run 0 of each side): per-flow throughput, srtt, cwnd and
    per-queue sojourn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("tput_mbps", "throughput (Mb/s)"), ("srtt_ms", "srtt (ms)"),
              ("cwnd_pkts", "cwnd (packets)")]
    fig, axes = plt.subplots(len(panels) + 1, 2, figsize=(12, 11), sharex=True)
    for col, (side, paths) in enumerate((("simulator", sim), ("emulator", emu))):
        fl = read_parquet(paths[0] / "flows.parquet")
        sa = read_parquet(paths[0] / "samples.parquet")
        for row, (c, label) in enumerate(panels):
            ax = axes[row][col]
            for fid, g in fl.groupby("flow", sort=True):
                name = flow_names[int(fid)] if int(fid) < len(flow_names) else str(fid)
                ax.plot(g["t_s"], g[c], lw=0.8, label=name)
            ax.set_ylabel(label)
            if row == 0:
                ax.set_title(f"{side} ({paths[0].name})")
                ax.legend(fontsize=7)
        ax = axes[len(panels)][col]
        for q, g in sa.groupby("queue", sort=True, observed=True):
            ax.plot(g["t_s"], g["sojourn_ms"], lw=0.8, label=f"queue {q}")
        ax.set_ylabel("sojourn (ms)")
        ax.set_xlabel("t (s)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "timeseries.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _departures(results: list[Any], ratios: list[dict[str, Any]], stacks: list[str]
                ) -> list[str]:
    lines = []
    for r in ratios:
        lo, hi = r["ci_low"], r["ci_high"]
        if math.isfinite(lo) and (lo > 1 + RATIO_TOLERANCE or hi < 1 - RATIO_TOLERANCE):
            side = "more" if lo > 1 else "less"
            lines.append(f"{r['what']}: the real stack gives {r['ratio']:.2f}× the model "
                         f"(95 % CI {lo:.2f}–{hi:.2f}), i.e. {side} than the simulator")
    for m in results:
        # p̂_max alone cannot separate "same" from "different" at a few runs (identical
        # groups score near its threshold by construction): a metric departs when the
        # permutation test of cross vs within distances calls it different.
        if m.interp is not None and m.interp.verdict == "different":
            lines.append(f"{m.metric}: the runs differ (permutation p = {m.interp.perm_p:.3g}; "
                         f"cross/within distance {m.interp.ratio:.3g}; p̂_max {m.p_hat:.3f})")
    return lines


def crosscheck(scenario: Path, out: Path, n: int = 5, *, stack: str = "kernel",
               command: str | None = None, server_command: str | None = None,
               sets: list[str] | None = None, sim_sets: list[str] | None = None,
               echo: Any = print) -> dict[str, Any]:
    """Run the cross-check (see the module doc); returns what crosscheck.json holds."""
    from l4slab.runner import validate as validate_scenario
    from l4slab.scenario import apply_overrides, load_scenario
    from l4slab.validation.core import validate_groups
    from l4slab.validation.io import common_metrics
    from l4slab.validation.report import to_markdown

    if n < 2:
        raise ScenarioError(f"-n: {n} must be ≥ 2 (the validation needs within-group pairs)")
    _check_out(out)
    src = load_scenario(scenario)
    doc = apply_overrides(src.data, list(sets or []))
    plan = plan_crosscheck(doc, stack, command, server_command)
    sim_doc = apply_overrides(plan.sim_doc, list(sim_sets or []))
    validate_scenario(sim_doc)
    from l4slab.emulate import plan_doc

    plan_doc(plan.emu_doc, src.base_dir)  # the emulator's refusals before anything runs
    for note in plan.notes:
        echo(f"note: {note}")
    if sim_sets:
        echo(f"note: simulator side only: {', '.join(sim_sets)}")
    _claim(out / "sim", sim_doc)
    _claim(out / "emu", plan.emu_doc)
    sim_paths, emu_paths = [], []
    for k in range(n):
        for side, d, paths, runner in (("sim", sim_doc, sim_paths, _run_sim),
                                       ("emu", plan.emu_doc, emu_paths, _run_emu)):
            rd = out / side / f"run-{k}"
            paths.append(rd)
            if _finished(rd):
                echo(f"{side}/run-{k}: finished earlier, kept")
                continue
            rd.parent.mkdir(parents=True, exist_ok=True)
            echo(f"{side}/run-{k}: running")
            runner(_seeded(d, k), src.base_dir, rd)
    warm = float(_summaries(sim_paths[:1])[0].get("warmup_s") or 0.0)
    runs_sim, runs_emu = _load(sim_paths, warm), _load(emu_paths, warm)
    metrics = [m for m in common_metrics({"sim": runs_sim, "emu": runs_emu})
               if m.split("_")[0] in ("tput", "srtt", "sojourn", "backlog", "marks", "drops")
               and m != "tput_total"]
    seed = int(doc.get("seed", 1))
    results = validate_groups(runs_sim, runs_emu, metrics, seed=seed)
    ratios = mean_ratios(_summaries(sim_paths), _summaries(emu_paths), seed)
    flows_sim = _summaries(sim_paths[:1])[0].get("flows", [])
    names = []
    for f in flows_sim:
        names.append(f"flow {f['id']} {f['cc']}")
    fig = _figure(sim_paths, emu_paths, out, names)
    departures = _departures(results, ratios, plan.stacks)
    warnings = kernel_warnings(emu_paths, warm)
    for w in warnings:
        echo(f"warning: {w}")
    stack_rows = []
    i = 0
    for e, fl in enumerate(plan.emu_doc.get("flows", [])):
        for _ in range(int(fl.get("count", 1))):
            stack_rows.append({"flow": i, "cc": fl["cc"], "stack": plan.stacks[e]})
            i += 1
    report = {"scenario": str(scenario), "runs": n, "stacks": stack_rows,
              "notes": plan.notes + [f"warning: {w}" for w in warnings],
              "sim_only": list(sim_sets or []),
              "validation": [r.row() for r in results], "ratios": ratios,
              "departures": departures, "figure": fig.name}
    (out / CROSSCHECK_FILE).write_text(json.dumps(report, indent=1, default=_json) + "\n")
    (out / "crosscheck.md").write_text(_markdown(report, to_markdown(results, "simulator",
                                                                      "emulator")))
    return report


def _json(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(type(x).__name__)


def _f(x: Any) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.3g}"


def _markdown(rep: dict[str, Any], validation_md: str) -> str:
    out = [f"# Cross-check: {rep['scenario']}", "",
           f"{rep['runs']} simulator runs against {rep['runs']} emulator runs (seed + k).", "",
           "## Stacks", "", "| flow | cc | emulator stack |", "|---|---|---|"]
    out += [f"| {s['flow']} | {s['cc']} | {s['stack']} |" for s in rep["stacks"]]
    out += [""] + [f"- note: {x}" for x in rep["notes"]]
    if rep["sim_only"]:
        out += [f"- simulator side only: {', '.join(rep['sim_only'])}"]
    out += ["", "## Verdicts (p̂_max and the permutation test, per metric)", "",
            validation_md.strip(), "",
            "## Mean ratios (emulator / simulator, 95 % bootstrap CI over runs)", "",
            "| quantity | simulator | emulator | ratio | CI |", "|---|---|---|---|---|"]
    out += [f"| {r['what']} | {_f(r['sim_mean'])} | {_f(r['emu_mean'])} | {_f(r['ratio'])} | "
            f"{_f(r['ci_low'])}–{_f(r['ci_high'])} |" for r in rep["ratios"]]
    out += ["", "## Time series", "", f"![side by side]({rep['figure']})", "",
            "## Summary", ""]
    if rep["departures"]:
        out += ["Where the simulator departs from the real stack:", ""]
        out += [f"- {d}" for d in rep["departures"]]
    else:
        out += [f"No departure found: every mean ratio's CI overlaps 1 ± "
                f"{RATIO_TOLERANCE:.0%} and the permutation test calls no metric different."]
    return "\n".join(out) + "\n"


def _table(rep: dict[str, Any]) -> str:
    """The verdicts, mean ratios and departures as plain text (the command's output)."""
    out = [f"{'metric':<22} {'p̂_max':>7} {'perm p':>7}  verdict"]
    for v in rep["validation"]:
        out.append(f"{v['metric']:<22} {_f(v['p_hat_max']):>7} {_f(v.get('perm_p')):>7}  "
                   f"{v.get('verdict') or '-'}")
    out += ["", f"{'emulator / simulator':<36} {'sim':>7} {'emu':>7} {'ratio':>6}  95 % CI"]
    for r in rep["ratios"]:
        out.append(f"{r['what']:<36} {_f(r['sim_mean']):>7} {_f(r['emu_mean']):>7} "
                   f"{_f(r['ratio']):>6}  {_f(r['ci_low'])}–{_f(r['ci_high'])}")
    out += [""] + (rep["departures"] or ["no departure found"])
    return "\n".join(out)


def _cli() -> Any:
    import click

    @click.command("crosscheck")
    @click.argument("scenario", type=click.Path(dir_okay=False, exists=True, path_type=Path))
    @click.option("-n", "--runs", "n", type=int, default=5, show_default=True,
                  help="Runs per side (5 is the fewest at which p̂_max can say similar).")
    @click.option("-o", "--out", "out", type=click.Path(file_okay=False, path_type=Path),
                  help="Output directory (default: results/crosscheck-<scenario>); runs "
                       "finished there earlier are kept and reused.")
    @click.option("--stack", type=click.Choice(["kernel", "command"]), default="kernel",
                  show_default=True, help="Real stack of the emulator side.")
    @click.option("--command", "command", metavar="TEMPLATE",
                  help="--stack command: client template ({server}, {port}, {duration}).")
    @click.option("--server-command", "server_command", metavar="TEMPLATE",
                  help="--stack command: server template ({port}, {duration}).")
    @click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                  help="Override a scenario key on both sides.")
    @click.option("--sim-set", "sim_sets", multiple=True, metavar="KEY=VALUE",
                  help="Override a scenario key on the simulator side only (a what-if).")
    def crosscheck_cmd(scenario: Path, n: int, out: Path | None, stack: str,
                       command: str | None, server_command: str | None,
                       sets: tuple[str, ...], sim_sets: tuple[str, ...]) -> None:
        """Run SCENARIO n times in the simulator and n times in the emulator with real stacks
        (the kernel's TCP where it has the cc), validate per metric and write one report."""
        import sys

        from l4slab.emulate import EmulateError
        from l4slab.validation.io import ValidationInputError

        out = out or Path("results") / f"crosscheck-{scenario.stem}"
        try:
            rep = crosscheck(scenario, out, n, stack=stack, command=command,
                             server_command=server_command, sets=list(sets),
                             sim_sets=list(sim_sets),
                             echo=lambda m: click.echo(m, err=True))
        except (ScenarioError, EmulateError, ValidationInputError) as e:
            click.echo(error_line(str(e)), err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            # The CLI's convention for Ctrl-C (128 + SIGINT); finished runs stay in -o and
            # are reused by the next crosscheck with the same -o.
            click.echo(f"crosscheck: interrupted; finished runs are kept in {out}", err=True)
            sys.exit(130)
        click.echo(_table(rep))
        click.echo(f"report: {out / 'crosscheck.md'}")

    return crosscheck_cmd


crosscheck_cmd = _cli()

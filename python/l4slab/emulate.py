"""`l4slab emulate`: run real programs through the emulator (`l4s-emu`) and turn its raw output
into a standard run directory (samples/flows/packets parquet, summary.json, scenario.toml,
figures, report.html), so `l4slab plot`, `summary` and `validate` read emulator runs unchanged.

The binary is found through $L4SLAB_EMU_BIN, then `target/release/l4s-emu` of the source tree,
then PATH. While it runs a live view (per-class throughput, queue delay, p', marks and drops per
second) is drawn from the stats lines it writes to a pipe; `--quiet` turns it off.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from l4slab.console import error_line
from l4slab.emuflows import (
    LAUNCH_FILE,
    port_rows,
    read_rows,
    scenario_apps,
    scenario_flows,
    scenario_frames,
)

__all__ = ["emulate_cmd", "find_binary", "build_run_dir", "EmulateError"]

#: Where `cargo build --release -p l4s-emu` puts the binary, relative to the source tree.
_TREE_BIN = Path(__file__).resolve().parents[2] / "target" / "release" / "l4s-emu"
#: Flags of l4s-emu that take a value (to find -o and the command among the arguments).
_VALUE_FLAGS = {"--rate", "--trace", "--uplink-trace", "--downlink-trace", "--delay", "--loss",
                "--aqm", "--aqm-arg", "--uplink-log", "--downlink-log", "--pcap", "--server",
                "--seed",
                "-o", "--output", "--spin", "--stats-fd", "--sweep", "--uplink-rate",
                "--downlink-rate", "--uplink-delay", "--downlink-delay", "--uplink-loss",
                "--downlink-loss", "--uplink-aqm", "--downlink-aqm", "--uplink-aqm-arg",
                "--downlink-aqm-arg", "--rt-priority", "--tcp-cc"}


class EmulateError(Exception):
    """A problem before or after the emulation, reported as one line."""


def find_binary() -> Path:
    """$L4SLAB_EMU_BIN, then the source tree's target/release/l4s-emu, then PATH."""
    env = os.environ.get("L4SLAB_EMU_BIN")
    if env:
        p = Path(env)
        if p.is_file() and os.access(p, os.X_OK):
            return p
        raise EmulateError(f"L4SLAB_EMU_BIN={env} is not an executable file")
    if _TREE_BIN.is_file() and os.access(_TREE_BIN, os.X_OK):
        return _TREE_BIN
    found = shutil.which("l4s-emu")
    if found:
        return Path(found)
    raise EmulateError("the emulator binary l4s-emu was not found: build it with "
                       "`cargo build --release -p l4s-emu` (or `make develop`), or set "
                       "L4SLAB_EMU_BIN")


def _split(args: list[str]) -> tuple[list[str], list[str]]:
    """(emulator options, command after `--`)."""
    if "--" in args:
        i = args.index("--")
        return args[:i], args[i:]
    return args, []


def _option(opts: list[str], *names: str) -> str | None:
    """Value of the last `--name VALUE` / `--name=VALUE` among the options."""
    val = None
    i = 0
    while i < len(opts):
        a = opts[i]
        flag, _, inline = a.partition("=")
        if flag in names:
            if inline or "=" in a:
                val = inline
            elif i + 1 < len(opts):
                val = opts[i + 1]
                i += 1
        elif a in _VALUE_FLAGS:
            i += 1
        i += 1
    return val


# --- raw output -> run directory ----------------------------------------------------------------

_DTYPES = {"t_s": "f8", "queue": "u1", "backlog_pkts": "u8", "backlog_bytes": "u8",
           "sojourn_ms": "f8", "marks": "u8", "drops": "u8", "p_prime": "f8", "p_c": "f8",
           "p_cl": "f8", "flow": "u4", "delivered_bytes": "u8", "tput_mbps": "f8",
           "cwnd_pkts": "f8", "srtt_ms": "f8", "pacing_mbps": "f8", "ce_acked": "u8",
           "verdict": "u1"}


def _columns(cols: dict[str, list[Any]]) -> dict[str, tuple[str, bytes]]:
    """JSON lists -> the `(dtype, bytes)` pairs `results.from_core` reads."""
    out = {}
    for k, v in cols.items():
        dt = _DTYPES.get(k, "f8")
        arr = np.asarray([np.nan if x is None else x for x in v], dtype=dt)
        out[k] = (dt, arr.tobytes())
    return out


def _flow_csvs(flow_dir: Path) -> pd.DataFrame | None:
    """Rows written by `l4slab flow` senders into $L4SLAB_FLOW_DIR (one CSV per sender)."""
    frames = []
    for f in sorted(flow_dir.glob("flow-*.csv")):
        try:
            df = read_rows(f)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
            raise EmulateError(f"{f}: not a flow CSV ({e})") from e
        # The pid in the name ties the rows to a sender of scenario mode's launch.json.
        df["_pid"] = int(f.stem.split("-", 1)[1]) if f.stem.split("-", 1)[1].isdigit() else -1
        frames.append(df)
    if not frames:
        return None
    return pd.concat(frames, ignore_index=True)


def build_run_dir(out: Path, *, figures: bool = True, report: bool = True,
                  watch: HostWatch | None = None) -> dict[str, Any]:
    """Write the standard run directory from the emulator's raw output in `out/raw`.

    The busier direction (more bytes delivered) is the run's bottleneck: its samples, flows
    and packets become samples/flows/packets.parquet and its summary the summary.json; the
    other direction's summary, and both directions' lateness and counters, sit under the
    summary's `emulator` key. Returns the summary."""
    from l4slab.results import RunData, from_core, write_run_dir

    raw_dir = out / "raw"
    meta_path = out / "emulator.json"
    if not meta_path.exists():
        raise EmulateError(f"{out}: no emulator.json (the emulator did not finish)")
    meta = json.loads(meta_path.read_text())
    dirs = {}
    for name in ("uplink", "downlink"):
        p = raw_dir / f"{name}.json"
        if p.exists():
            dirs[name] = json.loads(p.read_text())
    if not dirs:
        raise EmulateError(f"{out}: no raw/uplink.json or raw/downlink.json")
    launch_path = out / "flows" / LAUNCH_FILE

    def carried(n: str) -> tuple[float, int]:
        # Throughput after the warm-up (null when the run ended inside it), then packets
        # delivered over the whole run.
        s = dirs[n]["summary"]
        return (sum(f.get("tput_mbps") or 0.0 for f in s.get("flows", [])),
                int((s.get("packets") or {}).get("delivered") or 0))

    primary = max(dirs, key=carried)
    if launch_path.exists() and "uplink" in dirs:
        primary = "uplink"  # scenario mode: the data direction, whatever it carried
    d = dirs[primary]
    core = {"queue_names": d["queue_names"], "flow_cc": d["flow_cc"],
            "flow_class": d["flow_class"], "samples": _columns(d["samples"]),
            "flows": _columns(d["flows"]),
            "packets": _columns(d["packets"]) if d.get("packets") else None,
            "summary_json": json.dumps(d["summary"])}
    scenario = meta.get("scenario", {})
    run: RunData = from_core(core, scenario=scenario)
    # Sender-side rows from `l4slab flow` (cwnd, srtt, pacing) join the bottleneck's rows.
    senders = _flow_csvs(out / "flows")
    flow_keys = list(d["flow_keys"])
    scenario_mode = None
    if launch_path.exists():
        # Scenario mode: the senders' rows in the simulator's layout, by scenario flow index.
        launch = json.loads(launch_path.read_text())
        senders = port_rows(launch, senders, run.flows, flow_keys)  # command flows
        warm = float(run.summary.get("warmup_s") or 0.0)
        # The senders run until the scenario's duration; the emulator stops a little later.
        # The flows' window is the simulator's, (warmup, duration].
        end = min(float(run.summary.get("duration_s") or launch["duration_s"]),
                  float(launch["duration_s"]))
        grid = np.unique(run.samples["t_s"].to_numpy()) if len(run.samples) else \
            np.arange(1, int(end / 0.016) + 1) * 0.016
        flows, rows, scenario_mode = scenario_flows(
            launch, senders, grid, list(run.summary.get("flows", [])), (warm, end))
        run.flows = flows
        # Real-time flows: frames.parquet and flows[i].frames, as the simulator writes them.
        frames, blocks, problems = scenario_frames(launch, out / "flows", (warm, end))
        if frames is not None:
            run.app["frames"] = frames
        for r in rows:
            if r["id"] in blocks:
                r["frames"] = blocks[r["id"]]
        scenario_mode["problems"] += problems
        # [[workloads]] and [[probes]]: fct/probes.parquet and their summary blocks.
        app_tables, app_blocks, app_diag = scenario_apps(launch, out / "flows", (warm, end))
        run.app.update(app_tables)
        if app_diag:
            scenario_mode["problems"] += app_diag.pop("problems")
            scenario_mode["apps"] = app_diag
        run.summary = {**run.summary, "flows": rows, "jain": scenario_mode.pop("jain"),
                       **app_blocks}
        # Per-packet rows and wifi.clients name the bottleneck's flow ids (order of first
        # packet): the scenario's index instead; a 5-tuple no sender owns gets an id after them.
        by_key = {r["flow"]: r["id"] for r in rows if r["flow"] is not None}
        remap = {i: by_key.get(k, len(rows) + i) for i, k in enumerate(flow_keys)}
        for c in (run.summary.get("wifi") or {}).get("clients") or []:
            c["flows"] = sorted(remap.get(i, len(rows) + i) for i in c.get("flows", []))
        if run.packets is not None and len(run.packets):
            run.packets["flow"] = run.packets["flow"].map(remap).fillna(
                run.packets["flow"] + len(rows)).astype(np.uint32)
    elif senders is not None:
        if "acked_bytes" in senders:
            # l4s-flow's media senders count the bytes their feedback reported received:
            # acked_mbps over each of the sender's own intervals, as tput_mbps is.
            g = senders.sort_values("t_s", kind="stable").groupby("_pid", sort=False)
            da = g["acked_bytes"].diff().fillna(senders["acked_bytes"])
            dt = g["t_s"].diff().fillna(senders["t_s"])
            senders["acked_mbps"] = np.where(dt > 0, da * 8.0 / dt.where(dt > 0, 1) / 1e6, 0.0)
            senders = senders.drop(columns="acked_bytes")
        senders = senders.drop(columns="_pid")
        # A sender's 5-tuple that the bottleneck saw keeps the bottleneck's flow id; any other
        # gets a new id after them. flow ids stay integers (summary.emulator.flow_keys names
        # them) so the simulator's plots and readers work unchanged.
        ids = []
        seen_class = {f.get("flow"): f.get("class") for f in run.summary.get("flows", [])}
        keys = senders["flow"].astype(str)
        for key in keys:
            if key not in flow_keys:
                flow_keys.append(key)
            ids.append(flow_keys.index(key))
        senders["flow"] = np.asarray(ids, dtype=np.uint32)
        # The class the bottleneck saw (the packets' ECN codepoint); for a 5-tuple it did not
        # see, the CC's default: only Prague sends ECT(1) unless told otherwise (DCTCP asks
        # for classic ECN, BBRv3 for none).
        senders["class"] = [seen_class.get(k) or ("L4S" if cc == "prague" else "Classic")
                            for k, cc in zip(keys, senders["cc"].astype(str), strict=True)]
        flows = pd.concat([run.flows.astype({"cc": str, "class": str}), senders],
                          ignore_index=True)
        flows["flow"] = flows["flow"].astype(np.uint32)
        flows["cc"] = flows["cc"].astype("category")
        flows["class"] = pd.Categorical(flows["class"], categories=["L4S", "Classic"])
        run.flows = flows
    summary = dict(run.summary)
    summary["emulator"] = {
        "primary_direction": primary,
        "exit_status": meta.get("exit_status"),
        "duration_s": meta.get("duration_s"),
        "realtime": meta.get("realtime"),
        "offload": meta.get("offload"),
        "lateness_us": {n: dirs[n].get("lateness_us", {}) for n in dirs},
        "directions": {n: meta_d for n, meta_d in
                       ((x["name"], x) for x in meta.get("directions", []))},
        "flow_keys": flow_keys,
        "other_direction": {n: dirs[n]["summary"] for n in dirs if n != primary},
    }
    if scenario_mode is not None:
        summary["emulator"]["scenario_mode"] = scenario_mode
    summary["emulator"]["tcp_sysctls"] = meta.get("tcp_sysctls")
    summary["emulator"]["priority"] = meta.get("priority")
    summary["emulator"]["spin"] = meta.get("spin")
    summary["emulator"]["tcp_cc"] = meta.get("tcp_cc")
    if watch is not None:
        from l4slab.stacks import kernel_cc

        launch = json.loads(launch_path.read_text()) if launch_path.exists() else {}
        # Kernel flows of scenario mode set their own cc with TCP_CONGESTION.
        asked = {kernel_cc(f["cc"]) for f in launch.get("flows", [])
                 if (f.get("stack") or {}).get("stack") == "kernel"}
        summary["emulator"]["host"] = watch.report(
            (meta.get("tcp_cc") or {}).get("default"), asked)
    summary["emulator"]["server_exit_status"] = meta.get("server_exit_status")
    warm, dur = summary.get("warmup_s") or 0.0, summary.get("duration_s") or 0.0
    summary["emulator"]["ended_inside_warmup"] = bool(dur <= warm and warm > 0)
    # The primary direction's lateness is the run's (summary.json's stable key).
    summary["lateness_us"] = dirs[primary].get("lateness_us", {})
    summary["emulator"]["suspect"] = suspect_reasons(summary)
    run.summary = summary
    write_run_dir(run, out, figures=figures, report=report)
    return summary


# --- the hosted programs and the host's load ---------------------------------------------------

#: A run is suspect when the bottleneck's lateness p99 exceeds this (1 ms: DualPI2's step
#: threshold, so a late release alone can change the L queue's marking and every RTT) ...
SUSPECT_LATENESS_P99_US = 1000.0
#: ... or when the host's 1-minute load average (at the start or the end) exceeds its CPUs.
_POLICIES = {0: "SCHED_OTHER", 1: "SCHED_FIFO", 2: "SCHED_RR", 3: "SCHED_BATCH",
             5: "SCHED_IDLE", 6: "SCHED_DEADLINE"}


def _proc_table() -> dict[int, tuple[int, str, int, int]]:
    """pid -> (ppid, comm, rt_priority, policy) of every process (proc(5) stat fields 4, 2,
    40, 41)."""
    out = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2:].split()
        # rest[0] is field 3 (state): field n is rest[n - 3].
        out[int(p.name)] = (int(rest[1]), comm, int(rest[37]), int(rest[38]))
    return out


def _side_of(holder: int) -> str:
    """"server" or "client": the side whose namespace holds the server's address (10.77.0.2,
    a /32 LOCAL entry of its fib_trie); host mode's one namespace is the client."""
    try:
        lines = Path(f"/proc/{holder}/net/fib_trie").read_text().splitlines()
    except OSError:
        return "client"
    for prev, line in zip(lines, lines[1:], strict=False):
        if "/32 host LOCAL" in line and prev.strip().endswith("10.77.0.2"):
            return "server"
    return "client"


def parse_ss(text: str) -> list[dict[str, str]]:
    """TCP connections of `ss -tinH` output: local, peer and the congestion control named on
    each connection's info line (tcp_diag's INET_DIAG_CONG)."""
    conns: list[dict[str, str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            f = line.split()
            if len(f) >= 5:
                conns.append({"state": f[0], "local": f[3], "peer": f[4], "cc": ""})
        elif conns and not conns[-1]["cc"]:
            words = line.split()
            # The first bare word (no ':') before the key:value pairs names the CC.
            first = next((w for w in words if ":" not in w), "")
            conns[-1]["cc"] = first if first.isidentifier() else ""
    return conns


class HostWatch:
    """While l4s-emu runs: every `period_s`, the TCP connections in its namespaces (`ss -tin`
    inside each, through nsenter) and the scheduling class of every program there; the host's
    load average at the start and the end."""

    def __init__(self, period_s: float = 0.25) -> None:
        self.period_s = period_s
        self.load_start = list(os.getloadavg())
        self.load_end: list[float] | None = None
        self.conns: dict[tuple[str, str], dict[str, str]] = {}
        self.programs: dict[tuple[str, str, str, int], dict[str, Any]] = {}
        self._sides: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ss = shutil.which("ss") and shutil.which("nsenter")

    def start(self, emu_pid: int) -> None:
        self._thread = threading.Thread(target=self._run, args=(emu_pid,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.load_end = list(os.getloadavg())

    def _run(self, emu_pid: int) -> None:
        while not self._stop.is_set():
            try:
                self.poll(emu_pid)
            except (OSError, ValueError, IndexError, subprocess.SubprocessError):
                pass
            self._stop.wait(self.period_s)

    def poll(self, emu_pid: int) -> None:
        table = _proc_table()
        kids: dict[int, list[int]] = {}
        for pid, (ppid, *_rest) in table.items():
            kids.setdefault(ppid, []).append(pid)
        # l4s-emu's children that are namespace holders (each a fork of l4s-emu: same comm),
        # their init, and everything below: the side's programs.
        for holder in kids.get(emu_pid, []):
            if table[holder][1] != table.get(emu_pid, (0, ""))[1]:
                continue
            stack, hosted = list(kids.get(holder, [])), []
            while stack:
                pid = stack.pop()
                stack += kids.get(pid, [])
                if table[pid][1] != table[emu_pid][1]:
                    hosted.append(pid)
            side = _side_of(holder)
            if self._ss:
                r = subprocess.run(["nsenter", "-t", str(holder), "-n", "ss", "-tinH"],
                                   capture_output=True, text=True, timeout=5)
                for c in parse_ss(r.stdout):
                    if c["cc"] and c["state"] in ("ESTAB", "FIN-WAIT-1", "CLOSE-WAIT"):
                        self.conns.setdefault((c["local"], c["peer"]), {
                            "side": side, "local": c["local"], "peer": c["peer"],
                            "cc": c["cc"]})
            for pid in hosted:
                if pid not in table:
                    continue
                _, comm, prio, pol = table[pid]
                key = (side, comm, _POLICIES.get(pol, str(pol)), prio)
                self.programs.setdefault(key, {"side": side, "comm": comm,
                                               "policy": key[2], "priority": prio})

    def report(self, default_cc: str | None, scenario_ccs: set[str]) -> dict[str, Any]:
        """summary.json's `emulator.host` block: load, programs, connections and their CC."""
        cpus = os.cpu_count() or 1
        conns = []
        for c in self.conns.values():
            expected = default_cc
            conns.append({**c, "expected": expected,
                          "differs": bool(default_cc) and c["cc"] != default_cc
                          and c["cc"] not in scenario_ccs})
        return {"cpus": cpus, "load_avg_start": self.load_start, "load_avg_end": self.load_end,
                "programs": sorted(self.programs.values(),
                                   key=lambda p: (p["side"], p["comm"], p["policy"],
                                                  p["priority"])),
                "tcp_connections": conns}


def suspect_reasons(summary: dict[str, Any]) -> list[str]:
    """Why a run's figures are suspect (a late link or a loaded host), with the figures."""
    out = []
    p99 = (summary.get("lateness_us") or {}).get("p99")
    if p99 is not None and p99 > SUSPECT_LATENESS_P99_US:
        out.append(f"the emulator's lateness p99 was {p99 / 1000:.2f} ms (threshold "
                   f"{SUSPECT_LATENESS_P99_US / 1000:g} ms): packets left the link late, so "
                   "queue delays, RTTs and marking are biased")
    host = (summary.get("emulator") or {}).get("host") or {}
    cpus = host.get("cpus") or os.cpu_count() or 1
    loads = [x[0] for x in (host.get("load_avg_start"), host.get("load_avg_end")) if x]
    if loads and max(loads) > cpus:
        out.append(f"the host's 1-minute load average reached {max(loads):.2f} on {cpus} "
                   f"CPUs (threshold: the number of CPUs): the hosted programs competed for "
                   "the CPU")
    return out


# --- live view ----------------------------------------------------------------------------------

def dashboard_table(st: dict[str, Any]) -> Any:
    """One stats line of the emulator as a rich Table (L4S blue, Classic orange)."""
    from rich.table import Table

    t = Table(title=f"l4s-emu  t={st.get('t_s', 0):.1f}s", title_justify="left", expand=False)
    for col in ("dir", "L4S Mb/s", "Classic Mb/s", "queue delay ms", "p'", "marks/s",
                "drops/s"):
        t.add_column(col, justify="right")
    for d in st.get("dirs", []):
        qd = "  ".join(f"{q['name']} {q['sojourn_ms']:.2f}" for q in d.get("queues", []))
        t.add_row(d["name"], f"[blue]{d.get('l4s_mbps', 0):.2f}[/]",
                  f"[dark_orange]{d.get('classic_mbps', 0):.2f}[/]", qd,
                  f"{d.get('p_prime', 0):.3f}", f"{d.get('marks_per_s', 0):.0f}",
                  f"{d.get('drops_per_s', 0):.0f}")
    return t


def _dashboard(read_fd: int, stop: threading.Event) -> None:
    """Draw the stats lines of the emulator, a few times a second, on stderr."""
    from rich.console import Console
    from rich.live import Live

    con = Console(stderr=True)
    with os.fdopen(read_fd, "r", buffering=1) as f, \
            Live(dashboard_table({}), console=con, refresh_per_second=4,
                 transient=False) as live:
        for line in f:
            if stop.is_set():
                break
            try:
                live.update(dashboard_table(json.loads(line)))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue


# --- command ------------------------------------------------------------------------------------

def _without_output(opts: list[str]) -> list[str]:
    """The options minus -o/--output DIR."""
    kept: list[str] = []
    skip = False
    for a in opts:
        if skip:
            skip = False
            continue
        if a in ("-o", "--output"):
            skip = True
            continue
        if a.startswith("--output="):
            continue
        kept.append(a)
    return kept


def _positionals(opts: list[str]) -> list[str]:
    """The arguments that are neither flags nor flag values (the scenario file)."""
    out, i = [], 0
    while i < len(opts):
        a = opts[i]
        if a in _VALUE_FLAGS or a == "--set":
            i += 2
            continue
        if not a.startswith("-"):
            out.append(a)
        i += 1
    return out


def scenario_mode_file(args: list[str]) -> Path | None:
    """The scenario file when these arguments ask for scenario mode: a scenario with [[flows]]
    and no COMMAND after `--`, no --server and no --host."""
    opts, command = _split(list(args))
    pos = _positionals(opts)
    if command or not pos or "--server" in opts or "--host" in opts:
        return None
    path = Path(pos[0])
    if path.suffix not in (".toml", ".json") or not path.is_file():
        return None
    try:
        import tomllib

        text = path.read_text()
        doc = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (OSError, UnicodeDecodeError, ValueError):
        return None  # the emulator reports the file's problem itself
    return path if isinstance(doc, dict) and "flows" in doc else None


#: Flags scenario mode takes (everything else about the run is in the scenario file).
_SCENARIO_FLAGS = {"-o", "--output", "--quiet", "-q", "--no-realtime", "--spin", "--seed",
                   "--set", "--no-offload", "--uplink-log", "--downlink-log", "--pcap",
                   "--rt-priority", "--tcp-cc"}


def _scenario_mode_opts(opts: list[str], scen: Path) -> tuple[list[str], list[str]]:
    """(options passed to l4s-emu, --set overrides); a flag scenario mode does not take is an
    EmulateError naming it."""
    passed: list[str] = []
    sets: list[str] = []
    i = 0
    seen_scenario = False
    while i < len(opts):
        a = opts[i]
        flag, eq, inline = a.partition("=")
        if not a.startswith("-"):
            if seen_scenario or a != str(scen):
                raise EmulateError(f"{a}: unexpected argument; scenario mode takes one "
                                   "scenario file")
            seen_scenario = True
            i += 1
            continue
        if flag not in _SCENARIO_FLAGS:
            raise EmulateError(
                f"{flag}: not available in scenario mode (the bottleneck, delays and flows come "
                "from the scenario file: change them there or with --set KEY=VALUE, e.g. "
                "--set link.rate=20mbit)")
        takes_value = flag in _VALUE_FLAGS or flag == "--set"
        value = inline if eq else (opts[i + 1] if takes_value and i + 1 < len(opts) else None)
        if takes_value and value is None:
            raise EmulateError(f"{flag}: needs a value")
        if flag == "--set":
            sets.append(value or "")
        elif flag == "--seed":
            sets.append(f"seed={value}")
        else:
            passed += [flag] + ([value] if takes_value and value is not None else [])
        i += 1 if (eq or not takes_value) else 2
    return passed, sets


def _absolute_traces(doc: dict[str, Any], base_dir: Path) -> None:
    """Trace paths relative to the scenario file, made absolute (the emulator reads a copy)."""
    tables = [doc.get("link")]
    emu = doc.get("emulator")
    if isinstance(emu, dict):
        tables += [emu.get("uplink"), emu.get("downlink")]
    for t in tables:
        if isinstance(t, dict) and isinstance(t.get("trace"), str):
            t["trace"] = str((base_dir / t["trace"]).resolve())


def _flow_binary() -> Path:
    from l4slab.flow import find_binary as find_flow_binary

    flow_bin = find_flow_binary()
    if flow_bin is None:
        raise EmulateError("scenario mode needs l4s-flow (l4slab flow): build it with `cargo "
                           "build --release -p l4s-flow` (or `make develop`), or set "
                           "L4SLAB_FLOW_BIN")
    return flow_bin


def plan_doc(doc: dict[str, Any], base_dir: Path) -> Any:
    """Scenario mode's plan of a scenario dict (`l4slab.emuflows.plan_scenario`), its errors
    as EmulateError."""
    from l4slab.emuflows import plan_scenario
    from l4slab.scenario import ScenarioError

    try:
        return plan_scenario(doc, base_dir)
    except ScenarioError as e:
        raise EmulateError(str(e)) from None


def emulate_doc(doc: dict[str, Any], base_dir: Path, out: Path, opts: list[str], *,
                command: list[str] | None = None, report_flows: bool = True) -> int:
    """One emulator run of the scenario dict `doc` into `out` (which must not hold anything):
    scenario mode (its [[flows]] as l4s-flow senders) without `command`, else COMMAND mode
    (`command` starts with `--`). `opts` are further l4s-emu options (not -o). Returns the
    exit status (the launcher's or the command's). `report_flows` prints where the run is and
    its flows and queues (off in sweeps, whose runs are renamed afterwards)."""
    import tempfile

    from l4slab.emuflows import LAUNCHER

    plan = None
    if command is None:
        plan = plan_doc(doc, base_dir)
        flow_bin = _flow_binary()
        doc = plan.doc
    doc = json.loads(json.dumps(doc))
    _absolute_traces(doc, base_dir)
    tmp = Path(tempfile.mkdtemp(prefix="l4slab-emu-"))
    try:
        # Readable by the invoking user: under sudo the emulator runs the commands as them.
        tmp.chmod(0o755)
        scen_json = tmp / "scenario.json"
        scen_json.write_text(json.dumps(doc))
        scen_json.chmod(0o644)
        if plan is not None:
            plan_json = tmp / "plan.json"
            plan_json.write_text(json.dumps(plan.to_json()))
            plan_json.chmod(0o644)
            from l4slab.stacks import server_shell

            server = server_shell([{"stack": "model", **(f.stack or {})} for f in plan.flows]
                                  + [{"stack": "model"}] * bool(plan.apps),
                                  plan.servers(str(flow_bin)), plan.duration_s)
            command = ["--server", server, "--", sys.executable, str(LAUNCHER), str(plan_json),
                       str(flow_bin)]
        rc = run_emulator([str(scen_json), *opts, "-o", str(out), *(command or [])],
                          announce=report_flows, scratch=[tmp])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if plan is not None and report_flows and (out / "summary.json").exists():
        s = json.loads((out / "summary.json").read_text())

        def num(v: Any, unit: str, digits: int) -> str:
            # A figure the window left empty (no packets of that queue after warm-up) is null.
            return "-" if v is None else f"{v:.{digits}f}{unit}"

        for f in s.get("flows", []):
            click.echo(f"  flow {f['id']} {f['cc']} ({f['class']}): "
                       f"{num(f.get('tput_mbps'), ' Mb/s', 2)}, srtt "
                       f"{num(f.get('srtt_ms'), ' ms', 1)}, CE {f['ce_marks']}, drops "
                       f"{f['drops']}", err=True)
        for q in s.get("queues", []):
            soj = q.get("sojourn_ms") or {}
            click.echo(f"  queue {q['name']}: sojourn mean {num(soj.get('mean'), ' ms', 2)}, "
                       f"p99 {num(soj.get('p99'), ' ms', 2)}, marks {q['marks']}, drops "
                       f"{q['drops']}", err=True)
    if plan is not None and (out / "summary.json").exists():
        s = json.loads((out / "summary.json").read_text())
        for msg in s.get("emulator", {}).get("scenario_mode", {}).get("problems", []):
            click.echo(f"warning: {msg}", err=True)
    return rc


def _with_emulator_key(msg: str) -> str:
    """The simulator's "unknown field; expected one of ..." for a top-level key, with the
    emulator's own top-level table `emulator` among the allowed keys."""
    import re

    m = re.match(r"^([^.:\s]+): unknown field; expected one of (.*)$", msg)
    if m is None or "`emulator`" in m.group(2):
        return msg
    return f"{m.group(1)}: unknown field; expected one of {m.group(2)}, `emulator`"


def run_scenario_mode(scen: Path, args: list[str]) -> int:
    """`l4slab emulate SCENARIO.toml [-o DIR] [--set K=V]`: the scenario's [[flows]] as
    l4s-flow senders through the emulator for its duration (module `l4slab.emuflows`)."""
    from l4slab.scenario import ScenarioError, apply_overrides, load_scenario

    opts, _ = _split(list(args))
    passed, sets = _scenario_mode_opts(opts, scen)
    try:
        src = load_scenario(scen)
        doc = apply_overrides(src.data, sets)
    except ScenarioError as e:
        raise EmulateError(f"{scen}: {e}") from None
    try:
        plan_doc(doc, src.base_dir)  # refuse before anything runs
    except EmulateError as e:
        raise EmulateError(f"{scen}: {_with_emulator_key(str(e))}") from None
    out_s = _option(passed, "-o", "--output")
    out = Path(out_s) if out_s else \
        Path("results") / f"emu-{scen.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    return emulate_doc(doc, src.base_dir, out, _without_output(passed))


def emulator_preflight() -> None:
    """Raise EmulateError when the emulator cannot run here, with its own one-line reason and
    remedy (e.g. no root and no user namespaces): a 0-second emulation of `true`."""
    import tempfile

    binary = find_binary()
    with tempfile.TemporaryDirectory(prefix="l4slab-emu-probe-") as d:
        try:
            r = subprocess.run([str(binary), "--quiet", "-o", str(Path(d) / "probe"), "--",
                                "true"], capture_output=True, text=True, timeout=60,
                               stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise EmulateError(f"the emulator cannot run here: {binary}: {e}") from None
    if r.returncode != 0:
        lines = [x for x in r.stderr.strip().splitlines() if x.strip()]
        why = lines[-1] if lines else f"exit status {r.returncode}"
        raise EmulateError(f"the emulator cannot run here: {why}")


class EmulatorEngine:
    """Runs a sweep's grid through the emulator, one run at a time (`sweeps.sweep(...,
    engine=...)`): scenario mode, or COMMAND in every run when `command` is given."""

    name = "emulator"

    def __init__(self, opts: list[str] | None = None, command: list[str] | None = None,
                 on_run: Any = None) -> None:
        self.opts = list(opts or [])
        if "--quiet" not in self.opts and "-q" not in self.opts:
            self.opts.append("--quiet")
        self.command = command
        self.on_run = on_run
        self._probed = False

    def validate(self, tasks: list[Any]) -> None:
        """Every grid point's scenario-mode plan (the refusals) and that the emulator can run
        here, before any run starts; errors as ScenarioError naming the grid point."""
        from l4slab.scenario import ScenarioError
        from l4slab.sweeps import point_error

        seen: set[int] = set()
        for t in tasks:
            if self.command is not None or t.point in seen:
                continue
            seen.add(t.point)
            try:
                plan_doc(t.scenario, Path(t.base_dir))
            except EmulateError as e:
                raise (point_error(None, t.params, e) if t.params else ScenarioError(str(e))
                       ) from None
        if self._probed:
            return
        try:
            find_binary()
            if self.command is None:
                _flow_binary()
            emulator_preflight()
        except EmulateError as e:
            raise ScenarioError(str(e)) from None
        self._probed = True

    def executor(self, out: Path) -> Any:
        def run_all(tasks: list[Any]) -> Any:
            for t in tasks:
                yield self.run_task(t, out)
        return run_all

    def run_task(self, task: Any, out: Path) -> Any:
        """One run into OUT/runs/<name>: emulated into a fresh staging directory, which then
        replaces the run directory (an unfinished earlier attempt; a finished one only when
        it is rerun, as simulator sweeps do). Ctrl-C stops the sweep."""
        from l4slab.sweeps import RunOutcome

        rd = out / "runs" / task.name
        stage = out / "runs" / f".{task.name}.emulating"
        shutil.rmtree(stage, ignore_errors=True)
        if self.on_run is not None:
            self.on_run(task)
        t0 = time.perf_counter()
        try:
            rc = emulate_doc(task.scenario, Path(task.base_dir), stage, self.opts,
                             command=self.command, report_flows=False)
        except EmulateError as e:
            return RunOutcome(task, "failed", str(e), elapsed_s=time.perf_counter() - t0)
        elapsed = time.perf_counter() - t0
        if rc == 130:
            raise KeyboardInterrupt
        finished = (stage / "summary.json").exists()
        if finished or stage.exists():
            shutil.rmtree(rd, ignore_errors=True)
            stage.rename(rd)
        if finished and rc == 0:
            return RunOutcome(task, "ok", elapsed_s=elapsed)
        why = "no run directory was written" if not finished else f"exit status {rc}"
        return RunOutcome(task, "failed", f"emulation failed ({why})", elapsed_s=elapsed)


def run_sweep(sweep_file: Path, args: list[str]) -> int:
    """`l4slab emulate --sweep FILE [opts] [-- COMMAND]`: the grid through the emulator one run
    at a time, with the simulator sweep's layout, resume and lock (`l4slab.sweeps.sweep`);
    COMMAND in every run, or scenario mode without it. Returns 1 if any run failed."""
    from l4slab.progress import resume_line
    from l4slab.results import OutputDirError
    from l4slab.scenario import ScenarioError
    from l4slab.sweeps import point_label, sweep

    opts, command = _split(list(args))
    out = Path(_option(opts, "-o", "--output") or Path("results") / f"{sweep_file.stem}-emu")
    engine = EmulatorEngine(_without_output(opts), command or None,
                            on_run=lambda t: click.echo(f"{t.name}: {point_label(t.params)}",
                                                        err=True))

    def on_start(total: int, skipped: int) -> None:
        if skipped:
            click.echo(resume_line(total, skipped, out), err=True)

    try:
        res = sweep(sweep_file, out, engine=engine, report=False, on_start=on_start)
    except (ScenarioError, OutputDirError) as e:
        raise EmulateError(str(e)) from None
    for o in res.failed:
        click.echo(f"{o.task.name}: failed: {o.error}", err=True)
    click.echo(f"sweep {out}: {len(res.index) - len(res.failed)} of {len(res.index)} runs "
               "finished", err=True)
    return 1 if res.failed else 0


def _pdeathsig_preexec() -> Any:
    """A preexec_fn for l4s-emu: SIGKILL when this wrapper dies (prctl PR_SET_PDEATHSIG, kept
    across exec), so a SIGKILLed `l4slab emulate` takes l4s-emu, and through l4s-emu's own
    PDEATHSIG chain its namespace holders and commands, with it."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def preexec() -> None:
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
        # The wrapper may have died between fork and prctl: then nobody would kill us.
        if os.getppid() != parent:
            os._exit(1)
    return preexec


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _check_output_dir(out: Path) -> None:
    """-o must name a new or empty directory (results are never overwritten)."""
    try:
        out.exists()
    except OSError as e:
        raise EmulateError(f"-o {out}: {e.strerror}") from None
    if out.exists() and not out.is_dir():
        raise EmulateError(f"-o {out}: exists and is not a directory; choose a new directory")
    if out.exists() and any(out.iterdir()):
        raise EmulateError(f"-o {out}: exists and is not empty; choose a new directory "
                           "(results are never overwritten)")


#: The janitor (a separate session, so a signal to the wrapper's group does not reach it):
#: it reads the wrapper's pipe until EOF. "done" means the wrapper finished its own
#: clean-up; otherwise (the wrapper was SIGKILLed) it waits for l4s-emu (whose pid came
#: down the pipe) to die with it (PR_SET_PDEATHSIG), then removes what an unfinished run
#: leaves: the run directory when it holds no emulator.json (or, if it existed before, its
#: contents), and the scratch paths (scenario mode's /tmp/l4slab-emu-*).
_JANITOR = r"""
import os, shutil, signal, sys, time
from pathlib import Path
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
out, existed, extra = Path(sys.argv[1]), sys.argv[2] == "1", sys.argv[3:]
words = sys.stdin.read().split()
if "done" in words:
    sys.exit(0)
emu = [int(w[4:]) for w in words if w.startswith("emu=")]
end = time.monotonic() + 60
while emu and os.path.exists(f"/proc/{emu[0]}") and time.monotonic() < end:
    time.sleep(0.05)
if out.is_dir() and not (out / "emulator.json").exists():
    if existed:
        for p in out.iterdir():
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
    else:
        shutil.rmtree(out, ignore_errors=True)
for x in extra:
    shutil.rmtree(x, ignore_errors=True)
"""


def _start_janitor(out: Path, existed: bool, extra: list[Path]
                   ) -> subprocess.Popen[bytes] | None:
    """The process that cleans up after a SIGKILLed wrapper (`_JANITOR`); None when it cannot
    be started (the run goes on; only a SIGKILL would then leave its directory behind)."""
    try:
        return subprocess.Popen([sys.executable, "-S", "-c", _JANITOR, str(out),
                                 "1" if existed else "0", *map(str, extra)],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None


def _janitor_done(j: subprocess.Popen[bytes] | None) -> None:
    if j is None:
        return
    try:
        if j.stdin is not None:
            j.stdin.write(b"done\n")
            j.stdin.close()
    except OSError:
        pass
    j.wait()


def run_emulator(args: list[str], announce: bool = True, scratch: list[Path] | None = None
                 ) -> int:
    """Run l4s-emu with these arguments (plus -o and the stats pipe), build the run directory,
    return the command's exit status (128 + signal when a signal ended the run). `scratch`:
    paths the caller removes afterwards, removed by the janitor if this process is killed."""
    binary = find_binary()
    opts, command = _split(list(args))
    if "-h" in opts or "--help" in opts:
        click.echo(usage_text(binary))
        return 0
    if any(a == "--set" or a.startswith("--set=") for a in opts):
        why = "a COMMAND after --" if command else ("--server" if "--server" in opts else
                                                     "--host" if "--host" in opts else
                                                     "no scenario file with [[flows]]")
        raise EmulateError(
            f"--set: only in scenario mode (a scenario file with [[flows]], no COMMAND, no "
            f"--server or --host); this run has {why}: set the bottleneck with flags "
            "(--rate 20mbit, --delay 10ms, --aqm-arg step_thresh=5ms) or in the scenario file")
    out_s = _option(opts, "-o", "--output")
    if out_s is None:
        out = Path("results") / f"emu-{time.strftime('%Y%m%d-%H%M%S')}"
        opts += ["-o", str(out)]
    else:
        out = Path(out_s)
    _check_output_dir(out)
    existed = out.exists()
    quiet = "--quiet" in opts or "-q" in opts
    live = not quiet and sys.stderr.isatty()
    pass_fds: tuple[int, ...] = ()
    rfd = wfd = -1
    if live:
        rfd, wfd = os.pipe()
        opts += ["--stats-fd", str(wfd)]
        pass_fds = (wfd,)
    stop = threading.Event()
    # SIGINT/SIGTERM/SIGHUP to this process go on to l4s-emu, which stops the run and writes
    # its results; this process then writes the run directory and exits 128 + signal. (A
    # handler, not SIG_IGN: an ignored signal stays ignored in the child across exec, and
    # l4s-emu would never see a Ctrl-C sent to the process group.)
    got: list[int] = []
    proc: subprocess.Popen[bytes] | None = None

    def forward(signum: int, _frame: Any) -> None:
        got.append(signum)
        if proc is not None and proc.poll() is None:
            proc.send_signal(signum)

    stop_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, forward) for s in stop_signals}
    janitor = _start_janitor(out, existed, list(scratch or []))
    watch = HostWatch()
    try:
        proc = subprocess.Popen([str(binary), *opts, *command], pass_fds=pass_fds,
                                preexec_fn=_pdeathsig_preexec())
        watch.start(proc.pid)
        if janitor is not None and janitor.stdin is not None:
            janitor.stdin.write(f"emu={proc.pid}\n".encode())
            janitor.stdin.flush()
        if got and proc.poll() is None:
            proc.send_signal(got[0])  # arrived while the child was being started
        viewer = None
        if live:
            os.close(wfd)
            viewer = threading.Thread(target=_dashboard, args=(rfd, stop), daemon=True)
            viewer.start()
        # Wait in short slices: a signal the kernel hands to a helper thread (HostWatch, the
        # dashboard) only sets Python's flag, and its handler runs in this thread at its next
        # bytecode; an uninterrupted waitpid would hold it (and the forward) until l4s-emu
        # ended on its own.
        while True:
            try:
                rc = proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                continue
        watch.stop()
        stop.set()
        if viewer is not None:
            viewer.join(timeout=2)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if rc < 0 and got and -rc == got[0]:
        # Our signal reached l4s-emu while it was still setting up (before it handles them).
        click.echo(f"l4slab emulate: stopped by {_signal_name(got[0])} before the emulation "
                   "started; nothing was measured", err=True)
        rc = 128 - rc
    elif rc < 0:
        # l4s-emu itself was killed (SIGKILL or a signal it does not handle): no results.
        click.echo(error_line(f"l4s-emu was killed by {_signal_name(-rc)}; no results were "
                              "written"), err=True)
        rc = 128 - rc
    elif got and rc == 0:
        rc = 128 + got[0]
    if not (out / "emulator.json").exists():
        # Nothing finished (a refused start, a killed emulator): leave nothing behind, not an
        # empty run directory that makes the next run with the same -o fail.
        if out.is_dir() and not existed:
            shutil.rmtree(out, ignore_errors=True)
        elif out.is_dir():
            for p in out.iterdir():
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
        _janitor_done(janitor)
        return rc
    _janitor_done(janitor)
    try:
        summary = build_run_dir(out, watch=watch)
    except (EmulateError, ValueError, KeyError, OSError) as e:
        # The raw results stay in OUT/raw and OUT/emulator.json; the status is the command's.
        click.echo(error_line(f"{out}: could not write the run directory ({e}); the "
                              f"emulator's raw results are kept in {out / 'raw'}"), err=True)
        return rc if rc else 1

    def us(key: str) -> str:
        v = summary.get("lateness_us", {}).get(key)
        return "-" if v is None else f"{v:.1f} us"

    if summary["emulator"]["ended_inside_warmup"]:
        click.echo(f"warning: the run ended inside the scenario's warm-up "
                   f"({summary['duration_s']:.2f} s of {summary['warmup_s']:g} s): the "
                   "after-warm-up figures (throughput, queue delay, Jain) are empty; lengthen "
                   "the command or shorten the warm-up (warmup = ...)", err=True)
    if got:
        click.echo(f"l4slab emulate: stopped by {_signal_name(got[0])}; what was measured "
                   "until then is kept", err=True)
    for c in summary["emulator"].get("host", {}).get("tcp_connections", []):
        if c["differs"]:
            click.echo(f"WARNING: TCP connection {c['local']} > {c['peer']} ({c['side']} side) "
                       f"ran {c['cc']}, not {c['expected']} (the namespaces' default; "
                       "--tcp-cc): its results are not the default's (if the command chose "
                       f"{c['cc']} itself, e.g. iperf3 -C {c['cc']}, this is what it asked for)",
                       err=True)
    for why in summary["emulator"].get("suspect", []):
        click.echo(f"WARNING: this run's figures are suspect: {why}; rerun on a quieter host, "
                   "or with --rt-priority N (docs/emulator.md, \"A loaded host\")", err=True)
    if announce:
        click.echo(f"l4slab emulate: run directory {out} (exit status {rc}; emulator "
                   f"lateness p50 {us('p50')}, p99 {us('p99')})", err=True)
    return rc


def usage_text(binary: Path) -> str:
    """`l4slab emulate --help`: this front end's forms, then l4s-emu's options."""
    try:
        r = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30)
        emu_help = r.stdout
    except (OSError, subprocess.TimeoutExpired):
        emu_help = ""
    lines = emu_help.splitlines()
    body = lines[1:] if lines and lines[0].startswith("usage:") else lines
    head = [
        "usage: l4slab emulate [SCENARIO.toml] [options] [-- COMMAND [ARGS...]]",
        "       l4slab emulate SCENARIO.toml [-o DIR] [--set KEY=VALUE ...]   (scenario mode:"
        " its [[flows]] as l4slab flow senders)",
        "       l4slab emulate --sweep SWEEP.toml [-o DIR] [options] [-- COMMAND]",
    ]
    extra = [
        "  --set KEY=VALUE        scenario mode: override a scenario key, e.g. link.rate=20mbit",
        "  --sweep SWEEP.toml     run a sweep file's grid on the emulator, one run at a time",
    ]
    return "\n".join(head + body[:-1] + extra + body[-1:]) if body else "\n".join(head + extra)


class _RawArgs(click.Command):
    """A command that hands its arguments to l4s-emu untouched (click would drop `--`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["l4slab.emulate.args"] = list(args)
        return []


@click.command("emulate", cls=_RawArgs, context_settings={"help_option_names": []})
@click.pass_context
def emulate_cmd(ctx: click.Context) -> None:
    """Run COMMAND behind an emulated bottleneck (the same AQM objects as the simulator):
    `l4slab emulate [SCENARIO.toml] [--rate 50mbit --delay 20ms --aqm dualpi2 ...]
    [--server 'iperf3 -s'] -- COMMAND ARGS...`; `l4slab emulate --help` lists the options.
    Without a COMMAND, `l4slab emulate SCENARIO.toml [-o DIR] [--set KEY=VALUE]` runs the
    scenario's own [[flows]] as l4slab flow senders for its duration (scenario mode).
    `--sweep SWEEP.toml` runs a sweep file's grid on the emulator, one run at a time."""
    args = ctx.meta.get("l4slab.emulate.args", [])
    try:
        opts, _ = _split(list(args))
        sweep_file = _option(opts, "--sweep")
        if sweep_file is not None:
            i = args.index("--sweep") if "--sweep" in args else next(
                k for k, a in enumerate(args) if a.startswith("--sweep="))
            rest = args[:i] + args[i + (1 if args[i].startswith("--sweep=") else 2):]
            rc = run_sweep(Path(sweep_file), rest)
        elif (scen := scenario_mode_file(args)) is not None:
            rc = run_scenario_mode(scen, args)
        else:
            rc = run_emulator(args)
    except EmulateError as e:
        click.echo(error_line(str(e)), err=True)
        sys.exit(2)
    sys.exit(rc)

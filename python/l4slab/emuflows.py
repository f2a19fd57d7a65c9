"""Scenario mode of the emulator: a scenario's own `[[flows]]` run as `l4slab flow` (l4s-flow)
processes through the emulated bottleneck for the scenario's `duration`.

One l4s-flow receiver runs on the server side (and, when the scenario has real-time flows
`rt-prague`/`rt-gcc`/`rt-gcc-loss`/`rt-cbr`/`rt-scream`, one `l4s-flow -s --app rt` receiver
on port `RT_PORT`); on the client side a small launcher
(`emu_launcher.py`, standard library only) starts one l4s-flow sender per flow (after `count`
is expanded, in the simulator's flow order) at its `start` (plus the
simulator's start_jitter offset for that flow and seed), ends it at its `stop` or at
`duration`, and exits at `duration`, which ends the emulation. Data therefore flows
client -> server (the emulator's uplink) through the scenario's `[link]` and `[aqm]`; the
server -> client direction is the ACK path, which the simulator leaves uncongested, so it gets
an unlimited rate unless `[emulator.downlink]` says otherwise. The one-way delay of each
direction is the flows' `rtt`/2 unless `[emulator]` sets a delay.

What l4s-flow cannot do as the simulator would is refused with one error naming the field
(`flows[1].rtt: ...`), never approximated: per-flow RTTs, cbr flows, an initial window other
than 10, SACK or pacing turned off, TSO, GRO, an fq qdisc or another Prague mode, an
`[ack_link]`, and `[link]` features the emulator would
apply to both directions (loss, Gilbert-Elliott loss, jitter, rate steps, 1 ms txops).

Afterwards `scenario_flows` turns the senders' rows into the simulator's flows.parquet layout
(flow = the scenario's flow index, its cc and class, one row per sampling instant) and
summary.json flow rows with the simulator's definitions, so `l4slab validate SIM EMU` compares
like with like; `scenario_frames` turns the rt senders' frames-<pid>.csv into frames.parquet
rows and `flows[i].frames` blocks by the simulator's rules (`app_results::frames_block`).
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from l4slab.scenario import ScenarioError

__all__ = ["EmuFlow", "EmuPlan", "plan_scenario", "scenario_flows", "LAUNCH_FILE", "read_rows",
           "UNLIMITED_RATE", "MSS_OFFSET", "LAUNCHER", "RT_PORT", "PROBE_PORT", "scenario_frames",
           "scenario_apps"]

#: The launcher script (run with the same Python in the client namespace).
LAUNCHER = Path(__file__).resolve().with_name("emu_launcher.py")
#: What the launcher writes into $L4SLAB_FLOW_DIR: the plan plus each sender's pid and exit.
LAUNCH_FILE = "launch.json"
#: The ACK direction's rate when the scenario does not set one (the emulator's "no limit").
UNLIMITED_RATE = "1000gbit"
#: l4s-flow's header over UDP is 20 bytes longer than the simulated TCP header (44 + 8 bytes
#: against 32 with timestamps): a scenario `mss` becomes `--mss mss - 20`, so the packets on the
#: wire have the scenario's size (the default: 1448 -> 1428, both 1500-byte IP packets).
MSS_OFFSET = 20
#: Flow keys l4slab flow (a user-space TCP over UDP) cannot vary: the value it always runs
#: with, and why another cannot be honoured.
_FIXED_IN_L4S_FLOW = {
    "init_cwnd": (10, "l4slab flow has no option for it"),
    "sack": (True, "l4slab flow has no option for it"),
    "pacing": (True, "l4slab flow has no option for it"),
    "tso": (False, "l4slab flow sends one datagram per segment (no TSO bursts)"),
    "gro": (False, "the emulator's receiving namespace has no GRO ACK coalescing model"),
    "qdisc": ("none", "l4slab flow paces inside the sender; no fq/EDT qdisc sits below it"),
    "prague_cwnd_mode": (2, "l4slab flow runs Prague with 0.7's default mode 2"),
}
def host_tcp_wmem_max() -> int | None:
    """This host's net.ipv4.tcp_wmem[2] (the send buffer's autotuning cap), None if unreadable."""
    try:
        return int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    except (OSError, ValueError, IndexError):
        return None


def _check_tcp_wmem(value: object, path: str, kernel: bool) -> None:
    """`tcp_wmem` is a simulator key; the emulator honours it only where it holds already: a
    kernel stack on a host whose tcp_wmem[2] is that value (l4slab flow has no send buffer)."""
    if not kernel:
        raise ScenarioError(f"{path}: {value!r} cannot be honoured: l4slab flow has no send-buffer "
                            "limit; remove the key to run through the emulator")
    host = host_tcp_wmem_max()
    if host is not None and value != host:
        raise ScenarioError(f"{path}: {value!r} differs from this host's net.ipv4.tcp_wmem max "
                            f"{host}, which the kernel stack uses; set {host} or remove the key")


_L4S_FLOW_CCS = ("prague", "dctcp", "cubic", "reno", "bbr1", "bbr3")
#: Real-time video controllers, run as `l4s-flow --app rt`.
_RT_CCS = ("rt-prague", "rt-gcc", "rt-gcc-loss", "rt-cbr", "rt-scream")
#: The rt flow keys; each is the l4s-flow flag of the same name (`frame_budget` ->
#: `--frame-budget`), checked there by the simulator's rules.
_RT_KEYS = ("fps", "frame_budget", "deadline", "init_rate", "min_rate", "max_rate",
            "packet_size", "rate", "frame_size_cv", "keyframe_interval", "keyframe_ratio",
            "encoder_lag", "feedback_interval", "scream_beta_loss", "scream_l4s_avg_g",
            "scream_min_ref_window", "scream_max_segment_size",
            "scream_bytes_in_flight_head_room", "scream_post_congestion_delay_rtts",
            "scream_multiplicative_increase_factor", "scream_virtual_rtt",
            "scream_queue_delay_target", "scream_queue_delay_threshold")
#: UDP port of the rt receiver (the bulk receiver keeps l4s-flow's default, 5201).
RT_PORT = 5202
#: UDP port of the probe echo server (`l4s-flow -s --app probe`).
PROBE_PORT = 5203
#: A flow at a Wi-Fi client station other than 0 sends from UDP port CLIENT_PORT_BASE + its
#: index (l4s-flow --cport), which `[[emulator.stations]]` maps to its station.
CLIENT_PORT_BASE = 6000
#: Smallest probe packet the emulator carries: IPv4 (20) + UDP (8) + the probe header (12).
PROBE_MIN_BYTES = 40


@dataclass
class EmuFlow:
    """One sender of the plan (one scenario flow after `count` is expanded)."""

    index: int          # the simulator's flow id
    entry: int          # the [[flows]] entry it comes from
    cc: str
    klass: str          # "L4S" | "Classic", as the simulator classifies it
    ecn: str | None     # --ecn (None: what the CC asks for)
    start_s: float
    end_s: float        # stop, or the scenario's duration
    bytes: int | None
    mss: int | None     # l4s-flow's --mss (None: its default, a 1500-byte datagram)
    seed: int           # --seed (the CC's random streams)
    rtt_ms: float
    stack: dict[str, Any] | None = None  # kernel/command flows: l4slab.stacks.plan_stacks
    app: str = "bulk"   # "bulk" (TCP) | "rt" (real-time video)
    port: int | None = None                  # -p (None: l4s-flow's default)
    rt_flags: list[str] | None = None        # rt: the flow's rt keys as l4s-flow flags
    deadline_ms: float | None = None         # rt: the frame deadline the simulator resolves
    cport: int | None = None                 # --cport (a Wi-Fi station ≥ 1's flow)


@dataclass
class EmuPlan:
    """What scenario mode runs: the senders, the emulator's scenario document, the duration."""

    flows: list[EmuFlow]
    duration_s: float
    warmup_s: float
    doc: dict[str, Any]         # the scenario the emulator reads (delays and ACK path set)
    base_rtt_ms: float          # the emulated path's RTT (uplink + downlink delay)
    #: [[workloads]] and [[probes]] processes (`_plan_apps`); launched like flows.
    apps: list[dict[str, Any]] = field(default_factory=list)
    #: The scenario as the simulator reads it, and its directory (CDF and trace files).
    sim_doc: dict[str, Any] = field(default_factory=dict)
    base_dir: str = "."

    def to_json(self) -> dict[str, Any]:
        """The plan as the launcher reads it (`apps` with the scenario their results are
        summarised by, `scenario_apps`)."""
        j = {"duration_s": self.duration_s, "flows": [asdict(f) for f in self.flows],
             "apps": self.apps}
        if self.apps:
            j["scenario"] = {"doc": self.sim_doc, "base_dir": self.base_dir}
        return j

    def servers(self, flow_bin: str) -> str:
        """The l4s-flow receivers of the model-stack flows, one per kind of flow the plan has,
        as one shell list (`stacks.server_shell` adds the other stacks' receivers and waits;
        every process of the server's PID namespace ends with the emulation)."""
        import shlex

        exe = shlex.quote(flow_bin)
        model = [f for f in self.flows if not f.stack]
        apps = {a["app"] for a in self.apps}
        cmds = [f"{exe} -s -q"] if any(f.app == "bulk" for f in model) or "workload" in apps \
            else []
        if any(f.app == "rt" for f in model):
            cmds.append(f"{exe} -s --app rt -p {RT_PORT} -q")
        if "probe" in apps:
            cmds.append(f"{exe} -s --app probe -p {PROBE_PORT} -q")
        return " & ".join(cmds)


def _ns(text: Any, field: str) -> int:
    from l4slab._core import parse_duration_ns

    if not isinstance(text, str):
        raise ScenarioError(f"{field}: {text!r} is not a duration; expected a string like "
                            "\"20ms\"")
    try:
        return int(parse_duration_ns(text))
    except (ValueError, ScenarioError) as e:
        raise ScenarioError(f"{field}: {e}") from None


def _duration_text(ns: int) -> str:
    """Nanoseconds as the shortest exact duration string ("10ms", "250us", "7ns")."""
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns % scale == 0:
            return f"{ns // scale}{unit}"
    return f"{ns}ns"


def _flow_classes(doc: dict[str, Any], base_dir: Path
                  ) -> tuple[list[str], list[str], list[float | None]]:
    """(cc, class, frame deadline in ms or None) of each simulated flow, asked of the simulator
    itself (a 1 ms run with every flow started at 0): the class follows the CC's ECN
    negotiation, which only the models know, and the deadline default is the simulator's."""
    from l4slab._core import run_scenario

    probe = copy.deepcopy(doc)
    # The [[flows]] alone (workloads and probes follow them in the simulator's flow order).
    for k in ("emulator", "warmup", "sample_interval", "workloads", "probes"):
        probe.pop(k, None)
    probe["duration"] = "1ms"
    probe["output"] = {"packets": False}
    probe.get("link", {}).pop("steps", None)
    for fl in probe.get("flows", []):
        fl["start"] = "0s"
        fl.pop("stop", None)
    raw = run_scenario(json.dumps(probe), "json", str(base_dir))
    rows = json.loads(raw["summary_json"]).get("flows", [])
    deadlines = [(r.get("frames") or {}).get("deadline_ms") for r in rows]
    return list(raw["flow_cc"]), list(raw["flow_class"]), deadlines


def _plan_apps(doc: dict[str, Any], base_dir: Path, rtt_ns: int | None, duration_s: float
               ) -> list[dict[str, Any]]:
    """The `[[workloads]]` and `[[probes]]` of `doc` as launcher entries: one `l4s-flow --app
    workload` process for every transfer (arrivals, sizes and ccs from the simulator's own
    generator, `_core.workload_schedule`) and one `--app probe` process per probe, each with
    its plan; what the emulator cannot run as the simulator does is refused naming the key."""
    from l4slab._core import workload_schedule

    for key in ("workloads", "probes"):
        for i, w in enumerate(doc.get(key) or []):
            if rtt_ns is not None and _ns(w.get("rtt"), f"{key}[{i}].rtt") != rtt_ns:
                raise ScenarioError(
                    f"{key}[{i}].rtt: \"{w.get('rtt')}\" differs from the path's RTT "
                    f"({_duration_text(rtt_ns)}); the emulator has one path delay for all "
                    "traffic, so every rtt must be the same")
    for i, pr in enumerate(doc.get("probes") or []):
        if int(pr.get("packet_size", 100)) < PROBE_MIN_BYTES:
            raise ScenarioError(
                f"probes[{i}].packet_size: {pr['packet_size']} is too small for the emulator: "
                f"a probe datagram carries IP, UDP and a 12-byte probe header; expected ≥ "
                f"{PROBE_MIN_BYTES}")
    if not doc.get("workloads") and not doc.get("probes"):
        return []
    sched = json.loads(workload_schedule(
        json.dumps({k: v for k, v in doc.items() if k != "emulator"}), "json", str(base_dir)))
    apps: list[dict[str, Any]] = []
    seed = int(doc.get("seed", 1))
    if sched["transfers"]:
        apps.append({"index": min(t["flow"] for t in sched["transfers"]), "app": "workload",
                     "cc": "workload", "start_s": 0.0, "end_s": duration_s,
                     "port": None, "plan": {"seed": seed, "mss": None,
                                            "transfers": sched["transfers"]}})
    for p in sched["probes"]:
        apps.append({"index": p["flow"], "app": "probe", "cc": "probe", "start_s": 0.0,
                     "end_s": duration_s, "port": PROBE_PORT, "probe": p["probe"],
                     "plan": {"flow": p["flow"], "probe": doc["probes"][p["probe"]]}})
    return apps


def _simulator_settings(doc: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """What the simulator resolves before it runs: the [aqm] table with a limit in BDP units
    resolved (`aqm`, `buffer`) and each flow's start after start_jitter (`flow_start_ns`),
    so the emulator builds the same queue and starts the senders when the simulator would."""
    from l4slab._core import effective_settings

    return json.loads(effective_settings(
        json.dumps({k: v for k, v in doc.items() if k != "emulator"}), "json", str(base_dir)))


def _chain_as_link(doc: dict[str, Any]) -> dict[str, Any]:
    """A [[links]] chain of one hop as the [link] + [aqm] the emulator runs (the hop's delay is
    already part of every flow's rtt, and every flow crosses it); a longer chain is refused:
    the emulator has one bottleneck."""
    links = doc.get("links")
    if links is None:
        return doc
    if len(links) != 1:
        raise ScenarioError(
            f"links: a chain of {len(links)} hops runs in the simulator only (l4slab run); the "
            "emulator has one bottleneck: give it one [link] + [aqm] (or one [[links]] hop)")
    out = copy.deepcopy(doc)
    hop = dict(out.pop("links")[0])
    for key in ("name", "delay"):
        hop.pop(key, None)
    if "aqm" in hop:
        out["aqm"] = hop.pop("aqm")
    out["link"] = hop
    for fl in out.get("flows", []):
        fl.pop("path", None)
    return out


def plan_scenario(doc: dict[str, Any], base_dir: Path) -> EmuPlan:
    """Validate `doc` as the simulator does, refuse what the emulator cannot run faithfully
    (one ScenarioError naming the field), and return the plan."""
    from l4slab._core import validate_scenario

    # The simulator's checks first (same messages); [emulator] is the emulator's to read.
    validate_scenario(json.dumps({k: v for k, v in doc.items() if k != "emulator"}), "json",
                      str(base_dir))
    doc = _chain_as_link(doc)
    if "ack_link" in doc:
        raise ScenarioError(
            "ack_link: the emulator has no separate ACK link; limit the server -> client "
            "direction with [emulator.downlink] rate = \"...\" instead (it then runs the "
            "scenario's [aqm] too)")
    link = doc.get("link", {})
    both_ways = "the emulator applies [link] {what} to both directions (ACKs too), the " \
        "simulator to the data direction only, so scenario mode cannot run it faithfully"
    if float(link.get("loss", 0.0)) > 0.0:
        raise ScenarioError(f"link.loss: {both_ways.format(what='loss')}")
    if "gilbert" in link:
        raise ScenarioError(f"link.gilbert: {both_ways.format(what='Gilbert-Elliott loss')}")
    if "jitter" in link and _ns(link["jitter"], "link.jitter") > 0:
        raise ScenarioError(f"link.jitter: {both_ways.format(what='jitter')}")
    if link.get("steps"):
        raise ScenarioError(f"link.steps: {both_ways.format(what='rate steps')}")
    if link.get("model") == "txop1ms":
        raise ScenarioError(f"link.model: \"txop1ms\": {both_ways.format(what='1 ms txops')}")
    duration_ns = _ns(doc["duration"], "duration")
    warmup_ns = _ns(doc["warmup"], "warmup") if "warmup" in doc else 0
    seed = int(doc.get("seed", 1))
    ccs, classes, deadlines = _flow_classes(doc, base_dir)
    from l4slab.stacks import COMMAND_PORT_BASE, StackError, plan_stacks
    try:
        stacks = plan_stacks(doc)
    except StackError as e:
        raise ScenarioError(str(e)) from None
    sim = _simulator_settings(doc, base_dir)
    rtt0_ns = None
    for key in ("flows", "workloads", "probes"):
        if rtt0_ns is None and doc.get(key):
            rtt0_ns = _ns(doc[key][0].get("rtt"), f"{key}[0].rtt")
    flows: list[EmuFlow] = []
    stations: list[dict[str, int]] = []  # [[emulator.stations]]: a port per flow at station ≥ 1
    for i, fl in enumerate(doc.get("flows") or []):
        p = f"flows[{i}]"
        cc = fl["cc"]
        if not stacks[i] and cc not in _L4S_FLOW_CCS + _RT_CCS:
            raise ScenarioError(f"{p}.cc: \"{cc}\" cannot run through the emulator: l4slab flow "
                                "carries TCP and real-time video only; expected one of "
                                f"{', '.join(_L4S_FLOW_CCS + _RT_CCS)}")
        rt = cc in _RT_CCS
        rt_flags = [a for k in _RT_KEYS if k in fl
                    for a in (f"--{k.replace('_', '-')}", str(fl[k]))] if rt else None
        rtt_ns = _ns(fl["rtt"], f"{p}.rtt")
        if rtt_ns != rtt0_ns:
            raise ScenarioError(
                f"{p}.rtt: \"{fl['rtt']}\" differs from flows[0].rtt \"{doc['flows'][0]['rtt']}\"; "
                "the emulator has one path delay for all flows, so every flow needs the same rtt")
        for key, (value, why) in _FIXED_IN_L4S_FLOW.items():
            if not stacks[i] and key in fl and fl[key] != value:
                raise ScenarioError(
                    f"{p}.{key}: {fl[key]!r} cannot be honoured: {why} and always uses "
                    f"{json.dumps(value)}; remove the key to run through the emulator")
        if "tcp_wmem" in fl:
            _check_tcp_wmem(fl["tcp_wmem"], f"{p}.tcp_wmem", bool(stacks[i]))
        mss = None
        if "mss" in fl and not stacks[i]:
            mss = int(fl["mss"]) - MSS_OFFSET
            if mss < 64:
                raise ScenarioError(
                    f"{p}.mss: {fl['mss']} is too small for the emulator: l4slab flow's header "
                    f"is {MSS_OFFSET} bytes longer than TCP's, so its MSS would be {mss}; "
                    f"expected mss ≥ {64 + MSS_OFFSET}")
        end_ns = min(_ns(fl["stop"], f"{p}.stop"), duration_ns) if "stop" in fl \
            else duration_ns
        for _ in range(int(fl.get("count", 1))):
            idx = len(flows)
            start_ns = sim["flow_start_ns"][idx]
            flows.append(EmuFlow(
                index=idx, entry=i, cc=cc, klass=classes[idx], ecn=fl.get("ecn"),
                start_s=start_ns / 1e9, end_s=end_ns / 1e9,
                bytes=int(fl["bytes"]) if "bytes" in fl else None, mss=mss,
                seed=(seed + idx) % (1 << 63), rtt_ms=rtt_ns / 1e6,
                stack={**stacks[i], "mss": fl.get("mss"), "port": COMMAND_PORT_BASE + idx}
                if stacks[i] else None,
                app="rt" if rt else "bulk", port=RT_PORT if rt else None, rt_flags=rt_flags,
                deadline_ms=deadlines[idx] if rt else None))
            station = int(fl.get("station", 0))
            if station > 0:
                if rt:
                    raise ScenarioError(
                        f"{p}.station: {station}: a real-time flow cannot be mapped to a Wi-Fi "
                        "client station in the emulator (the rt receivers share one port); "
                        "expected station 0 or a bulk flow")
                f = flows[-1]
                if f.stack:
                    port = int(f.stack["port"])  # the command/kernel flow's server port
                else:
                    f.cport = port = CLIENT_PORT_BASE + idx
                stations.append({"port": port, "station": station})
    assert ccs == [f.cc for f in flows], (ccs, flows)
    out = copy.deepcopy(doc)
    # The emulator builds the path only; the launcher runs the workloads and probes.
    out.pop("workloads", None)
    out.pop("probes", None)
    if sim["buffer"] is not None:
        out["aqm"] = sim["aqm"]
    emu = out.setdefault("emulator", {})
    if not isinstance(emu, dict):
        raise ScenarioError("emulator: must be a table")
    if "delay" not in emu:
        # rtt/2 each way, as the simulator splits a flow's base RTT.
        emu["delay"] = _duration_text((rtt0_ns or 0) // 2)
    down = emu.setdefault("downlink", {})
    if not isinstance(down, dict):
        raise ScenarioError("emulator.downlink: must be a table")
    wifi = link.get("model") == "wifi"
    if "stations" in emu:
        raise ScenarioError(
            "emulator.stations: scenario mode maps each flow to its Wi-Fi client station from "
            "[[flows]] station itself; remove the key")
    if stations:
        emu["stations"] = stations
    if wifi:
        # The simulator's data goes access point -> station, its ACKs up the same medium:
        # the senders' side (the client namespace) is the access point's.
        if emu.get("access_point", "client") != "client":
            raise ScenarioError(
                "emulator.access_point: scenario mode runs the senders on the client side, "
                "which must be the access point's (the simulator's data goes access point -> "
                "station); remove the key")
        emu["access_point"] = "client"
    elif "rate" not in down and "trace" not in down:
        down["rate"] = UNLIMITED_RATE
        if "trace" in link:
            down["once"] = False
    up = emu.get("uplink", {}) if isinstance(emu.get("uplink"), dict) else {}
    d_all = _ns(emu["delay"], "emulator.delay")
    d_up = _ns(up["delay"], "emulator.uplink.delay") if "delay" in up else d_all
    d_down = _ns(down["delay"], "emulator.downlink.delay") if "delay" in down else d_all
    return EmuPlan(flows=flows, duration_s=duration_ns / 1e9, warmup_s=warmup_ns / 1e9,
                   doc=out, base_rtt_ms=(d_up + d_down) / 1e6,
                   apps=_plan_apps(doc, base_dir, rtt0_ns, duration_ns / 1e9),
                   sim_doc={k: v for k, v in doc.items() if k != "emulator"},
                   base_dir=str(base_dir))


# --- after the run: the senders' rows in the simulator's layout -------------------------------

def _jain(xs: list[float]) -> float:
    s, s2 = sum(xs), sum(x * x for x in xs)
    return float("nan") if not xs or s2 == 0 else s * s / (len(xs) * s2)


def _held(t: np.ndarray, rows: pd.DataFrame, col: str) -> np.ndarray:
    """The sender's last reported value at or before each instant of `t` (0 before its first
    row): the simulator's recorder reads the endpoint's state at the sampling instant."""
    ts = rows["t_s"].to_numpy()
    v = rows[col].to_numpy(dtype=np.float64)
    k = np.searchsorted(ts, t, side="right") - 1
    return np.where(k >= 0, v[np.clip(k, 0, None)], 0.0)


def _interp(t: np.ndarray, rows: pd.DataFrame, col: str) -> np.ndarray:
    """A cumulative counter of the sender at the instants `t`, linear between its reports (0
    before the first, the last value after the last)."""
    return np.interp(t, rows["t_s"].to_numpy(dtype=np.float64),
                     rows[col].to_numpy(dtype=np.float64), left=0.0)


def scenario_flows(launch: dict[str, Any], senders: pd.DataFrame | None, grid: np.ndarray,
                   bottleneck_flows: list[dict[str, Any]], window: tuple[float, float]
                   ) -> tuple[pd.DataFrame, list[dict[str, Any]], dict[str, Any]]:
    """flows.parquet rows, summary.json flow rows and a diagnostics dict for a scenario-mode run.

    `launch` is the launcher's record (plan flows with pid and exit), `senders` the rows of the
    flow-<pid>.csv files, `grid` the bottleneck's sampling instants, `bottleneck_flows` the
    emulator's per-5-tuple summary rows, `window` (warmup, end) in seconds. Throughput is
    goodput (payload delivered in order, the sender's count), per sampling interval in the
    rows and over the window in the summary, as the simulator defines it."""
    cols = ["t_s", "flow", "cc", "class", "delivered_bytes", "tput_mbps", "cwnd_pkts",
            "srtt_ms", "pacing_mbps", "ce_acked", "target_mbps", "acked_mbps"]
    frames, rows = [], []
    by_key = {b.get("flow"): b for b in bottleneck_flows}
    warm, end = window
    t = np.asarray(grid, dtype=np.float64)
    problems: list[str] = []
    for f in launch["flows"]:
        idx = int(f["index"])
        mine = pd.DataFrame(columns=["t_s", "flow"])
        if senders is not None and f.get("pid") is not None:
            mine = senders[senders["_pid"] == int(f["pid"])].sort_values("t_s")
        key = str(mine["flow"].iloc[0]) if len(mine) else None
        if not len(mine):
            problems.append(f"flow {idx} ({f['cc']}): no rows from its sender")
        df = pd.DataFrame({"t_s": t, "flow": np.full(len(t), idx, dtype=np.uint32)})
        for c in ("delivered_bytes", "cwnd_pkts", "srtt_ms", "pacing_mbps", "ce_acked"):
            df[c] = _held(t, mine, c) if len(mine) else np.zeros(len(t))
        dt = np.diff(t, prepend=0.0)
        dd = np.diff(df["delivered_bytes"].to_numpy(), prepend=0.0)
        df["tput_mbps"] = np.where(dt > 0, dd * 8.0 / np.where(dt > 0, dt, 1) / 1e6, 0.0)
        # Media senders (l4s-flow --app rt): the controller's target and the bytes its
        # feedback reported received, as a rate over each interval like tput_mbps; 0 for
        # senders that report neither (TCP, kernel stacks), as in the simulator.
        df["target_mbps"] = _held(t, mine, "target_mbps") if "target_mbps" in mine \
            else np.zeros(len(t))
        acked = _held(t, mine, "acked_bytes") if "acked_bytes" in mine else np.zeros(len(t))
        da = np.diff(acked, prepend=0.0)
        df["acked_mbps"] = np.where(dt > 0, da * 8.0 / np.where(dt > 0, dt, 1) / 1e6, 0.0)
        df["cc"], df["class"] = f["cc"], f["klass"]
        frames.append(df[cols])
        # Summary: the simulator's window definitions (recorder.rs).
        if len(mine):
            # Counters at the window's ends, interpolated between the sender's reports (a held
            # value could stretch the window by up to one report interval).
            at = _interp(np.array([warm, end]), mine, "delivered_bytes")
            ce = np.round(_interp(np.array([warm, end]), mine, "ce_acked"))
            srtt = mine.loc[(mine["t_s"] >= warm) & (mine["t_s"] <= end) & (mine["srtt_ms"] > 0),
                            "srtt_ms"]
            tput = (at[1] - at[0]) * 8.0 / (end - warm) / 1e6 if end > warm else float("nan")
            ce_marks = int(ce[1] - ce[0])
            srtt_ms = float(srtt.mean()) if len(srtt) else None
            fct = None
            if f.get("bytes"):
                done = mine.loc[mine["delivered_bytes"] >= int(f["bytes"]), "t_s"]
                fct = float(done.iloc[0]) - float(f["start_s"]) if len(done) else None
        else:
            tput, ce_marks, srtt_ms, fct = 0.0, 0, None, None
        b = by_key.get(key, {})
        retrans = None
        if len(mine) and "retransmits" in mine and mine["retransmits"].notna().any():
            # The kernel stack's tcpi_total_retrans; its classic-ECN delivered_ce counts ACKs
            # with ECE (repeated until CWR), so CE marks are the bottleneck's count instead.
            retrans = int(np.diff(np.round(_interp(np.array([warm, end]), mine,
                                                   "retransmits")))[0])
            ce_marks = int(b.get("ce_marks", ce_marks))
        if key is not None and key in by_key and b.get("class") != f["klass"]:
            problems.append(f"flow {idx} ({f['cc']}): the bottleneck saw {b.get('class')} "
                            f"packets, the simulator would send {f['klass']}")
        rows.append({"id": idx, "cc": f["cc"], "class": f["klass"], "tput_mbps": tput,
                     "srtt_ms": srtt_ms, "ce_marks": ce_marks, "drops": b.get("drops", 0),
                     # l4s-flow's per-sample rows carry no retransmit counter.
                     "retransmits": retrans, "base_rtt_ms": f["rtt_ms"], "fct_s": fct,
                     "flow": key})
    flows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)
    flows = flows.sort_values(["t_s", "flow"], kind="stable").reset_index(drop=True)
    flows["flow"] = flows["flow"].astype(np.uint32)
    flows["cc"] = flows["cc"].astype("category")
    flows["class"] = pd.Categorical(flows["class"], categories=["L4S", "Classic"])
    diag = {"senders": [{k: f.get(k) for k in ("index", "cc", "pid", "exit", "ended_by")}
                        for f in launch["flows"]],
            "bottleneck_flows": bottleneck_flows, "problems": problems,
            "jain": _jain([r["tput_mbps"] for r in rows
                           if r["tput_mbps"] is not None and math.isfinite(r["tput_mbps"])])}
    return flows, rows, diag


def port_rows(launch: dict[str, Any], senders: pd.DataFrame | None, bottleneck: pd.DataFrame,
              flow_keys: list[str]) -> pd.DataFrame | None:
    """Rows for `stack = "command"` flows whose program wrote no flow CSV: the bottleneck's
    series of the 5-tuple whose destination port is the flow's `{port}` (tput counts the
    transport payload that left the path, retransmissions included; cwnd/srtt unknown)."""
    frames = [] if senders is None else [senders]
    have = set() if senders is None else set(senders["_pid"].unique())
    for f in launch["flows"]:
        st = f.get("stack") or {}
        if st.get("stack") != "command" or f.get("pid") is None or int(f["pid"]) in have:
            continue
        keys = [k for k in flow_keys if k.rsplit(":", 1)[-1] == str(st["port"])]
        if not keys:
            continue
        g = bottleneck[bottleneck["flow"] == flow_keys.index(keys[0])].sort_values("t_s")
        frames.append(pd.DataFrame({
            "t_s": g["t_s"].to_numpy(), "flow": keys[0], "cc": f["cc"],
            "delivered_bytes": g["delivered_bytes"].to_numpy(), "cwnd_pkts": np.nan,
            "srtt_ms": np.nan, "pacing_mbps": np.nan, "ce_acked": g["ce_acked"].to_numpy(),
            "_pid": int(f["pid"])}))
    return pd.concat(frames, ignore_index=True) if frames else None


def scenario_frames(launch: dict[str, Any], flow_dir: Path, window: tuple[float, float]
                    ) -> tuple[pd.DataFrame | None, dict[int, dict[str, Any]], list[str]]:
    """frames.parquet rows (the simulator's columns and dtypes), the `flows[i].frames` block
    per scenario flow index and problems, from the rt senders' frames-<pid>.csv.

    The rows a simulated run would keep and the block come from the simulator's own rules
    (`_core.frame_rows_summary` = `app_results::fate_unknown` + `frames_block`): frames
    captured from warmup counted, incomplete frames captured less than a deadline before the
    end left out, rates over (warmup, end]."""
    from l4slab._core import frame_rows_summary

    warm, end = window
    cols = {"flow": np.uint32, "frame": np.uint64, "capture_s": np.float64,
            "bytes": np.uint64, "latency_ms": np.float64, "late": np.uint8}
    parts, blocks, problems = [], {}, []
    rt_flows = [f for f in launch["flows"] if f.get("app") == "rt"]
    for f in rt_flows:
        idx = int(f["index"])
        path = flow_dir / f"frames-{f.get('pid')}.csv"
        try:
            df = read_rows(path)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError,
                UnicodeDecodeError) as e:
            problems.append(f"flow {idx} ({f['cc']}): no frame rows from its sender ({e})")
            continue
        if list(df.columns) != list(cols)[1:]:
            problems.append(f"flow {idx} ({f['cc']}): {path.name}: unexpected columns "
                            f"{list(df.columns)}")
            continue
        df = df.sort_values("frame", kind="stable").reset_index(drop=True)
        keep, block = frame_rows_summary(
            df["capture_s"].to_numpy(np.float64).tolist(), df["bytes"].to_numpy(np.uint64).tolist(),
            df["latency_ms"].to_numpy(np.float64).tolist(), df["late"].to_numpy(np.uint8).tolist(),
            warm, end, float(f["deadline_ms"]), end - warm)
        df = df[np.asarray(keep, dtype=bool)]
        df.insert(0, "flow", idx)
        parts.append(df.astype(cols))
        blocks[idx] = json.loads(block)
    if not rt_flows:
        return None, blocks, problems
    frames = pd.concat(parts, ignore_index=True) if parts else \
        pd.DataFrame({k: np.array([], dtype=t) for k, t in cols.items()})
    return frames, blocks, problems


def read_rows(path: Path) -> pd.DataFrame:
    """A CSV a sender wrote as it ran, without a last line cut short: a sender stopped by a
    signal (the run's end, Ctrl-C) may leave a partial row, which is not a measurement."""
    import io

    text = path.read_text()
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
    return pd.read_csv(io.StringIO(text))


def _read_csvs(flow_dir: Path, stem: str, pids: list[Any], cols: list[str],
               problems: list[str]) -> pd.DataFrame:
    """The rows of `STEM-<pid>.csv` of the given processes (a missing or malformed file is a
    problem, not an error: the run's other results stay)."""
    parts = []
    for pid in pids:
        path = flow_dir / f"{stem}-{pid}.csv"
        try:
            df = read_rows(path)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError,
                UnicodeDecodeError) as e:
            problems.append(f"{stem}: no rows from process {pid} ({e})")
            continue
        if list(df.columns) != cols:
            problems.append(f"{path.name}: unexpected columns {list(df.columns)}")
            continue
        parts.append(df)
    return pd.concat(parts, ignore_index=True) if parts else \
        pd.DataFrame({c: np.array([], dtype=np.float64) for c in cols})


def scenario_apps(launch: dict[str, Any], flow_dir: Path, window: tuple[float, float]
                  ) -> tuple[dict[str, pd.DataFrame], dict[str, Any], dict[str, Any]]:
    """fct.parquet and probes.parquet rows (the simulator's columns and dtypes), the summary
    blocks `workloads`, `probes` and `rpm` (by the simulator's rules, `_core.app_blocks` =
    `app_results::external_blocks`) and diagnostics, from the `--app workload|probe`
    processes' fct-<pid>.csv and probes-<pid>.csv.

    Every planned transfer gets a row: one with no completion row (not complete when the
    emulation ended, or its process failed) has fct_s NaN, as in the simulator. fct_s counts
    from the transfer's actual start (its arrival plus the driver's lateness, reported as
    `start_late_us_max`). A completion after the end of the run (`window[1]`) counts as not
    complete, as the simulator stops there; so does a probe answer after it."""
    from l4slab._core import app_blocks

    apps = launch.get("apps") or []
    problems: list[str] = []
    tables: dict[str, pd.DataFrame] = {}
    scenario = (launch.get("scenario") or {}).get("doc") or {}
    if not scenario.get("workloads") and not scenario.get("probes"):
        return tables, {}, {}
    end = window[1]
    plans = {a["index"]: json.loads(Path(a["plan_file"]).read_text()) for a in apps
             if Path(a.get("plan_file", "")).exists()}
    transfers = [t for a in apps if a["app"] == "workload"
                 for t in plans.get(a["index"], {}).get("transfers", [])]
    done = _read_csvs(flow_dir, "fct", [a.get("pid") for a in apps if a["app"] == "workload"],
                      ["flow", "workload", "size_bytes", "start_s", "fct_s", "start_late_us"],
                      problems)
    # Timed from the transfer's actual start (start_s + its lateness), as the driver does.
    fct_by_flow = {int(f): float(x) for f, x, s, late in
                   zip(done["flow"], done["fct_s"], done["start_s"], done["start_late_us"],
                       strict=True)
                   if float(s) + float(late) / 1e6 + float(x) <= end}
    fct = pd.DataFrame({
        "flow": np.array([t["flow"] for t in transfers], dtype=np.uint32),
        "workload": np.array([t["workload"] for t in transfers], dtype=np.uint32),
        "size_bytes": np.array([t["bytes"] for t in transfers], dtype=np.uint64),
        "start_s": np.array([t["start_ns"] / 1e9 for t in transfers], dtype=np.float64),
        "fct_s": np.array([fct_by_flow.get(t["flow"], np.nan) for t in transfers],
                          dtype=np.float64)})
    fct = fct.sort_values("flow", kind="stable").reset_index(drop=True)
    parts = []
    for a in apps:
        if a["app"] != "probe":
            continue
        rows = _read_csvs(flow_dir, "probes", [a.get("pid")], ["t_s", "rtt_ms"], problems)
        probe = int(a["probe"])
        rows = rows[rows["t_s"] + rows["rtt_ms"] / 1e3 <= end]
        parts.append(pd.DataFrame({
            "probe": np.full(len(rows), probe, dtype=np.uint32),
            "flow": np.full(len(rows), int(a["index"]), dtype=np.uint32),
            "t_s": rows["t_s"].to_numpy(np.float64),
            "rtt_ms": rows["rtt_ms"].to_numpy(np.float64)}))
    probes = pd.concat(parts, ignore_index=True) if parts else None
    text = json.dumps(scenario)
    pr = probes if probes is not None else pd.DataFrame(
        {"probe": np.array([], np.uint32), "flow": np.array([], np.uint32),
         "t_s": np.array([], np.float64), "rtt_ms": np.array([], np.float64)})
    ideal, slow, blocks = app_blocks(
        text, "json", str(launch["scenario"]["base_dir"]), fct["flow"].tolist(),
        fct["workload"].tolist(), fct["size_bytes"].tolist(), fct["start_s"].tolist(),
        fct["fct_s"].tolist(),
        pr["probe"].tolist(), pr["t_s"].tolist(), pr["rtt_ms"].tolist())
    if scenario.get("workloads"):
        fct["ideal_s"] = np.asarray(ideal, dtype=np.float64)
        fct["slowdown"] = np.asarray(slow, dtype=np.float64)
        tables["fct"] = fct
    if scenario.get("probes"):
        tables["probes"] = pr.reset_index(drop=True)
    late = done["start_late_us"].to_numpy(np.float64)
    diag = {"problems": problems, "transfers": len(transfers), "completed": len(fct_by_flow),
            "start_late_us_max": float(late.max()) if len(late) else None}
    return tables, json.loads(blocks), diag

"""Client side of the emulator's scenario mode: start one `l4s-flow` sender per planned flow
(and one per `apps` entry: the `[[workloads]]` driver, each `[[probes]]` probe) at its start
time, end each at its end time, exit at the scenario's duration (which ends the emulation).

Run by `l4slab emulate SCENARIO.toml` inside the client namespace as
`python3 emu_launcher.py PLAN.json FLOW_BIN`; standard library only, so it starts in
milliseconds. Times count from $L4SLAB_T0_NS (CLOCK_MONOTONIC at the emulation's start, the
origin of every t_s in the run directory). It records each sender's pid (its CSV is
$L4SLAB_FLOW_DIR/flow-<pid>.csv, an rt sender's frames are frames-<pid>.csv) and exit status in
$L4SLAB_FLOW_DIR/launch.json. Exit status
0 when every sender ended by itself with 0 or was ended here at its end time; 1 when a sender
failed (each named on stderr); 2 on a bad plan or environment.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: After its end time a timed sender is given this long to finish its closing exchange.
GRACE_S = 2.0
#: A sender that ignores SIGTERM this long is killed.
TERM_WAIT_S = 2.0


def _now_s(t0_ns: int) -> float:
    return (time.clock_gettime_ns(time.CLOCK_MONOTONIC) - t0_ns) / 1e9


def _sleep_until(t0_ns: int, t_s: float) -> None:
    while True:
        left = t_s - _now_s(t0_ns)
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


def _argv(flow_bin: str, server: str, f: dict[str, Any], secs: float) -> list[str]:
    if f.get("app") in ("workload", "probe"):  # [[workloads]] / [[probes]]: a plan file
        argv = [flow_bin, "-c", server, "--app", f["app"], "--plan", f["plan_file"], "-q"]
        return argv + (["-p", str(f["port"])] if f.get("port") is not None else [])
    if f.get("stack"):  # a kernel or command flow (stacks.py, beside this file)
        from stacks import client_argv

        return client_argv({**f, **f["stack"]}, server, secs)
    argv = [flow_bin, "-c", server, "--cc", f["cc"], "-i", "0", "-q",
            "--seed", str(f["seed"])]
    if f.get("ecn"):
        argv += ["--ecn", f["ecn"]]
    if f.get("port") is not None:
        argv += ["-p", str(f["port"])]
    if f.get("app", "bulk") != "bulk":
        # A real-time video flow: its scenario keys as flags (emuflows.EmuFlow.rt_flags).
        argv += ["--app", f["app"], *(f.get("rt_flags") or [])]
    if f.get("cport") is not None:
        argv += ["--cport", str(f["cport"])]
    if f.get("mss") is not None:
        argv += ["--mss", str(f["mss"])]
    if f.get("bytes") is not None:
        argv += ["-n", str(f["bytes"])]
    else:
        argv += ["-t", f"{max(secs, 0.001):.6f}"]
    return argv


def main(argv: list[str]) -> int:
    """Start the plan's l4s-flow senders at their times, end them at theirs; returns the exit
    status."""
    if len(argv) != 3:
        print("usage: emu_launcher.py PLAN.json FLOW_BIN", file=sys.stderr)
        return 2
    try:
        plan = json.loads(Path(argv[1]).read_text())
        t0_ns = int(os.environ["L4SLAB_T0_NS"])
        server = os.environ["L4SLAB_SERVER"]
        flow_dir = Path(os.environ["L4SLAB_FLOW_DIR"])
    except (OSError, ValueError, KeyError) as e:
        print(f"emu_launcher: {e}", file=sys.stderr)
        return 2
    record = {"duration_s": plan["duration_s"], "flows": [dict(f) for f in plan["flows"]],
              "apps": [dict(a) for a in plan.get("apps", [])],
              "scenario": plan.get("scenario")}
    for a in record["apps"]:
        # The workload's transfers and a probe's settings: its own file, not launch.json.
        a["plan_file"] = str(flow_dir / f"{a['app']}-{a['index']}.plan.json")
        Path(a["plan_file"]).write_text(json.dumps(a.pop("plan")))
    flows = sorted(record["flows"] + record["apps"], key=lambda f: (f["start_s"], f["index"]))
    by_index = {f["index"]: f for f in flows}
    procs: dict[int, subprocess.Popen[bytes]] = {}

    def save() -> None:
        tmp = flow_dir / "launch.json.tmp"
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        tmp.replace(flow_dir / "launch.json")

    def reap() -> None:
        for i, p in procs.items():
            rc = p.poll()
            if rc is not None and by_index[i].get("exit") is None:
                by_index[i]["exit"] = rc
                by_index[i].setdefault("ended_by", "itself")
                by_index[i]["ended_s"] = round(_now_s(t0_ns), 6)

    def stop(i: int, why: str) -> None:
        p = procs[i]
        if p.poll() is None:
            by_index[i]["ended_by"] = why
            p.send_signal(signal.SIGTERM)

    stopped = False

    def on_signal(signum: int, _frame: Any) -> None:
        nonlocal stopped
        stopped = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    duration = float(plan["duration_s"])
    pending = list(flows)
    # When this launcher could first start a flow (after the interpreter's start-up): a flow
    # whose start_s is earlier starts here, late by the difference.
    record["ready_s"] = round(_now_s(t0_ns), 6)
    while not stopped:
        now = _now_s(t0_ns)
        while pending and pending[0]["start_s"] <= now:
            f = pending.pop(0)
            secs = f["end_s"] - _now_s(t0_ns)
            # Its messages go to a file: ending it at its end time makes it say
            # "interrupted", which is expected; a failure's message is shown below.
            with open(flow_dir / f"sender-{f['index']}.log", "wb") as log:
                p = subprocess.Popen(_argv(argv[2], server, f, secs),
                                     stdout=subprocess.DEVNULL, stderr=log)
            procs[f["index"]] = p
            by_index[f["index"]].update(pid=p.pid, started_s=round(_now_s(t0_ns), 6))
            save()
        reap()
        # Sized transfers still running at their end time are ended there; timed ones stop
        # sending by themselves and get GRACE_S for their closing exchange.
        for i, p in procs.items():
            f = by_index[i]
            limit = f["end_s"] + (0.0 if f.get("bytes") is not None else GRACE_S)
            if p.poll() is None and now >= min(limit, duration) and "ended_by" not in f:
                stop(i, "end time")
        if now >= duration:
            break
        nxt = min([duration] + [f["start_s"] for f in pending[:1]])
        time.sleep(max(0.0, min(0.01, nxt - now)))
    for i in procs:
        stop(i, "end time" if not stopped else "signal")
    deadline = time.monotonic() + TERM_WAIT_S
    for i, p in procs.items():
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            by_index[i]["ended_by"] = "kill"
            p.kill()
            p.wait()
    reap()
    save()
    failed = [f for f in record["flows"] + record["apps"]
              if f.get("ended_by") == "itself" and f.get("exit") not in (0, None)]
    for f in failed:
        try:
            said = (flow_dir / f"sender-{f['index']}.log").read_text().strip()
        except OSError:
            said = ""
        print(f"emu_launcher: flow {f['index']} ({f['cc']}): l4s-flow exited with status "
              f"{f['exit']}{': ' + said if said else ''}", file=sys.stderr)
    if stopped:
        return 130
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""`make bench-ns3`: l4slab against ns-3 on the same dumbbell (dumbbell.cc mirrors the l4slab
scenario below), run alternately; prints the wall-time and CPU-time ratios (medians) and each
tool's per-flow goodput, so the comparison is known to be like for like.

usage: compare.py L4S_SIM_BINARY NS3_DUMBBELL_BINARY [REPS]
"""

from __future__ import annotations

import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# (rate for l4slab, rate for ns-3, base RTT ms): the three regimes of the issue.
REGIMES = [("12mbit", "12Mbps", 20), ("50mbit", "50Mbps", 40), ("200mbit", "200Mbps", 100)]
DURATION_S, WARMUP_S = 30, 5
# Flow 0 CUBIC without ECN, flow 1 DCTCP with classic ECN (ECT(0)), FQ-CoDel with ECN (Linux
# defaults: 1024 flows, limit 10240, target 5 ms, interval 100 ms).
SCENARIO = """seed = 1
duration = "{d}s"
warmup = "{w}s"
[link]
rate = "{rate}"
[aqm]
kind = "fq_codel"
[[flows]]
cc = "cubic"
rtt = "{rtt}ms"
[[flows]]
cc = "dctcp"
rtt = "{rtt}ms"
"""


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Run `cmd`; returns (wall s, user+sys CPU s of the child, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out


def ns3_core_library(ns3: str) -> str:
    """The ns-3 core library the dumbbell loads (names the build: version and profile)."""
    try:
        out = subprocess.run(["ldd", ns3], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown (ldd failed)"
    found = re.search(r"libns3[^ ]*core[^ ]*\.so[^ ]* => (\S+)", out)
    return found.group(1) if found else "unknown (no libns3 core in ldd output)"


def main() -> int:
    """Run both tools alternately on each regime and print the table."""
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    l4s, ns3 = sys.argv[1], sys.argv[2]
    reps_arg = sys.argv[3] if len(sys.argv) > 3 else "3"
    if not reps_arg.isdigit() or int(reps_arg) < 1:
        print(f"compare.py: REPS must be an integer >= 1, got {reps_arg!r}", file=sys.stderr)
        return 2
    reps = int(reps_arg)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rate, ns3_rate, rtt in REGIMES:
            scen = Path(tmp) / f"dumbbell_{rate}.toml"
            scen.write_text(SCENARIO.format(d=DURATION_S, w=WARMUP_S, rate=rate, rtt=rtt))
            out_dir = Path(tmp) / f"out_{rate}"
            t_l4s, t_ns3 = [], []
            for _ in range(reps):
                t_l4s.append(timed([l4s, "run", str(scen), "-o", str(out_dir)])[:2])
                w, c, text = timed([ns3, f"--rate={ns3_rate}", f"--rtt_ms={rtt}",
                                    f"--duration={DURATION_S}", f"--warmup={WARMUP_S}"])
                t_ns3.append((w, c))
            summary = json.loads((out_dir / "summary.json").read_text())
            g_l4s = [f["tput_mbps"] for f in summary["flows"]]
            g_ns3 = [float(x) for x in re.findall(r"goodput_mbps ([0-9.]+)", text)]
            med = [statistics.median(x) for x in zip(*t_l4s, strict=True)] + \
                  [statistics.median(x) for x in zip(*t_ns3, strict=True)]
            rows.append((rate, rtt, *med, g_l4s, g_ns3))
    print(f"CUBIC + DCTCP through FQ-CoDel (ECN), {DURATION_S} s, warmup {WARMUP_S} s; "
          f"medians of {reps} alternating runs per tool")
    print(f"ns-3: {ns3} loading {ns3_core_library(ns3)}")
    print("| regime | l4slab wall s | ns-3 wall s | wall ratio | l4slab CPU s | ns-3 CPU s "
          "| CPU ratio | goodput l4slab (cubic, dctcp) Mb/s | goodput ns-3 (cubic, dctcp) Mb/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rate, rtt, lw, lc, nw, nc, gl, gn in rows:
        cpu_ratio = f"{nc / lc:.0f}x" if lc > 0 else "n/a"
        print(f"| {rate} {rtt} ms | {lw:.3f} | {nw:.2f} | {nw / lw:.0f}x | {lc:.3f} | {nc:.2f} "
              f"| {cpu_ratio} | {', '.join(f'{g:.2f}' for g in gl)} "
              f"| {', '.join(f'{g:.2f}' for g in gn)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Per-event cost of many-flow runs from cachegrind, for BENCHMARKS.md's scale tables.

    python3 tools/scale_profile.py BENCH_SCALE [BENCH_SCALE ...] [--cc cubic,prague]
        [--flows 10,1000,10000] [--short 2s] [--long 4s]

For each `bench_scale` binary (`cargo build --release -p l4s-sim --example bench_scale`), CC and
flow count it runs `bench_scale one CC FLOWS 1gbit 50ms DURATION` under cachegrind (D1 48 KiB
12-way, 64-byte lines) for a short and a long duration and prints the differences per
bottleneck packet and per event: set-up and the summary cancel, so the figures are the steady
state's. Instruction and miss counts do not depend on the machine's load, unlike timings.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor


def run(binary: str, cc: str, flows: int, duration: str) -> dict[str, int]:
    """Cachegrind totals and the run's packet and event counts."""
    with tempfile.NamedTemporaryFile(suffix=".cg") as out:
        p = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--D1=49152,12,64",
             f"--cachegrind-out-file={out.name}",
             binary, "one", cc, str(flows), "1gbit", "50ms", duration],
            capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"scale_profile: {binary} one {cc} {flows} … {duration}: {p.stderr[-500:]}")
    # bench_scale prints: cc flows rate rtt duration packets events ...
    f = p.stdout.split()
    r = {"packets": int(f[5]), "events": int(f[6])}
    for name, key in [("I", "I   refs"), ("D1", "D1  misses"), ("I1", "I1  misses")]:
        m = re.search(key + r":\s+([\d,]+)", p.stderr)
        if m is None:
            sys.exit(f"scale_profile: no '{key}' in cachegrind's output for {binary}")
        r[name] = int(m.group(1).replace(",", ""))
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--cc", default="cubic,prague")
    ap.add_argument("--flows", default="10,1000,10000")
    ap.add_argument("--short", default="2s")
    ap.add_argument("--long", default="4s")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    cases = [(b, cc, int(n)) for cc in a.cc.split(",") for n in a.flows.split(",")
             for b in a.binaries]
    jobs = [(c, d) for c in cases for d in (a.short, a.long)]
    with ThreadPoolExecutor(a.jobs) as ex:
        res = dict(zip(jobs, ex.map(lambda j: run(*j[0], j[1]), jobs), strict=True))
    print("| binary | cc | flows | events/pkt | instr/pkt | instr/event | D1 misses/event "
          "| I1 misses/event |")
    print("|---|---|---|---|---|---|---|---|")
    for c in cases:
        short, long_ = res[(c, a.short)], res[(c, a.long)]
        d = {k: long_[k] - short[k] for k in long_}
        ev, pk = d["events"], d["packets"]
        print(f"| {c[0]} | {c[1]} | {c[2]} | {ev / pk:.2f} | {d['I'] / pk:.0f} | "
              f"{d['I'] / ev:.0f} | {d['D1'] / ev:.2f} | {d['I1'] / ev:.2f} |")


if __name__ == "__main__":
    main()

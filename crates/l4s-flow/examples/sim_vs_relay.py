"""Sim-vs-real check of `l4slab flow` without the emulator: one Prague flow through a 50 Mbit/s,
40 ms RTT DualPI2 bottleneck, N runs in the simulator and N runs of the real l4s-flow binaries
through the `dualpi2_relay` example (l4s-core's DualPI2 on the wall clock), then
`l4slab validate` on throughput, L-queue sojourn, backlog, marks and drops.

    cargo build --release -p l4s-flow --examples
    .venv/bin/python crates/l4s-flow/examples/sim_vs_relay.py OUT_DIR [N] [DURATION_S]

Needs SCHED_FIFO (root) for the real runs. OUT_DIR must not exist (results are never
overwritten).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[3]
FLOW = ROOT / "target" / "release" / "l4s-flow"
RELAY = ROOT / "target" / "release" / "examples" / "dualpi2_relay"
L4SLAB = [sys.executable, "-m", "l4slab.cli"]
RATE_MBPS, ONE_WAY_MS = 50, 20


def real_run(i: int, dur: float, out: Path, tmp: Path) -> None:
    srv = subprocess.Popen([FLOW, "-s", "-1", "-p", "0", "-B", "127.0.0.1", "-i", "0", "--rt"],
                           stdout=subprocess.PIPE, text=True)
    assert srv.stdout is not None
    port = srv.stdout.readline().strip().rsplit(":", 1)[1].split()[0]
    relay_csv = tmp / f"relay-{i}.csv"
    relay = subprocess.Popen([RELAY, port, str(RATE_MBPS), str(ONE_WAY_MS), str(dur + 1.0),
                              relay_csv], stdout=subprocess.PIPE, text=True)
    assert relay.stdout is not None
    first = relay.stdout.readline().split()
    rport, origin = first[1], first[3]
    flow_dir = tmp / f"flow-{i}"
    flow_dir.mkdir()
    env = dict(os.environ, L4SLAB_FLOW_DIR=str(flow_dir), L4SLAB_T0_NS=origin,
               L4SLAB_SAMPLE_INTERVAL_NS="16000000")
    subprocess.run([FLOW, "-c", "127.0.0.1", "-p", rport, "--cc", "prague", "-t", str(dur),
                    "-i", "0", "-q", "--rt"], env=env, check=True)
    relay.wait()
    srv.wait(timeout=10)
    flows = pd.read_csv(next(flow_dir.glob("flow-*.csv")))
    q = pd.read_csv(relay_csv)
    m = pd.merge_asof(q.sort_values("t_s"), flows.sort_values("t_s")[
        ["t_s", "tput_mbps", "ce_acked"]], on="t_s", direction="nearest", tolerance=0.016)
    m = m.dropna()
    pd.DataFrame({
        "t_s": m["t_s"],
        "tput_total": m["tput_mbps"],
        "sojourn_L": m["sojourn_L"],
        "backlog_L": m["backlog_L"],
        "marks_L_cum": m["marks_L_cum"],
        "drops_L_cum": m["drops_L_cum"],
    }).to_csv(out / f"run-{i:02d}.csv", index=False)


def main() -> None:
    out = Path(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    dur = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
    out.mkdir(parents=True)
    tmp = out / "raw"
    tmp.mkdir()
    scen = out / "prague-50mbit-40ms.toml"
    scen.write_text(f"""seed = 1
duration = "{dur}s"
warmup = "3s"
sample_interval = "16ms"
[link]
rate = "{RATE_MBPS}mbit"
[aqm]
kind = "dualpi2"
[[flows]]
cc = "prague"
rtt = "{2 * ONE_WAY_MS}ms"
""")
    (out / "real").mkdir()
    for i in range(n):
        subprocess.run([*L4SLAB, "run", str(scen), "--set", f"seed={i + 1}", "--no-figures",
                        "-o", str(out / "sim" / f"run-{i:02d}")], check=True,
                       stdout=subprocess.DEVNULL)
        real_run(i, dur, out / "real", tmp)
        print(f"run {i + 1}/{n} done", flush=True)
    subprocess.run([*L4SLAB, "validate", str(out / "sim"), str(out / "real"), "--warmup", "3",
                    "-m", "tput_total,sojourn_L,backlog_L,marks_L,drops_L,"
                    "mean:tput_total,mean:sojourn_L,p99:sojourn_L,mean:marks_L",
                    "-o", str(out / "validation")], check=False)


if __name__ == "__main__":
    main()

"""Sim-vs-real check of `l4slab flow`: one Prague flow through a 50 Mbit/s, 40 ms RTT DualPI2
bottleneck, N runs in the simulator and N runs of the real l4s-flow binaries, then
`l4slab validate` on throughput, L-queue sojourn, backlog, marks and drops.

    make develop && cargo build --release -p l4s-emu -p l4s-flow --examples
    .venv/bin/python crates/l4s-flow/examples/sim_vs_real.py emu|relay OUT_DIR [N] [DURATION_S]

`emu`: through the emulator (`l4s-emu`, two-namespace mode; root). `relay`: through the
`dualpi2_relay` example (l4s-core's DualPI2 on the wall clock in a UDP relay; SCHED_FIFO).
Real throughput is the sender's flow CSV (the emulator contract), queue metrics the
bottleneck's 16 ms samples. OUT_DIR must not exist (results are never overwritten).
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
EMU = ROOT / "target" / "release" / "l4s-emu"
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


def emu_run(i: int, dur: float, out: Path, tmp: Path, scen: Path) -> None:
    run = tmp / f"emu-{i:02d}"
    client = (f"sleep 0.3; exec {FLOW} -c \"$L4SLAB_SERVER\" --cc prague -t {dur} -q -i 0")
    subprocess.run([EMU, scen, "--quiet", "--seed", str(i + 1), "-o", run,
                    "--server", f"exec {FLOW} -s -1 -i 0 -q", "--", "sh", "-c", client],
                   check=True)
    raw = pd.read_json(run / "raw" / "uplink.json", typ="series")
    names = list(raw["queue_names"])
    smp = pd.DataFrame(raw["samples"])
    smp = smp[smp["queue"] == names.index("L")].sort_values("t_s")
    flows = pd.read_csv(next((run / "flows").glob("flow-*.csv"))).sort_values("t_s")
    m = pd.merge_asof(smp, flows[["t_s", "tput_mbps"]], on="t_s", direction="nearest",
                      tolerance=0.016).dropna(subset=["tput_mbps"])
    pd.DataFrame({
        "t_s": m["t_s"],
        "tput_total": m["tput_mbps"],
        "sojourn_L": m["sojourn_ms"],
        "backlog_L": m["backlog_pkts"],
        "marks_L": m["marks"],
        "drops_L": m["drops"],
    }).to_csv(out / f"run-{i:02d}.csv", index=False)


def main() -> None:
    via = sys.argv[1]
    if via not in ("emu", "relay"):
        sys.exit("usage: sim_vs_real.py emu|relay OUT_DIR [N] [DURATION_S]")
    out = Path(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    dur = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
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
    emu_scen = out / "emulator.toml"
    emu_scen.write_text(f"""warmup = "3s"
[link]
rate = "{RATE_MBPS}mbit"
[aqm]
kind = "dualpi2"
[emulator]
delay = "{ONE_WAY_MS}ms"
""")
    for i in range(n):
        subprocess.run([*L4SLAB, "run", str(scen), "--set", f"seed={i + 1}", "--no-figures",
                        "-o", str(out / "sim" / f"run-{i:02d}")], check=True,
                       stdout=subprocess.DEVNULL)
        if via == "emu":
            emu_run(i, dur, out / "real", tmp, emu_scen)
        else:
            real_run(i, dur, out / "real", tmp)
        print(f"run {i + 1}/{n} done", flush=True)
    subprocess.run([*L4SLAB, "validate", str(out / "sim"), str(out / "real"), "--warmup", "3",
                    "-m", "tput_total,sojourn_L,backlog_L,marks_L,drops_L,"
                    "mean:tput_total,mean:sojourn_L,p99:sojourn_L,mean:marks_L",
                    "-o", str(out / "validation")], check=False)


if __name__ == "__main__":
    main()

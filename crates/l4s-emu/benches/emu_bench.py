"""Emulator benchmark (`make bench`): iperf3 through DualPI2 in two-namespace mode.

Measures (root only; prints a reason and exits 0 otherwise):
  * maximum forwarding rate with 4 TCP streams (socket buffers up to 32 MiB) over a 20 Gb/s link, at 0 ms and 20 ms one-way
    delay (the link is far faster than the machine, so the emulator is the bottleneck), with
    TUN offloads (the default: TSO super-packets in, GRO-style GSO frames out) and with
    `--no-offload` (one packet per read and per write);
  * the emulator's own CPU time per forwarded packet in those runs (both directions);
  * lateness (actual - scheduled write) p50/p99 at 50 % load: UDP at 250 Mb/s over 500 Mb/s.
Figures go to stdout as a Markdown table for BENCHMARKS.md, with the load average before and
after (the figures are floors on a busy machine).

Run alone: `sudo python3 crates/l4s-emu/benches/emu_bench.py` after
`cargo build --release -p l4s-emu` (or `make bench`, which runs it last).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

EMU = Path(os.environ.get("L4SLAB_EMU_BIN",
                          Path(__file__).resolve().parents[3] / "target/release/l4s-emu"))


def run(args: list[str], out: Path) -> tuple[dict, dict, str]:
    r = subprocess.run([str(EMU), "-o", str(out), "--quiet", *args], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"emu_bench: l4s-emu failed ({r.returncode}): {r.stderr.strip()}")
    return (json.loads((out / "emulator.json").read_text()),
            json.loads((out / "raw" / "uplink.json").read_text()), r.stdout)


def main() -> None:
    if os.geteuid() != 0 or shutil.which("iperf3") is None or not EMU.exists():
        print("emu_bench: skipped (needs root, iperf3 and target/release/l4s-emu)")
        return
    # Socket buffers up to 32 MiB on both sides (per network namespace): at 20 ms one way the
    # default 4-6 MiB maxima cap 4 Cubic flows near 2 Gb/s, below what the emulator carries.
    bufs = ("echo '4096 131072 33554432' > /proc/sys/net/ipv4/tcp_rmem; "
            "echo '4096 131072 33554432' > /proc/sys/net/ipv4/tcp_wmem; ")
    rows = []
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for offload in (True, False):
            for delay in ("0ms", "20ms"):
                mode = "offloads" if offload else "--no-offload"
                out = Path(tmp) / f"tcp-{delay}-{offload}"
                meta, up, stdout = run(["--rate", "20gbit", "--aqm", "dualpi2", "--delay", delay,
                                        *([] if offload else ["--no-offload"]),
                                        "--server", bufs + "exec iperf3 -s -1 >/dev/null", "--",
                                        "sh", "-c",
                                        bufs + "iperf3 -c $L4SLAB_SERVER -P 4 -t 5 -J"], out)
                gbps = json.loads(stdout)["end"]["sum_received"]["bits_per_second"] / 1e9
                pkts = sum(d["delivered_pkts"] for d in meta["directions"])
                cpu = meta["cpu_user_s"] + meta["cpu_sys_s"]
                lat = up["lateness_us"]
                off = meta["directions"][0].get("offload", {})
                seg = (f"; {off['gso_segments'] / max(off['gso_frames'], 1):.1f} segments per "
                       f"super-packet in" if offload and off.get("gso_frames") else "")
                rows.append((f"max rate, 4 x Cubic, delay {delay}, {mode}",
                             f"{gbps:.2f} Gb/s goodput; {cpu / pkts * 1e6:.2f} us CPU/packet "
                             f"({pkts} packets, {cpu:.1f} s CPU in {meta['duration_s']:.1f} s)"
                             f"{seg}; lateness p50 {lat['p50']:.1f} us, p99 {lat['p99']:.1f} us"))
        out = Path(tmp) / "half"
        meta, up, _ = run(["--rate", "500mbit", "--aqm", "dualpi2", "--delay", "10ms",
                           "--server", "exec iperf3 -s -1 >/dev/null", "--", "sh", "-c",
                           "iperf3 -c $L4SLAB_SERVER -u -b 250M -l 1400 -t 5 >/dev/null"], out)
        lat = up["lateness_us"]
        rows.append(("lateness at 50 % load (UDP 250 Mb/s over 500 Mb/s, 10 ms)",
                     f"p50 {lat['p50']:.2f} us, p99 {lat['p99']:.2f} us, max {lat['max']:.0f} us"
                     f" (realtime {meta['realtime']})"))
    load1 = os.getloadavg()[0]
    rows.append(("load average (1 min) before / after", f"{load0:.1f} / {load1:.1f} on "
                 f"{os.cpu_count()} CPUs"))
    print("| emulator benchmark | result |\n|---|---|")
    for name, val in rows:
        print(f"| {name} | {val} |")


if __name__ == "__main__":
    main()

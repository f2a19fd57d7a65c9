#!/usr/bin/env python3
"""`make bench-ns3-wifi`: l4slab's Wi-Fi hop against ns-3's wifi module (wifi.cc mirrors the
l4slab scenario below): one 802.11ac AP (VHT-MCS 5, 20 MHz), Cubic downlink, 20 ms base RTT,
per-MPDU errors 0/1/5/10 %, 0 and 4 other saturated stations, 1 client station (and 2 when this
l4slab has `[[link.wifi.clients]]`). Prints goodput side by side with the ratio, and each
tool's downlink/uplink PSDUs per second and MPDUs per PSDU, so differences can be traced.

The AP's queue is one 500-packet drop-tail FIFO holding queued, in-flight and retry MPDUs on both
sides: ns-3's WifiMacQueue with the default qdisc removed, l4slab's `ap = "driver_fifo"` (when
the binary knows `ap`) with `driver_limit_pkts = 500` under a 1-packet `fifo` AQM.

usage: compare_wifi.py L4S_SIM_BINARY NS3_WIFI_BINARY [SEEDS]
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PERS = [0.0, 0.01, 0.05, 0.10]
CONTENDERS = [0, 4]
MCS, RTT_MS, QUEUE_PKTS = 5, 20, 500
DURATION_S, WARMUP_S = 25, 5
# ns-3's contenders start 1 s after the flow: started with it they starve the flow's setup (ARP,
# TCP handshake, ADDBA; 0 Mb/s measured), which l4slab does not model.
CONTENDER_DELAY_S = 1

HEAD = """seed = {seed}
duration = "{d}s"
warmup = "{w}s"
[link]
model = "wifi"
[link.wifi]
standard = "ac"
mcs = {mcs}
width = 20
per = {per}
stations = {contenders}
driver_limit_pkts = {queue}
{ap}
[aqm]
kind = "fifo"
limit = 1
"""
CLIENT = """[[link.wifi.clients]]
mcs = {mcs}
"""
FLOW = """[[flows]]
cc = "cubic"
rtt = "{rtt}ms"
{station}
"""


def scenario(seed: int, per: float, contenders: int, clients: int, ap: bool,
             duration_s: float = DURATION_S, warmup_s: float = WARMUP_S) -> str:
    """The l4slab scenario matching one ns-3 run."""
    text = HEAD.format(seed=seed, d=duration_s, w=warmup_s, mcs=MCS, per=per,
                       contenders=contenders, queue=QUEUE_PKTS,
                       ap='ap = "driver_fifo"' if ap else "")
    if clients > 1:
        text += "".join(CLIENT.format(mcs=MCS) for _ in range(clients))
    for i in range(clients):
        text += FLOW.format(rtt=RTT_MS, station=f"station = {i}" if clients > 1 else "")
    return text


def run_l4slab(l4s: str, tmp: Path, text: str) -> tuple[list[float], dict] | str:
    """Goodputs and the wifi block, or the l4slab error's first line."""
    run_dir = Path(tempfile.mkdtemp(dir=tmp))
    scen = run_dir / "wifi.toml"
    scen.write_text(text)
    out = run_dir / "out"
    done = subprocess.run([l4s, "run", str(scen), "-o", str(out)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["failed"])[0]
    summary = json.loads((out / "summary.json").read_text())
    return [f["tput_mbps"] for f in summary["flows"]], summary["wifi"]


def run_ns3(ns3: str, seed: int, per: float, contenders: int, clients: int) -> dict:
    """Goodputs and PSDU counts printed by wifi.cc."""
    out = subprocess.run([ns3, f"--mcs={MCS}", f"--stations={clients}",
                          f"--contenders={contenders}", f"--per={per}", f"--rtt_ms={RTT_MS}",
                          f"--duration={DURATION_S}", f"--warmup={WARMUP_S}",
                          f"--queue_pkts={QUEUE_PKTS}", f"--seed={seed}",
                          f"--contender_delay={CONTENDER_DELAY_S}"],
                         check=True, capture_output=True, text=True).stdout
    res = {"goodput": [float(x) for x in re.findall(r"goodput_mbps ([0-9.]+)", out)]}
    for d in ("downlink", "uplink"):
        m = re.search(rf"{d} psdus_per_s ([0-9.]+) mpdus_per_psdu ([0-9.]+)", out)
        res[d] = (float(m.group(1)), float(m.group(2)))
    return res


def l4slab_psdus(wifi: dict, direction: str) -> tuple[float, float]:
    """(PSDUs per second, mean MPDUs per PSDU) from the summary's wifi block."""
    d = wifi[direction]
    return d["txops"] / (DURATION_S - WARMUP_S), d["aggregate_mpdus"]["mean"]


def main() -> int:
    """Run both tools on each configuration and print the table."""
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    l4s, ns3 = sys.argv[1], sys.argv[2]
    seeds_arg = sys.argv[3] if len(sys.argv) > 3 else "1"
    if not seeds_arg.isdigit() or int(seeds_arg) < 1:
        print(f"compare_wifi.py: SEEDS must be an integer >= 1, got {seeds_arg!r}",
              file=sys.stderr)
        return 2
    seeds = range(1, int(seeds_arg) + 1)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        # Does this l4slab know `ap` (the mac80211 AP model) and several client stations?
        has_ap = not isinstance(run_l4slab(l4s, tmp, scenario(1, 0, 0, 1, True, 1, 0.5)), str)
        has_clients = has_ap and not isinstance(
            run_l4slab(l4s, tmp, scenario(1, 0, 0, 2, True, 1, 0.5)), str)
        print(f"Cubic downlink through one 802.11ac AP, VHT-MCS {MCS} / 20 MHz, {RTT_MS} ms, "
              f"{QUEUE_PKTS}-packet AP FIFO ({'ap = driver_fifo' if has_ap else 'driver FIFO'}), "
              f"{DURATION_S} s, warmup {WARMUP_S} s; mean of {len(seeds)} seed(s); "
              "PSDUs/s and MPDUs/PSDU are l4slab | ns-3")
        print("| clients | others | PER | l4slab Mb/s | ns-3 Mb/s | ratio | down PSDU/s "
              "| down MPDU/PSDU | up PSDU/s | up MPDU/PSDU |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for clients in [1, 2] if has_clients else [1]:
            for contenders in CONTENDERS:
                for per in PERS:
                    rows_l, rows_n = [], []
                    for seed in seeds:
                        got = run_l4slab(l4s, tmp, scenario(seed, per, contenders, clients,
                                                            has_ap))
                        if isinstance(got, str):
                            print(f"l4slab refused the scenario: {got}", file=sys.stderr)
                            return 1
                        rows_l.append(got)
                        rows_n.append(run_ns3(ns3, seed, per, contenders, clients))
                    g_l = statistics.mean(sum(g) for g, _ in rows_l)
                    g_n = statistics.mean(sum(r["goodput"]) for r in rows_n)
                    cols = []
                    for d in ("downlink", "uplink"):
                        ls = [l4slab_psdus(w, d) for _, w in rows_l]
                        ns = [r[d] for r in rows_n]
                        for k in (0, 1):
                            cols.append(f"{statistics.mean(x[k] for x in ls):.1f} | "
                                        f"{statistics.mean(x[k] for x in ns):.1f}")
                    ratio = f"{g_l / g_n:.3f}" if g_n > 0 else "n/a"
                    print(f"| {clients} | {contenders} | {per:.0%} | {g_l:.2f} | {g_n:.2f} "
                          f"| {ratio} | {' | '.join(cols)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

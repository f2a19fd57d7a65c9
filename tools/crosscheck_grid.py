"""The kernel-against-model agreement grid of FIDELITY.md: `l4slab crosscheck` of one kernel flow
(reno, cubic, bbr1) through FIFO (1 BDP), FQ-CoDel and DualPI2 at the bdp-regimes suite's rates
and RTTs, printed as one markdown table (mean ratios emulator/simulator with their CIs).

    .venv/bin/python tools/crosscheck_grid.py OUT [-n RUNS] [--duration 10s] [--regime 12M20ms]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from l4slab.crosscheck import crosscheck
from l4slab.scenario import dumps_toml

REGIMES = {"12M20ms": (12, 20), "50M40ms": (50, 40), "200M100ms": (200, 100)}
CCS = ("reno", "cubic", "bbr1")


def aqm(kind: str, rate_mbit: int, rtt_ms: int) -> dict:
    if kind == "fifo":
        # One BDP of 1500-byte packets.
        return {"kind": "fifo", "limit": max(4, math.ceil(rate_mbit * 1e6 * rtt_ms / 1e3
                                                          / 8 / 1500))}
    return {"kind": kind}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("-n", type=int, default=2)
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--warmup", default="3s")
    ap.add_argument("--regime", action="append", choices=sorted(REGIMES))
    ap.add_argument("--cc", action="append", choices=CCS)
    ap.add_argument("--aqm", action="append", choices=("fifo", "fq_codel", "dualpi2"))
    a = ap.parse_args()
    rows = ["| regime | cc | AQM | tput sim / emu (Mb/s) | ratio [CI] | srtt sim / emu (ms) | "
            "ratio [CI] | queue delay sim / emu (ms) | ratio [CI] |",
            "|---|---|---|---|---|---|---|---|---|"]
    for reg in a.regime or list(REGIMES):
        rate, rtt = REGIMES[reg]
        for cc in a.cc or CCS:
            for kind in a.aqm or ("fifo", "fq_codel", "dualpi2"):
                name = f"{reg}-{cc}-{kind}"
                scen = a.out / f"{name}.toml"
                scen.parent.mkdir(parents=True, exist_ok=True)
                scen.write_text(dumps_toml({
                    "seed": 1, "duration": a.duration, "warmup": a.warmup,
                    "link": {"rate": f"{rate}mbit"}, "aqm": aqm(kind, rate, rtt),
                    "flows": [{"cc": cc, "rtt": f"{rtt}ms"}]}))
                rep = crosscheck(scen, a.out / name, a.n, echo=lambda m: None)
                cells = []
                queues = [r for r in rep["ratios"][2:] if math.isfinite(r["ratio"])]
                for r in rep["ratios"][:2] + queues[:1]:
                    cells += [f"{r['sim_mean']:.2f} / {r['emu_mean']:.2f}",
                              f"{r['ratio']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"]
                rows.append(f"| {reg} | {cc} | {kind} | " + " | ".join(cells) + " |")
                print(rows[-1], flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()

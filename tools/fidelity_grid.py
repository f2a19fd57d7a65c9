"""Throughput ratio of an L4S flow to a Cubic flow behind DualPI2, over seeds (FIDELITY.md).

Runs ``target/release/l4s-sim`` for each (rate, RTT) point and seed and prints the ratio
(first flow / Cubic) and link utilisation as mean ± 95 % Student-t half-width.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    14: 2.145,
    19: 2.093,
    29: 2.045,
}


def half_width(xs: list[float]) -> float:
    """95 % Student-t half-width of the mean."""
    n = len(xs)
    if n < 2:
        return float("nan")
    df = n - 1
    t = T975[min(k for k in T975 if k >= df)] if df <= 29 else 1.96
    return t * statistics.stdev(xs) / math.sqrt(n)


def scenario(a: argparse.Namespace, rate: float, rtt: float) -> str:
    """The scenario text of one grid point."""
    extra = "\n".join(a.flow0 or [])
    extra1 = "\n".join(a.flow1 or [])
    ecn = 'ecn = "l4s"' if a.cc in ("prague", "dctcp") else ""
    return f"""seed = 1
duration = "{a.duration}s"
warmup = "{a.warmup}s"
[link]
rate = "{rate}mbit"
[aqm]
kind = "dualpi2"
profile = "{a.profile}"
[[flows]]
cc = "{a.cc}"
rtt = "{rtt}ms"
{ecn}
{extra}
[[flows]]
cc = "cubic"
rtt = "{rtt}ms"
ecn = "none"
{extra1}
"""


def run_one(binary: str, text: str, seed: int) -> dict:
    """One run; returns its summary.json."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s.toml"
        p.write_text(text)
        out = Path(d) / "out"
        subprocess.run(
            [binary, "run", str(p), "-o", str(out), "--seed", str(seed)],
            check=True,
            capture_output=True,
        )
        return json.loads((out / "summary.json").read_text())


def main() -> None:
    """Parse arguments, run the grid, print one row per point."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bin", default="target/release/l4s-sim")
    ap.add_argument("--cc", default="prague")
    ap.add_argument("--profile", default="mainline")
    ap.add_argument("--rates", default="10,50,100,200")
    ap.add_argument("--rtts", default="5,10,25,40,80")
    ap.add_argument("--points", default="", help="rate:rtt,... instead of the grid")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--flow0", action="append", help="extra key for the first flow")
    ap.add_argument("--flow1", action="append", help="extra key for the Cubic flow")
    a = ap.parse_args()
    if a.points:
        pts = [tuple(float(x) for x in p.split(":")) for p in a.points.split(",")]
    else:
        pts = [(float(r), float(t)) for r in a.rates.split(",") for t in a.rtts.split(",")]
    for rate, rtt in pts:
        text = scenario(a, rate, rtt)
        with ThreadPoolExecutor(a.jobs) as ex:
            seeds = range(1, a.seeds + 1)
            runs = list(ex.map(run_one, [a.bin] * a.seeds, [text] * a.seeds, seeds))
        ratios = [r["flows"][0]["tput_mbps"] / max(r["flows"][1]["tput_mbps"], 1e-9) for r in runs]
        util = [r["link"]["utilisation"] for r in runs]
        lmarks = [r["queues"][0]["marks"] / max(r["queues"][0]["packets"], 1) for r in runs]
        # Marks by cause (summary.json `aqm_counters`, since warmup): shares of marked L packets.
        ac = [r.get("aqm_counters", {}) for r in runs]
        step = [c.get("step_marks", math.nan) / max(c.get("marked_l", 0), 1) for c in ac]
        step_only = [
            (c.get("step_marks", math.nan) - c.get("step_marks_also_coupled", 0))
            / max(c.get("marked_l", 0), 1)
            for c in ac
        ]
        overload = [c.get("overload_marks_l", math.nan) / max(c.get("marked_l", 0), 1) for c in ac]
        t0 = [r["flows"][0]["tput_mbps"] for r in runs]
        t1 = [r["flows"][1]["tput_mbps"] for r in runs]
        print(
            json.dumps(
                {
                    "rate": rate,
                    "rtt": rtt,
                    "profile": a.profile,
                    "cc": a.cc,
                    "extra": a.flow0,
                    "extra1": a.flow1,
                    "seeds": a.seeds,
                    "duration": a.duration,
                    "ratio": statistics.mean(ratios),
                    "ratio_ci": half_width(ratios),
                    "util": statistics.mean(util),
                    "l_mark_frac": statistics.mean(lmarks),
                    "step_share": statistics.mean(step),
                    "step_share_ci": half_width(step),
                    "step_only_share": statistics.mean(step_only),
                    "overload_share": statistics.mean(overload),
                    "tput0": statistics.mean(t0),
                    "tput1": statistics.mean(t1),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()

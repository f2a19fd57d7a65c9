"""Per-cell decomposition of the Prague/Cubic throughput ratio behind DualPI2 (FIDELITY.md).

For each (rate, RTT) cell and seed it runs ``target/release/l4s-sim`` on one scalable flow
(flow 0, L queue) and one Cubic flow (flow 1, C queue), with 1 ms samples and per-packet rows
(both only change what is recorded, not the run: summary.json's throughputs, queue and AQM
counters are identical), and splits the measured ratio into the terms of the closed forms
behind RFC 9332's choice of k:

    ratio = (c_P / c_C) · (1/k) · f_mark · f_Lw · f_var · f_Cw · f_drop
            · (RTT_C / RTT_P) · (ρ_P / ρ_C)

  c_P    = W_P · p_L          Prague's window × the marking probability its packets met
                              (design: W = 2/p for a scalable flow)
  c_C    = W_C · √p_C         Cubic's window × √(drop probability) (design: Reno's 1.22/√p;
                              Cubic in its Reno-friendly region has the same 1.22)
  f_mark = k·E_L[p′] / p_L    coupled probability over what the L packets met (< 1: step marks)
  f_Lw   = E_t[p′] / E_L[p′]  time average of p′ over its average per L packet
  f_var  = √(E_t[p′²]) / E_t[p′]   the swings of p′ (design: p′ constant, 1)
  f_Cw   = √(E_C[p′²] / E_t[p′²])  per C packet over time average
  f_drop = √(p_C / E_C[p′²])  drops over the p′² the C packets met (sampling noise)
  RTT_X  = mean srtt of flow X (1 ms samples after warm-up)
  ρ_X    = goodput / (W_X · MSS / RTT_X)   how far the rate follows window/RTT

W is the mean of the sampled cwnd (packets), p_L = marked / dequeued L packets, p_C = dropped
/ (dequeued + dropped) C packets, all after warm-up; E_t is the time average of the sampled p′,
E_L and E_C its average at each packet's dequeue or drop (p′ piecewise constant between PI
updates, read from the 1 ms samples). The identity holds exactly per seed; a cell reports the
geometric mean of every factor over seeds (so the product still holds) and the arithmetic mean
± 95 % CI of the ratio as the grid does.

Each run also reports a phase probe (`l_phase_hist`: where each L packet arrived within the
service under way, in 12 bins of one 1500-B serialisation time; `l_soj_hist`: L sojourns in
0.2 ms bins), which locates the 10 Mb/s RTT cliff (docs/history/fidelity.md).

    .venv/bin/python tools/balance_decomp.py [--rates 50,100,200 --rtts 10,25,40,80]
        [--points 10:25.25,...] [--profile mainline|l4steam] [--seeds 10 --duration 60]
        [--link 'jitter = "200us"'] [--cubic-rtt-offset -13.5] > cells.jsonl
    .venv/bin/python tools/balance_decomp.py --table cells.jsonl

Not part of `make test`. Needs numpy and pandas (the project's pinned .venv).
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

import numpy as np
import pandas as pd
from fidelity_grid import half_width

MSS = 1448  # payload bytes per segment (the simulator's default mss)

# Factors in the order of the identity, with their design value (RFC 9332 §2.1 balance).
FACTORS = [
    ("c_P", 2.0),
    ("c_C", 1.22),
    ("f_mark", 1.0),
    ("f_Lw", 1.0),
    ("f_var", 1.0),
    ("f_Cw", 1.0),
    ("f_drop", 1.0),
    ("rtt_ratio", 1.0),
    ("rho_ratio", 1.0),
]


def scenario(a: argparse.Namespace, rate: float, rtt: float) -> str:
    """The scenario text of one cell: Prague (L) + Cubic (C), per-packet rows, 1 ms samples."""
    link = "\n".join(a.link or [])
    return f"""seed = 1
duration = "{a.duration}s"
warmup = "{a.warmup}s"
sample_interval = "1ms"
[output]
packets = true
[link]
rate = "{rate}mbit"
{link}
[aqm]
kind = "dualpi2"
profile = "{a.profile}"
[[flows]]
cc = "{a.cc}"
rtt = "{rtt}ms"
ecn = "l4s"
{chr(10).join(a.flow0 or [])}
[[flows]]
cc = "cubic"
rtt = "{round(rtt + a.cubic_rtt_offset, 6)}ms"
ecn = "none"
{chr(10).join(a.flow1 or [])}
"""


def phase_probe(pk: pd.DataFrame, lq: pd.DataFrame, rate_mbps: float) -> dict:
    """Where L packets arrive within the service of the packet on the link.

    An L packet's arrival is its dequeue time minus its sojourn; the service under way then
    started at the latest dequeue (of any packet) at or before it. With 1500-B packets on a
    busy constant-rate link every service lasts s = 12000 b / rate, so the arrival phase
    (arrival − service start) in [0, s) sets how long the L packet waits behind a C packet.
    Returns the shares of L arrivals in 12 equal phase bins of s, and of L sojourns in 0.2 ms
    bins up to 1.2 ms (the last bin: above).
    """
    ser_ms = 12000 / (rate_mbps * 1e3)
    deq = np.sort(pk[pk.verdict != "dropped"].t_s.to_numpy())
    arr = (lq.t_s - lq.sojourn_ms / 1e3).to_numpy()
    i = np.clip(np.searchsorted(deq, arr, side="right") - 1, 0, None)
    ph = (arr - deq[i]) * 1e3
    n = max(len(arr), 1)
    ph_h, _ = np.histogram(ph, bins=np.linspace(0, ser_ms, 13))
    soj_h, _ = np.histogram(lq.sojourn_ms, bins=[0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, np.inf])
    return {
        "l_phase_hist": [float(x) / n for x in ph_h],
        "l_soj_hist": [float(x) / n for x in soj_h],
    }


def decompose(out: Path, k: float) -> dict:
    """The factors of one run from its output directory."""
    summ = json.loads((out / "summary.json").read_text())
    warm = summ["warmup_s"]
    sm = pd.read_csv(out / "samples.csv")
    fl = pd.read_csv(out / "flows.csv")
    pk = pd.read_csv(out / "packets.csv")
    # p′ is the same in both queue rows; the row at t holds the value in force over [t, t+1 ms)
    # (the PI update at a multiple of tupdate runs before the sample at the same instant).
    sl = sm[sm.queue == "C"]
    ts = sl.t_s.to_numpy()
    pp = sl.p_prime.to_numpy()
    after = ts >= warm
    e_t1 = float(pp[after].mean())
    e_t2 = float((pp[after] ** 2).mean())

    def p_at(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(ts, t, side="right") - 1
        return np.where(i >= 0, pp[np.clip(i, 0, None)], 0.0)

    pk = pk[pk.t_s >= warm]
    lq = pk[pk.queue == "L"]
    cq = pk[pk.queue == "C"]
    p_l = float((lq.verdict != "pass").mean())
    p_c = float((cq.verdict == "dropped").mean())
    e_l1 = float(p_at(lq.t_s.to_numpy()).mean())
    e_c2 = float((p_at(cq.t_s.to_numpy()) ** 2).mean())
    fw = fl[(fl.t_s >= warm)]
    w = [float(fw[fw.flow == i].cwnd_pkts.mean()) for i in (0, 1)]
    rtt = [float(fw[fw.flow == i].srtt_ms.mean()) / 1e3 for i in (0, 1)]
    tput = [summ["flows"][i]["tput_mbps"] * 1e6 for i in (0, 1)]
    rho = [tput[i] * rtt[i] / (w[i] * MSS * 8) for i in (0, 1)]
    ac = summ.get("aqm_counters", {})
    soj = [summ["queues"][i]["sojourn_ms"]["mean"] for i in (0, 1)]
    base = [summ["flows"][i]["base_rtt_ms"] for i in (0, 1)]
    f = {
        "ratio": tput[0] / tput[1],
        "c_P": w[0] * p_l,
        "c_C": w[1] * math.sqrt(p_c),
        "f_mark": k * e_l1 / p_l,
        "f_Lw": e_t1 / e_l1,
        "f_var": math.sqrt(e_t2) / e_t1,
        "f_Cw": math.sqrt(e_c2 / e_t2),
        "f_drop": math.sqrt(p_c / e_c2),
        "rtt_ratio": rtt[1] / rtt[0],
        "rho_ratio": rho[0] / rho[1],
        # context, not factors
        "W_P": w[0],
        "W_C": w[1],
        "p_L": p_l,
        "p_C": p_c,
        "E_t_p": e_t1,
        "E_t_p2": e_t2,
        "var_ratio": e_t2 / e_t1**2,
        # W·√p of RFC 9438 §5.1's average CUBIC window at this srtt and p_C (C = 0.4,
        # β = 0.7), or the Reno-friendly 1.22 where that is larger.
        "c_C_cubic": max(1.22, 1.054 * rtt[1] ** 0.75 * p_c**-0.25),
        "srtt_P_ms": rtt[0] * 1e3,
        "srtt_C_ms": rtt[1] * 1e3,
        "rtt_base_soj_ratio": (base[1] + soj[1]) / (base[0] + soj[0]),
        "soj_L_ms": soj[0],
        "soj_C_ms": soj[1],
        "rho_P": rho[0],
        "rho_C": rho[1],
        # L packets that waited more than the 1 ms step threshold (the phase probe at 10 Mb/s)
        "l_over_1ms": float((lq.sojourn_ms > 1.0).mean()),
        **phase_probe(pk, lq, summ["link"]["capacity_mbps"]),
        "step_share": ac.get("step_marks", 0) / max(ac.get("marked_l", 0), 1),
        "util": summ["link"]["utilisation"],
    }
    prod = (f["c_P"] / f["c_C"]) / k
    for name, _ in FACTORS[2:]:
        prod *= f[name]
    f["identity_err"] = prod / f["ratio"] - 1
    return f


def run_one(binary: str, text: str, seed: int, k: float) -> dict:
    """One run, decomposed; the output files are removed afterwards."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s.toml"
        p.write_text(text)
        out = Path(d) / "out"
        r = subprocess.run(
            [binary, "run", str(p), "-o", str(out), "--seed", str(seed)],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            raise SystemExit(f"balance_decomp: seed {seed}: {r.stderr.strip()}")
        return decompose(out, k)


def gmean(xs: list[float]) -> float:
    """Geometric mean (the factors multiply)."""
    return math.exp(statistics.mean(math.log(x) for x in xs))


def table(path: Path) -> None:
    """Print the cells of a JSON-lines file (this tool's output) as a Markdown table."""
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    print(
        "| cell | ratio ± CI (geo. mean) | W_P·p_L | W_C·√p_C (Cubic law) | f_mark·f_Lw "
        "| f_Cw·f_drop | f_var (E[p′²]/E[p′]²) | RTT_C/RTT_P (srtt ms) | ρ_P/ρ_C | product |"
    )
    print("|" + "---|" * 10)
    for r in rows:
        prod = r["c_P"] / r["c_C"] / 2
        for name, _ in FACTORS[2:]:
            prod *= r[name]
        cells = [
            f"{r['rate']:g} Mb/s, {r['rtt']:g} ms",
            f"{r['ratio']:.2f} ± {r['ratio_ci']:.2f} ({r['ratio_gmean']:.2f})",
            f"{r['c_P']:.2f}",
            f"{r['c_C']:.2f} ({r['c_C_cubic']:.2f})",
            f"{r['f_mark'] * r['f_Lw']:.3f}",
            f"{r['f_Cw'] * r['f_drop']:.3f}",
            f"{r['f_var']:.3f} ({r['var_ratio']:.2f})",
            f"{r['rtt_ratio']:.2f} ({r['srtt_P_ms']:.1f} / {r['srtt_C_ms']:.1f})",
            f"{r['rho_ratio']:.3f}",
            f"{prod:.2f}",
        ]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    """Parse arguments, run each cell, print one JSON line per cell."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="target/release/l4s-sim")
    ap.add_argument("--cc", default="prague")
    ap.add_argument("--profile", default="mainline")
    ap.add_argument("--rates", default="50,100,200")
    ap.add_argument("--rtts", default="10,25,40,80")
    ap.add_argument("--points", default="", help="rate:rtt,... instead of the grid")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--k", type=float, default=2.0, help="DualPI2 coupling factor (default 2)")
    ap.add_argument(
        "--cubic-rtt-offset", type=float, default=0.0, help="ms added to Cubic's base RTT"
    )
    ap.add_argument("--link", action="append", help='extra [link] key, e.g. jitter = "50us"')
    ap.add_argument("--flow0", action="append", help="extra key for the L4S flow")
    ap.add_argument("--flow1", action="append", help="extra key for the Cubic flow")
    ap.add_argument("--table", type=Path, help="print this JSON-lines output as Markdown")
    a = ap.parse_args()
    if a.table:
        table(a.table)
        return
    if a.points:
        pts = [tuple(float(x) for x in p.split(":")) for p in a.points.split(",")]
    else:
        pts = [(float(r), float(t)) for r in a.rates.split(",") for t in a.rtts.split(",")]
    for rate, rtt in pts:
        text = scenario(a, rate, rtt)
        seeds = list(range(1, a.seeds + 1))
        with ThreadPoolExecutor(a.jobs) as ex:
            n = len(seeds)
            runs = list(ex.map(run_one, [a.bin] * n, [text] * n, seeds, [a.k] * n))
        row: dict = {
            "rate": rate,
            "rtt": rtt,
            "profile": a.profile,
            "seeds": a.seeds,
            "duration": a.duration,
            "link": a.link,
            "cubic_rtt_offset": a.cubic_rtt_offset,
        }
        ratios = [r["ratio"] for r in runs]
        row["ratio"] = statistics.mean(ratios)
        row["ratio_ci"] = half_width(ratios)
        row["ratio_gmean"] = gmean(ratios)
        for key in runs[0]:
            if key == "ratio":
                continue
            xs = [r[key] for r in runs]
            if isinstance(xs[0], list):
                row[key] = [statistics.mean(v) for v in zip(*xs, strict=True)]
                continue
            if key in dict(FACTORS) and all(x > 0 for x in xs):
                row[key] = gmean(xs)
            else:
                row[key] = statistics.mean(xs)
            row[key + "_ci"] = half_width(xs)
        row["identity_err_max"] = max(abs(r["identity_err"]) for r in runs)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()

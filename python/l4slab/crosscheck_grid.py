"""The kernel-against-model agreement grid of FIDELITY.md: `l4slab crosscheck` of kernel stacks
through FIFO (1 BDP), FQ-CoDel and DualPI2 per regime, one table with a verdict per cell.

Cells: one kernel flow (reno, cubic, bbr1) alone at 12 Mb/s/20 ms, 50 Mb/s/40 ms and
200 Mb/s/100 ms, and the 100 Mb/s/25 ms L4S cell (Prague, the model in both, beside kernel
Cubic through DualPI2). The simulator side models the kernel's host as the emulator has it: a
TSO sender (`tso = true`, `nic_rate` 10 Gb/s: the emulator splits a GSO super-packet into
packets that enter the AQM together), so `tcp_tso_should_defer` and `tcp_tso_autosize` shape
its bursts as they shape the kernel's, and a send buffer autotuned up to this host's
`net.ipv4.tcp_wmem` max (`tcp_wmem`, `tcp_sndbuf_expand`: at 200 Mb/s/100 ms the kernel's 4 MB
bound its data in flight). Verdict per cell (emulator against simulator, means over
runs): throughput within ±10 %, srtt within ±5 %, queue delay within ±25 % or ±0.5 ms,
whichever is larger (`TOLERANCES`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["REGIMES", "CCS", "AQMS", "TOLERANCES", "Cell", "cells", "run_cell", "verdict",
           "table", "main"]

#: name: (rate Mb/s, RTT ms, default duration, default warm-up). Durations: 10 s holds ~10
#: Cubic cycles at 12 Mb/s; 200 Mb/s/100 ms needs >= 120 s for a steady state (a Reno cycle is
#: ~830 RTTs there), so its 20 s default compares start-ups (`--duration` to change it).
REGIMES: dict[str, tuple[int, int, str, str]] = {
    "12M20ms": (12, 20, "10s", "3s"),
    "50M40ms": (50, 40, "15s", "5s"),
    "100M25ms": (100, 25, "60s", "10s"),
    "200M100ms": (200, 100, "20s", "8s"),
}
CCS = ("reno", "cubic", "bbr1")
AQMS = ("fifo", "fq_codel", "dualpi2")
#: Relative throughput and srtt tolerances; the queue's is relative or absolute (ms),
#: whichever is larger.
TOLERANCES = {"tput": 0.10, "srtt": 0.05, "queue": 0.25, "queue_ms": 0.5}
#: The simulator side's host for kernel flows (see the module doc); `sim_host` adds tcp_wmem.
SIM_HOST = ("tso=true", "nic_rate=10gbit")


def sim_host() -> tuple[str, ...]:
    """SIM_HOST and this host's tcp_wmem max (the kernel stacks' send-buffer cap)."""
    from l4slab.emuflows import host_tcp_wmem_max

    w = host_tcp_wmem_max()
    return SIM_HOST + ((f"tcp_wmem={w}",) if w is not None else ())


@dataclass(frozen=True)
class Cell:
    """One grid cell: regime, cc (or "prague+cubic") and AQM."""

    regime: str
    cc: str
    aqm: str

    @property
    def name(self) -> str:
        """The cell's directory and scenario name."""
        return f"{self.regime}-{self.cc}-{self.aqm}"


def cells(regimes: list[str] | None = None, ccs: list[str] | None = None,
          aqms: list[str] | None = None) -> list[Cell]:
    """The grid in table order; 100M25ms is the one cell prague+cubic through DualPI2."""
    out = []
    for reg in regimes or list(REGIMES):
        if reg == "100M25ms":
            if (not ccs or "cubic" in ccs) and (not aqms or "dualpi2" in aqms):
                out.append(Cell(reg, "prague+cubic", "dualpi2"))
            continue
        out += [Cell(reg, cc, a) for cc in ccs or CCS for a in aqms or AQMS]
    return out


def scenario(cell: Cell, duration: str | None = None, warmup: str | None = None
             ) -> tuple[dict[str, Any], list[str]]:
    """The cell's scenario document and the simulator-only settings of its kernel flows."""
    rate, rtt, dur, warm = REGIMES[cell.regime]
    if cell.aqm == "fifo":
        # One BDP of 1500-byte packets.
        aqm: dict[str, Any] = {"kind": "fifo",
                               "limit": max(4, math.ceil(rate * 1e6 * rtt / 1e3 / 8 / 1500))}
    else:
        aqm = {"kind": cell.aqm}
    if cell.cc == "prague+cubic":
        flows = [{"cc": "prague", "rtt": f"{rtt}ms"}, {"cc": "cubic", "rtt": f"{rtt}ms"}]
        kernel = [1]
    else:
        flows = [{"cc": cell.cc, "rtt": f"{rtt}ms"}]
        kernel = [0]
    doc = {"seed": 1, "duration": duration or dur, "warmup": warmup or warm,
           "link": {"rate": f"{rate}mbit"}, "aqm": aqm, "flows": flows}
    sim_sets = [f"flows.{i}.{kv}" for i in kernel for kv in sim_host()]
    return doc, sim_sets


def _ratio(rep: dict[str, Any], prefix: str) -> dict[str, Any] | None:
    return next((r for r in rep["ratios"] if r["what"].startswith(prefix)), None)


def _queue(rep: dict[str, Any]) -> dict[str, Any] | None:
    qs = [r for r in rep["ratios"] if r["what"].startswith("queue ")
          and r["sim_mean"] is not None and math.isfinite(r["ratio"])]
    # DualPI2: the C queue (the kernel flows are Classic); otherwise the one queue.
    return next((r for r in qs if r["what"].startswith("queue C ")), qs[0] if qs else None)


def verdict(tput: dict | None, srtt: dict | None, queue: dict | None) -> str:
    """'agrees', or 'departs: ...' naming each quantity outside its tolerance."""
    bad = []
    for what, r, tol in (("tput", tput, TOLERANCES["tput"]),
                         ("srtt", srtt, TOLERANCES["srtt"])):
        if r is None or not math.isfinite(r["ratio"]):
            bad.append(f"{what} missing")
        elif abs(r["ratio"] - 1) > tol:
            bad.append(f"{what} {r['ratio'] - 1:+.0%}")
    if queue is None:
        bad.append("queue missing")
    else:
        d = queue["emu_mean"] - queue["sim_mean"]
        if abs(d) > max(TOLERANCES["queue"] * queue["sim_mean"], TOLERANCES["queue_ms"]):
            bad.append(f"queue {d:+.2f} ms")
    return "agrees" if not bad else "departs: " + ", ".join(bad)


def run_cell(cell: Cell, out: Path, n: int, duration: str | None = None,
             warmup: str | None = None, echo: Any = None) -> dict[str, Any]:
    """Cross-check one cell (runs kept in OUT/<cell> and reused) and return its table row."""
    from l4slab.crosscheck import crosscheck
    from l4slab.scenario import dumps_toml

    doc, sim_sets = scenario(cell, duration, warmup)
    scen = out / f"{cell.name}.toml"
    scen.parent.mkdir(parents=True, exist_ok=True)
    scen.write_text(dumps_toml(doc))
    load = os.getloadavg()[0]
    rep = crosscheck(scen, out / cell.name, n, sim_sets=sim_sets,
                     echo=echo or (lambda m: None))
    k = 1 if cell.cc == "prague+cubic" else 0
    cc = "cubic" if k else cell.cc
    tput, srtt = _ratio(rep, f"flow {k} ({cc}) throughput"), _ratio(rep, f"flow {k} ({cc}) srtt")
    queue = _queue(rep)
    row = {"regime": cell.regime, "cc": cell.cc, "aqm": cell.aqm, "runs": n,
           "duration": doc["duration"], "load": round(max(load, os.getloadavg()[0]), 1),
           "tput": tput, "srtt": srtt, "queue": queue, "verdict": verdict(tput, srtt, queue),
           "warnings": [x for x in rep["notes"] if x.startswith("warning:")]}
    row.update(_emulator_health(out / cell.name, n))
    if k:
        row["prague_cubic"] = _prague_cubic(out / cell.name, n)
    return row


def _emulator_health(cell_dir: Path, n: int) -> dict[str, Any]:
    """The emulator's worst lateness p99 (ms, data direction) over the cell's runs and whether
    any run called itself suspect (lateness or load past the emulator's thresholds)."""
    p99, suspect = 0.0, False
    for k in range(n):
        em = json.loads((cell_dir / "emu" / f"run-{k}" / "summary.json").read_text()
                        ).get("emulator", {})
        up = (em.get("lateness_us") or {}).get("uplink") or {}
        p99 = max(p99, float(up.get("p99") or 0.0) / 1e3)
        suspect = suspect or bool(em.get("suspect"))
    return {"lateness_p99_ms": round(p99, 2), "suspect": suspect}


def _prague_cubic(cell_dir: Path, n: int) -> dict[str, list[float]]:
    """Prague:Cubic throughput ratio per run on each side."""
    out: dict[str, list[float]] = {}
    for side in ("sim", "emu"):
        vals = []
        for k in range(n):
            s = json.loads((cell_dir / side / f"run-{k}" / "summary.json").read_text())
            f = s["flows"]
            vals.append(round(f[0]["tput_mbps"] / f[1]["tput_mbps"], 2))
        out[side] = vals
    return out


def _cell(r: dict[str, Any] | None, digits: int = 2) -> tuple[str, str]:
    if r is None:
        return "–", "–"
    ci = (f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
          if math.isfinite(r["ci_low"]) else "")
    return f"{r['sim_mean']:.{digits}f} / {r['emu_mean']:.{digits}f}", f"{r['ratio']:.2f}{ci}"


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table: per cell simulator / emulator means, ratio [95 % CI], verdict."""
    out = ["| regime | cc | AQM | tput Mb/s sim / emu | ratio [CI] | srtt ms sim / emu | "
           "ratio [CI] | queue ms sim / emu | ratio [CI] | verdict | runs × s, load, lateness |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells_ = [*_cell(r["tput"]), *_cell(r["srtt"]), *_cell(r["queue"])]
        v = r["verdict"]
        if "prague_cubic" in r:
            pc = r["prague_cubic"]
            v += (f"; Prague:Cubic sim {', '.join(map(str, pc['sim']))}, "
                  f"emu {', '.join(map(str, pc['emu']))}")
        health = ""
        if "lateness_p99_ms" in r:
            health = f", late p99 {r['lateness_p99_ms']:g} ms" + (
                " **suspect**" if r["suspect"] else "")
        out.append(f"| {r['regime']} | {r['cc']} | {r['aqm']} | " + " | ".join(cells_)
                   + f" | {v} | {r['runs']} × {r['duration']}, {r['load']}{health} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the grid (or the part the options select) and write OUT/grid.md and grid.json."""
    import argparse

    ap = argparse.ArgumentParser(prog="crosscheck_grid", description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path, help="output directory (runs there are reused)")
    ap.add_argument("-n", type=int, default=2, help="runs per side and cell (default 2)")
    ap.add_argument("--duration", help="run length for every cell (default: per regime)")
    ap.add_argument("--warmup", help="warm-up for every cell (default: per regime)")
    ap.add_argument("--regime", action="append", choices=sorted(REGIMES))
    ap.add_argument("--cc", action="append", choices=CCS)
    ap.add_argument("--aqm", action="append", choices=AQMS)
    a = ap.parse_args(argv)
    from l4slab.emulate import EmulateError
    from l4slab.scenario import ScenarioError

    rows = []
    for cell in cells(a.regime, a.cc, a.aqm):
        try:
            rows.append(run_cell(cell, a.out, a.n, a.duration, a.warmup))
        except (ScenarioError, EmulateError) as e:
            print(f"error: {cell.name}: {e}")
            return 2
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    # Rows of cells run earlier into OUT are kept; this run's replace theirs; grid order.
    old = a.out / "grid.json"
    by_key = {(r["regime"], r["cc"], r["aqm"]): r
              for r in (json.loads(old.read_text()) if old.exists() else [])}
    by_key.update({(r["regime"], r["cc"], r["aqm"]): r for r in rows})
    order = {(c.regime, c.cc, c.aqm): i for i, c in enumerate(cells())}
    rows = sorted(by_key.values(),
                  key=lambda r: order.get((r["regime"], r["cc"], r["aqm"]), len(order)))
    text = table(rows)
    (a.out / "grid.md").write_text(text)
    old.write_text(json.dumps(rows, indent=1) + "\n")
    print(text + f"\ntable: {a.out / 'grid.md'}")
    return 0

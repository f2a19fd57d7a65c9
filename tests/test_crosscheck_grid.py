"""`make crosscheck-grid` (l4slab.crosscheck_grid): the cells, their scenarios, the verdict's
tolerances, and (as root) one cell whose agreement holds today, so that a regression in the
kernel-stack path or in the model fails CI."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from l4slab.crosscheck_grid import Cell, cells, run_cell, scenario, table, verdict
from l4slab.emuflows import host_tcp_wmem_max

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_emulate import need_root  # noqa: E402


def ratio(sim: float, emu: float) -> dict:
    return {"sim_mean": sim, "emu_mean": emu, "ratio": emu / sim, "ci_low": float("nan"),
            "ci_high": float("nan")}


def test_grid_cells_and_the_100m_l4s_cell():
    g = cells()
    # 3 single-flow regimes × 3 ccs × 3 AQMs, plus the one Prague-beside-Cubic cell.
    assert len(g) == 28
    assert g[0] == Cell("12M20ms", "reno", "fifo")
    assert Cell("100M25ms", "prague+cubic", "dualpi2") in g
    assert cells(["100M25ms"], ["reno"]) == []


def test_fifo_is_one_bdp_and_kernel_flows_get_the_tso_host_in_the_simulator():
    doc, sim_sets = scenario(Cell("12M20ms", "cubic", "fifo"))
    # 12 Mb/s × 20 ms = 30 000 B = 20 packets of 1500 B.
    assert doc["aqm"] == {"kind": "fifo", "limit": 20}
    assert (doc["duration"], doc["warmup"]) == ("10s", "3s")
    # The kernel's send-buffer cap is this host's net.ipv4.tcp_wmem max (tcp_sndbuf_expand).
    wmem = host_tcp_wmem_max()
    assert wmem == int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    assert sim_sets == ["flows.0.tso=true", "flows.0.nic_rate=10gbit",
                        f"flows.0.tcp_wmem={wmem}"]
    doc, sim_sets = scenario(Cell("100M25ms", "prague+cubic", "dualpi2"), "30s", "5s")
    assert [f["cc"] for f in doc["flows"]] == ["prague", "cubic"]
    assert (doc["duration"], doc["warmup"]) == ("30s", "5s")
    # Only the kernel's flow (Cubic) gets the kernel's host; Prague runs as the model in both.
    assert sim_sets == ["flows.1.tso=true", "flows.1.nic_rate=10gbit",
                        f"flows.1.tcp_wmem={wmem}"]


def test_verdict_tolerances_at_their_edges():
    ok_t, ok_s = ratio(10.0, 10.9), ratio(30.0, 31.4)
    assert verdict(ok_t, ok_s, ratio(4.0, 4.9)) == "agrees"          # +0.9 ms ≤ 25 % of 4
    assert verdict(ok_t, ok_s, ratio(1.0, 1.5)) == "agrees"          # +0.5 ms: the ms floor
    assert verdict(ok_t, ok_s, ratio(1.0, 1.51)) == "departs: queue +0.51 ms"
    assert verdict(ok_t, ok_s, ratio(4.0, 5.01)) == "departs: queue +1.01 ms"
    assert verdict(ratio(10.0, 11.1), ok_s, ratio(4.0, 4.0)) == "departs: tput +11%"
    assert verdict(ok_t, ratio(30.0, 28.4), ratio(4.0, 4.0)) == "departs: srtt -5%"
    assert verdict(ok_t, ok_s, None) == "departs: queue missing"


def test_table_names_the_cell_and_its_verdict():
    row = {"regime": "12M20ms", "cc": "cubic", "aqm": "fifo", "runs": 2, "duration": "10s",
           "load": 9.5, "tput": ratio(11.58, 11.58), "srtt": ratio(35.0, 35.7),
           "queue": ratio(13.05, 13.98), "verdict": "agrees"}
    last = table([row]).splitlines()[-1]
    assert last == ("| 12M20ms | cubic | fifo | 11.58 / 11.58 | 1.00 | 35.00 / 35.70 | 1.02 | "
                    "13.05 / 13.98 | 1.07 | agrees | 2 × 10s, 9.5 |")
    # The emulator's worst lateness p99 and the suspect mark follow the load.
    row.update(lateness_p99_ms=22.15, suspect=True)
    assert table([row]).splitlines()[-1].endswith(
        "| agrees | 2 × 10s, 9.5, late p99 22.15 ms **suspect** |")


def test_kernel_cubic_through_fifo_at_12mbit_agrees_with_the_model(tmp_path):
    """One grid cell, shortened: kernel Cubic alone through a 1-BDP FIFO at 12 Mb/s/20 ms
    against the Cubic model. Measured (FIDELITY.md, 2 runs × 10 s): throughput 1.00, srtt
    0.99, queue 0.99 (14.3 against 14.2 ms); round 4b, before the TSO host: 1.07. The
    bounds are the grid's tolerances, on medians over 3 emulator runs so that one run
    disturbed by a loaded host does not decide: a kernel or model regression that moves the
    queue by more than 25 % (5 packets at 1 ms each) fails."""
    need_root()
    cell = Cell("12M20ms", "cubic", "fifo")
    row = run_cell(cell, tmp_path, 3, duration="8s", warmup="3s")
    sides = {}
    for side in ("sim", "emu"):
        runs = [json.loads((tmp_path / cell.name / side / f"run-{k}" / "summary.json")
                           .read_text()) for k in range(3)]
        sides[side] = {"tput": statistics.median(r["flows"][0]["tput_mbps"] for r in runs),
                       "srtt": statistics.median(r["flows"][0]["srtt_ms"] for r in runs),
                       "queue": statistics.median(r["queues"][0]["sojourn_ms"]["mean"]
                                                  for r in runs)}
    sim, emu = sides["sim"], sides["emu"]
    assert [s for s in row["warnings"]] == [], row["warnings"]
    # One flow fills the link on both sides (goodput ≤ 12·1448/1500 = 11.58 Mb/s).
    assert abs(emu["tput"] / sim["tput"] - 1) <= 0.10, sides
    # srtt = 20 ms + the queue, so it agrees within the queue's share of it.
    assert abs(emu["srtt"] / sim["srtt"] - 1) <= 0.05, sides
    assert abs(emu["queue"] - sim["queue"]) <= max(0.25 * sim["queue"], 0.5), sides
    # The simulator's queue is Cubic's: a 1-BDP FIFO (20 ms when full) mostly above half full.
    assert 8.0 <= sim["queue"] <= 20.0, sides

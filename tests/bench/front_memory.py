"""Peak memory of `l4slab run` against the simulator's own peak (issue 13; run by `make bench`).

For each flow count (default 1 000 and 10 000 CUBIC flows, 1 Gb/s, 50 ms, 10 s, DualPI2,
samples every 16 ms: the `bench_scale` dumbbell) this runs, each in its own process:
- `l4slab run SCENARIO -o DIR` (figures and report included), peak RSS of that process;
- `bench_scale one cubic N 1gbit 50ms 10s`, the simulator alone in Rust, its peak RSS;
and prints a Markdown table with the ratio, after the peak of Python with the libraries
`l4slab run` imports (the fixed part of the front end's memory).

    .venv/bin/python tests/bench/front_memory.py [FLOWS ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def scenario(flows: int) -> str:
    """The bench_scale dumbbell (crates/l4s-sim/examples/bench_scale.rs) with `flows` CUBIC
    flows."""
    return (f'seed = 1\nduration = "10s"\nwarmup = "0s"\n[link]\nrate = "1gbit"\n'
            f'[aqm]\nkind = "dualpi2"\n[[flows]]\ncc = "cubic"\nrtt = "50ms"\ncount = {flows}\n')


def run_child(cmd: list[str]) -> tuple[float, float, str]:
    """(wall s, peak RSS MB, stdout) of `cmd`, measured with wait4 on its pid."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read() if p.stdout else b""
    err = p.stderr.read() if p.stderr else b""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err.decode(errors='replace')}")
    return wall, ru.ru_maxrss / 1024, out.decode(errors="replace")


def main(argv: list[str]) -> None:
    counts = [int(a) for a in argv] or [1000, 10000]
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "l4s-sim", "--example",
                    "bench_scale"], cwd=ROOT, check=True)
    bench = ROOT / "target" / "release" / "examples" / "bench_scale"
    l4slab = [sys.executable, "-m", "l4slab.cli"]
    _, base, _ = run_child([sys.executable, "-c", "import l4slab.cli, l4slab.runner, "
                            "l4slab.plots, l4slab.report"])
    print(f"Python with l4slab, pandas, pyarrow and matplotlib imported, nothing run: "
          f"{base:.0f} MB peak RSS\n")
    print("| flows | per-flow rows | `l4slab run` wall s | `l4slab run` peak RSS MB "
          "| simulator alone peak RSS MB | ratio |")
    print("|---|---|---|---|---|---|")
    for n in counts:
        with tempfile.TemporaryDirectory() as tmp:
            scen = Path(tmp) / f"cubic_{n}.toml"
            scen.write_text(scenario(n))
            wall, py_peak, _ = run_child([*l4slab, "run", str(scen), "-o", str(Path(tmp) / "out")])
            import pyarrow.parquet as pq

            rows = pq.ParquetFile(Path(tmp) / "out" / "flows.parquet").metadata.num_rows
        _, _, line = run_child([str(bench), "one", "cubic", str(n), "1gbit", "50ms", "10s"])
        f = line.split()
        sim_peak = float(f[9]) if len(f) == 12 else float("nan")
        print(f"| {n} | {rows} | {wall:.1f} | {py_peak:.0f} | {sim_peak:.0f} "
              f"| {py_peak / sim_peak:.2f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Peak memory of the process that runs a sweep of many-flow runs (issue 26; run by `make bench`).

A sweep of RUNS replications of the `front_memory` dumbbell with FLOWS CUBIC flows (1 Gb/s,
50 ms, DualPI2), DURATION each, two worker processes. The parent receives every run, writes its
run directory, then builds sweep.parquet (per-run scalars) and sweep_flows.parquet (one row per
run and flow) and the sweep's figures and report. Printed: the parent's own peak RSS
(getrusage RUSAGE_SELF in the parent: the workers are not counted), the largest worker's, the
wall time and the sizes of the two index files.

    .venv/bin/python tests/bench/sweep_memory.py [RUNS [FLOWS [DURATION]]]

Defaults: 10 runs of 10 000 flows, 1 s (the per-flow index is as large as with 10 s: one
summary row per flow; only flows.parquet of each run grows with the duration).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from front_memory import scenario  # noqa: E402

PARENT = """
import json, resource, sys, time
from l4slab.sweeps import sweep
if __name__ == "__main__":
    t0 = time.perf_counter()
    res = sweep(sys.argv[1], sys.argv[2], jobs=2)
    print(json.dumps({"parent_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                      "wall_s": time.perf_counter() - t0, "ok": res.ok}))
"""


def main(argv: list[str]) -> None:
    runs = int(argv[0]) if argv else 10
    flows = int(argv[1]) if len(argv) > 1 else 10000
    duration = argv[2] if len(argv) > 2 else "1s"
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "base.toml").write_text(scenario(flows).replace('"10s"', f'"{duration}"'))
        (t / "sweep.toml").write_text(f'base = "base.toml"\nreplications = {runs}\n')
        (t / "parent.py").write_text(PARENT)
        out = subprocess.run([sys.executable, str(t / "parent.py"), str(t / "sweep.toml"),
                              str(t / "out")], capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"sweep failed:\n{out.stderr}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        sizes = {f: (t / "out" / f).stat().st_size / 1e6 if (t / "out" / f).exists() else 0.0
                 for f in ("sweep.parquet", "sweep_flows.parquet")}
    print(f"| runs × flows | duration | parent peak RSS MB | largest worker MB | wall s "
          f"| sweep.parquet MB | sweep_flows.parquet MB |\n|---|---|---|---|---|---|---|\n"
          f"| {runs} × {flows} | {duration} | {r['parent_mb']:.0f} | {r['worker_mb']:.0f} "
          f"| {r['wall_s']:.1f} | {sizes['sweep.parquet']:.1f} "
          f"| {sizes['sweep_flows.parquet']:.1f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

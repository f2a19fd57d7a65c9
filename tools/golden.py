#!/usr/bin/env python3
"""Golden-output check: run the same scenarios with two `l4s-sim` binaries and compare every
output file byte for byte (samples.csv, flows.csv, summary.json, packets.csv).

    python3 tools/golden.py BIN_A BIN_B [--jobs N] [--keep DIR] [--only SUBSTR] [--reps R]

Cases: every shipped scenario (scenarios/*.toml) at full length; every grid point of every
sweep (scenarios/sweeps/*.toml and the suites' scenarios/suites/*/*.toml) at its first `--reps`
replication seeds (the sweep's own seed derivation), shortened to 3 s with a 1 s warm-up; and
a few extra cases the shipped files do not reach (per-packet records, 1 000 flows of three CCs,
jitter with reordering + Gilbert-Elliott loss + a rate-limited ACK path, sized transfers with
staggered starts). Exit status 0 when every file matches, 1 when any differs (the first
differing lines are printed), 2 on a usage error or a run that fails in one binary only.

Needs only Python 3.11 (no l4slab install): sweep files are expanded here the way
l4slab.sweeps does (base + [set] + one grid point, dotted keys, list indices).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCEN = ROOT / "python" / "l4slab" / "data" / "scenarios"
MASK64 = (1 << 64) - 1


def derive_seed(base_seed: int, rep: int) -> int:
    """Replication `rep`'s seed, as l4slab.sweeps.derive_seed (SplitMix64 output rep+1, >> 1)."""
    z = (base_seed + (rep + 1) * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    z ^= z >> 31
    return z >> 1


def set_path(data: dict[str, Any], key: str, value: Any) -> None:
    """Set a dotted key (`flows.0.cc`), creating missing tables."""
    parts = key.split(".")
    node: Any = data
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = copy.deepcopy(value)
    else:
        node[last] = copy.deepcopy(value)


def flatten(table: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """`{aqm = {target = x}}` and `{"aqm.target" = x}` both give ("aqm.target", x)."""
    out: list[tuple[str, Any]] = []
    for k, v in table.items():
        if isinstance(v, dict):
            out += flatten(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return out


def absolute_trace(data: dict[str, Any], base_dir: Path) -> None:
    """Make `link.trace` absolute (the scenario is written to a temp dir)."""
    link = data.get("link", {})
    if isinstance(link.get("trace"), str) and not Path(link["trace"]).is_absolute():
        link["trace"] = str((base_dir / link["trace"]).resolve())


def load(path: Path) -> dict[str, Any]:
    """A TOML file as a dict."""
    return tomllib.loads(path.read_text())


def sweep_cases(path: Path, reps: int) -> list[tuple[str, dict[str, Any]]]:
    """Every grid point of a sweep file at its first `reps` seeds, 3 s with a 1 s warm-up."""
    sw = load(path)
    if "base" not in sw:  # a suite's base scenario (e.g. interactive/base_web.toml)
        return []
    if isinstance(sw["base"], dict):  # an inline [base] table
        base_path, base = path, sw["base"]
    else:
        base_path = (path.parent / sw["base"]).resolve()
        base = load(base_path)
    fixed = flatten(sw.get("set", {}))
    grid = flatten(sw.get("grid", {}))
    keys = [k for k, _ in grid]
    seed0 = sw.get("seed", base.get("seed", 1))
    cases = []
    for p, values in enumerate(itertools.product(*(v for _, v in grid)) if grid else [()]):
        for rep in range(reps):
            d = copy.deepcopy(base)
            for k, v in fixed:
                set_path(d, k, v)
            for k, v in zip(keys, values, strict=True):
                set_path(d, k, v)
            absolute_trace(d, path.parent)
            absolute_trace(d, base_path.parent)
            d["seed"] = derive_seed(seed0, rep)
            d["duration"] = "3s"
            d["warmup"] = "1s"
            rel = path.relative_to(SCEN).with_suffix("")
            cases.append((f"{rel}-p{p:03d}-r{rep:02d}".replace("/", "_"), d))
    return cases


def extra_cases() -> list[tuple[str, dict[str, Any]]]:
    """Paths the shipped files do not reach."""
    pvc = load(SCEN / "prague_vs_cubic_12M_20ms.toml")
    pvc["output"] = {"packets": True}
    pvc["duration"] = "8s"
    cbr = load(SCEN / "cbr_l4s_vs_classic_dualpi2.toml")
    cbr["output"] = {"packets": True}
    cbr["duration"] = "3s"
    many = {
        "seed": 7, "duration": "2s", "warmup": "0.5s",
        "link": {"rate": "1gbit"}, "aqm": {"kind": "dualpi2"},
        "flows": [{"cc": "cubic", "rtt": "50ms", "count": 400},
                  {"cc": "prague", "rtt": "30ms", "count": 400},
                  {"cc": "dctcp", "rtt": "80ms", "count": 200, "ecn": "l4s"}],
    }
    impaired = {
        "seed": 11, "duration": "6s", "warmup": "1s",
        "link": {"rate": "30mbit", "jitter": "3ms", "reorder": True,
                 "gilbert": {"p": 0.01, "r": 0.3, "loss_bad": 0.5}},
        "ack_link": {"rate": "1mbit", "limit": 50},
        "aqm": {"kind": "dualpi2"},
        "flows": [{"cc": "prague", "rtt": "20ms"}, {"cc": "cubic", "rtt": "40ms"},
                  {"cc": "bbr3", "rtt": "30ms", "ecn": "l4s"}, {"cc": "reno", "rtt": "10ms"}],
    }
    sized = {
        "seed": 3, "duration": "4s",
        "link": {"rate": "100mbit", "loss": 0.002}, "aqm": {"kind": "fq_codel"},
        "flows": [{"cc": "cubic", "rtt": "20ms", "count": 20, "bytes": 200000,
                   "start": "0.1s"},
                  {"cc": "bbr1", "rtt": "60ms", "count": 3, "start": "0.5s", "stop": "3s"},
                  {"cc": "cbr", "rtt": "10ms", "rate": "5mbit", "on": "0.2s", "off": "0.3s"}],
    }
    return [("extra_packets_pvc12M", pvc), ("extra_packets_cbr", cbr),
            ("extra_1000flows_3cc", many), ("extra_impaired_acklink", impaired),
            ("extra_sized_fqcodel", sized)]


def all_cases(reps: int) -> list[tuple[str, dict[str, Any]]]:
    """Shipped scenarios, sweep grid points and the extra cases."""
    cases = []
    for f in sorted(SCEN.glob("*.toml")):
        d = load(f)
        absolute_trace(d, f.parent)
        cases.append((f.stem, d))
    sweeps = sorted(SCEN.glob("sweeps/*.toml")) + sorted(SCEN.glob("suites/*/*.toml"))
    for f in sweeps:
        if f.name != "base.toml":
            cases += sweep_cases(f, reps)
    return cases + extra_cases()


def run_one(binary: str, scen: Path, out: Path) -> str | None:
    """Run one scenario; None on success, the error text otherwise."""
    r = subprocess.run([binary, "run", str(scen), "-o", str(out)],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr.strip() or f"exit {r.returncode}")


def first_diff(a: bytes, b: bytes) -> str:
    """Where two files first differ, as line number and both lines."""
    la, lb = a.split(b"\n"), b.split(b"\n")
    for i, (x, y) in enumerate(zip(la, lb, strict=False)):
        if x != y:
            return f"line {i + 1}:\n      A: {x[:300]!r}\n      B: {y[:300]!r}"
    return f"A has {len(la)} lines, B {len(lb)}"


def compare(name: str, da: Path, db: Path) -> list[str]:
    """Differences between two run directories (missing files included)."""
    fa = {p.name for p in da.iterdir()} if da.exists() else set()
    fb = {p.name for p in db.iterdir()} if db.exists() else set()
    out = []
    for f in sorted(fa ^ fb):
        out.append(f"{name}/{f}: only in {'A' if f in fa else 'B'}")
    for f in sorted(fa & fb):
        a, b = (da / f).read_bytes(), (db / f).read_bytes()
        if a != b:
            out.append(f"{name}/{f}: differs at {first_diff(a, b)}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bin_a")
    ap.add_argument("bin_b")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (default 1)")
    ap.add_argument("--keep", type=Path, help="keep the outputs in this (new) directory")
    ap.add_argument("--only", default="", help="only cases whose name contains this")
    ap.add_argument("--reps", type=int, default=1, help="seeds per sweep grid point (default 1)")
    a = ap.parse_args()
    for b in (a.bin_a, a.bin_b):
        if not os.access(b, os.X_OK):
            print(f"golden: {b}: not an executable", file=sys.stderr)
            return 2
    if a.jobs < 1 or a.reps < 1:
        print("golden: --jobs and --reps must be ≥ 1", file=sys.stderr)
        return 2
    if a.keep is not None and a.keep.exists():
        print(f"golden: --keep {a.keep}: exists; give a new directory", file=sys.stderr)
        return 2
    cases = [c for c in all_cases(a.reps) if a.only in c[0]]
    work = Path(tempfile.mkdtemp(prefix="golden-")) if a.keep is None else a.keep
    work.mkdir(parents=True, exist_ok=True)

    def job(case: tuple[str, dict[str, Any]]) -> tuple[str, list[str], list[str]]:
        name, data = case
        scen = work / "scenarios" / f"{name}.json"
        scen.write_text(json.dumps(data))
        errs = []
        for tag, binary in (("A", a.bin_a), ("B", a.bin_b)):
            e = run_one(binary, scen, work / tag / name)
            if e is not None:
                errs.append(f"{tag}: {e}")
        return name, errs, compare(name, work / "A" / name, work / "B" / name)

    (work / "scenarios").mkdir(exist_ok=True)
    diffs: list[str] = []
    fails: list[str] = []
    files = 0
    with ThreadPoolExecutor(a.jobs) as pool:
        for name, errs, d in pool.map(job, cases):
            if errs:
                # A scenario both binaries refuse the same way is not a difference.
                same = len(errs) == 2 and errs[0][3:] == errs[1][3:]
                (diffs if not same else fails).append(f"{name}: " + "; ".join(errs))
            diffs += d
            files += len(list((work / "A" / name).glob("*"))) if (work / "A" / name).exists() else 0
    for line in diffs:
        print(line)
    for line in fails:
        print(f"(refused by both) {line}")
    where = f"; outputs in {work}" if a.keep else ""
    print(f"golden: {len(cases)} cases, {files} files compared, "
          f"{len(diffs)} difference(s){where}")
    if a.keep is None:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())

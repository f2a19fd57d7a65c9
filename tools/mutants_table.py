"""Caught/missed table per module from cargo-mutants' outcomes.json (`make mutants`).

Usage: python3 tools/mutants_table.py [--by-file] [mutants.out/outcomes.json]

A module is a directory under a crate's src/ (l4s-core `wifi/`) or a top-level file (l4s-sim
`pcap`); --by-file gives one row per source file. The catch rate is over viable mutants
(caught + missed + timeout): a timeout counts as caught, because the tests did not pass on the
mutant (cargo-mutants' own reading). Unviable mutants (the mutant does not build) are listed
but left out of the rate.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

# cargo-mutants 27 `SummaryOutcome` of a mutant scenario -> column.
KINDS = {"CaughtMutant": "caught", "MissedMutant": "missed", "Timeout": "timeout",
         "Unviable": "unviable"}
COLUMNS = ("caught", "missed", "timeout", "unviable")


def module(path: str, by_file: bool = False) -> str:
    """`crates/l4s-core/src/wifi/edca.rs` -> `l4s-core wifi/` (by file: `l4s-core wifi/edca.rs`);
    `crates/l4s-sim/src/pcap.rs` -> `l4s-sim pcap`."""
    parts = path.split("/")
    if len(parts) < 4 or parts[0] != "crates" or parts[2] != "src":
        return path
    crate, rest = parts[1], parts[3:]
    if by_file:
        return f"{crate} {'/'.join(rest)}"
    if len(rest) > 1:
        return f"{crate} {rest[0]}/"
    return f"{crate} {rest[0].removesuffix('.rs')}"


def rate(r: dict[str, int]) -> str:
    viable = r["caught"] + r["missed"] + r["timeout"]
    if not viable:
        return "-"
    return f"{100 * (r['caught'] + r['timeout']) / viable:.0f} %"


def table(data: dict, planned: int | None = None, by_file: bool = False) -> tuple[list[str], int]:
    """The markdown lines for one outcomes.json and the exit status (1 if the baseline failed).
    `planned` is the number of mutants the run set out to test (mutants.json beside it);
    outcomes.json's own `total_mutants` counts only those tested so far."""
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    listed: dict[str, list[str]] = {"missed": [], "timeout": []}
    baseline = None
    tested = 0
    for o in data.get("outcomes", []):
        sc = o.get("scenario")
        if sc == "Baseline":
            baseline = o.get("summary")
            continue
        if not isinstance(sc, dict) or "Mutant" not in sc:
            continue
        m = sc["Mutant"]
        kind = KINDS.get(o.get("summary", ""))
        if kind is None:
            continue
        tested += 1
        rows[module(m.get("file", "?"), by_file)][kind] += 1
        if kind in listed:
            listed[kind].append(m.get("name", m.get("file", "?")))
    out = []
    if baseline not in (None, "Success"):
        out.append(f"error: the baseline (unmutated tree) did not pass its tests ({baseline}); "
                   "see mutants.out/log/baseline.log")
        return out, 1
    total = max(planned or 0, tested)
    out.append(f"{tested} of {total} mutants tested"
               + (" (the run stopped early)" if tested < total else "") + ".")
    out.append("")
    out.append("| module | caught | missed | timeout | unviable | caught of viable |")
    out.append("|---|---|---|---|---|---|")
    tot: dict[str, int] = defaultdict(int)
    for mod in sorted(rows):
        r = rows[mod]
        for k in COLUMNS:
            tot[k] += r[k]
        out.append(f"| {mod} | " + " | ".join(str(r[k]) for k in COLUMNS) + f" | {rate(r)} |")
    out.append("| all | " + " | ".join(str(tot[k]) for k in COLUMNS) + f" | {rate(tot)} |")
    for kind in ("missed", "timeout"):
        if listed[kind]:
            out.append("")
            out.append(f"{kind.capitalize()}:")
            out.extend(f"- {name}" for name in listed[kind])
    return out, 0


def main(argv: list[str]) -> int:
    by_file = "--by-file" in argv
    args = [a for a in argv if a != "--by-file"]
    path = args[0] if args else "mutants.out/outcomes.json"
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"error: {path}: {e}", file=sys.stderr)
        return 2
    if not isinstance(data, dict):
        print(f"error: {path}: not a cargo-mutants outcomes.json (no 'outcomes')", file=sys.stderr)
        return 2
    planned = None
    listing = Path(path).with_name("mutants.json")
    try:
        planned = len(json.loads(listing.read_text()))
    except (OSError, ValueError, TypeError):
        pass  # no listing beside it: the tested count stands alone
    lines, status = table(data, planned, by_file)
    print("\n".join(lines), file=sys.stderr if status else sys.stdout)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Caught/missed table per module from cargo-mutants' outcomes.json (`make mutants`).

Usage: python3 tools/mutants_table.py [mutants.out/outcomes.json]
"""

import json
import sys
from collections import defaultdict

KINDS = {"CaughtMutant": "caught", "MissedMutant": "missed", "Timeout": "timeout",
         "Unviable": "unviable"}


def module(path: str) -> str:
    # crates/l4s-core/src/wifi/edca.rs -> l4s-core wifi/; crates/l4s-sim/src/pcap.rs -> l4s-sim pcap
    parts = path.split("/")
    crate = parts[1] if len(parts) > 1 else "?"
    rest = parts[3:] if len(parts) > 3 else parts
    name = rest[0] + "/" if len(rest) > 1 else rest[-1].removesuffix(".rs")
    return f"{crate} {name}"


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else "mutants.out/outcomes.json"
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"error: {path}: {e}", file=sys.stderr)
        return 2
    rows = defaultdict(lambda: defaultdict(int))
    missed = []
    for o in data.get("outcomes", []):
        sc = o.get("scenario")
        if not isinstance(sc, dict) or "Mutant" not in sc:
            continue
        m = sc["Mutant"]
        kind = KINDS.get(o.get("summary"), "other")
        mod = module(m.get("file", "?"))
        rows[mod][kind] += 1
        if kind == "missed":
            missed.append(f"{m.get('file')}:{m.get('span', {}).get('start', {}).get('line', '?')}"
                          f" {m.get('name', '')}")
    print("| module | caught | missed | timeout | unviable | caught of viable |")
    print("|---|---|---|---|---|---|")
    tot = defaultdict(int)
    for mod in sorted(rows):
        r = rows[mod]
        for k, v in r.items():
            tot[k] += v
        viable = r["caught"] + r["missed"] + r["timeout"]
        pct = f"{100 * (r['caught'] + r['timeout']) / viable:.0f} %" if viable else "-"
        print(f"| {mod} | {r['caught']} | {r['missed']} | {r['timeout']} | {r['unviable']} | {pct} |")
    viable = tot["caught"] + tot["missed"] + tot["timeout"]
    if viable:
        print(f"| all | {tot['caught']} | {tot['missed']} | {tot['timeout']} | {tot['unviable']} "
              f"| {100 * (tot['caught'] + tot['timeout']) / viable:.0f} % |")
    if missed:
        print("\nMissed:")
        for m in missed:
            print(f"- {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The damage grid for bench/RELIABILITY.md: every file kind (segment, WAL, edges, archive,
manifest, index files) with one byte flipped at FLIPS positions and truncated at TRUNCATIONS,
each opened read-only (and with salvage=True) in a child process (tests/damage_harness.py).

Run: python bench/damage.py [--flips 100] [--truncations 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import damage_harness as harness


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flips", type=int, default=100)
    ap.add_argument("--truncations", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="engramdb-damage-grid-")) / "store"
    expected = harness.build(folder)
    todo = harness.cases(folder, args.flips, args.truncations, args.seed)
    t0 = time.perf_counter()
    results = harness.run(folder, expected, todo)
    print(f"{len(results)} cases in {time.perf_counter() - t0:.0f} s; files: "
          + ", ".join(f"{k} {len(v)}" for k, v in harness.files_of(folder).items()))
    print("| kind | damage | cases | open: outcomes | salvage: outcomes |\n|---|---|---|---|---|")
    for kind in harness.KINDS:
        for op in ("flip", "truncate"):
            rows = [r for r in results if r["kind"] == kind and r["op"] == op]
            opened = collections.Counter(str(r["open"]).split(":")[0] for r in rows)
            salvaged = collections.Counter(str(r["salvage"]).split(":")[0] for r in rows)
            print(f"| {kind} | {op} | {len(rows)} | {dict(opened)} | {dict(salvaged)} |")
    bad = harness.failures(results)
    print(f"failures (altered, missing, raw error, crash, unnamed): {len(bad)}; WAL truncations read as a torn "
          f"tail: {len(harness.torn_tails(results))}")
    for r in bad[:20]:
        print("  ", r)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

"""The whole fault-injection matrix for bench/RELIABILITY.md: every operation of
tests/fault_matrix.py failed at every one of its I/O calls, by ENOSPC, by EIO and by a crash
(the process killed at that call, a write torn in half), each case checked (the store opens by
itself, verify ok, nothing acknowledged lost or doubled, all or nothing, the handle works on).

Run: python bench/fault_matrix.py [--ops add,purge,...] [--faults ENOSPC,EIO,crash] [--stride 1]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import fault_matrix as fm


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default="", help="comma-separated operation names (default: all)")
    ap.add_argument("--faults", default=",".join(fm.FAULTS))
    ap.add_argument("--stride", type=int, default=1, help="every n-th I/O call (1: every call)")
    args = ap.parse_args()
    logging.getLogger("engramdb").setLevel(logging.ERROR)  # the warnings the faults cause are expected
    ops = [o for o in args.ops.split(",") if o] or list(fm.OPS)
    faults = tuple(f for f in args.faults.split(",") if f)
    root = Path(tempfile.mkdtemp(prefix="engramdb-fault-matrix-"))
    t0 = time.perf_counter()
    try:
        result = fm.run_matrix(root, lambda op, calls: sorted({*range(1, calls + 1, args.stride), calls}),
                               faults=faults, ops=ops)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    took = time.perf_counter() - t0
    print(f"| operation | I/O calls | cases ({' + '.join(faults)}) | failures |")
    print("|---|---|---|---|")
    total_calls = total_cases = 0
    for name, c in result["counts"].items():
        failed = sum(1 for f in result["failures"] if f[0] == name)
        total_calls += c["calls"]
        total_cases += c["cases"]
        print(f"| {name} | {c['calls']:,} | {c['cases']:,} | {failed} |")
    print(f"| **all {len(result['counts'])}** | **{total_calls:,}** | **{total_cases:,}** | "
          f"**{len(result['failures'])}** |")
    print(f"\n{took:.0f} s")
    for op, fault, at, why in result["failures"]:
        print(f"FAILED {op} {fault} at call {at}: {why}")
    sys.exit(1 if result["failures"] else 0)


if __name__ == "__main__":
    main()

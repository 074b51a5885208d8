"""The crash loop for bench/RELIABILITY.md: ROUNDS rounds of a writer SIGKILLed at a random moment
of add, add_many (1 to 5,000), update, checkpoint, compact or purge on one folder
(tests/crash_harness.py), each followed by a writable reopen checked against every acknowledged
operation.

Run: python bench/crash_loop.py [--rounds 200] [--profile default|toy] [--max-wait 1.0] [--lose-manifest]
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import crash_harness as harness


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--profile", choices=["default", "toy"], default="default")
    ap.add_argument("--max-wait", type=float, default=1.0)
    ap.add_argument("--lose-manifest", action="store_true",
                    help="delete manifest.json after every kill: each reopen must rebuild it (repair)")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="engramdb-crash-loop-")) / "store"
    model = harness.Model()
    killed_in: collections.Counter[str] = collections.Counter()
    acked = batches_landed = batches_lost = repaired = 0
    t0 = time.perf_counter()
    for rnd in range(args.rounds):
        got = harness.round_once(folder, rnd, seed=7_000 + rnd, model=model, profile=args.profile,
                                 max_wait=args.max_wait, lose_manifest=args.lose_manifest)
        acked += got["acked"]
        repaired += got["repaired"]
        killed_in[(got["in_flight"] or "between operations").split()[0]] += 1
        if got["batch_landed"] is not None:
            batches_landed += got["batch_landed"]
            batches_lost += not got["batch_landed"]
    print(f"{args.rounds} rounds ({args.profile} profile) in {time.perf_counter() - t0:.0f} s: {acked:,} acknowledged "
          f"operations, {len(model.content):,} memories checked after the last round, "
          f"{model.checked:,} memory checks in all; losses 0 (every round asserts it)")
    print(f"killed inside: {dict(killed_in)}; in-flight batches: {batches_landed} landed whole, "
          f"{batches_lost} absent whole, 0 torn; manifests rebuilt by the reopen: {repaired}")
    shutil.rmtree(folder.parent, ignore_errors=True)


if __name__ == "__main__":
    main()

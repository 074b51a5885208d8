"""The soak for bench/RELIABILITY.md: a writer (batches of 200, checkpoint every 2,000 rows,
compaction every 25 batches) and N reader processes reopening the store read-only continuously;
every open must find every batch acknowledged before it began (tests/soak_harness.py).

Run: python bench/soak.py [--seconds 120] [--readers 4]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import soak_harness


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--readers", type=int, default=4)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="engramdb-soak-"))
    got = soak_harness.soak(tmp / "store", args.seconds, args.readers)
    got["misses"] = len(got["misses"])
    print(json.dumps(got))
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if got["misses"] else 0)


if __name__ == "__main__":
    main()

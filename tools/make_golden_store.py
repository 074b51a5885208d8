"""Write tests/golden/store-v1: a small store in format_version 1 (committed; never rewritten).

Two segment files and a WAL with frames, versions, a supersede, a forget and caller vectors, so
tests/test_golden_store.py can prove every later engramdb still opens what this one wrote.
Run only when adding a new format version (then write store-v2 beside it).
"""

from __future__ import annotations

import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import engramdb
from engramdb.store import store as store_mod
from store_helpers import toy_embedders, toy_schema

T0 = datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)


def main() -> None:
    out = ROOT / "tests" / "golden" / "store-v1"
    shutil.rmtree(out, ignore_errors=True)
    store_mod.CHECKPOINT_ROWS = 3
    db = engramdb.open(out, schema=toy_schema(), embedders=toy_embedders(), dedup="off")  # type: ignore[arg-type]
    v = np.eye(8, dtype=np.float32)
    db.add("Alice moved to Lisbon", namespace="alice", id="g1", valid_from=T0, role="user", vectors={"dense": v[0]})
    db.add("Alice works at the bakery", namespace="alice", id="g2", valid_from=T0, vectors={"dense": v[1]})
    db.add("Bob likes tea", namespace="bob", id="g3", vectors={"dense": v[2]}, metadata={"lang": "en"})
    db.add("Alice runs a market stall", namespace="alice", id="g4",
           valid_from=datetime(2024, 6, 1, tzinfo=timezone.utc), vectors={"dense": v[3]})
    db.supersede("g2", "g4")
    db.update("g3", content="Bob likes green tea", vectors={"dense": v[4]})
    db.forget("g1")
    # leave the last writes in the WAL: release the lock without close(), as a crash would
    assert db._writer_lock is not None
    db._writer_lock.release()
    (out / "LOCK").unlink()
    print(sorted(p.name for p in out.iterdir()))


if __name__ == "__main__":
    main()

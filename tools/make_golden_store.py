"""Write tests/golden/store-v<FORMAT_VERSION>: a small store in the current format (committed).

Segment files and a WAL with frames, versions, a supersede, a forget, caller vectors and (from
format 2) edges both in an edges file and in the WAL, so tests/test_golden_store.py can prove every
later engramdb still opens what this one wrote. From format 5 the schema also has a 4-d
multivector space (`golden_schema()`: half-precision tokens), each memory given two tokens. Run only when adding a new format version: older
folders (store-v1, written by engramdb 0.1 before edges existed) are never rewritten.
"""

from __future__ import annotations

import os
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import engramdb
from engramdb.storage.columns import FORMAT_VERSION
from store_helpers import golden_schema, golden_tokens, toy_embedders

T0 = datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)


def main() -> None:
    out = ROOT / "tests" / "golden" / f"store-v{FORMAT_VERSION}"
    shutil.rmtree(out, ignore_errors=True)
    db = engramdb.open(out, schema=golden_schema(), embedders=toy_embedders(), dedup="off",  # type: ignore[arg-type]
                       tuning=engramdb.Tuning(checkpoint_rows=3))
    e = np.eye(8, dtype=np.float32)
    v = [{"dense": e[i], "toks": golden_tokens(i)} for i in range(8)]
    db.add("Alice moved to Lisbon", namespace="alice", id="g1", valid_from=T0, role="user", vectors=v[0])
    db.add("Alice works at the bakery", namespace="alice", id="g2", valid_from=T0, vectors=v[1])
    db.add("Bob likes tea", namespace="bob", id="g3", vectors=v[2], metadata={"lang": "en"})
    db.add("Alice runs a market stall", namespace="alice", id="g4",
           valid_from=datetime(2024, 6, 1, tzinfo=timezone.utc), vectors=v[3])
    db.supersede("g2", "g4")
    db.link("g4", "g1", "RELATES_TO", confidence=0.8, reason="both about Alice's life",
            valid_from=datetime(2024, 6, 1, tzinfo=timezone.utc))
    db.checkpoint()  # edges so far go to an edges file; the rest stays in the WAL
    db.update("g3", content="Bob likes green tea", vectors=v[4])
    db.link("g1", "g2", "CAUSED_BY", confidence=0.75)
    db.unlink("g4", "g1", "RELATES_TO")
    db.forget("g1")
    # leave the last writes in the WAL: end the process without close(), as a crash would (its
    # lock goes with it; the WAL frames are already fsynced)
    (out / "LOCK").unlink()
    print(sorted(p.name for p in out.iterdir()), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()

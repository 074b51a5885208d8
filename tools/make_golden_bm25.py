"""Write tests/golden/bm25-v<BM25_FORMAT>: a small default-profile store whose BM25 index file
(index/bm25-lexical.arrow + its JSON sidecar) was saved by this engramdb, so
tests/test_golden_store.py can prove later versions still adopt it (not rebuild it) and rank the
same. Run only when adding a new BM25 format; older folders are never rewritten.
"""

from __future__ import annotations

import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import engramdb
from engramdb.index.lexical import BM25_FORMAT

T0 = datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)
TEXTS = {
    "alice": ["Alice moved to Lisbon in May", "Alice works at the bakery near the river",
              "The bakery opens at six and sells sourdough", "Alice adopted a cat called Biscuit"],
    "bob": ["Bob likes green tea", "Bob's bakery order: two sourdough loaves"],
}
# from format 2 on: a memory longer than one passage (C7), its one bakery sentence near the end
FILLER = "The market report covered rain in the hills and traffic on the ring road that week. "
TEXTS["alice"].append(FILLER * 30 + "Alice finally bought the bakery's old oven for her own kitchen. " + FILLER * 5)


def main() -> None:
    out = ROOT / "tests" / "golden" / f"bm25-v{BM25_FORMAT}"
    shutil.rmtree(out, ignore_errors=True)
    with engramdb.open(out, dedup="off") as db:
        for ns, texts in TEXTS.items():
            db.add_many([{"id": f"{ns}-{i}", "content": t, "namespace": ns, "session_id": "s1", "seq": i,
                          "valid_from": T0} for i, t in enumerate(texts)])
        db.build_index()  # checkpoints, then builds and saves BM25 for every namespace
    (out / "LOCK").unlink(missing_ok=True)  # the writer's lock file is not part of the format
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()

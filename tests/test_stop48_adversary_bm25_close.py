"""Stop 48 adversary: a writer's close with a BM25 sidecar whose "covered" is not a number.

Stop 48's close makes and saves the lexical BM25 (`Indexes._lexical_made`), first asking
`StoreBm25.saved_covers`, which calls `stale_reason` -> `meta.get("covered", 0) > committed`:
a sidecar holding null or a string there (hand-edited, written by another tool) raises TypeError,
which `Store.close` does not catch (OSError and CorruptFile only). A writer that only added (a bulk
import) closed fine before stop 48; now `with engramdb.open(p) as db: db.add_many(...)` raises at
the end of the block and the rest of the close (logs' flush, ratings, curiosity) is skipped.
A derived file that cannot be read is to be rebuilt from the segments, never an error.
Script: /tmp/adv48/close_raises.py. Failed on d2ba664; fixed in the same stop.
"""

from __future__ import annotations

import json
from pathlib import Path

import engramdb
import pytest


@pytest.mark.parametrize("covered", [None, "50", [50]])
@pytest.mark.parametrize("background", [True, False])
def test_a_writer_that_only_added_closes_whatever_the_sidecar_says(tmp_path: Path, covered: object,
                                                                   background: bool) -> None:
    path = tmp_path / "m"
    with engramdb.open(path) as db:
        db.add_many([{"content": f"note {i} about apples", "namespace": "n"} for i in range(50)])
        db.search("apples", namespace="n", k=3, log=False)  # the BM25 file saved
    side = path / "index" / "bm25-lexical.json"
    meta = json.loads(side.read_text())
    meta["covered"] = covered
    side.write_text(json.dumps(meta))
    db = engramdb.open(path, tuning=engramdb.Tuning(background=background))
    db.add_many([{"content": f"bulk {i}", "namespace": "n"} for i in range(10)])
    db.close()  # raised TypeError
    with engramdb.open(path, read_only=True) as reader:
        assert reader.stats()["namespaces"] == {"n": 60}

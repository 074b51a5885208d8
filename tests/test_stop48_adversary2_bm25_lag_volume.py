"""Stop 48, second adversary (after 62f1e89): LEXICAL_LAG counts rows, not what they hold.

A close leaves a BM25 file lacking at most 2,048 rows "for rows a reader indexes in memory in a few
milliseconds (~4 a thousand)". That holds for short memories only: each reading process indexes the
missing rows' text at its first search, passages included. Since 62f1e89 a default writer's close
leaves it too (before, its warm-loaded index was saved). A writer that added 2,000 memories of 300
words (an ingest of a 600 KB document) left every reader's first search at 220 ms instead of 12 ms
on 22,000 memories; 2,000 of 2,500 words: 2.8 s instead of 0.11 s (a hook has 500 ms). The writer
had already indexed them in memory at its close (`sync`), and threw that away.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import engramdb


def test_a_close_leaves_no_bm25_file_lacking_a_large_volume_of_text(tmp_path: Path) -> None:
    rng = random.Random(2)
    words = [f"w{i}" for i in range(5000)]
    p = tmp_path / "store"
    with engramdb.open(p) as db:
        db.add_many([{"content": f"short note {i}", "namespace": "n"} for i in range(3000)])
    db = engramdb.open(p)  # a default writer: its warm job loads the saved BM25
    assert db.admin.settle(30)
    db.add_many([{"content": " ".join(rng.choice(words) for _ in range(600)), "namespace": "n"} for _ in range(1000)])
    db.close()
    # 1,000 rows of 600 words (~4 MB of text) are not "a few milliseconds" for each reader
    covered = json.loads((p / "index" / "bm25-lexical.json").read_text())["covered"]
    assert covered == 4000, f"the saved BM25 covers {covered} of 4000 rows: every reader indexes the rest in memory"

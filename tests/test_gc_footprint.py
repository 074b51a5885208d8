"""What the request path leaves behind for Python's cyclic garbage collector (issue 26).

A full collection walks every tracked object: 20-60 ms of a context at 100,000 memories, in the
middle of whatever call triggered it. It comes when the objects that survived since the last one
reach a quarter of those that survived it, so every tracked object a search keeps in a cache
brings the next pause closer. The hits a search materialises are kept per segment as plain
tuples, which the collector stops tracking, not as Memory objects."""

from __future__ import annotations

import gc

import engramdb

WORDS = ["garden", "budget", "river", "piano", "lemon", "tiger", "cloud", "window", "basket", "rocket", "silver",
         "candle", "forest", "harbor"]


def test_searches_leave_few_tracked_objects_behind() -> None:
    db = engramdb.open(None, dedup="off")
    try:
        db.add_many([{"content": f"note {i}: the {WORDS[i % 14]} by the {WORDS[(i * 5) % 14]}, day {i}", "namespace": "u"}
                     for i in range(3000)])
        db.search("garden", namespace="u", k=50, log=False)
        gc.collect()
        before = len(gc.get_objects())
        searches = 60
        for i in range(searches):  # each materialises up to 50 hits, most of them new to the memo
            hits = db.search(f"{WORDS[i % 14]} {WORDS[(i * 3) % 14]} day {i * 37}", namespace="u", k=50, log=False)
            assert len(hits) == 50
        del hits
        gc.collect()
        per_search = (len(gc.get_objects()) - before) / searches
        # a Memory and its field dict per kept hit would be ~2 x 50; the caches' own entries are ~6
        assert per_search < 25, per_search
    finally:
        db.close()

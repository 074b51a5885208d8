"""What an agent's loop (a write, then a search, each turn) leaves alive for Python's cyclic garbage
collector (issue 26, stop 40). Every tracked object that outlives a turn is promoted towards the
oldest generation, and a host's full collection (hundreds of ms in a big process) comes when those
reach a quarter of its heap. A search kept for a snapshot that a write has replaced, or a filter
mask holding a replaced segment, can never be used again: neither may stay alive."""

from __future__ import annotations

import gc

import engramdb

WORDS = ["garden", "budget", "river", "piano", "lemon", "tiger", "cloud", "window", "basket", "rocket", "silver",
         "candle", "forest", "harbor"]


def _turn(db: engramdb.Store, i: int) -> None:
    db.add(f"turn {i}: the {WORDS[i % 14]} by the {WORDS[(i * 5) % 14]}", namespace="u", metadata={"turn": i})
    hits = db.search(f"{WORDS[i % 14]} {WORDS[(i * 3) % 14]}", namespace="u", k=50, log=False)
    assert hits


def test_a_write_then_search_loop_keeps_few_tracked_objects() -> None:
    db = engramdb.open(None, dedup="off")
    try:
        db.add_many([{"content": f"note {i}: the {WORDS[i % 14]} by the {WORDS[(i * 5) % 14]}, day {i}",
                      "namespace": "u", "metadata": {"day": i}} for i in range(2000)])
        for i in range(20):
            _turn(db, i)
        gc.collect()
        before = len(gc.get_objects())
        turns = 120
        for i in range(20, 20 + turns):
            _turn(db, i)
        gc.collect()
        per_turn = (len(gc.get_objects()) - before) / turns
        # each kept dead search held its 50 hits' metadata (~100 tracked objects a turn, up to the
        # cache's 256 entries); the memory a turn adds is a few
        assert per_turn < 20, per_turn
    finally:
        db.close()

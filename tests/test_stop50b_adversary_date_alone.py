"""Stop 50b adversary: a query that is only a relative date ("yesterday", "last week") is matched as words.

Stop 50 leaves a relative date out of the query's words when its period holds memories, so an old
turn that *says* "yesterday" about its own day does not outrank the turns of the day meant
(tests/test_stop50_newcomer_dates.py). `_placed_in_time` keeps the query whole when blanking leaves
nothing but spaces, so the bare query "yesterday" (what an agent or a CLI user types) still matches
the old turn's word: it ranks first at 0.9 while "yesterday?" (one "?" more) puts yesterday's turn
first. The same for "last week", "YESTERDAY", "yesterday yesterday". Public API only.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import engramdb
import pytest

NOW = datetime(2024, 6, 14, 12, tzinfo=timezone.utc)


def _store() -> engramdb.Store:
    db = engramdb.open()
    old = datetime(2023, 1, 5, tzinfo=timezone.utc)
    db.add("Yesterday I went to the dentist.", namespace="u", valid_from=old)
    db.add("Last week was busy with the move.", namespace="u", valid_from=old)
    for i in range(5):
        db.add(f"Filler {i} about groceries.", namespace="u", valid_from=old + timedelta(days=30))
    db.add("Painted the kitchen blue.", namespace="u", valid_from=NOW - timedelta(days=1))
    db.add("Went hiking in Geres.", namespace="u", valid_from=NOW - timedelta(days=5))
    return db


@pytest.mark.parametrize("query", ["yesterday", "Yesterday", "YESTERDAY", "yesterday yesterday", "yesterday?"])
@pytest.mark.parametrize("strategy", ["hybrid", "bm25", "rrf"])
def test_yesterday_alone_finds_yesterdays_memory_first(query: str, strategy: str) -> None:
    db = _store()
    hits = db.search(query, namespace="u", k=3, now=NOW, strategy=strategy, log=False)
    assert hits[0].memory.content == "Painted the kitchen blue.", [(h.memory.content, h.score) for h in hits]
    db.close()


@pytest.mark.parametrize("query", ["last week", "Last week", "last week?"])
def test_last_week_alone_finds_last_weeks_memory_first(query: str) -> None:
    db = _store()
    hits = db.search(query, namespace="u", k=3, now=NOW, log=False)
    assert hits[0].memory.content == "Went hiking in Geres.", [(h.memory.content, h.score) for h in hits]
    db.close()

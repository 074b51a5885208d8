"""The curiosity queue's load at open (store/curiosity_verbs.py `_keys`, issue 26): the waiting
links are read from the queue's columns, not its rows made items one by one. A row another writer
left with a score missing (the columns are nullable) is still a waiting link, and no longer fails
every context of the process; a link already waiting is not queued again after a reopen."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import engramdb
from engramdb.storage.curiosity_log import CuriosityLog

QUERY = "grant proposal deadline"


def fill(db: engramdb.Store) -> None:
    """Notes that match the query, a seed linked to a memory that says nothing of it (the link
    promised more than it holds: a surprise the context queues), and unrelated notes."""
    db.add_many([
        *({"id": f"s{i}", "content": f"Grant proposal deadline note {i}: the grant proposal deadline is close, "
                                     f"proposal draft {i}.", "namespace": "n"} for i in range(8)),
        {"id": "seed", "content": "The grant proposal deadline moved to Friday.", "namespace": "n"},
        {"id": "target", "content": "The funding office wants a signed budget sheet.", "namespace": "n"},
        *({"id": f"w{i}", "content": f"Bird watching trip {i} by the lake.", "namespace": "n"} for i in range(60)),
    ])
    db.link("seed", "target", "REQUIRES")


def test_a_waiting_row_without_scores_is_a_link_and_fails_no_context(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    fill(db)
    first = db.context(QUERY, namespace="n", max_tokens=1000)
    assert first.stats["curiosity"]["queued"] >= 1
    db.close()
    # a row as another writer may leave it: the link (s0 -> w0) with no scores
    log = CuriosityLog(tmp_path / "s", writable=True)
    log.append([{"item_id": "foreign", "namespace": "n", "memory_id": "w0", "parent_id": "s0", "seed_id": "s0",
                 "via": "REQUIRES", "query": QUERY, "expected": None, "actual": None,
                 "at": datetime(2026, 1, 1, tzinfo=timezone.utc)}])
    db = engramdb.open(tmp_path / "s", tuning=engramdb.Tuning(background=False))  # the context loads the queue
    again = db.context(QUERY, namespace="n", max_tokens=1000)
    assert again.text and again.stats["curiosity"]["queued"] == 0  # every link found waiting: none queued twice
    assert again.text == first.text
    db.close()

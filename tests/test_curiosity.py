"""The curiosity queue (K7): the hops that surprised the navigator are queued by `Store.context`, kept in the
store folder across close and reopen (in memory for a store kept in memory), listed and consumed once; a
read-only store lists them and writes nothing."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path

import engramdb
import pytest
from engramdb.context.curiosity import CuriosityItem, surprises
from engramdb.context.navigator import Hop
from engramdb.storage import disk

QUERY = "grant proposal deadline"


def fill(db: engramdb.Store) -> None:
    """Eight notes that match the query best, a ninth (`seed`) linked to a memory that says nothing of
    the query (`target`: the link promised more than it holds), and sixty unrelated notes."""
    db.add_many([
        *({"id": f"s{i}", "content": f"Grant proposal deadline note {i}: the grant proposal deadline is close, "
                                     f"proposal draft {i}.", "namespace": "n"} for i in range(8)),
        {"id": "seed", "content": "The grant proposal deadline moved to Friday.", "namespace": "n"},
        {"id": "target", "content": "The funding office wants a signed budget sheet.", "namespace": "n"},
        *({"id": f"w{i}", "content": f"Bird watching trip {i} by the lake.", "namespace": "n"} for i in range(60)),
    ])
    db.link("seed", "target", "REQUIRES")


def files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and "curiosity" in p.name}


def test_items_persist_across_close_and_reopen_and_are_consumed_once(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    fill(db)
    ctx = db.context(QUERY, namespace="n", max_tokens=1000)
    assert ctx.stats["curiosity"]["queued"] >= 1
    items = db.curiosity("n")
    item = next(i for i in items if i.memory_id == "target")
    assert (item.parent_id, item.seed_id, item.via, item.query) == ("seed", "seed", "REQUIRES", QUERY)
    assert item.surprise == "weaker" and item.error == pytest.approx(item.expected - item.actual, abs=1e-3)
    assert item.error > 0.3
    again = db.context(QUERY, namespace="n", max_tokens=1000)
    assert again.stats["curiosity"]["queued"] == 0  # the same link is not queued twice
    db.close()
    db = engramdb.open(tmp_path / "s")
    assert [i.id for i in db.curiosity("n")] == [i.id for i in items] and db.curiosity("other") == []
    assert db.curiosity.consume([item.id]) == 1
    assert db.curiosity.consume(item.id) == 0  # consumed once
    assert item.id not in {i.id for i in db.curiosity("n")}
    db.close()
    db = engramdb.open(tmp_path / "s")
    assert item.id not in {i.id for i in db.curiosity("n")}  # consumed for good
    assert db.context(QUERY, namespace="n", max_tokens=1000).stats["curiosity"]["queued"] >= 1  # may come back
    db.close()


def test_a_read_only_store_lists_the_queue_and_writes_nothing(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    fill(db)
    db.context(QUERY, namespace="n", max_tokens=1000)
    queued = [i.id for i in db.curiosity("n")]
    db.close()
    before = files(tmp_path / "s")
    assert before and queued
    ro = engramdb.open(tmp_path / "s", read_only=True)
    assert [i.id for i in ro.curiosity("n")] == queued
    db_ctx = ro.context("proposal deadline Friday", namespace="n", max_tokens=1000)
    assert db_ctx.stats["curiosity"]["queued"] == 0
    with pytest.raises(PermissionError, match="read-only"):
        ro.curiosity.consume(queued)
    ro.close()
    assert files(tmp_path / "s") == before


def test_a_store_in_memory_keeps_its_queue_in_memory_and_forgotten_memories_leave_it() -> None:
    db = engramdb.open(None)
    fill(db)
    db.context(QUERY, namespace="n", max_tokens=1000)
    assert any(i.memory_id == "target" for i in db.curiosity("n", limit=None))
    assert len(db.curiosity("n", limit=0)) == 0
    db.forget("target")
    assert all(i.memory_id != "target" for i in db.curiosity("n"))
    with pytest.raises(ValueError, match="limit must be"):
        db.curiosity("n", limit=-1)
    with pytest.raises(ValueError, match="ids must be"):
        db.curiosity.consume([""])


def hop(id: str, expected: float, relevance: float, parent: str = "p") -> Hop:
    return Hop(id, parent, parent, "CAUSED_BY", 1, expected, relevance, 0.5, 1, max(expected, relevance))


def test_surprises_are_the_hops_over_the_threshold_largest_first_one_per_link() -> None:
    at = datetime(2025, 1, 1, tzinfo=timezone.utc)
    hops = [hop("a", 0.5, 0.45), hop("b", 0.1, 0.9), hop("c", 0.6, 0.0), hop("d", 0.45, 0.1), hop("b", 0.1, 0.9)]
    found = surprises(hops, namespace="n", query="q", at=at)
    assert [(i.memory_id, i.surprise) for i in found] == [("b", "stronger"), ("c", "weaker"), ("d", "weaker")]
    assert all(isinstance(i, CuriosityItem) and i.at == at for i in found) and len({i.id for i in found}) == 3
    assert [i.memory_id for i in surprises(hops, namespace="n", query="q", limit=1)] == ["b"]
    waiting = {("n", "p", "b", "CAUSED_BY")}
    assert [i.memory_id for i in surprises(hops, namespace="n", query="q", waiting=waiting)] == ["c", "d"]
    assert surprises(hops, namespace="n", query="q", threshold=0.9) == []


def test_a_context_leaves_its_items_to_the_worker_and_they_are_never_lost(tmp_path: Path) -> None:
    """A writer with a worker writes a context's curiosity items on the worker (the file and its
    folder are fsynced: 2-12 ms a context paid), yet listing right after the context sees them, a
    purge of the memories they name leaves no trace of the waiting ones, and close writes what the
    worker had not (issue 26)."""
    db = engramdb.open(tmp_path / "s")
    fill(db)
    writers: set[str] = set()

    def hook(op: str, path: str, detail: object) -> None:
        if "curiosity" in path:
            writers.add(threading.current_thread().name)

    with disk.inject(hook):
        ctx = db.context(QUERY, namespace="n", max_tokens=1000)
        assert ctx.stats["curiosity"]["queued"] >= 1
        assert threading.current_thread().name not in writers  # nothing written on the caller's thread
        assert any(i.memory_id == "target" for i in db.curiosity("n"))  # listing writes what waits first
    assert writers  # written (by the worker, or by the listing)
    db.close()
    # a purge of a memory an item names takes the waiting item too
    db = engramdb.open(tmp_path / "p")
    fill(db)
    assert db.context(QUERY, namespace="n", max_tokens=1000).stats["curiosity"]["queued"] >= 1
    db.purge(["target"])
    db.close()
    db = engramdb.open(tmp_path / "p")
    assert all("target" not in (i.memory_id, i.parent_id, i.seed_id) for i in db.curiosity("n"))
    db.close()
    # close writes what the worker had not written yet
    db = engramdb.open(tmp_path / "c")
    fill(db)
    queued = db.context(QUERY, namespace="n", max_tokens=1000).stats["curiosity"]["queued"]
    db.close()
    db = engramdb.open(tmp_path / "c")
    assert len(db.curiosity("n", limit=None)) == queued >= 1
    db.close()

"""S7 + C7 + H1: a purge carries the passage vectors and the BM25 indexes of the memories it keeps
over to the new row numbers (storage/renumbering.py), so an embedder that reads text (a model)
never embeds a store's long memories again after a privacy request, the first search after it
analyses nothing, and what is carried is what a rebuild from nothing makes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb.spaces.hashing import HashingEmbedder
from engramdb.spaces.passages import passages
from engramdb.spaces.profiles import embedders_for, profile_schema

SCHEMA = profile_schema("default")
TOPICS = ["violin lessons in Lisbon", "a sourdough starter that failed", "the ferry timetable to Skye",
          "a broken bicycle chain", "tax forms for the bakery", "the chess club's spring tournament"]


class _Model(HashingEmbedder):
    """The default dense space read the way a model is: whole texts through `embed` (no spans),
    counting the long ones (passages and long memories; a query is short)."""

    embed_passages = None  # type: ignore[assignment]

    def __init__(self, dim: int) -> None:
        super().__init__(dim=dim)
        self.long_texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.long_texts += sum(len(t) > 300 for t in texts)
        return super().embed(texts)


def _open(path: Path, **kw: Any) -> tuple[engramdb.Store, _Model]:
    embedders = dict(embedders_for(SCHEMA))
    model = _Model(embedders[SCHEMA.main].dim)
    embedders[SCHEMA.main] = model
    return engramdb.open(path, schema=SCHEMA, embedders=embedders, dedup="off", **kw), model


def _long(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    filler = f"Entry {i} of the diary went on about the weather and the neighbours' garden. "
    return filler * 12 + f"Then memory {i} turned to {topic}, which mattered most. " + filler * 12


QUERIES = [f"what happened with {t}" for t in TOPICS] + ["memory 7 turned to", "memory 30 turned to"]


def _answers(db: engramdb.Store, weights: dict[str, float] | None = None) -> list[list[tuple[str, Any, float]]]:
    out = []
    for q in QUERIES:
        hits = db.search(q, namespace="n", k=8, weights={"bm25": 0.0} if weights is None else weights)
        out.append([(h.id, h.passage, round(h.score, 5)) for h in hits])
    return out  # by default the passage vectors decide (BM25 weighed out)


@pytest.mark.parametrize("purge", [["l3", "l20", "s1"], ["l0"], ["l35", "s9"]])
def test_a_purge_keeps_the_other_passages_without_embedding_them_again(tmp_path: Path, purge: list[str]) -> None:
    path = tmp_path / "s"
    db, model = _open(path)
    db.add_many([{"id": f"l{i}", "content": _long(i), "namespace": "n"} for i in range(15)])
    db.add_many([{"id": f"s{i}", "content": f"short note {i} on {TOPICS[i % 6]}", "namespace": "n"}
                 for i in range(10)])
    db.admin.checkpoint()
    db.add_many([{"id": f"l{i}", "content": _long(i), "namespace": "n"} for i in range(15, 30)])
    db.admin.checkpoint()
    db.add_many([{"id": f"l{i}", "content": _long(i), "namespace": "n"} for i in range(30, 36)])  # in the WAL
    _answers(db)  # every passage embedded
    before = model.long_texts
    assert before > 0
    assert db.purge(purge) == len(purge)
    after_purge = _answers(db)
    assert model.long_texts == before  # nothing read again
    left = [_long(i) for i in range(36) if f"l{i}" not in purge]
    assert db.stats()["passages"]["dense"]["passages"] == sum(len(passages(t)) for t in left)
    assert not {h[0] for hits in after_purge for h in hits} & set(purge)
    db.close()

    again, _ = _open(path)  # the carried passages were saved and are adopted
    assert _answers(again) == after_purge
    assert again.stats()["index_files"]["passages-dense"] == "adopted"
    again.close()

    for f in (path / "index").glob("passages-*"):
        f.unlink()
    rebuilt, fresh = _open(path)  # made from nothing: the same vectors, the same answers
    assert _answers(rebuilt) == after_purge
    assert fresh.long_texts > 0
    rebuilt.close()


def test_a_purge_of_everything_long_leaves_no_passage(tmp_path: Path) -> None:
    db, _ = _open(tmp_path / "s")
    db.add_many([{"id": f"l{i}", "content": _long(i), "namespace": "n"} for i in range(4)]
                + [{"id": "s", "content": "a short note", "namespace": "n"}])
    _answers(db)
    assert db.purge([f"l{i}" for i in range(4)]) == 4
    assert db.stats()["passages"]["dense"]["passages"] == 0
    assert [h.id for h in db.search("a short note", namespace="n")] == ["s"]
    db.close()


def test_in_memory_a_purge_that_empties_a_segment_keeps_the_rest_in_place() -> None:
    """An in-memory store drops a segment the purge emptied: the keys after it move down by its
    length, and the passages carried over still belong to their memories (the answers of a store
    made from the memories left, in the same order, are the same)."""
    first = [{"id": f"l{i}", "content": _long(i), "namespace": "n"} for i in range(5)]
    rest = [{"id": f"l{i}", "content": _long(i), "namespace": "n"} for i in range(5, 14)]
    db, model = _open(None)
    db.add_many(first)
    db.admin.checkpoint()
    db.add_many(rest)
    _answers(db)
    before = model.long_texts
    assert db.purge([f"l{i}" for i in range(5)]) == 5
    assert model.long_texts == before
    fresh, _ = _open(None)
    fresh.add_many(rest)
    assert _answers(db) == _answers(fresh)


def test_bm25_carried_over_a_purge_answers_as_a_rebuild(tmp_path: Path) -> None:
    """The default call (BM25 and the passages together) after purges by id and by namespace: the
    answers of the carried indexes, of their saved files, and of indexes made from nothing agree."""
    path = tmp_path / "s"
    db, _ = _open(path)
    db.add_many([{"id": f"l{i}", "content": _long(i), "namespace": "n"} for i in range(20)])
    db.add_many([{"id": f"o{i}", "content": _long(i + 40), "namespace": "other"} for i in range(6)])
    db.admin.checkpoint()
    db.add_many([{"id": f"s{i}", "content": f"short note {i} on {TOPICS[i % 6]}", "namespace": "n"}
                 for i in range(12)])
    _answers(db, {})
    assert db.purge(["l4", "s2", "l17"]) == 3
    assert db.purge(namespace="other") == 6
    carried = _answers(db, {})
    files = db.stats()["index_files"]
    assert files["bm25-lexical"] == files["passages-dense"] == "carried over a purge"
    db.close()
    again, _ = _open(path)
    assert _answers(again, {}) == carried and again.stats()["index_files"]["bm25-lexical"] == "adopted"
    again.close()
    for f in (path / "index").iterdir():
        f.unlink()
    rebuilt, _ = _open(path)
    assert _answers(rebuilt, {}) == carried
    assert rebuilt.stats()["index_files"]["bm25-lexical"] != "adopted"
    rebuilt.close()


def test_a_sync_of_a_snapshot_from_before_a_purge_never_publishes_its_rows(tmp_path: Path) -> None:
    """A search or worker that took its snapshot before a purge may sync an index after it: the
    index it makes is its own, never the index's current one (which a close would save, the purged
    rows' vectors and terms in it). At the index seam: each kind dropped to the purge's new epoch,
    then synced with the snapshot from before."""
    from engramdb.index.hnsw import HnswIndex
    from engramdb.index.lexical_index import StoreBm25
    from engramdb.index.passage_vectors import StorePassages
    from engramdb.index.tree_index import TreeIndex
    from engramdb.model.tuning import Tuning
    from engramdb.storage import Engine
    from engramdb.storage.rewrites import purge

    path = tmp_path / "s"
    db, _ = _open(path, tuning=Tuning(tree_min_rows=20))
    db.add_many([{"id": f"l{i}", "content": _long(i), "namespace": "n"} for i in range(40)])
    db.close()
    embedders = dict(embedders_for(SCHEMA))
    engine = Engine(path, schema=SCHEMA, read_only=False, tuning=Tuning(tree_min_rows=20))
    before = engine.view
    main = SCHEMA.main
    lexical = next(s.name for s in SCHEMA.spaces.values() if s.kind == "sparse")
    dim = embedders[main].dim
    kinds = [TreeIndex(main, dim, Tuning(tree_min_rows=20)), HnswIndex(main, dim, Tuning(tree_min_rows=20)),
             StoreBm25(lexical, embedder=embedders[lexical]), StorePassages(main, dim, embedders[main])]
    for ix in kinds:
        ix.sync(before)
    done = purge(engine, ["l3"])
    assert done.removed == 1 and done.new_epoch > done.old_epoch
    for ix in kinds:
        ix.drop(done.new_epoch)
        ix.sync(before)  # the snapshot from before the purge, 40 rows: what it made is not published
        published = ix.epoch if isinstance(ix, HnswIndex) else ix.current.epoch  # what a save would write
        assert published == done.new_epoch, type(ix).__name__
        ix.sync(engine.view)  # the store as it is, 39 rows
        got = ix.sync(engine.view)
        assert got is not None and got.epoch == done.new_epoch and got.covered == 39, type(ix).__name__
    engine.close()

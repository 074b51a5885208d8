"""The hybrid search's recall rule for a space made of the text's words (retrieval/scored.py: the
default profile's hashing space recalls by BM25 alone, its index filling in when BM25 finds fewer
than k) against the inputs that break its premise: a caller's own query vector is not made of the
query's words, so the dense index is the only way it recalls."""

from __future__ import annotations

import logging

import engramdb
import numpy as np
import pytest
from engramdb.retrieval import scored

QUERY = "which dog did we adopt"
TARGET = "We brought home a puppy and named him Oscar"


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def _own_vectors_store() -> tuple[engramdb.Store, np.ndarray]:
    """The default profile given the caller's own vectors (its model's, 384-d) for every memory:
    20 memories share the query's word "adopt" and nothing of its meaning; the target shares its
    meaning (a vector near the query's) and none of its words."""
    rng = np.random.default_rng(0)
    meaning = _unit(rng.normal(size=384))
    db = engramdb.open(None, dedup="off")
    rows = [{"content": f"adoption paperwork note {i} for the flat", "namespace": "n", "memory_type": "fact",
             "vectors": {"dense": _unit(rng.normal(size=384))}} for i in range(20)]
    rows.append({"content": TARGET, "namespace": "n", "memory_type": "fact", "vectors": {"dense": _unit(meaning + 0.3 * _unit(rng.normal(size=384)))}})
    db.add_many(rows)
    return db, _unit(meaning + 0.3 * _unit(rng.normal(size=384)))


def test_a_callers_query_vector_still_recalls_by_the_dense_index() -> None:
    """BM25 finds 20 memories (>= k) by "adopt"; only the caller's vector finds the target. The
    dense-only search ranks it first, and so must the hybrid (before the rule it did, at 0.2 against
    the word matches' 0.015); the rule dropped it from the candidates altogether."""
    db, qv = _own_vectors_store()
    assert db.search(QUERY, namespace="n", k=1, strategy="dense_only", query_vector=qv)[0].memory.content == TARGET
    hits = db.search(QUERY, namespace="n", k=5, query_vector=qv, explain=True)
    assert hits.stats.stages["bm25"] == 20 and hits.stats.stages["vector"] > 0
    assert hits[0].memory.content == TARGET
    assert hits[0].explain["methods"]["vector"]["rank"] == 1  # type: ignore[index]


def test_the_text_alone_still_recalls_by_bm25() -> None:
    """Without a query vector the rule holds (the hashing vector of the text is made of its words):
    BM25's 20 are the recall and the dense index is not searched; every hit is scored by both."""
    db, _ = _own_vectors_store()
    hits = db.search("adoption paperwork", namespace="n", k=5, explain=True)
    assert hits.stats.stages["vector"] == 0 and hits.stats.stages["bm25"] == 20
    assert all(set(h.explain["methods"]) >= {"bm25", "vector"} for h in hits)  # type: ignore[index]


def test_a_failing_bm25_with_a_callers_vector_still_answers(monkeypatch: pytest.MonkeyPatch,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    def broken(*a: object, **kw: object) -> None:
        raise RuntimeError("index offline")

    db, qv = _own_vectors_store()
    monkeypatch.setattr(scored, "bm25_parts", broken)  # fault injection at the retrieval layer's seam
    with caplog.at_level(logging.WARNING, logger="engramdb.search"):
        hits = db.search(QUERY, namespace="n", k=3, query_vector=qv, explain=True)
    assert hits.stats.failed == {"bm25": "RuntimeError: index offline"}
    assert hits[0].memory.content == TARGET


@pytest.mark.parametrize("kw", [{"min_score": 0.1}, {"elo_weight": 0.5}, {"types": ["fact"]}])
def test_a_callers_vector_survives_the_deepened_and_filtered_searches(kw: dict[str, object]) -> None:
    """min_score keeps only the target (the word matches score 0.015); elo_weight deepens k (to 3 x
    5 = 15, still <= BM25's 20); types keeps both sides (everything is a fact)."""
    db, qv = _own_vectors_store()
    hits = db.search(QUERY, namespace="n", k=5, query_vector=qv, log=False, **kw)  # type: ignore[arg-type]
    assert hits and hits[0].memory.content == TARGET

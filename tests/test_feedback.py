"""RM3 pseudo-relevance feedback (the pipeline's sparse recall): the expanded query against a hand
computation, the too-common filter, and a memory found only through its neighbours' words."""

from __future__ import annotations

import engramdb
import numpy as np
import pytest
from engramdb.retrieval.feedback import rm3_query


def test_rm3_matches_a_hand_computation() -> None:
    terms, counts = np.array([1, 2], np.int32), np.array([1.0, 1.0], np.float32)
    docs = [(np.array([1, 3, 4]), np.array([2.0, 1.0, 1.0])), (np.array([2, 3]), np.array([1.0, 3.0]))]
    scores = np.array([3.0, 1.0])
    ids, w = rm3_query(terms, counts, docs, scores, n_terms=2, lam=0.5)
    # P(d|q) = 0.75, 0.25; P(w|R): 1: .75*.5 = .375, 2: .25*.25 = .0625, 3: .75*.25 + .25*.75 = .375,
    # 4: .75*.25 = .1875; the two heaviest (1 and 3, tie broken by id) normalised by .75
    want = {1: 0.5 * 0.5 + 0.5 * 0.375 / 0.75, 2: 0.5 * 0.5, 3: 0.5 * 0.375 / 0.75}
    assert ids.tolist() == [1, 2, 3]
    np.testing.assert_allclose(w, [want[1], want[2], want[3]], rtol=1e-6)
    np.testing.assert_allclose(w.sum(), 1.0, rtol=1e-6)
    # a term judged too common is never added; the query's own terms always stay
    def df(ids: np.ndarray) -> np.ndarray:  # 1 and 3 in 9 of 10 documents, past max_df 0.5
        return np.where(np.isin(ids, [1, 3]), 9, 1)

    ids, w = rm3_query(terms, counts, docs, scores, n_terms=2, df=df, n_docs=10, max_df=0.5)
    assert ids.tolist() == [1, 2, 4]
    # lam 1 is the query alone; no feedback docs change nothing either
    assert rm3_query(terms, counts, docs, scores, lam=1.0)[0].tolist() == [1, 2]
    assert rm3_query(terms, counts, [], np.zeros(0))[0].tolist() == [1, 2]
    with pytest.raises(ValueError, match="lam"):
        rm3_query(terms, counts, docs, scores, lam=1.5)


def test_pipeline_feedback_finds_a_memory_that_shares_no_word_with_the_query() -> None:
    db = engramdb.open(None, dedup="off")
    filler = [f"note {i} about gardening tomatoes and basil" for i in range(40)]
    target = "the quarterly ledger reconciliation finished late"
    ids = db.add_many([{"content": c, "namespace": "a"} for c in [
        "our accountant said the invoices need a ledger reconciliation",
        "invoices pile up before the ledger reconciliation every quarter",
        target, *filler]])
    q = "accountant invoices"
    stages = {"sparse": 3, "dense": 3, "fused": 3, "topics": 3}
    plain = [h.id for h in db.search(q, namespace="a", k=3, strategy="pipeline", stages={**stages, "feedback": 0})]
    fed = db.search(q, namespace="a", k=3, strategy="pipeline", stages={**stages, "feedback": 2}, explain=True)
    assert ids[2] not in plain
    assert ids[2] in [h.id for h in fed], "ledger / reconciliation came from the two invoice memories"
    assert fed[0].explain["stages"]["feedback"] == 2  # type: ignore[index]


def test_feedback_stage_is_validated() -> None:
    db = engramdb.open(None)
    db.add("a memory about ledgers", namespace="a")
    with pytest.raises(ValueError, match=r"stages\['feedback'\] must be an int >= 0, got -1"):
        db.search("ledgers", namespace="a", strategy="pipeline", stages={"feedback": -1})
    with pytest.raises(ValueError, match=r"stages\['sparse'\] must be an int >= 1, got 0"):
        db.search("ledgers", namespace="a", strategy="pipeline", stages={"sparse": 0})
    assert db.search("ledgers", namespace="a", strategy="pipeline", stages={"feedback": 0})


def test_a_postings_budget_skips_costly_expansions_but_keeps_cheaper_ones() -> None:
    terms, counts = np.array([1], np.int32), np.array([1.0], np.float32)
    docs = [(np.array([1, 5, 6, 7]), np.array([1.0, 4.0, 2.0, 1.0]))]
    df = {1: 10, 5: 50, 6: 8, 7: 3}

    def cost(ids: np.ndarray) -> np.ndarray:
        return np.array([df[int(t)] for t in ids], np.float64)

    # the query's own postings are 10: a budget of 1.2x allows 12. 5 is the heaviest expansion but
    # costs 50: skipped; 6 (8) fits, then 7 (3) still fits after it. 1,000 documents: none too common
    ids, _ = rm3_query(terms, counts, docs, np.array([1.0]), df=cost, n_docs=1_000, budget=1.2)
    assert ids.tolist() == [1, 6, 7]
    ids, _ = rm3_query(terms, counts, docs, np.array([1.0]), df=cost, n_docs=1_000, budget=0.2)
    assert ids.tolist() == [1]

"""Session support (retrieval/session_support.py): a turn whose session says more about the query
ranks higher; its score stays its own match, and a turn that matches nothing gets none."""

from __future__ import annotations

import engramdb
import pytest

QUESTION = "Which puppy did we adopt at the shelter?"
BEAGLE, SISTER = "Biscuit is a beagle puppy, very shy.", "My sister has a puppy too."


def _store() -> engramdb.Store:
    db = engramdb.open(None, dedup="off")
    # the beagle turn matches less than the sister's on its own, but its session tells the adoption
    db.add_many([{"content": t, "namespace": "c", "session_id": "dogs", "role": r} for t, r in [
        ("We went to the shelter on Saturday.", "user"), ("How was it?", "assistant"),
        ("We adopted a puppy named Biscuit.", "user"), ("Lovely! What breed?", "assistant"),
        (BEAGLE, "user")]])
    db.add_many([{"content": t, "namespace": "c", "session_id": "work", "role": r} for t, r in [
        ("The review went fine.", "user"), ("Good to hear.", "assistant"), (SISTER, "user"), ("Cute.", "assistant")]])
    db.add_many([{"content": f"unrelated note number {i} about the garden", "namespace": "c"} for i in range(10)])
    return db


def test_a_turn_of_a_session_that_tells_the_answer_ranks_above_a_better_lone_match() -> None:
    db = _store()
    hits = db.search(QUESTION, namespace="c", k=6, explain=True, log=False)
    by = {h.memory.content: h for h in hits}
    beagle, sister = by[BEAGLE], by[SISTER]
    assert beagle.score < sister.score  # its own match is weaker ...
    assert hits.index(beagle) < hits.index(sister)  # ... its session lifts it
    assert beagle.explain is not None and sister.explain is not None
    assert beagle.explain["session"] > 0 and sister.explain["session"] == 0  # the sister's turn is alone
    assert beagle.explain["ranked"] == pytest.approx(beagle.explain["own"] + beagle.explain["session"], abs=1e-4)
    assert beagle.score == pytest.approx(beagle.explain["own"], abs=1e-4) and beagle.via is None
    for h in hits:  # a turn that matches nothing is never lifted by its session
        assert h.explain is not None
        if h.explain["own"] == 0:
            assert h.explain["session"] == 0


def test_weights_turn_session_support_off() -> None:
    db = _store()
    on = db.search(QUESTION, namespace="c", k=6, log=False)
    off = db.search(QUESTION, namespace="c", k=6, explain=True, log=False, weights={"sessions": 0})
    assert [h.memory.content for h in off].index(SISTER) < [h.memory.content for h in off].index(BEAGLE)
    assert all(h.explain is not None and h.explain["session"] == 0 for h in off)
    scores = {h.id: h.score for h in off}
    assert all(h.score == pytest.approx(scores[h.id]) for h in on if h.id in scores)  # the same scores


# ------------------------------------------------------------------ under attack (bench/RELIABILITY.md)
def test_a_small_elo_weight_keeps_the_order_session_support_gave() -> None:
    """`elo_weight` blends ELO into the order; with every memory unrated (equal ELO) a small
    weight must leave the relevance order as it was, not re-sort by the own scores (which threw
    away the session support, the dates named and the expansions' places)."""
    db = _store()
    plain = [h.id for h in db.search(QUESTION, namespace="c", k=6, log=False)]
    blended = [h.id for h in db.search(QUESTION, namespace="c", k=6, log=False, elo_weight=0.01)]
    assert blended == plain


def test_an_exact_memory_is_found_beside_a_session_that_repeats_its_words() -> None:
    # the state machine's example: BM25's term frequency and the session's support rank the
    # repeated turns first; the exact memory is still among the hits, its score its own match
    db = engramdb.open(None)
    db.add_messages([{"role": "user", "content": "alpha alpha"}, {"role": "assistant", "content": "alpha alpha"}],
                    namespace="a", session_id="s1")
    exact = db.add("alpha", namespace="a")
    hits = db.search("alpha", namespace="a", k=3, log=False)
    assert exact.id in {h.id for h in hits}
    assert [h.score for h in hits] == sorted(h.score for h in hits)[::-1]

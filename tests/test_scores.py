"""One score scale for every strategy (issue 13): scores in [0, 1] with the meaning documented in
retrieval/scales.py, `min_score`, the default call, and expansions that earn their place."""

from __future__ import annotations

import engramdb
import numpy as np
import pytest
from engramdb.retrieval import scored

STRATEGIES = [None, "hybrid", "dense_only", "exact", "bm25", "rrf", "multi_space", "pipeline"]


def make() -> engramdb.Store:
    db = engramdb.open(None, dedup="off")
    db.add_many([
        {"content": "Caroline went to the LGBTQ support group yesterday", "namespace": "a"},
        {"content": "Melanie painted a sunrise over the lake", "namespace": "a"},
        {"content": "We adopted a puppy and named him Oscar", "namespace": "a"},
        {"content": "The vet said the dog needs vaccinations", "namespace": "a"},
        {"content": "Pizza with anchovies is my favourite food", "namespace": "a"},
        *({"content": f"filler note number {i} about the weather", "namespace": "a"} for i in range(20)),
    ])
    return db


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_scores_are_in_0_1_best_first_and_min_score_cuts(strategy: str | None) -> None:
    db = make()
    hits = db.search("Caroline support group", namespace="a", k=10, strategy=strategy, explain=True)
    assert hits and all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].memory.content.startswith("Caroline")
    cut = hits[0].score * 0.9
    kept = db.search("Caroline support group", namespace="a", k=10, strategy=strategy, min_score=cut)
    assert [h.id for h in kept] == [h.id for h in hits if h.score >= cut]
    assert kept and all(h.score >= cut for h in kept)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.5", True, float("nan")])
def test_min_score_is_a_number_in_0_1(bad: object) -> None:
    with pytest.raises(ValueError, match="min_score must be a number in"):
        make().search("x", namespace="a", min_score=bad)  # type: ignore[arg-type]


def test_the_default_call_is_hybrid_and_a_vector_or_a_named_space_searches_that_space() -> None:
    db = make()
    assert db.search("Oscar the puppy", namespace="a").stats.strategy == "hybrid"
    vec = db.embedders["dense"].embed(["Oscar the puppy"])[0]
    assert db.search(vec, namespace="a").stats.strategy in ("exact", "tree", "hnsw")
    lex = db.search("Oscar the puppy", namespace="a", space="lexical", explain=True)
    assert lex[0].explain["space"] == "lexical"  # type: ignore[index]


def test_a_memory_holding_every_query_term_once_at_average_length_scores_lexical_one() -> None:
    """The lexical scale's anchor: equal-length memories (average length = theirs), one holds
    each query term once, so its BM25 equals the query's ideal score."""
    db = engramdb.open(None, dedup="off")
    db.add_many([{"content": f"{a} {b}", "namespace": "n"} for a, b in
                 [("zebra", "violin"), ("apple", "river"), ("cloud", "tiger"), ("zebra", "mountain")]])
    hit = db.search("zebra violin", namespace="n", k=1, strategy="bm25", explain=True)[0]
    assert hit.memory.content == "zebra violin" and hit.score == pytest.approx(1.0)
    half = db.search("zebra violin", namespace="n", k=2, strategy="bm25", explain=True)[1]
    ideal = half.explain["scales"]["lexical_ideal"]  # type: ignore[index]
    assert half.memory.content == "zebra mountain"
    assert half.score == pytest.approx(half.explain["methods"]["bm25"]["score"] / ideal, rel=1e-3)  # type: ignore[index]
    assert 0.0 < half.score < 1.0


def test_a_noise_vector_cannot_displace_the_lexical_hits() -> None:
    """A dense list that found nothing like the query (every similarity under the space's low
    threshold) adds nothing to any score: the hybrid's order is BM25's."""
    db = make()
    far = -db.embedders["dense"].embed(["Caroline went to the LGBTQ support group yesterday"])[0]
    q = "dog vaccinations Oscar puppy"
    bm = [h.id for h in db.search(q, namespace="a", k=2, strategy="bm25")]
    hy = db.search(q, namespace="a", k=2, query_vector=far, explain=True)
    assert [h.id for h in hy] == bm
    assert all(h.explain["scaled"]["vector"] == 0.0 for h in hy)  # type: ignore[index]


def test_exact_bm25_of_candidates_the_lexical_list_did_not_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate only the vector index found is scored by BM25 from its own term row: the same
    score BM25's own list gives it."""
    db = make()
    q = "the dog and the puppy named Oscar need the vet"
    full = {h.id: h.explain["methods"]["bm25"]["score"]  # type: ignore[index]
            for h in db.search(q, namespace="a", k=25, strategy="bm25", explain=True)}
    monkeypatch.setattr(scored, "LEX_DEPTH", 1)  # BM25's list holds one candidate; the rest are scored alone
    hy = db.search(q, namespace="a", k=25, strategy="hybrid", explain=True)
    assert len(hy) == 25
    for h in hy:
        raw = h.explain["methods"]["bm25"]["score"]  # type: ignore[index]
        assert raw == pytest.approx(full.get(h.id, 0.0), rel=1e-5, abs=1e-6)


def conversation() -> engramdb.Store:
    db = engramdb.open(None, dedup="off")
    turns = [
        "Do you remember the name of the restaurant from our anniversary?",
        "Yes, it was Chez Panisse, in Berkeley, with the fig tart.",
        "Nice to meet you!",
        "Did the anniversary dinner at the restaurant go well?",
        "Nice!",
    ]
    db.add_many([{"content": t, "namespace": "c", "session_id": "s1"} for t in turns[:3]])
    db.add_many([{"content": t, "namespace": "c", "session_id": "s2"} for t in turns[3:]])
    db.add_many([{"content": f"unrelated chatter {i} about gardening and tomatoes", "namespace": "c",
                  "session_id": "s3"} for i in range(20)])
    return db


def test_a_neighbour_never_outranks_its_seed_and_filler_carries_little() -> None:
    db = conversation()
    hits = db.search("anniversary restaurant", namespace="c", k=6, explain=True)
    by = {h.memory.content: h for h in hits}
    seed = by["Do you remember the name of the restaurant from our anniversary?"]
    reply = by["Yes, it was Chez Panisse, in Berkeley, with the fig tart."]
    assert reply.explain["expanded"]["method"] == "neighbours"  # type: ignore[index]
    assert reply.score == 0.0 and reply.via == seed.id  # it matches no query word on its own: context of its seed
    ranked = reply.explain["ranked"]  # type: ignore[index]
    assert ranked < seed.score
    assert ranked == pytest.approx(scored.NEIGHBOUR_SHARE * seed.score, rel=1e-3)  # it says as much
    filler = by.get("Nice!")
    assert filler is None or filler.explain["ranked"] < 0.5 * ranked  # type: ignore[index]  # a filler says little


def test_an_expanded_memory_scores_the_larger_of_its_own_match_and_its_share() -> None:
    db = engramdb.open(None, dedup="off")
    db.add_many([{"content": t, "namespace": "c", "session_id": "s"} for t in
                 ["the orchard apples harvest starts now", "the apples are ripe and sweet this year",
                  "we should sell them at the market"]])
    db.add_many([{"content": f"other words {i}", "namespace": "c"} for i in range(10)])
    hits = db.search("orchard apples harvest", namespace="c", k=3, explain=True)
    assert hits[0].memory.content.startswith("the orchard apples")
    expanded = [h for h in hits if "expanded" in h.explain]  # type: ignore[operator]
    assert {h.memory.content for h in expanded} >= {"the apples are ripe and sweet this year"}
    for h in expanded:
        why = h.explain
        # ranked by the larger of its share and its own match with its session's support; it reports
        # its own match, and its seed when the share placed it
        alone = why["own"] + why["session"]  # type: ignore[index]
        inherited = why["expanded"]["inherited"]  # type: ignore[index]
        assert why["ranked"] == pytest.approx(max(alone, inherited), abs=1e-4)  # type: ignore[index]
        assert h.score == pytest.approx(why["own"], abs=1e-4)  # type: ignore[index]
        if abs(inherited - alone) > 1e-3:
            assert (h.via is not None) == (inherited > alone)
        assert why["ranked"] <= hits[0].explain["ranked"]  # type: ignore[index]
    ripe = next(h for h in expanded if h.memory.content.startswith("the apples are ripe"))
    assert ripe.explain["own"] > 0  # type: ignore[index]  # it matches "apples" on its own


def test_weights_turn_expansion_off() -> None:
    db = conversation()
    hits = db.search("anniversary restaurant", namespace="c", k=6, weights={"neighbours": 0}, explain=True)
    assert all("expanded" not in h.explain for h in hits)  # type: ignore[operator]
    assert np.isfinite([h.score for h in hits]).all()

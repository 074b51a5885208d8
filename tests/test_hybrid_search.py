"""Fused search through the public API (H1-H4, C1-C3): every strategy filters in time, type and
namespace inside its methods, explains every hit, and survives a failing method."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb import Store
from engramdb.retrieval import scored, strategies
from engramdb.retrieval.fusion import DEFAULT_WEIGHTS
from engramdb.retrieval.plan import DEFAULT_STAGES

T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)
FUSED = ["bm25", "hybrid", "rrf", "multi_space", "pipeline"]
ALL = [None, "dense_only", "exact", *FUSED]


def make(path: Path | None = None) -> Store:
    db = engramdb.open(path, dedup="off")
    db.add_many([
        {"content": "Caroline went to the LGBTQ support group yesterday", "namespace": "a", "memory_type": "event"},
        {"content": "Melanie painted a sunrise over the lake", "namespace": "a", "memory_type": "event"},
        {"content": "We adopted a puppy and named him Oscar", "namespace": "a", "memory_type": "fact"},
        {"content": "The vet said the dog needs vaccinations", "namespace": "a", "memory_type": "fact"},
        {"content": "Pizza with anchovies is my favourite food", "namespace": "a", "memory_type": "preference"},
        {"content": "Caroline went to the LGBTQ support group yesterday", "namespace": "b"},
    ])
    return db


@pytest.mark.parametrize("strategy", FUSED)
def test_every_fused_strategy_finds_the_lexical_match_and_explains_it(strategy: str) -> None:
    db = make()
    hits = db.search("When did Caroline go to the support group?", namespace="a", k=3, strategy=strategy,
                     explain=True)
    assert hits[0].memory.content.startswith("Caroline went")
    for h in hits:
        why = h.explain
        assert why is not None and why["strategy"] == strategy
        assert why["methods"], "every hit names the methods that found it"
        for m in why["methods"].values():
            assert m["rank"] >= 1 and np.isfinite(m["score"])
        assert why["score"] == pytest.approx(h.score)
        assert why["failed"] == {}
        assert set(why["weights"]) >= ({"bm25"} if strategy == "bm25" else {"vector", "bm25", "graph"})
    assert hits == sorted(hits, key=lambda h: -h.score)
    if strategy == "pipeline":
        assert set(hits[0].explain["stages"]) == {"sparse", "feedback", "dense", "fused", "topics"}  # type: ignore[index]


@pytest.mark.parametrize("strategy", ALL)
def test_namespaces_are_isolated(strategy: str | None) -> None:
    db = make()
    for ns, n in (("a", 5), ("b", 1)):
        hits = db.search("Caroline support group", namespace=ns, k=10, strategy=strategy)
        assert {h.memory.namespace for h in hits} == {ns}
        if strategy in ("bm25",):
            assert len(hits) <= n
        else:
            assert len(hits) == n
    assert db.search("Caroline", namespace="nobody", k=5, strategy=strategy) == []


@pytest.mark.parametrize("strategy", ALL)
def test_superseded_and_not_yet_learned_facts_are_filtered_inside_every_method(strategy: str | None) -> None:
    db = engramdb.open(None, dedup="off")
    old = db.add("Alice works at the bakery on Main Street", namespace="n", valid_from=T0)
    for i in range(30):  # enough other memories that a post-hoc filter of a short top-k would run dry
        db.add(f"Alice bakery note {i} about bread and the street", namespace="n", valid_from=T0 + timedelta(days=60))
    new = db.add("Alice works at the library", namespace="n", valid_from=T0 + timedelta(days=30))
    db.supersede(old.id, new.id)
    q = "where does Alice work, the bakery on Main Street?"
    now = [h.id for h in db.search(q, namespace="n", k=40, strategy=strategy)]
    assert old.id not in now  # superseded before now: never returned
    then = db.search(q, namespace="n", k=3, strategy=strategy, as_of=T0 + timedelta(days=1))
    assert [h.id for h in then] == [old.id]  # only the bakery was true then
    learned = db.get(new.id).learned_at  # type: ignore[union-attr]
    assert learned is not None
    before = db.search("library", namespace="n", k=40, strategy=strategy, known_at=learned - timedelta(days=1))
    assert new.id not in [h.id for h in before]  # not known yet


@pytest.mark.parametrize("strategy", ALL)
def test_types_filter(strategy: str | None) -> None:
    db = make()
    hits = db.search("the dog Oscar", namespace="a", k=10, strategy=strategy, types=["fact"])
    assert hits and {h.memory.memory_type for h in hits} == {"fact"}
    hits = db.search("the dog Oscar", namespace="a", k=10, strategy=strategy, types="preference")
    assert {h.memory.memory_type for h in hits} <= {"preference"}


def test_graph_brings_a_linked_memory_that_shares_no_words() -> None:
    db = make()
    puppy = db.search("puppy Oscar", namespace="a", k=1, strategy="bm25")[0]
    far = db.add("Vaccination appointment booked for Thursday at nine", namespace="a")
    db.link(puppy.id, far.id, "CAUSED", confidence=0.9)
    hits = db.search("puppy Oscar", namespace="a", k=6, strategy="hybrid", explain=True)
    got = {h.id: h for h in hits}
    assert far.id in got and "graph" in got[far.id].explain["methods"]  # type: ignore[index]
    # the graph weight is respected: at 0 the linked memory has no way in
    hits0 = db.search("puppy Oscar", namespace="a", k=6, strategy="hybrid", weights={"graph": 0}, explain=True)
    assert all("graph" not in h.explain["methods"] for h in hits0)  # type: ignore[index]


@pytest.mark.parametrize("strategy", ["hybrid", "rrf"])
def test_a_failing_method_is_logged_and_skipped(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                                strategy: str) -> None:
    db = make()

    def broken(*a: object, **kw: object) -> None:
        raise RuntimeError("index offline")

    # fault injection at the retrieval layer's seam
    if strategy == "rrf":
        monkeypatch.setattr(strategies, "bm25_found", broken)
    else:
        monkeypatch.setattr(scored, "bm25_parts", broken)
    with caplog.at_level(logging.WARNING, logger="engramdb.search"):
        hits = db.search("Caroline support group", namespace="a", k=3, strategy=strategy, explain=True)
    assert hits, "the other methods still answer"
    assert hits[0].explain["failed"] == {"bm25": "RuntimeError: index offline"}  # type: ignore[index]
    assert all("bm25" not in h.explain["methods"] for h in hits)  # type: ignore[index]
    assert "index offline" in caplog.text


def test_bm25_sees_new_rows_at_once_and_is_saved_and_reloaded(tmp_path: Path) -> None:
    db = make(tmp_path / "s")
    first = db.search("vaccinations", namespace="a", k=3, strategy="bm25")
    assert [h.memory.content for h in first] == ["The vet said the dog needs vaccinations"]
    m = db.add("Second round of vaccinations next month", namespace="a")  # in the WAL
    assert m.id in [h.id for h in db.search("vaccinations", namespace="a", k=3, strategy="bm25")]
    db.admin.checkpoint()
    db.admin.settle()  # the indexes are saved after a checkpoint by the store's background worker
    st = db.stats()["bm25"]["lexical"]
    assert st["a"]["documents"] == 6 and st["b"]["documents"] == 1 and st["a"]["postings"] > 0
    side = tmp_path / "s" / "index" / "bm25-lexical.json"
    assert side.exists()
    want = [(h.id, h.score) for h in db.search("vaccinations dog", namespace="a", k=5, strategy="bm25")]
    db.close()
    db2 = engramdb.open(tmp_path / "s")
    got = [(h.id, h.score) for h in db2.search("vaccinations dog", namespace="a", k=5, strategy="bm25")]
    assert got == want
    assert db2.stats()["index_files"]["bm25-lexical"] == "adopted"  # from the file, not rebuilt
    db2.close()
    data = tmp_path / "s" / "index" / "bm25-lexical.arrow"
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    db3 = engramdb.open(tmp_path / "s")
    assert [(h.id, h.score) for h in db3.search("vaccinations dog", namespace="a", k=5, strategy="bm25")] == want
    assert db3.stats()["index_files"]["bm25-lexical"].startswith("corrupt")
    db3.close()


def test_bad_arguments_name_the_field() -> None:
    db = make()
    with pytest.raises(ValueError, match="strategy must be one of"):
        db.search("x", namespace="a", strategy="magic")
    with pytest.raises(ValueError, match="needs the query as text"):
        db.search(np.ones(384, np.float32), namespace="a", strategy="hybrid")
    with pytest.raises(ValueError, match=r"weights\['bm25'\]"):
        db.search("x", namespace="a", strategy="hybrid", weights={"bm25": -1})
    with pytest.raises(ValueError, match="stages has no stage 'rerank'"):
        db.search("x", namespace="a", strategy="pipeline", stages={"rerank": 3})
    with pytest.raises(ValueError, match="types must be"):
        db.search("x", namespace="a", types=[])
    assert len(db) == 6  # nothing lost


def test_query_vector_is_used_for_the_dense_part() -> None:
    db = make()
    target = db.search("Pizza with anchovies", namespace="a", k=1)[0]
    vec = db.embedders["dense"].embed([target.memory.content])
    hits = db.search("completely unrelated words", namespace="a", k=1, strategy="dense_only", query_vector=vec[0])
    assert hits[0].id == target.id
    hy = db.search("anchovies", namespace="a", k=1, strategy="hybrid", query_vector=vec[0], explain=True)
    assert hy[0].id == target.id and set(hy[0].explain["methods"]) >= {"vector", "bm25"}  # type: ignore[index]


def test_the_default_profile_recalls_by_bm25_and_its_dense_index_fills_a_short_recall() -> None:
    """The default profile's dense space is made of the text's words (hashing): the hybrid recalls
    by BM25 alone when BM25 finds as many memories as asked, and every candidate is still scored by
    both; when BM25 finds fewer (a misspelt word shares only character n-grams), the dense index's
    recall fills in, as it does when BM25 fails."""
    db = engramdb.open(None, dedup="off")
    db.add_many([{"content": f"heron note {i} about reeds and water", "namespace": "n"} for i in range(40)]
                + [{"content": "We booked the restaurant for Friday evening", "namespace": "n"}])
    hits = db.search("heron reeds", namespace="n", k=10, explain=True)
    assert hits.stats.stages["vector"] == 0 and hits.stats.stages["bm25"] == 40
    assert all(set(h.explain["methods"]) >= {"bm25", "vector"} for h in hits)  # type: ignore[index]
    typo = db.search("resturant reservation", namespace="n", k=10, explain=True)
    assert typo.stats.stages["bm25"] == 0 and typo.stats.stages["vector"] >= 10
    assert typo.stats.failed == {} and typo[0].memory.content.startswith("We booked the restaurant")
    # the same vectors from an embedder not marked `words_only` (a model's, which recalls by meaning,
    # not by the words BM25 holds): its index is searched beside BM25
    model = _Unmarked(db.embedders["dense"])
    other = engramdb.open(None, dedup="off", embedders={**db.embedders, "dense": model})
    other.add_many([{"content": f"heron note {i} about reeds and water", "namespace": "n"} for i in range(40)])
    assert other.search("heron reeds", namespace="n", k=10).stats.stages["vector"] > 0


class _Unmarked:
    """An embedder giving another's vectors, without its `words_only` mark."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.version, self.kind, self.dim = inner, inner.name, inner.version, inner.kind, inner.dim

    def embed(self, texts: Any) -> Any:
        return self.inner.embed(texts)


def test_neighbouring_turns_bring_the_reply() -> None:
    db = engramdb.open(None, dedup="off")
    turns = ["Hi Mel, long time no see!", "How long have you been married?", "Five years already, time flies!",
             "Wow, congratulations!", "I went hiking in the mountains yesterday"]
    db.add_many([{"content": t, "namespace": "c", "session_id": "s1", "seq": i} for i, t in enumerate(turns)])
    db.add_many([{"content": f"unrelated chatter number {i} about been there", "namespace": "c"} for i in range(20)])
    hits = db.search("How long have they been married?", namespace="c", k=3, strategy="hybrid", explain=True)
    got = [h.memory.content for h in hits]
    assert got[0] == turns[1] and turns[2] in got  # the matching question, then its answer
    reply = next(h for h in hits if h.memory.content == turns[2])
    assert "neighbours" in reply.explain["methods"]  # type: ignore[index]
    off = db.search("How long have they been married?", namespace="c", k=3, strategy="hybrid",
                    weights={"neighbours": 0}, explain=True)
    assert all("neighbours" not in h.explain["methods"] for h in off)  # type: ignore[index]


def test_the_vector_weight_follows_the_main_match() -> None:
    db = make()
    exact = db.embedders["dense"].embed(["Pizza with anchovies is my favourite food"])[0]
    strong = db.search("anchovies", namespace="a", k=3, strategy="rrf", query_vector=exact, explain=True)
    assert strong[0].explain["vector_strength"] == 1.0  # type: ignore[index]
    assert strong[0].explain["weights"]["vector"] == 1.0  # type: ignore[index]
    far = -exact  # nothing in the namespace points this way: the dense ranking is noise
    weak = db.search("anchovies", namespace="a", k=3, strategy="rrf", query_vector=far, explain=True)
    assert weak[0].explain["vector_strength"] == 0.0  # type: ignore[index]
    assert weak[0].memory.content.startswith("Pizza")  # BM25 still answers
    assert all("vector" not in h.explain["methods"] or h.explain["weights"]["vector"] == 0  # type: ignore[index]
               for h in weak)


def test_purge_leaves_nothing_for_bm25_to_find(tmp_path: Path) -> None:
    db = make(tmp_path / "s")
    secret = db.add("the vault combination is tangerine-seven", namespace="a")
    assert db.search("tangerine vault", namespace="a", k=3, strategy="bm25")[0].id == secret.id
    db.admin.build_index()  # the BM25 file now holds the secret's terms
    assert (tmp_path / "s" / "index" / "bm25-lexical.arrow").exists()
    db.purge(secret.id)
    assert not (tmp_path / "s" / "index" / "bm25-lexical.arrow").exists()  # derived files go with it
    for strategy in FUSED:
        assert secret.id not in [h.id for h in db.search("tangerine vault", namespace="a", k=10, strategy=strategy)]
    db.close()


def test_concurrent_fused_searches_answer_as_alone() -> None:
    from concurrent.futures import ThreadPoolExecutor

    stores = [make(), make()]
    queries = [("Caroline support group", s) for s in FUSED] + [("dog vaccinations Oscar", s) for s in FUSED]
    alone = [[[h.id for h in db.search(q, namespace="a", k=4, strategy=s)] for q, s in queries] for db in stores]

    def run(i: int) -> list[list[str]]:
        db = stores[i % 2]
        return [[h.id for h in db.search(q, namespace="a", k=4, strategy=s)] for q, s in queries]

    with ThreadPoolExecutor(max_workers=4) as pool:  # more callers than the search pool's two workers
        results = list(pool.map(run, range(8)))
    for i, got in enumerate(results):
        assert got == alone[i % 2]


def test_pipeline_reading_lists_to_the_exact_depth_changes_no_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline's RRF reads its vector and BM25 lists only to the depth that can reach the
    fused stage; reading them whole must give the same hits, scores and ranks."""
    rng = np.random.default_rng(4)
    words = [f"w{i}" for i in range(60)]
    db = engramdb.open(None, dedup="off")
    db.add_many([{"content": " ".join(rng.choice(words, 8)), "namespace": "a"} for _ in range(1_500)])
    stages = {"sparse": 1_200, "dense": 600, "fused": 40, "topics": 20}
    queries = [" ".join(rng.choice(words, 3)) for _ in range(10)]
    weights = [None, {"vector": 3.0, "bm25": 0.5}]
    cut = [[(h.id, h.score) for h in db.search(q, namespace="a", k=10, strategy="pipeline", stages=stages,
                                                weights=w)] for q in queries for w in weights]
    assert strategies.read_depth(dict(DEFAULT_WEIGHTS), {**DEFAULT_STAGES, **stages}) < 600
    monkeypatch.setattr(strategies, "read_depth", lambda w, st: st["dense"])
    whole = [[(h.id, h.score) for h in db.search(q, namespace="a", k=10, strategy="pipeline", stages=stages,
                                                  weights=w)] for q in queries for w in weights]
    assert cut == whole

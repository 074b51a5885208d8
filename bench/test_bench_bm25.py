"""BM25 top-10 over 100,000 Zipf documents (bench/_zipf.py): engramdb vs bm25s (numba) and rank-bm25.

Corpus: `_zipf.documents(100_000)` (8-40 made-up words each, Zipf ranks) and `_zipf.queries(200)`
(4 words, the 50 most common ranks left out). Every library sees the same terms: engramdb's
analyzer (lowercase, Snowball stop words, Snowball English stems via PyStemmer) and bm25s's
tokenizer given the same stop list (`SNOWBALL_STOPWORDS`) and a PyStemmer English stemmer; the
made-up words hold no apostrophes or 1-letter words, so bm25s's default token pattern splits them
the same way. (bm25s's own "en" list would keep six corpus words Snowball drops: have, here, more,
same, some, were.) The correctness check below verifies the analyses agree (vocabulary, postings,
query terms). Scoring: engramdb and bm25s method="lucene" (k1=1.2, b=0.75) share Lucene's idf and
length norm; bm25s leaves out the constant (k1 + 1) factor, so its scores are engramdb's / 2.2 and
the rankings are the same. rank-bm25's BM25Okapi uses Robertson's idf (negatives floored at
0.25 x mean idf), so its top-10 can differ a little (its overlap is reported, not asserted).

Groups (ratios are peer time / engramdb time: > 1 means engramdb is faster)
  bm25-query        one query at a time, query terms given (already analysed): engramdb
                    Bm25Index.search(terms, counts, 10) (reference) vs bm25s retrieve([token ids],
                    k=10, n_threads=1) vs rank-bm25 get_scores + argpartition. Each round is one query;
                    engramdb and bm25s run the 200 queries PASSES times, rank-bm25 (pure Python/numpy,
                    ~0.15 s a query) only the first N_RANK_BM25 queries once; its ratio is taken over
                    the same queries. The reference also records an interleaved A/B run
                    (extra_info["paired"]) and the correctness check (extra_info["agreement"]).
  bm25-query-text   one query at a time, text in: engramdb LexicalEmbedder.embed + search (reference)
                    vs bm25s.tokenize + retrieve (the README path) vs a bm25s Tokenizer whose word
                    -> id cache is warm + retrieve; plus, for context, engramdb's store-level path
                    Store.search(text, strategy="bm25") (namespace mask, hits materialised).
  bm25-build        100,000 texts to a searchable index: engramdb embed + Bm25Index.add in one batch
                    (reference) and in 100 batches of 1,000 (the index is incremental), vs
                    bm25s.tokenize + BM25.index. Each round starts cold: a new LexicalEmbedder with
                    the term-id cache emptied, a new PyStemmer object for bm25s.
  bm25-build-index  the same from already analysed documents: Bm25Index.add (one batch; 100 x 1,000)
                    vs bm25s BM25.index(token ids) vs rank-bm25 BM25Okapi(token lists).
  bm25-add-1k       making 1,000 new texts searchable in an index of 99,000: engramdb embeds them and
                    adds one batch to an index built in batches of 1,000 (reference); bm25s has no
                    incremental add, so it tokenizes them (warm Tokenizer, vocabulary updated) and
                    re-indexes all 100,000 documents.
Everything runs on one thread: engramdb's kernel runs threads=1 inside Bm25Index.search, bm25s
retrieves with n_threads=1 (its serial numba function) and numba.set_num_threads(1).
Nothing is cached on disk; the whole file takes about 2 minutes on 2 cores.
"""

from __future__ import annotations

import copy
import functools
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

bm25s = pytest.importorskip("bm25s")
numba = pytest.importorskip("numba")
Stemmer = pytest.importorskip("Stemmer")  # PyStemmer: bm25s's stemmer, and engramdb's when installed

import _zipf
import engramdb
from _data import paired, tag
from engramdb.index.bm25 import K1, B, Bm25Index
from engramdb.spaces import analyzer
from engramdb.spaces.analyzer import SNOWBALL_STOPWORDS
from engramdb.spaces.lexical_space import LexicalEmbedder
from engramdb.spaces.schema import Schema, Space


@pytest.fixture(scope="module", autouse=True)
def _numba_one_thread() -> Any:
    """numba.set_num_threads(1) for this module (bm25s's n_threads=1 path is serial anyway)."""
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


N_DOCS = 100_000
N_QUERIES = 200
N_RANK_BM25 = 20  # rank-bm25 takes ~0.15 s a query: time only this many
N_CHECK = 50  # queries in the correctness check
K = 10
BATCH = 1_000  # incremental adds
PASSES = 3  # each timed query runs this many times (engramdb, bm25s)
PAIRED_REPS = 15
STOP = sorted(SNOWBALL_STOPWORDS)
GROUP_Q, GROUP_QT = "bm25-query", "bm25-query-text"
GROUP_BUILD, GROUP_INDEX, GROUP_ADD = "bm25-build", "bm25-build-index", "bm25-add-1k"

_RESULTS: dict[str, dict[str, Any]] = {}  # group -> key -> timings, for the peers' ratio fields


# ------------------------------------------------------------------------------------------ data
@functools.cache
def _texts() -> tuple[list[str], list[str]]:
    return _zipf.documents(N_DOCS), _zipf.queries(N_QUERIES)


def _rows(indptr: np.ndarray, terms: np.ndarray, counts: np.ndarray, a: int, b: int) -> tuple[Any, ...]:
    """CSR rows a..b-1 as their own CSR."""
    lo, hi = int(indptr[a]), int(indptr[b])
    return indptr[a : b + 1] - lo, terms[lo:hi], counts[lo:hi]


@dataclass
class Engram:
    emb: LexicalEmbedder
    indptr: np.ndarray
    terms: np.ndarray
    counts: np.ndarray
    index: Bm25Index
    q_terms: list[tuple[np.ndarray, np.ndarray]]


@functools.cache
def _engramdb() -> Engram:
    docs, queries = _texts()
    emb = LexicalEmbedder()
    sb = emb.embed(docs)
    ix = Bm25Index(k1=K1, b=B)
    ix.add(np.arange(N_DOCS), sb.indptr, sb.indices, sb.weights)
    q = [emb.embed([t]) for t in queries]
    return Engram(emb, sb.indptr, sb.indices, sb.weights, ix, [(s.indices, s.weights) for s in q])


@dataclass
class Bm25s:
    tokenizer: Any  # bm25s.tokenization.Tokenizer, vocabulary of the corpus
    stemmer: Any
    doc_ids: list[list[int]]
    retriever: Any
    q_stems: list[list[str]]
    q_ids: list[list[int]]


def _bm25s_tokenizer(stemmer: Any) -> Any:
    return bm25s.tokenization.Tokenizer(lower=True, stopwords=STOP, stemmer=stemmer)


def _bm25s_retriever() -> Any:
    return bm25s.BM25(k1=K1, b=B, method="lucene", backend="numba")


@functools.cache
def _bm25s() -> Bm25s:
    docs, queries = _texts()
    stemmer = Stemmer.Stemmer("english")
    tok = _bm25s_tokenizer(stemmer)
    corpus = tok.tokenize(docs, return_as="tuple", show_progress=False)
    r = _bm25s_retriever()
    r.index(corpus, show_progress=False)
    q_stems = bm25s.tokenize(queries, stopwords=STOP, stemmer=stemmer, return_ids=False, show_progress=False)
    q_ids = [[r.vocab_dict[t] for t in q if t in r.vocab_dict] for q in q_stems]
    assert all(q_ids), "every query has a corpus term"
    for q in q_ids[:3]:  # JIT-compile retrieval and scoring outside every timing (~10 s)
        r.retrieve([q], k=K, n_threads=1, show_progress=False)
        r.get_scores(q)
    return Bm25s(tok, stemmer, corpus.ids, r, q_stems, q_ids)


@functools.cache
def _rank_bm25() -> tuple[Any, list[list[str]]]:
    rank_bm25 = pytest.importorskip("rank_bm25")
    s = _bm25s()
    corpus = s.tokenizer.decode(s.doc_ids)  # the same stems as token lists
    return rank_bm25.BM25Okapi(corpus, k1=K1, b=B), corpus


@functools.cache
def _store() -> Any:
    """An in-memory store of the 100,000 texts in one namespace (dense space: 8-d random, unused)."""
    docs, queries = _texts()
    schema = Schema(
        [
            Space("dense", "dense", 8, "cosine"),
            Space("lexical", "sparse", 2**31, "jaccard", embedder="lexical"),
        ],
        main="dense",
    )
    x = np.random.default_rng(5).standard_normal((N_DOCS, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    db = engramdb.open(None, schema=schema, embedders={"lexical": LexicalEmbedder()}, dedup="off")
    for a in range(0, N_DOCS, 20_000):
        db.add_many(
            [
                {"content": docs[i], "namespace": "bm25", "vectors": {"dense": x[i]}}
                for i in range(a, a + 20_000)
            ]
        )
    db.search(queries[0], namespace="bm25", k=K, strategy="bm25")  # builds the BM25 index (lazy)
    return db


# ------------------------------------------------------------------------------------ searchers
def _eng_search(i: int) -> tuple[np.ndarray, np.ndarray]:
    e = _engramdb()
    t, c = e.q_terms[i]
    return e.index.search(t, c, K)


def _eng_search_text(i: int) -> tuple[np.ndarray, np.ndarray]:
    e = _engramdb()
    sb = e.emb.embed([_texts()[1][i]])
    return e.index.search(sb.indices, sb.weights, K)


def _bm25s_search(i: int) -> Any:
    s = _bm25s()
    return s.retriever.retrieve([s.q_ids[i]], k=K, n_threads=1, show_progress=False)


def _bm25s_search_text(i: int) -> Any:
    s = _bm25s()
    q = bm25s.tokenize(_texts()[1][i], stopwords=STOP, stemmer=s.stemmer, show_progress=False)
    return s.retriever.retrieve(q, k=K, n_threads=1, show_progress=False)


def _bm25s_search_tokenizer(i: int) -> Any:
    s = _bm25s()
    ids = s.tokenizer.tokenize([_texts()[1][i]], update_vocab=False, return_as="ids", show_progress=False)
    return s.retriever.retrieve(ids, k=K, n_threads=1, show_progress=False)


def _rank_search(i: int) -> np.ndarray:
    bm, _ = _rank_bm25()
    scores = bm.get_scores(_bm25s().q_stems[i])
    part = np.argpartition(-scores, K)[:K]
    return part[np.argsort(-scores[part], kind="stable")]


def _store_search(i: int) -> Any:
    return _store().search(_texts()[1][i], namespace="bm25", k=K, strategy="bm25")


def _block(fn: Callable[[int], Any], n: int) -> Callable[[], None]:
    def run() -> None:
        for i in range(n):
            fn(i)

    return run


# ---------------------------------------------------------------------------------- correctness
@functools.cache
def _agreement() -> dict[str, Any]:
    """engramdb vs bm25s (lucene) on the first N_CHECK queries, plus analysis parity (not timed)."""
    e, s = _engramdb(), _bm25s()
    overlaps, score_rel, topk_rel, tie_only = [], 0.0, 0.0, 0
    for i in range(N_CHECK):
        keys, sc = _eng_search(i)
        docs = _bm25s_search(i).documents[0]
        overlaps.append(len(set(keys.tolist()) & set(docs.tolist())) / K)
        full = s.retriever.get_scores(s.q_ids[i]).astype(np.float64) * (K1 + 1)  # bm25s drops (k1 + 1)
        sc64 = sc.astype(np.float64)
        score_rel = max(score_rel, float(np.max(np.abs(full[keys] - sc64) / sc64)))
        top = np.sort(full)[::-1][:K]
        topk_rel = max(topk_rel, float(np.max(np.abs(top - sc64) / sc64)))
        differ = set(keys.tolist()) ^ set(docs.tolist())
        if differ and all(abs(full[d] - sc64[-1]) <= 1e-5 * sc64[-1] for d in differ):
            tie_only += 1  # the sets differ only among documents tied at the 10th score
    # analysis parity: the same stems give engramdb's term ids with the same counts
    q_same = 0
    for (terms, counts), stems in zip(e.q_terms, s.q_stems):
        ids, n = np.unique([analyzer.term_id(t) for t in stems], return_counts=True)
        q_same += bool(np.array_equal(ids, terms) and np.array_equal(n, counts))
    bm25s_vocab = len(s.retriever.vocab_dict) - ("" in s.retriever.vocab_dict)
    return {
        "queries": N_CHECK,
        "mean_overlap_at_10": float(np.mean(overlaps)),
        "min_overlap_at_10": float(np.min(overlaps)),
        "queries_differing_only_by_ties": tie_only,
        "queries_differing": int(sum(o < 1 for o in overlaps)),
        "max_rel_score_diff": score_rel,  # engramdb's scores vs bm25s's of the same docs, x (k1+1)
        "max_rel_topk_score_diff": topk_rel,  # engramdb's top-10 scores vs bm25s's exhaustive top-10
        "query_analysis_identical": f"{q_same}/{len(s.q_stems)}",
        "vocabulary": {"engramdb": len(e.index.chunks[0].terms), "bm25s": bm25s_vocab},
        "postings": {"engramdb": int(e.index.postings), "bm25s": len(s.retriever.scores["data"])},
    }


def _corpus_stats() -> dict[str, Any]:
    e = _engramdb()
    q_post = [int(sum(c.df(c.rows_of(t)).sum() for c in e.index.chunks)) for t, _ in e.q_terms]
    return {
        "docs": N_DOCS,
        "vocabulary": len(e.index.chunks[0].terms),
        "postings": int(e.index.postings),
        "mean_doc_terms": float(e.index.lengths.mean()),
        "queries": N_QUERIES,
        "mean_query_terms": float(np.mean([len(t) for t, _ in e.q_terms])),
        "mean_postings_per_query": float(np.mean(q_post)),
        "k": K,
    }


# ------------------------------------------------------------------------------------- timing
def _per_query(benchmark: Any, group: str, key: str, fn: Callable[[int], Any], n: int, passes: int) -> None:
    """Time fn(i) one query per round over queries 0..n-1, `passes` times; record per-query stats."""
    for i in range(n):  # warm up (caches, lazy init) outside the timing
        fn(i)
    order = itertools.cycle(range(n))
    benchmark.pedantic(fn, setup=lambda: ((next(order),), {}), rounds=n * passes, iterations=1)
    if benchmark.stats is None:  # --benchmark-disable: one call, no statistics
        return
    data = np.asarray(benchmark.stats.stats.data, np.float64).reshape(passes, n)
    mean = float(data.mean())
    _RESULTS.setdefault(group, {})[key] = {"mean": mean, "per_query": data.mean(axis=0)}
    benchmark.extra_info.update(
        n_queries=n,
        passes=passes,
        mean_us=1e6 * mean,
        p50_us=1e6 * float(np.median(data)),
        p95_us=1e6 * float(np.percentile(data, 95)),
        queries_per_s=1.0 / mean,
    )
    ref = _RESULTS[group].get("engramdb")
    if ref is not None and key != "engramdb":
        ref_mean = float(ref["per_query"][:n].mean())  # the same queries
        benchmark.extra_info["ratio_mean_vs_engramdb"] = mean / ref_mean  # > 1: engramdb is faster


def _once(
    benchmark: Any,
    group: str,
    key: str,
    fn: Callable[[], Any],
    rounds: int,
    setup: Callable[[], Any] | None = None,
) -> Any:
    """Time a long call `rounds` times (fresh state from `setup` each round, untimed); its last result."""
    kw: dict[str, Any] = {"rounds": rounds, "iterations": 1}
    if setup is not None:
        kw["setup"] = setup
    out = benchmark.pedantic(fn, **kw)
    if benchmark.stats is None:  # --benchmark-disable
        return out
    mean = float(benchmark.stats.stats.mean)
    _RESULTS.setdefault(group, {})[key] = {"mean": mean}
    ref = _RESULTS[group].get("engramdb")
    if ref is not None and key != "engramdb":
        benchmark.extra_info["ratio_mean_vs_engramdb"] = mean / ref["mean"]
    return out


def _cold_caches() -> None:
    """Empty engramdb's global term-id cache (the analyzer's per-term cache is per embedder)."""
    analyzer.term_id.cache_clear()


# ==================================================================== 1. query terms given
def test_query_engramdb(benchmark: Any) -> None:
    _engramdb()
    _bm25s()
    agree = _agreement()
    benchmark.group = GROUP_Q
    tag(
        benchmark,
        "engramdb Bm25Index.search (terms given)",
        role="engramdb",
        reference=True,
        threads=1,
        key="engramdb",
        corpus=_corpus_stats(),
        agreement=agree,
    )
    _per_query(benchmark, GROUP_Q, "engramdb", _eng_search, N_QUERIES, PASSES)
    fns = {"engramdb": _block(_eng_search, N_QUERIES), "bm25s": _block(_bm25s_search, N_QUERIES)}
    pair = paired(fns, "engramdb", PAIRED_REPS)
    try:
        _rank_bm25()
    except pytest.skip.Exception:
        pass
    else:  # rank-bm25 against engramdb on its N_RANK_BM25 queries (3 reps: ~10 s)
        r = paired(
            {"engramdb": _block(_eng_search, N_RANK_BM25), "rank_bm25": _block(_rank_search, N_RANK_BM25)},
            "engramdb",
            3,
        )
        pair["vs"]["rank_bm25"] = dict(r["vs"]["rank_bm25"], queries=N_RANK_BM25, reps=3)
    pair["block"] = f"{N_QUERIES} queries one at a time (rank_bm25: {N_RANK_BM25})"
    benchmark.extra_info["paired"] = pair
    assert agree["mean_overlap_at_10"] >= 0.9, agree
    assert agree["max_rel_score_diff"] < 1e-4 and agree["max_rel_topk_score_diff"] < 1e-4, agree
    assert agree["vocabulary"]["engramdb"] == agree["vocabulary"]["bm25s"], agree
    assert agree["postings"]["engramdb"] == agree["postings"]["bm25s"], agree


def test_query_bm25s(benchmark: Any) -> None:
    _bm25s()
    benchmark.group = GROUP_Q
    tag(
        benchmark,
        "bm25s retrieve(token ids), numba, n_threads=1",
        threads=1,
        key="bm25s",
        note="precomputed per-posting scores; dense 100k accumulator + top-k scan per query",
    )
    _per_query(benchmark, GROUP_Q, "bm25s", _bm25s_search, N_QUERIES, PASSES)


def test_query_rank_bm25(benchmark: Any) -> None:
    _rank_bm25()
    found: dict[int, np.ndarray] = {}

    def fn(i: int) -> None:
        found[i] = _rank_search(i)

    benchmark.group = GROUP_Q
    tag(
        benchmark,
        "rank-bm25 BM25Okapi.get_scores + argpartition",
        threads=1,
        key="rank_bm25",
        note=f"first {N_RANK_BM25} queries only, once each (pure Python loop over all docs per term)",
    )
    _per_query(benchmark, GROUP_Q, "rank_bm25", fn, N_RANK_BM25, 1)
    overlap = [len(set(found[i].tolist()) & set(_eng_search(i)[0].tolist())) / K for i in range(N_RANK_BM25)]
    benchmark.extra_info["mean_overlap_at_10_vs_engramdb"] = float(
        np.mean(overlap)
    )  # Robertson idf: may differ


# ========================================================================= 2. text in
def test_query_text_engramdb(benchmark: Any) -> None:
    _engramdb()
    _bm25s()
    benchmark.group = GROUP_QT
    tag(
        benchmark,
        "engramdb LexicalEmbedder.embed + Bm25Index.search",
        role="engramdb",
        reference=True,
        threads=1,
        key="engramdb",
    )
    _per_query(benchmark, GROUP_QT, "engramdb", _eng_search_text, N_QUERIES, PASSES)
    fns = {
        "engramdb": _block(_eng_search_text, N_QUERIES),
        "bm25s": _block(_bm25s_search_text, N_QUERIES),
        "bm25s_tokenizer": _block(_bm25s_search_tokenizer, N_QUERIES),
    }
    benchmark.extra_info["paired"] = paired(fns, "engramdb", PAIRED_REPS)


def test_query_text_bm25s(benchmark: Any) -> None:
    _bm25s()
    benchmark.group = GROUP_QT
    tag(benchmark, "bm25s.tokenize + retrieve, numba, n_threads=1", threads=1, key="bm25s")
    _per_query(benchmark, GROUP_QT, "bm25s", _bm25s_search_text, N_QUERIES, PASSES)


def test_query_text_bm25s_tokenizer(benchmark: Any) -> None:
    _bm25s()
    benchmark.group = GROUP_QT
    tag(
        benchmark,
        "bm25s Tokenizer.tokenize (warm word->id cache) + retrieve",
        threads=1,
        key="bm25s_tokenizer",
    )
    _per_query(benchmark, GROUP_QT, "bm25s_tokenizer", _bm25s_search_tokenizer, N_QUERIES, PASSES)


def test_query_text_store(benchmark: Any) -> None:
    t0 = time.perf_counter()
    _store()
    build_s = time.perf_counter() - t0
    hits = _store_search(0)
    assert [h.score for h in hits] == pytest.approx(_eng_search_text(0)[1].tolist(), rel=1e-5)
    benchmark.group = GROUP_QT
    tag(
        benchmark,
        "engramdb Store.search(text, strategy='bm25'), hits materialised",
        role="engramdb",
        threads=1,
        key="store",
        store_build_s=build_s,
        note="context: namespace mask, fused-search wrapper, Memory objects",
    )
    _per_query(benchmark, GROUP_QT, "store", _store_search, N_QUERIES, 1)


# ===================================================================== 3. index build
def _eng_build_text() -> Bm25Index:
    e = LexicalEmbedder()
    sb = e.embed(_texts()[0])
    ix = Bm25Index(k1=K1, b=B)
    ix.add(np.arange(N_DOCS), sb.indptr, sb.indices, sb.weights)
    return ix


def _eng_build_text_incremental() -> Bm25Index:
    docs = _texts()[0]
    e = LexicalEmbedder()
    ix = Bm25Index(k1=K1, b=B)
    for a in range(0, N_DOCS, BATCH):
        sb = e.embed(docs[a : a + BATCH])
        ix.add(np.arange(a, a + BATCH), sb.indptr, sb.indices, sb.weights)
    return ix


def _eng_build_incremental(e: Engram) -> Bm25Index:
    ix = Bm25Index(k1=K1, b=B)
    for a in range(0, N_DOCS, BATCH):
        ix.add(np.arange(a, a + BATCH), *_rows(e.indptr, e.terms, e.counts, a, a + BATCH))
    return ix


def _cold() -> tuple[tuple[()], dict[str, Any]]:
    _cold_caches()
    return (), {}


def test_build_engramdb(benchmark: Any) -> None:
    _texts()
    benchmark.group = GROUP_BUILD
    tag(
        benchmark,
        "engramdb embed + Bm25Index.add, one batch of 100,000",
        role="engramdb",
        reference=True,
        threads=1,
        key="engramdb",
        items=N_DOCS,
    )
    _once(benchmark, GROUP_BUILD, "engramdb", _eng_build_text, 3, setup=_cold)


def test_build_engramdb_incremental(benchmark: Any) -> None:
    _texts()
    benchmark.group = GROUP_BUILD
    tag(
        benchmark,
        "engramdb embed + Bm25Index.add, 100 batches of 1,000",
        role="engramdb",
        threads=1,
        key="engramdb_incremental",
        items=N_DOCS,
        note="searchable after every batch",
    )
    ix = _once(benchmark, GROUP_BUILD, "engramdb_incremental", _eng_build_text_incremental, 3, setup=_cold)
    assert ix.postings == _engramdb().index.postings
    benchmark.extra_info["chunks_after"] = len(ix.chunks)


def test_build_bm25s(benchmark: Any) -> None:
    docs = _texts()[0]
    _bm25s()

    def fn() -> Any:
        tokens = bm25s.tokenize(docs, stopwords=STOP, stemmer=Stemmer.Stemmer("english"), show_progress=False)
        r = _bm25s_retriever()
        r.index(tokens, show_progress=False)
        return r

    benchmark.group = GROUP_BUILD
    tag(
        benchmark,
        "bm25s.tokenize + BM25.index (numba)",
        threads=1,
        key="bm25s",
        items=N_DOCS,
        note="no incremental add: new documents mean a full re-index (see bm25-add-1k)",
    )
    _once(benchmark, GROUP_BUILD, "bm25s", fn, 2)


def test_build_index_engramdb(benchmark: Any) -> None:
    e = _engramdb()

    def fn() -> Bm25Index:
        ix = Bm25Index(k1=K1, b=B)
        ix.add(np.arange(N_DOCS), e.indptr, e.terms, e.counts)
        return ix

    benchmark.group = GROUP_INDEX
    tag(
        benchmark,
        "engramdb Bm25Index.add (analysed rows), one batch of 100,000",
        role="engramdb",
        reference=True,
        threads=1,
        key="engramdb",
        items=N_DOCS,
    )
    _once(benchmark, GROUP_INDEX, "engramdb", fn, 5)


def test_build_index_engramdb_incremental(benchmark: Any) -> None:
    e = _engramdb()
    benchmark.group = GROUP_INDEX
    tag(
        benchmark,
        "engramdb Bm25Index.add (analysed rows), 100 batches of 1,000",
        role="engramdb",
        threads=1,
        key="engramdb_incremental",
        items=N_DOCS,
    )
    _once(benchmark, GROUP_INDEX, "engramdb_incremental", lambda: _eng_build_incremental(e), 3)


def test_build_index_bm25s(benchmark: Any) -> None:
    s = _bm25s()
    corpus = bm25s.tokenization.Tokenized(ids=s.doc_ids, vocab=s.tokenizer.get_vocab_dict())

    def fn() -> Any:
        r = _bm25s_retriever()
        r.index(corpus, show_progress=False)
        return r

    benchmark.group = GROUP_INDEX
    tag(benchmark, "bm25s BM25.index (token ids, numba)", threads=1, key="bm25s", items=N_DOCS)
    _once(benchmark, GROUP_INDEX, "bm25s", fn, 2)


def test_build_index_rank_bm25(benchmark: Any) -> None:
    _, corpus = _rank_bm25()
    rank_bm25 = pytest.importorskip("rank_bm25")
    benchmark.group = GROUP_INDEX
    tag(benchmark, "rank-bm25 BM25Okapi(token lists)", threads=1, key="rank_bm25", items=N_DOCS)
    _once(benchmark, GROUP_INDEX, "rank_bm25", lambda: rank_bm25.BM25Okapi(corpus, k1=K1, b=B), 1)


# ============================================================= 3b. 1,000 new documents
def test_add_1k_engramdb(benchmark: Any) -> None:
    e = _engramdb()
    docs = _texts()[0]
    base = Bm25Index(k1=K1, b=B)
    for a in range(0, N_DOCS - BATCH, BATCH):
        base.add(np.arange(a, a + BATCH), *_rows(e.indptr, e.terms, e.counts, a, a + BATCH))
    new = docs[N_DOCS - BATCH :]
    state: dict[str, Bm25Index] = {}

    def setup() -> tuple[tuple[()], dict[str, Any]]:
        ix = copy.copy(base)  # add() never changes a chunk in place, only the list and the arrays it replaces
        ix.chunks = list(base.chunks)
        state["ix"] = ix
        return (), {}

    def fn() -> None:
        sb = e.emb.embed(new)
        state["ix"].add(np.arange(N_DOCS - BATCH, N_DOCS), sb.indptr, sb.indices, sb.weights)

    benchmark.group = GROUP_ADD
    tag(
        benchmark,
        "engramdb embed + Bm25Index.add of 1,000 into 99,000 (built in 1,000s)",
        role="engramdb",
        reference=True,
        threads=1,
        key="engramdb",
        items=BATCH,
        chunks_before=len(base.chunks),
    )
    _once(benchmark, GROUP_ADD, "engramdb", fn, 10, setup=setup)
    ix = state["ix"]
    benchmark.extra_info["chunks_after"] = len(ix.chunks)
    assert ix.postings == e.index.postings
    np.testing.assert_allclose(ix.search(*e.q_terms[0], K)[1], e.index.search(*e.q_terms[0], K)[1], rtol=1e-6)


def test_add_1k_bm25s(benchmark: Any) -> None:
    s = _bm25s()
    docs = _texts()[0]
    new = docs[N_DOCS - BATCH :]
    old_tok = _bm25s_tokenizer(Stemmer.Stemmer("english"))
    old_ids = old_tok.tokenize(docs[: N_DOCS - BATCH], return_as="ids", show_progress=False)
    state: dict[str, Any] = {}

    def setup() -> tuple[tuple[()], dict[str, Any]]:
        tok = copy.copy(old_tok)  # a warm tokenizer that has not seen the new texts
        tok.word_to_stem, tok.stem_to_sid = dict(old_tok.word_to_stem), dict(old_tok.stem_to_sid)
        tok.word_to_id = dict(old_tok.word_to_id)
        state["tok"] = tok
        return (), {}

    def fn() -> None:
        tok = state["tok"]
        ids = tok.tokenize(new, update_vocab=True, return_as="ids", show_progress=False)
        r = _bm25s_retriever()
        r.index(
            bm25s.tokenization.Tokenized(ids=old_ids + ids, vocab=tok.get_vocab_dict()), show_progress=False
        )
        state["r"] = r

    benchmark.group = GROUP_ADD
    tag(
        benchmark,
        "bm25s Tokenizer.tokenize(1,000 new) + BM25.index of all 100,000",
        threads=1,
        key="bm25s",
        items=BATCH,
        note="bm25s has no incremental add: re-index everything",
    )
    _once(benchmark, GROUP_ADD, "bm25s", fn, 2, setup=setup)
    assert len(state["r"].scores["data"]) == len(s.retriever.scores["data"])

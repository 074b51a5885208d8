"""BM25 (H1, N3): the native scorer against a float64 numpy reference, incremental growth,
filters, persistence and errors."""

from __future__ import annotations

import numpy as np
import pytest
import reference as ref
from engramdb import _core, kernels
from engramdb.index.bm25 import Bm25Index
from hypothesis import given, settings
from hypothesis import strategies as st


def corpus(rng: np.random.Generator, n: int, vocab: int = 40) -> list[tuple[np.ndarray, np.ndarray]]:
    docs = []
    for _ in range(n):
        t = np.unique(rng.integers(0, vocab, rng.integers(0, 9))).astype(np.int32)
        docs.append((t, rng.integers(1, 5, len(t)).astype(np.float32)))
    return docs


def csr(docs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ptr = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(t) for t, _ in docs], out=ptr[1:])
    terms = np.concatenate([t for t, _ in docs]) if docs else np.empty(0, np.int32)
    counts = np.concatenate([c for _, c in docs]) if docs else np.empty(0, np.float32)
    return ptr, terms.astype(np.int32), counts.astype(np.float32)


def reference(docs: list[tuple[np.ndarray, np.ndarray]], q: np.ndarray, qc: np.ndarray, k1: float = 1.2,
              b: float = 0.75) -> np.ndarray:
    """Lucene BM25 of every doc in float64, straight from the definition."""
    n = len(docs)
    lengths = np.array([float(c.sum()) for _, c in docs])
    avgdl = lengths.mean() if n else 1.0
    out = np.zeros(n)
    for term, qtf in zip(q.tolist(), qc.tolist()):
        df = sum(term in set(t.tolist()) for t, _ in docs)
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, (t, c) in enumerate(docs):
            hit = np.flatnonzero(t == term)
            if len(hit):
                tf = float(c[hit[0]])
                out[i] += qtf * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / max(avgdl, 1e-9)))
    return out


def check(ix: Bm25Index, docs: list[tuple[np.ndarray, np.ndarray]], keys: np.ndarray, q: np.ndarray,
          qc: np.ndarray, k: int, allowed: np.ndarray | None = None) -> None:
    ref = reference(docs, q, qc, ix.k1, ix.b)
    ok = ref > 0
    if allowed is not None:
        ok &= allowed[keys]
    got_k, got_s = ix.search(q, qc, k, allowed=allowed)
    ranked = np.flatnonzero(ok)
    ranked = ranked[np.lexsort((ranked, -ref[ranked]))]  # every match, best first, ties by key
    want = ranked[:k]
    assert len(got_k) == len(want)
    pos = {int(key): i for i, key in enumerate(keys)}
    got_rows = np.array([pos[int(x)] for x in got_k], np.int64)
    np.testing.assert_allclose(got_s, ref[got_rows], rtol=1e-5, atol=1e-6)
    # in order: rank by rank the reference's score, best first; and at every rank whose score is
    # clear of its neighbours' (float32 rounding may swap near-ties, nothing else) its document
    np.testing.assert_allclose(got_s, ref[want], rtol=1e-5, atol=1e-6)
    # by its own float32 scores the index's order is exact: best first, ties to the lower doc
    # number (bm25.h; docs are numbered in insertion order, as `keys` lists them)
    assert (np.diff(got_s) <= 0).all()
    tied = np.flatnonzero(np.diff(got_s) == 0)
    assert (got_rows[tied] < got_rows[tied + 1]).all()
    s = ref[ranked]
    clear = np.ones(len(want), bool)
    for i in range(len(want)):
        for j in (i - 1, i + 1):
            if 0 <= j < len(s) and abs(s[i] - s[j]) <= 1e-4 * max(1.0, abs(s[i])):
                clear[i] = False
    assert got_rows[clear].tolist() == want[clear].tolist()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), batches=st.lists(st.integers(0, 40), min_size=1, max_size=6),
       k=st.sampled_from([1, 3, 10, 100]), k1=st.sampled_from([0.0, 0.9, 1.2, 2.0]), b=st.sampled_from([0.0, 0.75, 1.0]))
def test_matches_float64_reference_when_grown_in_batches(seed: int, batches: list[int], k: int, k1: float,
                                                         b: float) -> None:
    rng = np.random.default_rng(seed)
    ix = Bm25Index(k1=k1, b=b)
    docs: list[tuple[np.ndarray, np.ndarray]] = []
    for n in batches:
        part = corpus(rng, n)
        ptr, terms, counts = csr(part)
        ix.add(np.arange(len(docs), len(docs) + n, dtype=np.int64) * 3 + 7, ptr, terms, counts)
        docs += part
    keys = np.arange(len(docs), dtype=np.int64) * 3 + 7
    q = np.unique(rng.integers(0, 45, rng.integers(1, 6))).astype(np.int32)  # some terms never indexed
    qc = rng.integers(1, 3, len(q)).astype(np.float32)
    check(ix, docs, keys, q, qc, k)
    allowed = np.zeros(int(keys.max(initial=0)) + 1, bool)
    allowed[keys[rng.random(len(keys)) < 0.5]] = True
    check(ix, docs, keys, q, qc, k, allowed)  # the filter acts before the top-k cut
    assert len(ix.chunks) <= 1 + int(np.log2(max(len(docs), 1)) * 2)


def test_incremental_equals_one_batch_and_round_trips() -> None:
    rng = np.random.default_rng(5)
    docs = corpus(rng, 300, vocab=80)
    one = Bm25Index()
    one.add(np.arange(300), *csr(docs))
    grown = Bm25Index()
    for a in range(0, 300, 7):
        grown.add(np.arange(a, min(a + 7, 300)), *csr(docs[a : a + 7]))
    assert len(grown.chunks) > 1
    q, qc = np.array([3, 17, 40], np.int32), np.array([1, 2, 1], np.float32)
    k1, s1 = one.search(q, qc, 20)
    k2, s2 = grown.search(q, qc, 20)
    np.testing.assert_allclose(s1, s2, rtol=1e-6)
    assert k1.tolist() == k2.tolist()
    back = Bm25Index.from_arrays(grown.arrays())
    k3, s3 = back.search(q, qc, 20)
    assert k3.tolist() == k1.tolist() and np.allclose(s3, s1)
    assert len(back) == 300 and back.postings == one.postings


def test_empty_and_unknown_queries() -> None:
    ix = Bm25Index()
    assert ix.search(np.array([1], np.int32), np.array([1], np.float32), 5)[0].size == 0
    ix.add(np.array([0, 1]), np.array([0, 1, 1]), np.array([4], np.int32), np.array([1], np.float32))
    assert ix.search(np.array([9], np.int32), np.array([1], np.float32), 5)[0].size == 0  # no match: nothing
    keys, _ = ix.search(np.array([4], np.int32), np.array([1], np.float32), 5)
    assert keys.tolist() == [0]  # doc 1 is empty: it matches nothing and is never returned


def test_bad_input_is_refused_and_changes_nothing() -> None:
    with pytest.raises(ValueError, match="k1"):
        Bm25Index(k1=-1)
    with pytest.raises(ValueError, match="b must"):
        Bm25Index(b=1.5)
    ix = Bm25Index()
    ix.add(np.array([0]), np.array([0, 1]), np.array([4], np.int32), np.array([2], np.float32))
    with pytest.raises(ValueError, match="indptr"):
        ix.add(np.array([1, 2]), np.array([0, 1]), np.array([4], np.int32), np.array([1], np.float32))
    with pytest.raises(ValueError, match="counts"):
        ix.add(np.array([1]), np.array([0, 1]), np.array([4], np.int32), np.array([0], np.float32))
    assert len(ix) == 1 and ix.postings == 1
    with pytest.raises(ValueError, match="CSR"):
        Bm25Index.from_arrays({**ix.arrays(), "indptr": np.array([0, 5], np.int64)})


def test_kernel_reports_bad_postings_instead_of_crashing() -> None:
    q = np.array([0, 1], np.int64)
    w = np.array([1.0], np.float32)
    ptr, docs, tf = np.array([0, 2], np.int64), np.array([0, 7], np.int32), np.ones(2, np.float32)
    norm = np.ones(3, np.float32)
    *_, bad, code = _core.bm25_topk(q, np.array([0], np.int64), w, ptr, docs, tf, norm, 1.2, 2, None, 1)
    assert (bad, code) == (0, 3)  # doc 7 of 3
    *_, bad, code = _core.bm25_topk(q, np.array([5], np.int64), w, ptr, docs, tf, norm, 1.2, 2, None, 1)
    assert (bad, code) == (0, 1)  # row 5 of 1
    *_, bad, code = _core.bm25_topk(q, np.array([0], np.int64), np.array([-1.0], np.float32), ptr, docs, tf, norm,
                                    1.2, 2, None, 1)
    assert (bad, code) == (0, 4)
    # many queries at once, on two threads, equal one at a time
    rng = np.random.default_rng(0)
    ix = Bm25Index()
    ix.add(np.arange(200), *csr(corpus(rng, 200)))
    c = ix.chunks[0]
    rows = c.rows_of(np.arange(40, dtype=np.int32))
    qptr = np.arange(0, 41, 4, dtype=np.int64)
    ws = np.ones(40, np.float32)
    bi, bs, bad, _ = _core.bm25_topk(qptr, rows, ws, c.indptr, c.docs, c.tf, ix.norm(), 1.2, 5, None, 2)
    assert bad == -1
    for i in range(10):
        si, ss, _, _ = _core.bm25_topk(np.array([0, 4], np.int64), rows[4 * i : 4 * i + 4], ws[:4], c.indptr, c.docs,
                                       c.tf, ix.norm(), 1.2, 5, None, 1)
        assert si[0].tolist() == bi[i].tolist() and np.allclose(ss[0], bs[i], equal_nan=True)


def test_large_k_uses_selection_and_matches_the_reference() -> None:
    rng = np.random.default_rng(11)
    docs = corpus(rng, 2_000, vocab=12)  # a small vocabulary: most documents match
    ix = Bm25Index()
    ix.add(np.arange(2_000), *csr(docs))
    q, qc = np.array([1, 4, 7], np.int32), np.array([1, 1, 2], np.float32)
    for k in (300, 1_000, 5_000):  # past the kernel's heap limit (256)
        check(ix, docs, np.arange(2_000), q, qc, k)


def test_query_entry_finds_rows_and_folds_idf_like_the_batch_kernel() -> None:
    rng = np.random.default_rng(3)
    ix = Bm25Index()
    ix.add(np.arange(300), *csr(corpus(rng, 300)))
    c, norm, n = ix.chunks[0], ix.norm(), 300
    q = np.array([2, 5, 9, 44], np.int32)  # 44: never indexed
    qc = np.array([1, 2, 1, 1], np.float32)
    rows = c.rows_of(q)
    df = c.df(rows)
    w = (np.log1p((n - df + 0.5) / (df + 0.5)) * qc).astype(np.float32)
    want_i, want_s, _, _ = _core.bm25_topk(np.array([0, 4], np.int64), rows, w, c.indptr, c.docs, c.tf, norm, 1.2, 7,
                                           None, 1)
    got_i, got_s, code = _core.bm25_query(q, qc, c.terms, c.indptr, c.docs, c.tf, norm, 1.2, 7, n)
    assert code == 0 and got_i.tolist() == want_i[0].tolist()
    np.testing.assert_allclose(got_s, want_s[0], rtol=1e-6)
    # df given for the whole index (several chunks) overrides this chunk's own
    big = np.full(4, 150, np.int64)
    _, s_big, _ = _core.bm25_query(q, qc, c.terms, c.indptr, c.docs, c.tf, norm, 1.2, 7, n, big)
    assert np.all(s_big < got_s)  # a commoner term weighs less
    mask = np.zeros(300, np.uint8)
    mask[got_i[1:]] = 1
    m_i, _, _ = _core.bm25_query(q, qc, c.terms, c.indptr, c.docs, c.tf, norm, 1.2, 7, n, None, mask)
    assert got_i[0] not in m_i.tolist()
    # bad postings and weights give a code, never a crash; shapes are refused by name
    ptr, docs, tf = np.array([0, 2], np.int64), np.array([0, 7], np.int32), np.ones(2, np.float32)
    one = np.array([3], np.int32)
    assert _core.bm25_query(one, np.ones(1, np.float32), one, ptr, docs, tf, np.ones(3, np.float32), 1.2, 2, 3)[2] == 3
    assert _core.bm25_query(one, -np.ones(1, np.float32), one, ptr, docs, tf, np.ones(8, np.float32), 1.2, 2, 3)[2] == 4
    with pytest.raises(ValueError, match="counts"):
        _core.bm25_query(one, np.ones(2, np.float32), one, ptr, docs, tf, np.ones(8, np.float32), 1.2, 2, 3)
    with pytest.raises(ValueError, match="indptr"):
        _core.bm25_query(one, np.ones(1, np.float32), one, ptr[:1], docs, tf, np.ones(8, np.float32), 1.2, 2, 3)


def test_sorted_k_orders_only_the_head_and_keeps_the_same_set() -> None:
    rng = np.random.default_rng(8)
    docs = corpus(rng, 3_000, vocab=15)
    ix = Bm25Index()
    ix.add(np.arange(3_000), *csr(docs))
    q, qc = np.array([2, 3, 11], np.int32), np.array([1, 1, 1], np.float32)
    full_k, _ = ix.search(q, qc, 1_500)
    for sorted_k in (0, 10, 700, 1_500, 5_000):
        got_k, got_s = ix.search(q, qc, 1_500, sorted_k=sorted_k)
        head = min(sorted_k, len(full_k))
        assert got_k[:head].tolist() == full_k[:head].tolist()
        assert set(got_k.tolist()) == set(full_k.tolist())
        if head < len(got_s):
            assert got_s[head:].max() <= got_s[:head].min(initial=np.inf)


def postings(docs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The inverted index of `docs` built here from scratch: (terms, indptr, doc numbers, tf)."""
    by_term: dict[int, list[tuple[int, float]]] = {}
    for i, (t, c) in enumerate(docs):
        for term, tf in zip(t.tolist(), c.tolist()):
            by_term.setdefault(term, []).append((i, tf))
    terms = np.array(sorted(by_term), np.int32)
    indptr = np.zeros(len(terms) + 1, np.int64)
    np.cumsum([len(by_term[t]) for t in terms.tolist()], out=indptr[1:])
    flat = [p for t in terms.tolist() for p in by_term[t]]
    return (terms, indptr, np.array([d for d, _ in flat], np.int32), np.array([f for _, f in flat], np.float32))


@pytest.mark.parametrize("seed", range(6))
def test_kernel_query_matches_the_float64_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    docs = corpus(rng, 300)
    terms, indptr, doc_ids, tf = postings(docs)
    lengths = np.array([float(c.sum()) for _, c in docs])
    norm = (1.2 * (1 - 0.75 + 0.75 * lengths / lengths.mean())).astype(np.float32)
    q = np.unique(rng.integers(0, 45, 4)).astype(np.int32)
    qc = rng.integers(1, 3, len(q)).astype(np.float32)
    in_chunk = np.array([sum(term in set(t.tolist()) for t, _ in docs) for term in q.tolist()], np.int64)
    mask = rng.random(300) < 0.6
    for n_total, df_total, allowed in ((300, None, None), (300, None, mask), (900, in_chunk + 200, None)):
        want = ref.bm25(q, qc, [t for t, _ in docs], [c for _, c in docs], norm, 1.2, n_total,
                        in_chunk if df_total is None else df_total)
        ok = (want > 0) if allowed is None else (want > 0) & allowed
        ranked = np.flatnonzero(ok)
        ranked = ranked[np.lexsort((ranked, -want[ranked]))]
        for k in (1, 10, 400):
            got_d, got_s = kernels.bm25_query(q, qc, terms, indptr, doc_ids, tf, norm, 1.2, k, n_total,
                                              df_total=df_total, mask=allowed)
            assert len(got_d) == min(k, len(ranked)) and got_d.dtype == np.int64
            np.testing.assert_allclose(got_s, want[got_d], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got_s, want[ranked[:k]], rtol=1e-5, atol=1e-6)  # the best, in order
            assert (np.diff(got_s) <= 0).all()


def test_kernel_query_refuses_bad_input_by_name() -> None:
    terms, indptr, docs, tf = postings([(np.array([1, 2], np.int32), np.ones(2, np.float32))] * 3)
    norm = np.ones(3, np.float32)
    q, qc = np.array([1], np.int32), np.ones(1, np.float32)
    args = (terms, indptr, docs, tf, norm, 1.2, 2, 3)
    with pytest.raises(ValueError, match="counts must be finite and >= 0"):
        kernels.bm25_query(q, -qc, *args)
    with pytest.raises(ValueError, match="counts has 2 entries"):
        kernels.bm25_query(q, np.ones(2), *args)
    with pytest.raises(ValueError, match="indptr must have length 3"):
        kernels.bm25_query(q, qc, terms, indptr[:2], docs, tf, norm, 1.2, 2, 3)
    with pytest.raises(TypeError, match="docs"):
        kernels.bm25_query(q, qc, terms, indptr, docs.astype(np.int64), tf, norm, 1.2, 2, 3)
    with pytest.raises(ValueError, match="tf has"):
        kernels.bm25_query(q, qc, terms, indptr, docs, tf[:2], norm, 1.2, 2, 3)
    with pytest.raises(ValueError, match="mask"):
        kernels.bm25_query(q, qc, *args, mask=np.ones(2, bool))
    with pytest.raises(ValueError, match="k1"):
        kernels.bm25_query(q, qc, terms, indptr, docs, tf, norm, float("nan"), 2, 3)
    with pytest.raises(ValueError, match="document out of range"):
        kernels.bm25_query(q, qc, terms, indptr, docs, tf, norm[:1], 1.2, 2, 3)
    with pytest.raises(ValueError, match="offsets"):
        kernels.bm25_query(q, qc, terms, np.array([0, 7, 6], np.int64), docs, tf, norm, 1.2, 2, 10)
    with pytest.raises(ValueError, match="df above n_total"):
        kernels.bm25_query(q, qc, *args[:-1], 1, df_total=np.array([3], np.int64))

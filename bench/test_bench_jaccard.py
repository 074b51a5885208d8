"""Jaccard top-10 over 100,000 id-sets (~64 ids each, Zipf-like over a 30,000-id vocabulary; see _data).

Group jaccard-1q (report only, no target): engramdb jaccard_topk on CSR (reference) vs
  * numba @njit CSR loop with a byte marker array of the query, then argpartition;
  * numpy: marker array, gather + np.add.reduceat per row, then argpartition;
  * simsimd, two ways, since it has no sparse-set-vs-many kernel:
      - cdist(metric="jaccard", dtype="bin8") on packed 30,000-bit indicator rows (its native set
        Jaccard; the packed matrix is 375 MB vs 26 MB of CSR ids, built outside the timing);
      - simsimd.intersect(query, row) on sorted uint16 id arrays in a Python loop (sparse, but one
        Python call per row).
All single-threaded.
"""

from __future__ import annotations

import functools
from typing import Any

import engramdb.kernels as ek
import numpy as np
from _data import VOCAB, K, jaccard_sets, run, tag

GROUP = "jaccard-1q"


@functools.cache
def _csr() -> tuple[np.ndarray, np.ndarray]:
    sets, _ = jaccard_sets()
    return ek.csr_from_sets(sets)


def _query() -> np.ndarray:
    return jaccard_sets()[1][0]


@functools.cache
def _reference() -> np.ndarray:
    indptr, indices = _csr()
    q = _query()
    marker = np.zeros(VOCAB, np.int64)
    marker[q] = 1
    inter = np.add.reduceat(marker[indices], indptr[:-1])
    return inter / (len(q) + np.diff(indptr) - inter)


def _check(idx: Any, scores: Any) -> None:
    ref = _reference()
    idx = np.asarray(idx).reshape(-1)
    scores = np.asarray(scores, np.float64).reshape(-1)
    np.testing.assert_allclose(np.sort(scores)[::-1], np.sort(ref)[::-1][:K], rtol=1e-6)
    np.testing.assert_allclose(ref[idx], scores, rtol=1e-6)


def _topk_from(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    part = np.argpartition(-scores, K)[:K]
    order = np.argsort(-scores[part], kind="stable")
    return part[order], scores[part[order]]


@functools.cache
def _numba_jaccard(numba: Any) -> Any:
    @numba.njit(nogil=True)
    def jaccard_all(q, indptr, indices, vocab):
        marker = np.zeros(vocab, np.uint8)
        for t in q:
            marker[t] = 1
        nq = len(q)
        n = len(indptr) - 1
        out = np.empty(n, np.float32)
        for r in range(n):
            lo = indptr[r]
            hi = indptr[r + 1]
            inter = 0
            for p in range(lo, hi):
                inter += marker[indices[p]]
            union = nq + (hi - lo) - inter
            out[r] = inter / union if union > 0 else 0.0
        return out

    return jaccard_all


def test_jaccard_engramdb(benchmark):
    indptr, indices = _csr()
    q = _query()
    benchmark.group = GROUP
    tag(benchmark, "engramdb jaccard_topk (CSR)", role="engramdb", reference=True, threads=1)
    r = run(benchmark, lambda: ek.jaccard_topk(q, indptr, indices, K))
    _check(r.indices, r.scores)


def test_jaccard_numba(benchmark, numba):
    indptr, indices = _csr()
    q = _query()
    jac = _numba_jaccard(numba)
    jac(q, indptr, indices, VOCAB)  # compile + warm up outside the timing
    benchmark.group = GROUP
    tag(benchmark, "numba @njit CSR loop (marker array) + argpartition", threads=1)
    idx, sc = run(benchmark, lambda: _topk_from(jac(q, indptr, indices, VOCAB)))
    _check(idx, sc)


def test_jaccard_numpy(benchmark):
    indptr, indices = _csr()
    q = _query()
    lens = np.diff(indptr)
    starts = indptr[:-1]

    def f():
        marker = np.zeros(VOCAB, np.int32)
        marker[q] = 1
        inter = np.add.reduceat(marker[indices], starts)
        return _topk_from(inter / (len(q) + lens - inter))

    benchmark.group = GROUP
    tag(benchmark, "numpy marker gather + add.reduceat + argpartition", threads=1)
    idx, sc = run(benchmark, f)
    _check(idx, sc)


@functools.cache
def _packed_bits() -> np.ndarray:
    indptr, indices = _csr()
    n = len(indptr) - 1
    out = np.empty((n, (VOCAB + 7) // 8), np.uint8)
    chunk = 10_000
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        blk = np.zeros((b - a, VOCAB), np.uint8)
        rows = np.repeat(np.arange(b - a), np.diff(indptr[a : b + 1]))
        blk[rows, indices[indptr[a] : indptr[b]]] = 1
        out[a:b] = np.packbits(blk, axis=1)
    return out


def test_jaccard_simsimd_bits(benchmark, simsimd):
    B = _packed_bits()
    qbits = np.zeros(VOCAB, np.uint8)
    qbits[_query()] = 1
    qb = np.packbits(qbits)[None]

    def f():
        dist = np.asarray(simsimd.cdist(qb, B, metric="jaccard", dtype="bin8"))[0]
        return _topk_from(1.0 - dist)

    benchmark.group = GROUP
    tag(
        benchmark,
        "simsimd cdist(jaccard, bin8) on packed 30k-bit rows",
        threads=1,
        note="dense 375 MB bitset matrix",
    )
    idx, sc = run(benchmark, f, rounds=7)
    _check(idx, sc)


def test_jaccard_simsimd_intersect(benchmark, simsimd):
    sets, _ = jaccard_sets()
    rows = [s.astype(np.uint16) for s in sets]  # ids < 30,000 fit uint16 (faster than uint32 here)
    lens = np.array([len(r) for r in rows], np.float64)
    q = _query().astype(np.uint16)
    nq = len(q)
    intersect = simsimd.intersect

    def f():
        inter = np.fromiter((intersect(q, r) for r in rows), np.float64, count=len(rows))
        return _topk_from(inter / (nq + lens - inter))

    benchmark.group = GROUP
    tag(benchmark, "simsimd.intersect per row (uint16), Python loop", threads=1)
    idx, sc = run(benchmark, f, rounds=3)
    _check(idx, sc)

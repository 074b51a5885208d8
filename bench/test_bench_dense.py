"""Dense float32 exact top-10 (inner product) over 100,000 x 384 unit vectors.

Groups
  dense-1q[<data>]   one query: engramdb vs numpy, faiss IndexFlatIP, simsimd cdist, usearch exact,
                     plus engramdb's read-bandwidth probe (the ceiling of any scan of this matrix).
  dense-64q[<data>]  64 queries at once: engramdb threads=1/2 vs numpy BLAS (as a user writes it)
                     and faiss flat (BLAS path: distance_compute_blas_threshold = 20).
Thread counts: engramdb as labelled; numpy's OpenBLAS at its default (see the report header; 2 here),
plus, for context only, numpy limited to 1 BLAS thread and engramdb threads=2 in the one-query group;
faiss forced to 1 OpenMP thread (conftest); simsimd and usearch called with threads=1.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import engramdb.kernels as ek
from _data import DATASETS, K, dense, numpy_topk_1, run, tag

BATCH = 64


def _check(idx: np.ndarray, scores: np.ndarray, X: np.ndarray, q: np.ndarray) -> None:
    """Correct top-k: scores are the true dot products of the returned rows and equal the exact top-k."""
    idx = np.asarray(idx).reshape(-1)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    s = X @ q
    ref = np.sort(s)[::-1][: len(idx)]
    np.testing.assert_allclose(s[idx], scores, atol=2e-5)
    np.testing.assert_allclose(np.sort(scores)[::-1], ref, atol=2e-5)
    assert len(set(idx.tolist())) == len(idx)


def numpy_topk_batch(X: np.ndarray, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    S = X @ Q.T  # (n, q)
    part = np.argpartition(-S, k, axis=0)[:k]  # (k, q)
    sc = np.take_along_axis(S, part, axis=0)
    order = np.argsort(-sc, axis=0)
    return np.take_along_axis(part, order, axis=0).T, np.take_along_axis(sc, order, axis=0).T


@functools.lru_cache(maxsize=None)
def _faiss_ip(name: str, faiss_mod: object) -> object:
    X = dense(name).X
    index = faiss_mod.IndexFlatIP(X.shape[1])  # type: ignore[attr-defined]
    index.add(X)
    return index


# ------------------------------------------------------------------------------------ one query
@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_engramdb(benchmark, data):
    d = dense(data)
    q = d.Q[0]
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "engramdb topk", role="engramdb", reference=True, threads=1, bytes=d.X.nbytes)
    r = run(benchmark, lambda: ek.topk(q, d.X, K))
    _check(r.indices, r.scores, d.X, q)
    ref_idx, _ = numpy_topk_1(d.X, q, K)
    assert set(np.asarray(r.indices).tolist()) == set(ref_idx.tolist())


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_probe(benchmark, data):
    d = dense(data)
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "engramdb read_bandwidth_probe (ceiling)", role="ceiling", threads=1, bytes=d.X.nbytes)
    total = run(benchmark, lambda: ek.read_bandwidth_probe(d.X))
    assert np.isfinite(total)


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_numpy(benchmark, data):
    d = dense(data)
    q = d.Q[0]
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "numpy X@q + argpartition", threads="BLAS default", bytes=d.X.nbytes)
    idx, sc = run(benchmark, lambda: numpy_topk_1(d.X, q, K))
    _check(idx, sc, d.X, q)


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_engramdb_threads2(benchmark, data):
    d = dense(data)
    q = d.Q[0]
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "engramdb topk threads=2 (context)", role="engramdb", threads=2, bytes=d.X.nbytes)
    r = run(benchmark, lambda: ek.topk(q, d.X, K, threads=2))
    _check(r.indices, r.scores, d.X, q)


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_numpy_1thread(benchmark, data):
    """Context only: numpy with OpenBLAS limited to 1 thread (the default-threads row is the peer)."""
    from threadpoolctl import threadpool_limits

    d = dense(data)
    q = d.Q[0]
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "numpy X@q + argpartition, BLAS 1 thread (context)", role="context", threads=1,
        bytes=d.X.nbytes)
    with threadpool_limits(limits=1, user_api="blas"):
        idx, sc = run(benchmark, lambda: numpy_topk_1(d.X, q, K))
    _check(idx, sc, d.X, q)


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_faiss(benchmark, data, faiss):
    d = dense(data)
    q = d.Q[:1]
    index = _faiss_ip(data, faiss)
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "faiss IndexFlatIP", threads=1, bytes=d.X.nbytes)
    D_, I_ = run(benchmark, lambda: index.search(q, K))
    _check(I_[0], D_[0], d.X, d.Q[0])


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_simsimd(benchmark, data, simsimd):
    d = dense(data)
    q2 = d.Q[:1]

    def f():
        # float32 output: faster than the float64 default on this machine (fairest simsimd form)
        s = np.asarray(simsimd.cdist(q2, d.X, metric="dot", out_dtype="float32"))[0]
        part = np.argpartition(-s, K)[:K]
        order = np.argsort(-s[part])
        return part[order], s[part[order]]

    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "simsimd cdist(dot) + argpartition", threads=1, bytes=d.X.nbytes)
    idx, sc = run(benchmark, f)
    _check(idx, sc, d.X, d.Q[0])


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_usearch(benchmark, data, usearch_index):
    d = dense(data)
    q = d.Q[0]
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "usearch search(exact=True, IP)", threads=1, bytes=d.X.nbytes)
    m = run(
        benchmark,
        lambda: usearch_index.search(d.X, q, K, usearch_index.MetricKind.IP, exact=True, threads=1),
    )
    # usearch reports IP as a distance 1 - <q, x>
    _check(np.asarray(m.keys, dtype=np.int64), 1.0 - np.asarray(m.distances, np.float64), d.X, q)


# ------------------------------------------------------------------------------------ 64 queries
def _check_batch(idx: np.ndarray, scores: np.ndarray, X: np.ndarray, Q: np.ndarray) -> None:
    ref_idx, ref_sc = numpy_topk_batch(X, Q, K)
    idx = np.asarray(idx)
    scores = np.asarray(scores, dtype=np.float64)
    assert idx.shape == (len(Q), K)
    np.testing.assert_allclose(np.sort(scores, axis=1)[:, ::-1], ref_sc, atol=2e-5)
    agree = np.mean([len(set(a.tolist()) & set(b.tolist())) / K for a, b in zip(idx, ref_idx)])
    assert agree >= 0.999, agree


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("data", DATASETS)
def test_dense_64q_engramdb(benchmark, data, threads):
    d = dense(data)
    Q = d.Q[:BATCH]
    benchmark.group = f"dense-64q[{data}]"
    tag(benchmark, f"engramdb topk threads={threads}", role="engramdb", reference=threads == 2,
        threads=threads, queries=BATCH)
    r = run(benchmark, lambda: ek.topk(Q, d.X, K, threads=threads), rounds=7)
    _check_batch(r.indices, r.scores, d.X, Q)


@pytest.mark.parametrize("data", DATASETS)
def test_dense_64q_numpy(benchmark, data):
    d = dense(data)
    Q = d.Q[:BATCH]
    benchmark.group = f"dense-64q[{data}]"
    tag(benchmark, "numpy X@Q.T + argpartition(axis=0)", threads="BLAS default", queries=BATCH)
    idx, sc = run(benchmark, lambda: numpy_topk_batch(d.X, Q, K), rounds=7)
    _check_batch(idx, sc, d.X, Q)


@pytest.mark.parametrize("data", DATASETS)
def test_dense_64q_faiss(benchmark, data, faiss):
    d = dense(data)
    Q = d.Q[:BATCH]
    index = _faiss_ip(data, faiss)
    benchmark.group = f"dense-64q[{data}]"
    tag(benchmark, "faiss IndexFlatIP (BLAS threshold 20)", threads=1, queries=BATCH)
    D_, I_ = run(benchmark, lambda: index.search(Q, K), rounds=7)
    _check_batch(I_, D_, d.X, Q)

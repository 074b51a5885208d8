"""Dense float32 exact top-10 (inner product) over 100,000 x 384 unit vectors.

Groups
  dense-1q[<data>]   one query: engramdb vs numpy, faiss IndexFlatIP, simsimd cdist, usearch exact,
                     plus engramdb's read-bandwidth probe (the ceiling of any scan of this matrix).
  dense-64q[<data>]  64 queries at once: engramdb threads=1/2 vs numpy BLAS (as a user writes it)
                     and faiss flat (BLAS path: distance_compute_blas_threshold = 20).
Thread counts: engramdb as labelled; numpy's OpenBLAS at its default (see the report header; 2 here),
plus, for context only, numpy limited to 1 BLAS thread and engramdb threads=2 in the one-query group;
faiss forced to 1 OpenMP thread (conftest); simsimd and usearch called with threads=1.

The reference engramdb bench of each group also runs an interleaved A/B measurement against the
group's peers (extra_info["paired"], see _data.paired), which report.py uses to judge the targets.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import engramdb.kernels as ek
import numpy as np
import pytest
from _data import DATASETS, Dense, K, dense, numpy_topk_1, optional_peer, paired, run, tag

BATCH = 64
Fn = Callable[[], Any]


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


@functools.cache
def _faiss_ip(name: str, faiss_mod: Any) -> Any:
    X = dense(name).X
    index = faiss_mod.IndexFlatIP(X.shape[1])
    index.add(X)
    return index


# ------------------------------------------------------------------- one-query callables (shared)
def fn_engramdb(d: Dense, threads: int = 1) -> Fn:
    q = d.Q[0]
    return lambda: ek.topk(q, d.X, K, threads=threads)


def fn_probe(d: Dense) -> Fn:
    return lambda: ek.read_bandwidth_probe(d.X)


def fn_numpy(d: Dense) -> Fn:
    q = d.Q[0]
    return lambda: numpy_topk_1(d.X, q, K)


def fn_numpy_1thread(d: Dense) -> Fn:
    """numpy with OpenBLAS limited to one thread for the call (context only)."""
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()  # library scan once, outside the timed calls
    f = fn_numpy(d)

    def g() -> Any:
        with controller.limit(limits=1, user_api="blas"):
            return f()

    return g


def fn_faiss(d: Dense, faiss: Any) -> Fn:
    index = _faiss_ip(d.name, faiss)
    q = d.Q[:1]
    return lambda: index.search(q, K)


def fn_simsimd(d: Dense, simsimd: Any) -> Fn:
    q2 = d.Q[:1]

    def f() -> tuple[np.ndarray, np.ndarray]:
        # float32 output: faster than the float64 default on this machine (fairest simsimd form)
        s = np.asarray(simsimd.cdist(q2, d.X, metric="dot", out_dtype="float32"))[0]
        part = np.argpartition(-s, K)[:K]
        order = np.argsort(-s[part])
        return part[order], s[part[order]]

    return f


def fn_usearch(d: Dense, usearch_index: Any) -> Fn:
    q = d.Q[0]
    return lambda: usearch_index.search(d.X, q, K, usearch_index.MetricKind.IP, exact=True, threads=1)


# ------------------------------------------------------------------------------------ one query
@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_engramdb(benchmark, request, data):
    d = dense(data)
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "engramdb topk", role="engramdb", reference=True, threads=1, bytes=d.X.nbytes)
    r = run(benchmark, fn_engramdb(d))
    _check(r.indices, r.scores, d.X, d.Q[0])
    ref_idx, _ = numpy_topk_1(d.X, d.Q[0], K)
    assert set(np.asarray(r.indices).tolist()) == set(ref_idx.tolist())

    fns = {
        "engramdb": fn_engramdb(d),
        "probe": fn_probe(d),
        "numpy": fn_numpy(d),
        "engramdb_t2": fn_engramdb(d, threads=2),
        "numpy_1thread": fn_numpy_1thread(d),
    }
    for key, fixture, make in (
        ("faiss", "faiss", fn_faiss),
        ("simsimd", "simsimd", fn_simsimd),
        ("usearch", "usearch_index", fn_usearch),
    ):
        mod = optional_peer(request, fixture)
        if mod is not None:
            fns[key] = make(d, mod)
    benchmark.extra_info["paired"] = paired(fns, "engramdb", reps=25)


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_probe(benchmark, data):
    d = dense(data)
    benchmark.group = f"dense-1q[{data}]"
    tag(
        benchmark,
        "engramdb read_bandwidth_probe (ceiling)",
        role="ceiling",
        key="probe",
        threads=1,
        bytes=d.X.nbytes,
    )
    total = run(benchmark, fn_probe(d))
    assert np.isfinite(total)


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_engramdb_threads2(benchmark, data):
    d = dense(data)
    benchmark.group = f"dense-1q[{data}]"
    tag(
        benchmark,
        "engramdb topk threads=2 (context)",
        role="engramdb",
        key="engramdb_t2",
        threads=2,
        bytes=d.X.nbytes,
    )
    r = run(benchmark, fn_engramdb(d, threads=2))
    _check(r.indices, r.scores, d.X, d.Q[0])


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_numpy(benchmark, data):
    d = dense(data)
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "numpy X@q + argpartition", key="numpy", threads="BLAS default", bytes=d.X.nbytes)
    idx, sc = run(benchmark, fn_numpy(d))
    _check(idx, sc, d.X, d.Q[0])


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_numpy_1thread(benchmark, data):
    """Context only: numpy with OpenBLAS limited to 1 thread (the default-threads row is the peer)."""
    from threadpoolctl import threadpool_limits

    d = dense(data)
    benchmark.group = f"dense-1q[{data}]"
    tag(
        benchmark,
        "numpy X@q + argpartition, BLAS 1 thread (context)",
        role="context",
        key="numpy_1thread",
        threads=1,
        bytes=d.X.nbytes,
    )
    with threadpool_limits(limits=1, user_api="blas"):
        idx, sc = run(benchmark, fn_numpy(d))
    _check(idx, sc, d.X, d.Q[0])


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_faiss(benchmark, data, faiss):
    d = dense(data)
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "faiss IndexFlatIP", key="faiss", threads=1, bytes=d.X.nbytes)
    D_, I_ = run(benchmark, fn_faiss(d, faiss))
    _check(I_[0], D_[0], d.X, d.Q[0])


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_simsimd(benchmark, data, simsimd):
    d = dense(data)
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "simsimd cdist(dot) + argpartition", key="simsimd", threads=1, bytes=d.X.nbytes)
    idx, sc = run(benchmark, fn_simsimd(d, simsimd))
    _check(idx, sc, d.X, d.Q[0])


@pytest.mark.parametrize("data", DATASETS)
def test_dense_1q_usearch(benchmark, data, usearch_index):
    d = dense(data)
    benchmark.group = f"dense-1q[{data}]"
    tag(benchmark, "usearch search(exact=True, IP)", key="usearch", threads=1, bytes=d.X.nbytes)
    m = run(benchmark, fn_usearch(d, usearch_index))
    # usearch reports IP as a distance 1 - <q, x>
    _check(np.asarray(m.keys, dtype=np.int64), 1.0 - np.asarray(m.distances, np.float64), d.X, d.Q[0])


# ------------------------------------------------------------------------------------ 64 queries
def _check_batch(idx: np.ndarray, scores: np.ndarray, X: np.ndarray, Q: np.ndarray) -> None:
    ref_idx, ref_sc = numpy_topk_batch(X, Q, K)
    idx = np.asarray(idx)
    scores = np.asarray(scores, dtype=np.float64)
    assert idx.shape == (len(Q), K)
    np.testing.assert_allclose(np.sort(scores, axis=1)[:, ::-1], ref_sc, atol=2e-5)
    agree = np.mean([len(set(a.tolist()) & set(b.tolist())) / K for a, b in zip(idx, ref_idx)])
    assert agree >= 0.999, agree


@pytest.mark.parametrize("threads", [2, 1])
@pytest.mark.parametrize("data", DATASETS)
def test_dense_64q_engramdb(benchmark, request, data, threads):
    d = dense(data)
    Q = d.Q[:BATCH]
    benchmark.group = f"dense-64q[{data}]"
    tag(
        benchmark,
        f"engramdb topk threads={threads}",
        role="engramdb",
        reference=threads == 2,
        key=f"engramdb_t{threads}",
        threads=threads,
        queries=BATCH,
    )
    r = run(benchmark, lambda: ek.topk(Q, d.X, K, threads=threads), rounds=7)
    _check_batch(r.indices, r.scores, d.X, Q)
    if threads == 2:
        fns = {
            "engramdb_t2": lambda: ek.topk(Q, d.X, K, threads=2),
            "engramdb_t1": lambda: ek.topk(Q, d.X, K, threads=1),
            "numpy": lambda: numpy_topk_batch(d.X, Q, K),
        }
        faiss = optional_peer(request, "faiss")
        if faiss is not None:
            index = _faiss_ip(data, faiss)
            fns["faiss"] = lambda: index.search(Q, K)
        benchmark.extra_info["paired"] = paired(fns, "engramdb_t2", reps=5)


@pytest.mark.parametrize("data", DATASETS)
def test_dense_64q_numpy(benchmark, data):
    d = dense(data)
    Q = d.Q[:BATCH]
    benchmark.group = f"dense-64q[{data}]"
    tag(benchmark, "numpy X@Q.T + argpartition(axis=0)", key="numpy", threads="BLAS default", queries=BATCH)
    idx, sc = run(benchmark, lambda: numpy_topk_batch(d.X, Q, K), rounds=7)
    _check_batch(idx, sc, d.X, Q)


@pytest.mark.parametrize("data", DATASETS)
def test_dense_64q_faiss(benchmark, data, faiss):
    d = dense(data)
    Q = d.Q[:BATCH]
    index = _faiss_ip(data, faiss)
    benchmark.group = f"dense-64q[{data}]"
    tag(benchmark, "faiss IndexFlatIP (BLAS threshold 20)", key="faiss", threads=1, queries=BATCH)
    D_, I_ = run(benchmark, lambda: index.search(Q, K), rounds=7)
    _check_batch(I_, D_, d.X, Q)

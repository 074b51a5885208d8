"""Centroid maintenance at d = 384.

Group centroid-update: a batch of 10,000 (node, vector) running-mean updates into 1,000 centroids,
c <- c + (v - c) / (n + 1), n <- n + 1, applied in order: engramdb centroid_update (reference) vs a
numba @njit loop doing the same sequential update. Each round starts from fresh copies (copy made in
the untimed setup). extra_info["items"] = 10,000 so the report also gives the per-update time. The
reference bench also runs an interleaved A/B measurement against numba (extra_info["paired"]).

Group assign-nearest: 10,000 vectors vs 1,000 centroids, squared-L2 argmin: engramdb assign_nearest
(threads=1 reference, threads=2 context) vs numpy (||c||^2 - 2 V C^T, argmin; BLAS default threads) and
faiss IndexFlatL2.search(k=1) with 1 thread, for reference (no target).
"""

from __future__ import annotations

import functools
from typing import Any

import engramdb.kernels as ek
import numpy as np
import pytest
from _data import ASSIGN_N, CENT_UPDATES, centroid_data, dense, optional_peer, paired, run, tag

UPDATE_GROUP = "centroid-update"
ASSIGN_GROUP = "assign-nearest"


def _fresh() -> tuple[tuple[np.ndarray, np.ndarray], dict[str, Any]]:
    cent, counts, _, _ = centroid_data()
    return (cent.copy(), counts.copy()), {}


def _reference() -> tuple[np.ndarray, np.ndarray]:
    cent, counts, nodes, vecs = centroid_data()
    c = cent.astype(np.float64)
    n = counts.copy()
    for i, v in zip(nodes, vecs.astype(np.float64)):
        c[i] += (v - c[i]) / (n[i] + 1)
        n[i] += 1
    return c, n


@functools.cache
def _numba_update(numba: Any) -> Any:
    @numba.njit(nogil=True)
    def centroid_update(cent, counts, nodes, vecs):
        m, d = vecs.shape
        for p in range(m):
            i = nodes[p]
            n = counts[i] + 1
            w = np.float32(1.0) / np.float32(n)
            for j in range(d):
                cent[i, j] += (vecs[p, j] - cent[i, j]) * w
            counts[i] = n

    return centroid_update


def _check_update(cent: np.ndarray, counts: np.ndarray) -> None:
    ref_c, ref_n = _reference()
    np.testing.assert_array_equal(counts, ref_n)
    np.testing.assert_allclose(cent, ref_c, atol=2e-5)


def test_centroid_update_engramdb(benchmark, request):
    _, _, nodes, vecs = centroid_data()
    last: dict[str, np.ndarray] = {}

    def f(cent, counts):
        ek.centroid_update(cent, counts, nodes, vecs)
        last["c"], last["n"] = cent, counts

    benchmark.group = UPDATE_GROUP
    tag(benchmark, "engramdb centroid_update", role="engramdb", reference=True, threads=1, items=CENT_UPDATES)
    benchmark.pedantic(f, setup=_fresh, rounds=60, warmup_rounds=2)
    _check_update(last["c"], last["n"])

    numba = optional_peer(request, "numba")
    if numba is not None:
        # Interleaved A/B; each side keeps folding into its own arrays (the cost does not depend on
        # the values), so no copy is timed on either side.
        upd = _numba_update(numba)
        (ce, ne), _ = _fresh()
        (cn, nn), _ = _fresh()
        benchmark.extra_info["paired"] = paired(
            {
                "engramdb": lambda: ek.centroid_update(ce, ne, nodes, vecs),
                "numba": lambda: upd(cn, nn, nodes, vecs),
            },
            "engramdb",
            reps=60,
        )


def test_centroid_update_numba(benchmark, numba):
    _, _, nodes, vecs = centroid_data()
    upd = _numba_update(numba)
    (c0, n0), _ = _fresh()
    upd(c0, n0, nodes, vecs)  # compile + warm up outside the timing
    last: dict[str, np.ndarray] = {}

    def f(cent, counts):
        upd(cent, counts, nodes, vecs)
        last["c"], last["n"] = cent, counts

    benchmark.group = UPDATE_GROUP
    tag(benchmark, "numba @njit sequential loop", key="numba", threads=1, items=CENT_UPDATES)
    benchmark.pedantic(f, setup=_fresh, rounds=60, warmup_rounds=2)
    _check_update(last["c"], last["n"])


# ------------------------------------------------------------------------------------ assignment
@functools.cache
def _assign_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    V = np.ascontiguousarray(dense("clustered").X[:ASSIGN_N])
    C, _, _, _ = centroid_data()
    # exact float64 reference labels
    d2 = (C.astype(np.float64) ** 2).sum(1)[None, :] - 2.0 * V.astype(np.float64) @ C.T.astype(np.float64)
    return V, C, d2.argmin(axis=1)


def _check_labels(labels: Any) -> None:
    _, _, ref = _assign_data()
    agree = float(np.mean(np.asarray(labels).reshape(-1) == ref))
    assert agree >= 0.999, agree


@pytest.mark.parametrize("threads", [1, 2])
def test_assign_engramdb(benchmark, threads):
    V, C, _ = _assign_data()
    benchmark.group = ASSIGN_GROUP
    tag(
        benchmark,
        f"engramdb assign_nearest l2 threads={threads}",
        role="engramdb",
        reference=threads == 1,
        threads=threads,
        items=ASSIGN_N,
    )
    r = run(benchmark, lambda: ek.assign_nearest(V, C, "l2", threads=threads), rounds=10)
    _check_labels(r.labels)


def test_assign_numpy(benchmark):
    V, C, _ = _assign_data()

    def f():
        d2 = (C * C).sum(axis=1)[None, :] - 2.0 * (V @ C.T)
        return d2.argmin(axis=1)

    benchmark.group = ASSIGN_GROUP
    tag(benchmark, "numpy ||c||^2 - 2 V C^T, argmin", threads="BLAS default", items=ASSIGN_N)
    labels = run(benchmark, f, rounds=10)
    _check_labels(labels)


def test_assign_faiss(benchmark, faiss):
    V, C, _ = _assign_data()
    index = faiss.IndexFlatL2(C.shape[1])
    index.add(C)
    benchmark.group = ASSIGN_GROUP
    tag(benchmark, "faiss IndexFlatL2 search k=1", threads=1, items=ASSIGN_N)
    _, labels = run(benchmark, lambda: index.search(V, 1), rounds=10)
    _check_labels(labels[:, 0])

"""Keyed exact rescoring: the pipeline's dense stage (issue: Hybrid retrieval) as a kernel.

100,000 x 384 float32 vectors (a store's 10 segments of 10,000 rows each), one query, 11,000
candidate keys (10,000 from one method plus 1,000 from another, 500 of them repeats, in no
order), top 1,000 by cosine. engramdb: `kernels.rescore_keys` over the 10 segment matrices
(keys scored once, rows requested ahead, threads=1 and threads=2). The numpy way a user would
write it over one stacked, pre-normalised matrix: `np.unique(keys)`, gather, matrix-vector
product, argpartition + argsort of the best 1,000. Same keys for both, checked equal first.
Ratios: numpy time / engramdb time (> 1: engramdb faster).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from engramdb import kernels

N, D, SEGMENTS, K = 100_000, 384, 10, 1_000
QUERIES = 32


def _data() -> tuple[list[np.ndarray], np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D)).astype(np.float32)
    mats = np.split(X, SEGMENTS)
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    Q = rng.standard_normal((QUERIES, D)).astype(np.float32)
    keys = []
    for _ in range(QUERIES):
        a = rng.choice(N, 10_000, replace=False)
        b = np.concatenate([rng.choice(a, 500, replace=False), rng.choice(N, 500, replace=False)])
        keys.append(np.concatenate([a, b]).astype(np.int64))
    return [np.ascontiguousarray(m) for m in mats], unit, Q, keys


DATA = _data()


def _numpy(i: int) -> tuple[np.ndarray, np.ndarray]:
    _, unit, Q, keys = DATA
    u = np.unique(keys[i])
    q = Q[i] / np.linalg.norm(Q[i])
    s = unit[u] @ q
    top = np.argpartition(-s, K - 1)[:K]
    top = top[np.lexsort((u[top], -s[top]))]
    return u[top], s[top]


def _engramdb(i: int, threads: int) -> tuple[np.ndarray, np.ndarray]:
    mats, _, Q, keys = DATA
    got = kernels.rescore_keys(Q[i], mats, keys[i], K, "cosine", threads=threads)
    return got.indices, got.scores


def _run(fn: Any) -> Any:
    def block() -> None:
        for i in range(QUERIES):
            fn(i)
    return block


def test_results_agree() -> None:
    for i in range(4):
        a_k, a_s = _numpy(i)
        b_k, b_s = _engramdb(i, 2)
        assert len(set(a_k.tolist()) ^ set(b_k.tolist())) <= 4  # float32 ties at the cut may differ
        np.testing.assert_allclose(np.sort(b_s), np.sort(a_s), atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_rescore_engramdb(benchmark: Any, threads: int) -> None:
    benchmark.group = "rescore-keys"
    benchmark.extra_info.update({"rows": N, "segments": SEGMENTS, "keys": 11_000, "k": K, "queries": QUERIES})
    benchmark.pedantic(_run(lambda i: _engramdb(i, threads)), rounds=15, warmup_rounds=1)


def test_rescore_numpy(benchmark: Any) -> None:
    benchmark.group = "rescore-keys"
    benchmark.extra_info.update({"rows": N, "keys": 11_000, "k": K, "queries": QUERIES,
                                 "note": "one stacked pre-normalised matrix; unique + gather + matvec + argpartition"})
    benchmark.pedantic(_run(_numpy), rounds=15, warmup_rounds=1)

"""Compressed storage, one query, top-10: int8 (with exact float32 rescoring) and float16.

Group int8-1q[<data>]: engramdb topk(q, quantize_i8(X), 10, rescore=X) (the reference) vs numpy on the
float32 matrix; also engramdb on float16 rows, int8 without rescoring and plain float32 for context.
quantize_i8 / astype(float16) run once, outside the timing. recall@10 against exact float32 (numpy)
over 100 fresh queries is measured here and stored in extra_info["recall@10"]; the reference bench also
runs an interleaved A/B measurement (extra_info["paired"]) used to judge the speed target.
"""

from __future__ import annotations

import functools

import engramdb.kernels as ek
import numpy as np
import pytest
from _data import DATASETS, K, dense, exact_topk_numpy, numpy_topk_1, paired, recall_at_k, run, tag

RECALL_QUERIES = 100


@functools.cache
def _i8(name: str) -> ek.Int8Matrix:
    return ek.quantize_i8(dense(name).X)


@functools.cache
def _f16(name: str) -> np.ndarray:
    return np.ascontiguousarray(dense(name).X.astype(np.float16))


@functools.cache
def _truth(name: str) -> np.ndarray:
    d = dense(name)
    return exact_topk_numpy(d.X, d.Q[:RECALL_QUERIES], K)


def _recall(name: str, search) -> float:
    d = dense(name)
    found = np.stack([np.asarray(search(q).indices) for q in d.Q[:RECALL_QUERIES]])
    return recall_at_k(found, _truth(name))


@pytest.mark.parametrize("data", DATASETS)
def test_int8_rescore_engramdb(benchmark, data):
    d = dense(data)
    X8 = _i8(data)
    q = d.Q[0]
    rec = _recall(data, lambda v: ek.topk(v, X8, K, rescore=d.X))
    benchmark.group = f"int8-1q[{data}]"
    tag(
        benchmark,
        "engramdb int8 + f32 rescore",
        role="engramdb",
        reference=True,
        key="int8_rescore",
        threads=1,
        bytes=X8.codes.nbytes,
        **{"recall@10": rec},
    )
    r = run(benchmark, lambda: ek.topk(q, X8, K, rescore=d.X))
    # rescored scores are exact float32 dot products of the returned rows
    np.testing.assert_allclose(d.X[np.asarray(r.indices)] @ q, r.scores, atol=2e-5)
    X16 = _f16(data)
    benchmark.extra_info["paired"] = paired(
        {
            "int8_rescore": lambda: ek.topk(q, X8, K, rescore=d.X),
            "numpy_f32": lambda: numpy_topk_1(d.X, q, K),
            "f16": lambda: ek.topk(q, X16, K),
            "f32": lambda: ek.topk(q, d.X, K),
        },
        "int8_rescore",
        reps=25,
    )


@pytest.mark.parametrize("data", DATASETS)
def test_int8_numpy_f32(benchmark, data):
    d = dense(data)
    q = d.Q[0]
    benchmark.group = f"int8-1q[{data}]"
    tag(
        benchmark,
        "numpy f32 X@q + argpartition",
        key="numpy_f32",
        threads="BLAS default",
        bytes=d.X.nbytes,
        **{"recall@10": 1.0},
    )
    idx, _ = run(benchmark, lambda: numpy_topk_1(d.X, q, K))
    assert len(idx) == K


@pytest.mark.parametrize("data", DATASETS)
def test_int8_f16_engramdb(benchmark, data):
    d = dense(data)
    X16 = _f16(data)
    q = d.Q[0]
    rec = _recall(data, lambda v: ek.topk(v, X16, K))
    benchmark.group = f"int8-1q[{data}]"
    tag(
        benchmark,
        "engramdb float16 storage",
        role="engramdb",
        key="f16",
        threads=1,
        bytes=X16.nbytes,
        **{"recall@10": rec},
    )
    r = run(benchmark, lambda: ek.topk(q, X16, K))
    assert len(np.asarray(r.indices)) == K


@pytest.mark.parametrize("data", DATASETS)
def test_int8_norescore_engramdb(benchmark, data):
    d = dense(data)
    X8 = _i8(data)
    q = d.Q[0]
    rec = _recall(data, lambda v: ek.topk(v, X8, K))
    benchmark.group = f"int8-1q[{data}]"
    tag(
        benchmark,
        "engramdb int8, no rescore (estimates)",
        role="engramdb",
        threads=1,
        bytes=X8.codes.nbytes,
        **{"recall@10": rec},
    )
    r = run(benchmark, lambda: ek.topk(q, X8, K))
    assert len(np.asarray(r.indices)) == K


@pytest.mark.parametrize("data", DATASETS)
def test_int8_f32_engramdb(benchmark, data):
    d = dense(data)
    q = d.Q[0]
    benchmark.group = f"int8-1q[{data}]"
    tag(
        benchmark,
        "engramdb float32 (context)",
        role="engramdb",
        key="f32",
        threads=1,
        bytes=d.X.nbytes,
        **{"recall@10": 1.0},
    )
    r = run(benchmark, lambda: ek.topk(q, d.X, K))
    assert len(np.asarray(r.indices)) == K

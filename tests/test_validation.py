"""Bad input raises a clear TypeError/ValueError naming the argument; nothing crashes."""

from __future__ import annotations

import numpy as np
import pytest
from engramdb import _core, kernels

X = np.random.default_rng(0).standard_normal((20, 8)).astype(np.float32)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: kernels.topk(X[0], X.astype(np.float64), 3), TypeError, "matrix must have dtype float32 or float16"),
        (lambda: kernels.topk(X[0], X.astype(np.int32), 3), TypeError, "matrix must have dtype"),
        (lambda: kernels.topk(X[0], X.astype(np.int8), 3), TypeError, "quantize_i8"),
        (lambda: kernels.topk(X[0].astype(complex), X, 3), TypeError, "queries must be a real float array"),
        (lambda: kernels.topk(["a"] * 8, X, 3), TypeError, "queries"),
        (lambda: kernels.topk(X[0], X[0], 3), ValueError, "matrix must be 2-D"),
        (lambda: kernels.topk(X[None], X, 3), ValueError, "queries must be 1-D"),
        (lambda: kernels.topk(X[0, :5], X, 3), ValueError, "queries has dimension 5 but matrix has dimension 8"),
        (lambda: kernels.topk(X[0], X, 0), ValueError, "k must be >= 1"),
        (lambda: kernels.topk(X[0], X, -2), ValueError, "k must be >= 1"),
        (lambda: kernels.topk(X[0], X, 2.5), TypeError, "k must be an integer"),
        (lambda: kernels.topk(X[0], X, True), TypeError, "k must be an integer"),
        (lambda: kernels.topk(X[0], X, 3, metric="l1"), ValueError, "metric must be one of"),
        (lambda: kernels.topk(np.full(8, np.nan), X, 3), ValueError, "queries contains NaN or inf"),
        (lambda: kernels.topk(np.full(8, np.inf), X, 3), ValueError, "queries contains NaN or inf"),
        (lambda: kernels.topk(X[0], X[:, ::2], 3), ValueError, "matrix must be C-contiguous"),
        (lambda: kernels.topk(X[0], np.asfortranarray(X), 3), ValueError, "matrix must be C-contiguous"),
        (lambda: kernels.topk(X[0], X, 3, mask=np.ones(5, bool)), ValueError, "mask must be a 1-D bool array of length 20"),
        (lambda: kernels.topk(X[0], X, 3, mask=np.array([25])), ValueError, "mask allow-list holds row 25"),
        (lambda: kernels.topk(X[0], X, 3, mask=np.ones(20, np.float32)), TypeError, "mask must be a bool array"),
        (lambda: kernels.topk(X[0], X, 3, threads=0), ValueError, "threads must be >= 1"),
        (lambda: kernels.topk(X[0], kernels.quantize_i8(X), 3, rescore=X[:5]), ValueError, "rescore has shape"),
        (lambda: kernels.quantize_i8(X, scale=-1.0), ValueError, "scale must be a positive"),
        (lambda: kernels.hamming_topk(X[0], X, 3), TypeError, "queries must be packed bits"),
        (
            lambda: kernels.hamming_topk(np.zeros(3, np.uint8), np.zeros((4, 5), np.uint8), 3),
            ValueError,
            "queries have 3 bytes per code but codes have 5",
        ),
        (lambda: kernels.hamming_topk(np.zeros(3, np.uint8), np.zeros((4, 6), np.uint8)[:, ::2], 3), ValueError, "codes must be C-contiguous"),
        (lambda: kernels.jaccard_topk([1.5], np.array([0], np.int64), np.zeros(0, np.int32), 1), TypeError, "query must be a 1-D array of integer ids"),
        (lambda: kernels.jaccard_topk([-1], np.array([0], np.int64), np.zeros(0, np.int32), 1), ValueError, "query ids must lie in"),
        (lambda: kernels.jaccard_topk([1], np.array([0, 1], np.int64), np.zeros(1, np.int64), 1), TypeError, "indices must have dtype int32"),
        (lambda: kernels.jaccard_topk([1], np.array([0, 3], np.int64), np.zeros(1, np.int32), 1), ValueError, "indptr must start at 0 and end at len"),
        (lambda: kernels.jaccard_topk([1], np.array([0, 1], np.int64), np.zeros(1, np.int32), 1, weights=np.ones(1, np.float32)), ValueError, "given together"),
        (lambda: kernels.maxsim(X, X.astype(np.float64), np.array([0, 20])), TypeError, "doc_tokens must have dtype float32"),
        (lambda: kernels.maxsim(X, X, np.array([0, 20], np.int32)), TypeError, "offsets must have dtype int64"),
        (lambda: kernels.assign_nearest(X, np.zeros((0, 8)), "l2"), ValueError, "centroids must have at least one row"),
        (lambda: kernels.assign_nearest(X, X, "manhattan"), ValueError, "metric must be one of"),
        (lambda: kernels.cluster_sums(X, np.zeros(20, np.int64) + 3, 3), ValueError, "labels must lie in 0..2"),
        (lambda: kernels.cluster_sums(X, np.zeros(19, np.int64), 3), ValueError, "labels has 19 entries"),
    ],
)
def test_bad_input_is_named(call, exc, match) -> None:
    with pytest.raises(exc, match=match):
        call()


def test_nan_in_matrix_is_found_inside_the_scan() -> None:
    for dtype in (np.float32, np.float16):
        x = X.astype(dtype)
        x[13, 5] = np.nan
        with pytest.raises(ValueError, match="matrix row 13 contains NaN or inf"):
            kernels.topk(X[0], x, 3)
        x[13, 5] = np.inf
        for metric in ("dot", "cosine", "born"):
            with pytest.raises(ValueError, match="matrix row 13"):
                kernels.topk(X[0], x, 3, metric)
        # a masked-out bad row is never read, so it is no error
        mask = np.ones(20, bool)
        mask[13] = False
        assert 13 not in kernels.topk(X[0], x, 20, mask=mask).indices


def test_overflow_is_reported_not_ranked() -> None:
    x = np.full((3, 4), 3e38, np.float32)
    with pytest.raises(ValueError, match="overflows"):
        kernels.topk(np.full(4, 3e38, np.float32), x, 1)


def test_empty_shapes() -> None:
    idx, _ = kernels.topk(np.zeros((0, 8), np.float32), X, 3)
    assert idx.shape == (0, 3)
    idx, _ = kernels.topk(X[0], np.zeros((0, 8), np.float32), 3)
    assert idx.shape == (0,)
    idx, _ = kernels.topk(X[0], X, 3, mask=np.zeros(20, bool))
    assert idx.shape == (0,)


def test_native_layer_refuses_what_python_would_have_caught() -> None:
    """The bindings re-check shapes, so even a direct _core call cannot read out of bounds."""
    with pytest.raises((TypeError, ValueError)):
        _core.dense_topk(np.zeros((1, 4), np.float32), X, 0, 3, None, 1, False)
    with pytest.raises((TypeError, ValueError)):
        _core.dense_topk(np.zeros((1, 8), np.float64), X, 0, 3, None, 1, False)
    with pytest.raises((TypeError, ValueError)):
        _core.dense_topk(np.zeros((1, 8), np.float32), X, 0, 3, np.ones(3, np.uint8), 1, False)
    with pytest.raises(IndexError):
        _core.centroid_update(np.zeros((2, 8), np.float32), np.zeros(2, np.int64), np.array([5]), X[:1].copy())
    with pytest.raises(ValueError):
        _core.jaccard_topk(np.array([1], np.int32), None, np.array([0, 2, 1], np.int64), np.zeros(2, np.int32), None, 1)

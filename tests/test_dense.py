"""N1: fused top-k against the float64 numpy reference, on every backend, dtype and awkward size."""

from __future__ import annotations

import numpy as np
import pytest
import reference as ref
from engramdb import kernels
from hypothesis import given, settings
from hypothesis import strategies as st

SIZES = [0, 1, 7, 9, 1023]
DIMS = [1, 3, 384, 1024]
METRICS = ["dot", "cosine", "born"]


def check_topk(idx: np.ndarray, sc: np.ndarray, scores: np.ndarray, k: int, tol: float, mask=None) -> None:
    """Valid top-k: right length, sorted, scores match the reference, no better row left out."""
    n = scores.shape[1]
    allowed = np.ones(n, bool) if mask is None else np.asarray(mask, bool)
    want = min(k, int(allowed.sum()))
    assert idx.shape == (scores.shape[0], want) and sc.shape == idx.shape
    assert idx.dtype == np.int64 and sc.dtype == np.float32
    for j in range(scores.shape[0]):
        if want == 0:
            continue
        row = idx[j]
        assert len(set(row.tolist())) == want, "duplicate rows returned"
        assert allowed[row].all(), "a masked-out row was returned"
        np.testing.assert_allclose(sc[j], scores[j, row], atol=tol, rtol=0)
        assert np.all(np.diff(sc[j]) <= 0), "results not sorted best first"
        kth = np.sort(scores[j, allowed])[::-1][want - 1]
        assert scores[j, row].min() >= kth - 2 * tol, "a better row was left out"


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("metric", METRICS)
def test_topk_f32_matches_reference(isa: str, rng: np.random.Generator, n: int, d: int, metric: str) -> None:
    x = rng.standard_normal((n, d)).astype(np.float32)
    q = rng.standard_normal((3, d)).astype(np.float32)
    for k in (1, 5, n + 3):
        idx, sc = kernels.topk(q, x, k, metric)
        check_topk(idx, sc, ref.dense_scores(q, x, metric), k, ref.dense_tolerance(q, x, metric))


@pytest.mark.parametrize("n", [1, 9, 1023])
@pytest.mark.parametrize("d", [1, 3, 384])
@pytest.mark.parametrize("metric", METRICS)
def test_topk_f16_matches_reference(isa: str, rng: np.random.Generator, n: int, d: int, metric: str) -> None:
    x16 = rng.standard_normal((n, d)).astype(np.float16)
    q = rng.standard_normal((2, d)).astype(np.float32)
    idx, sc = kernels.topk(q, x16, 10, metric)
    # float16 rows widen exactly to float32, so the reference uses the rounded values.
    check_topk(idx, sc, ref.dense_scores(q, x16.astype(np.float32), metric), 10, ref.dense_tolerance(q, x16, metric))


@pytest.mark.parametrize("nq", [1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 64])
@pytest.mark.parametrize("d", [1, 37, 128, 129, 384])
def test_batch_sizes_hit_every_tile(isa: str, rng: np.random.Generator, nq: int, d: int) -> None:
    """Query counts around the 8-wide panels and dims around the 128-dim chunks of the tiles."""
    x = rng.standard_normal((1023, d)).astype(np.float32)
    q = rng.standard_normal((nq, d)).astype(np.float32)
    idx, sc = kernels.topk(q, x, 7)
    check_topk(idx, sc, ref.dense_scores(q, x, "dot"), 7, ref.dense_tolerance(q, x, "dot"))
    full = kernels.scores(q, x[:13], "cosine")
    np.testing.assert_allclose(full, ref.dense_scores(q, x[:13], "cosine"), atol=1e-5)


def test_full_scores_match_reference(isa: str, rng: np.random.Generator) -> None:
    x = rng.standard_normal((1023, 384)).astype(np.float32)
    q = rng.standard_normal((4, 384)).astype(np.float32)
    for metric in METRICS:
        full = kernels.scores(q, x, metric)
        assert full.shape == (4, 1023) and full.dtype == np.float32
        np.testing.assert_allclose(full, ref.dense_scores(q, x, metric), atol=ref.dense_tolerance(q, x, metric))
    mask = rng.random(1023) < 0.3
    full = kernels.scores(q[0], x, "dot", mask=mask)
    assert full.shape == (1023,)
    assert np.all(np.isneginf(full[~mask]))
    np.testing.assert_allclose(full[mask], ref.dense_scores(q[0], x, "dot")[0][mask], atol=1e-3)


@pytest.mark.parametrize("density", [0.0, 0.01, 0.5, 1.0])
def test_mask_filters_inside_the_scan(isa: str, rng: np.random.Generator, density: float) -> None:
    x = rng.standard_normal((1023, 64)).astype(np.float32)
    q = rng.standard_normal((3, 64)).astype(np.float32)
    mask = rng.random(1023) < density
    idx, sc = kernels.topk(q, x, 10, mask=mask)
    check_topk(idx, sc, ref.dense_scores(q, x, "dot"), 10, 1e-3, mask=mask)
    # an integer allow-list means the same rows
    idx2, _ = kernels.topk(q, x, 10, mask=np.flatnonzero(mask))
    np.testing.assert_array_equal(idx, idx2)


def test_one_query_gives_1d_results(rng: np.random.Generator) -> None:
    x = rng.standard_normal((50, 8)).astype(np.float32)
    idx, sc = kernels.topk(x[3], x, 5)
    assert idx.shape == (5,) and sc.shape == (5,)
    best = ref.topk_order(ref.dense_scores(x[3], x, "dot"), 5)[0]
    np.testing.assert_array_equal(idx, best)


def test_threads_give_identical_results(rng: np.random.Generator) -> None:
    x = rng.integers(-3, 4, size=(50_000, 16)).astype(np.float32)  # many exact ties
    q = rng.integers(-3, 4, size=(5, 16)).astype(np.float32)
    a = kernels.topk(q, x, 50, threads=1)
    b = kernels.topk(q, x, 50, threads=2)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.indices, ref.topk_order(ref.dense_scores(q, x, "dot"), 50))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 60),
    d=st.integers(1, 20),
    k=st.integers(1, 70),
    metric=st.sampled_from(METRICS),
    seed=st.integers(0, 2**32 - 1),
    use_mask=st.booleans(),
)
def test_ties_and_masks_are_exact(n: int, d: int, k: int, metric: str, seed: int, use_mask: bool) -> None:
    """Small integer vectors make every dot product exact, so ties must break by lower index."""
    r = np.random.default_rng(seed)
    x = r.integers(-2, 3, size=(n, d)).astype(np.float32)
    q = r.integers(-2, 3, size=(2, d)).astype(np.float32)
    mask = r.random(n) < 0.6 if use_mask else None
    metric = "dot" if metric == "cosine" else metric  # cosine of integer vectors is not exact
    exact = ref.dense_scores(q, x, metric)
    expected = ref.topk_order(exact, k, mask)
    for backend in kernels.available_isas():
        with kernels.use_isa(backend):
            idx, sc = kernels.topk(q, x, k, metric, mask=mask)
        np.testing.assert_array_equal(idx, expected)
        np.testing.assert_array_equal(sc, np.take_along_axis(exact, expected, 1).astype(np.float32))


@pytest.mark.parametrize("metric", METRICS)
def test_int8_with_rescore_is_exact_when_the_shortlist_covers(isa: str, rng: np.random.Generator, metric: str) -> None:
    x = rng.standard_normal((1023, 384)).astype(np.float32)
    q = rng.standard_normal((3, 384)).astype(np.float32)
    x8 = kernels.quantize_i8(x)
    idx, sc = kernels.topk(q, x8, 10, metric, rescore=x, shortlist=1023)
    check_topk(idx, sc, ref.dense_scores(q, x, metric), 10, ref.dense_tolerance(q, x, metric))


def test_int8_recall_on_unit_vectors(isa: str, rng: np.random.Generator) -> None:
    x = rng.standard_normal((5000, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = rng.standard_normal((20, 384)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    x8 = kernels.quantize_i8(x)
    assert x8.codes.dtype == np.int8 and x8.shape == (5000, 384)
    exact = ref.topk_order(ref.dense_scores(q, x, "dot"), 10)
    rescored = kernels.topk(q, x8, 10, rescore=x).indices
    approx = kernels.topk(q, x8, 10).indices
    recall = lambda got: np.mean([len(set(a) & set(b)) / 10 for a, b in zip(got, exact)])
    assert recall(rescored) >= 0.99
    assert recall(approx) >= 0.85
    # dequantised scores estimate the true ones
    s_true = ref.dense_scores(q, x, "dot")
    est = kernels.topk(q, x8, 10).scores
    got_idx = kernels.topk(q, x8, 10).indices
    np.testing.assert_allclose(est, np.take_along_axis(s_true, got_idx, 1), atol=0.005)


def test_int8_mask_and_cosine(rng: np.random.Generator) -> None:
    x = rng.standard_normal((2000, 32)).astype(np.float32) * rng.uniform(0.1, 10, size=(2000, 1)).astype(np.float32)
    q = rng.standard_normal((2, 32)).astype(np.float32)
    mask = rng.random(2000) < 0.5
    idx, sc = kernels.topk(q, kernels.quantize_i8(x), 5, "cosine", mask=mask, rescore=x, shortlist=2000)
    check_topk(idx, sc, ref.dense_scores(q, x, "cosine"), 5, 1e-5, mask=mask)


def test_zero_vectors_under_cosine_score_zero(isa: str) -> None:
    x = np.zeros((4, 5), np.float32)
    x[2] = 1.0
    idx, sc = kernels.topk(np.ones(5, np.float32), x, 4, "cosine")
    assert idx[0] == 2 and sc[0] == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_array_equal(sc[1:], 0.0)
    idx, sc = kernels.topk(np.zeros(5, np.float32), x, 2, "cosine")
    np.testing.assert_array_equal(sc, 0.0)


def test_born_clamps_anticorrelated(isa: str) -> None:
    x = np.array([[1, 0], [-1, 0], [0.5, 0]], np.float32)
    idx, sc = kernels.topk(np.array([1, 0], np.float32), x, 3, "born")
    np.testing.assert_array_equal(idx, [0, 2, 1])
    np.testing.assert_allclose(sc, [1.0, 0.25, 0.0])


def test_bandwidth_probe_sums(rng: np.random.Generator) -> None:
    x = rng.standard_normal((1023, 9)).astype(np.float32)
    assert kernels.read_bandwidth_probe(x) == pytest.approx(float(x.astype(np.float64).sum()), abs=1e-2)


@pytest.mark.parametrize("d", [1, 3, 31, 32, 33, 384, 1024])
@pytest.mark.parametrize("with_min", [False, True])
def test_int8_primitive_is_exact(isa: str, rng: np.random.Generator, d: int, with_min: bool) -> None:
    """Integer dots are exact on every path, including -128 (which the sign trick cannot take)."""
    from engramdb import _core

    lo = -128 if with_min else -127
    x = rng.integers(lo, 128, size=(1023, d)).astype(np.int8)
    q = rng.integers(lo, 128, size=(5, d)).astype(np.int8)
    if with_min:
        q[0, 0] = -128
        x[:, 0] = -128
    exact = q.astype(np.int64) @ x.astype(np.int64).T
    for nq in (1, 2, 5):
        idx, sc = _core.dense_topk_i8(q[:nq].copy(), x, 1023, None, None, 1)
        np.testing.assert_array_equal(np.take_along_axis(exact[:nq], idx, 1).astype(np.float32), sc)
        np.testing.assert_array_equal(idx, ref.topk_order(exact[:nq].astype(np.float64), 1023))


@pytest.mark.parametrize("metric", ["dot", "cosine", "born"])
def test_a_short_allow_list_scores_only_its_rows_like_the_mask_scan(isa: str, metric: kernels.Metric) -> None:
    """Allow-lists under 1/16 of the rows take the gather path: same rows, same tie order."""
    rng = np.random.default_rng(4)
    x = rng.integers(-2, 3, size=(5_000, 16)).astype(np.float32)  # many exact ties
    rows = rng.integers(0, 5_000, 200)  # duplicates included
    mask = np.zeros(5_000, bool)
    mask[rows] = True
    a = kernels.topk(x[:4], x, 20, metric, mask=rows)
    b = kernels.topk(x[:4], x, 20, metric, mask=mask)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-6)
    few = kernels.topk(x[0], x, 50, metric, mask=np.array([7, 3, 7]))
    assert sorted(few.indices.tolist()) == [3, 7]
    with pytest.raises(ValueError, match="allow-list holds row 5000"):
        kernels.topk(x[0], x, 5, metric, mask=np.array([1, 5_000]))


def test_merge_topk_orders_by_score_then_key() -> None:
    from engramdb.kernels import merge_topk

    keys, scores = merge_topk([np.array([5, 1]), np.array([3, 9, 2])],
                              [np.array([0.5, 0.9], np.float32), np.array([0.9, 0.1, 0.5], np.float32)], 4)
    assert keys.tolist() == [1, 3, 2, 5] and scores.tolist() == pytest.approx([0.9, 0.9, 0.5, 0.5])
    empty_k, empty_s = merge_topk([], [], 3)
    assert empty_k.size == 0 and empty_s.size == 0


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("threads", [1, 2])
def test_rescore_keys_matches_reference_across_matrices(isa: str, rng: np.random.Generator, metric: str,
                                                       dtype: type, threads: int) -> None:
    """Keys over several matrices, in any order and repeated, score like one stacked matrix."""
    sizes = [0, 5, 1, 3000, 777]  # an empty segment and a one-row one too
    d = 384
    mats = [rng.standard_normal((n, d)).astype(dtype) for n in sizes]
    stacked = np.concatenate(mats).astype(np.float32)
    q = rng.standard_normal(d).astype(np.float32)
    keys = rng.integers(0, len(stacked), 5000)
    keys = np.concatenate([keys, keys[:700]])  # repeats, as two recall methods give them
    full = ref.dense_scores(q[None, :], stacked, metric)[0]
    uniq = np.unique(keys)
    for k in (1, 50, len(uniq) + 10):
        got_k, got_s = kernels.rescore_keys(q, mats, keys, k, metric, threads=threads)
        want = min(k, len(uniq))
        assert len(got_k) == want and len(set(got_k.tolist())) == want, "repeats must be scored once"
        assert set(got_k.tolist()) <= set(uniq.tolist())
        tol = ref.dense_tolerance(q[None, :], stacked, metric)
        np.testing.assert_allclose(got_s, full[got_k], atol=tol, rtol=0)
        assert np.all(np.diff(got_s) <= 0)
        kth = np.sort(full[uniq])[::-1][want - 1]
        assert full[got_k].min() >= kth - 2 * tol, "a better key was left out"


def test_rescore_keys_breaks_ties_to_the_lower_key(isa: str) -> None:
    mats = [np.ones((4, 8), np.float32), np.ones((4, 8), np.float32)]
    got_k, got_s = kernels.rescore_keys(np.ones(8, np.float32), mats, [7, 2, 5, 0, 2], 3, "dot", threads=2)
    assert got_k.tolist() == [0, 2, 5] and got_s.tolist() == [8.0, 8.0, 8.0]


def test_rescore_keys_refuses_bad_input_by_name() -> None:
    a = np.zeros((3, 4), np.float32)
    q = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="key 6 is outside 0..5"):
        kernels.rescore_keys(q, [a, a], [1, 6], 2)
    with pytest.raises(ValueError, match="key -1"):
        kernels.rescore_keys(q, [a, a], [-1], 2)
    with pytest.raises(TypeError, match="must all be float32 or all float16"):
        kernels.rescore_keys(q, [a, a.astype(np.float16)], [1], 2)
    with pytest.raises(ValueError, match="columns"):
        kernels.rescore_keys(np.ones(5, np.float32), [a], [1], 2)
    with pytest.raises(ValueError, match="one vector"):
        kernels.rescore_keys(np.ones((2, 4), np.float32), [a], [1], 2)
    bad = a.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"matrices\[1\] row 2 \(key 5\)"):
        kernels.rescore_keys(q, [a, bad], [0, 5], 2)
    assert kernels.rescore_keys(q, [a], [], 3).indices.shape == (0,)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rescore_rows_matches_reference(isa: str, rng: np.random.Generator, metric: str, dtype: type) -> None:
    x = rng.standard_normal((2000, 96)).astype(dtype)
    q = rng.standard_normal(96).astype(np.float32)
    rows = rng.permutation(2000)[:300]  # distinct, in no order
    full = ref.dense_scores(q[None, :], x.astype(np.float32), metric)[0]
    tol = ref.dense_tolerance(q[None, :], x.astype(np.float32), metric)
    for k in (1, 17, 400):
        got_k, got_s = kernels.rescore_rows(q, x, rows, k, metric)
        want = min(k, len(rows))
        assert got_k.shape == (want,) and got_k.dtype == np.int64 and got_s.dtype == np.float32
        assert set(got_k.tolist()) <= set(rows.tolist()) and len(set(got_k.tolist())) == want
        np.testing.assert_allclose(got_s, full[got_k], atol=tol, rtol=0)
        assert np.all(np.diff(got_s) <= 0)
        kth = np.sort(full[rows])[::-1][want - 1]
        assert full[got_k].min() >= kth - 2 * tol, "a better row was left out"


def test_rescore_rows_refuses_bad_input_by_name() -> None:
    a = np.ones((5, 4), np.float32)
    q = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="rows holds row 5, outside 0..4"):
        kernels.rescore_rows(q, a, np.array([1, 5]), 2)
    with pytest.raises(ValueError, match="rows holds row -1"):
        kernels.rescore_rows(q, a, np.array([-1]), 2)
    with pytest.raises(TypeError, match="rows"):
        kernels.rescore_rows(q, a, np.array([1], np.int32), 2)
    with pytest.raises(ValueError, match="dimension"):
        kernels.rescore_rows(np.ones(5), a, np.array([1]), 2)
    with pytest.raises(ValueError, match="one vector"):
        kernels.rescore_rows(np.ones((2, 4)), a, np.array([1]), 2)
    with pytest.raises(ValueError, match="query"):
        kernels.rescore_rows(np.full(4, np.nan), a, np.array([1]), 2)
    bad = a.copy()
    bad[3, 1] = np.inf
    with pytest.raises(kernels.NonFiniteRow, match="matrix row 3") as got:
        kernels.rescore_rows(q, bad, np.array([0, 3]), 2)
    assert got.value.row == 3
    assert kernels.rescore_rows(q, a, np.zeros(0, np.int64), 3).indices.shape == (0,)
    got_k, _ = kernels.rescore_rows(q, a, np.array([4, 2, 0]), 2)  # ties go to the lower row
    assert got_k.tolist() == [0, 2]

"""N2: running-mean centroid updates, nearest-centroid assignment, cluster sums."""

from __future__ import annotations

import numpy as np
import pytest
import reference as ref
from engramdb import kernels


@pytest.mark.parametrize("d", [1, 3, 384, 1024])
@pytest.mark.parametrize("m", [0, 1, 7, 9, 1023])
def test_centroid_update_matches_sequential_reference(isa: str, rng: np.random.Generator, d: int, m: int) -> None:
    c = rng.standard_normal((5, d)).astype(np.float32)
    counts = rng.integers(0, 10, size=5).astype(np.int64)
    nodes = rng.integers(0, 5, size=m)
    v = rng.standard_normal((m, d)).astype(np.float32)
    exp_c, exp_n = ref.centroid_update(c, counts, nodes, v)
    kernels.centroid_update(c, counts, nodes, v)
    np.testing.assert_array_equal(counts, exp_n)
    np.testing.assert_allclose(c, exp_c, rtol=1e-4, atol=1e-5)


def test_first_update_of_empty_node_copies_the_vector(isa: str) -> None:
    c = np.full((1, 3), 7.0, np.float32)
    counts = np.zeros(1, np.int64)
    kernels.centroid_update(c, counts, [0], np.array([[1, 2, 3]], np.float32))
    np.testing.assert_array_equal(c[0], [1, 2, 3])
    assert counts[0] == 1


@pytest.mark.parametrize("metric", ["l2", "dot", "cosine", "born"])
@pytest.mark.parametrize("n", [0, 1, 7, 9, 1023])
@pytest.mark.parametrize("d", [1, 3, 384])
def test_assign_nearest_matches_reference(isa: str, rng: np.random.Generator, metric: str, n: int, d: int) -> None:
    v = rng.standard_normal((n, d)).astype(np.float32)
    c = rng.standard_normal((13, d)).astype(np.float32)
    labels, scores = kernels.assign_nearest(v, c, metric)
    if metric == "l2":
        s = ((v.astype(np.float64)[:, None, :] - c.astype(np.float64)[None]) ** 2).sum(-1)
        best = s.min(axis=1) if n else np.zeros(0)
    else:
        s = ref.dense_scores(v, c, "cosine" if metric == "cosine" else metric) if n else np.zeros((0, 13))
        best = s.max(axis=1) if n else np.zeros(0)
    assert labels.shape == (n,)
    tol = 1e-4 * max(1.0, float(np.abs(best).max(initial=1.0)))
    np.testing.assert_allclose(scores, best, atol=tol)
    np.testing.assert_allclose(s[np.arange(n), labels], best, atol=tol)  # the label achieves the best


@pytest.mark.parametrize("metric", ["l2", "dot", "cosine", "born"])
@pytest.mark.parametrize("n", [0, 1, 9, 1023])
@pytest.mark.parametrize("d", [1, 384])
@pytest.mark.parametrize("m", [1, 3, 13])
def test_assign_topk_matches_reference(isa: str, rng: np.random.Generator, metric: str, n: int, d: int,
                                       m: int) -> None:
    v = rng.standard_normal((n, d)).astype(np.float32)
    c = rng.standard_normal((13, d)).astype(np.float32)
    labels, scores = kernels.assign_topk(v, c, m, metric)  # type: ignore[arg-type]
    assert labels.shape == (n, m) and scores.shape == (n, m)
    if metric == "l2":
        s = ((v.astype(np.float64)[:, None, :] - c.astype(np.float64)[None]) ** 2).sum(-1)
        want = np.sort(s, axis=1)[:, :m] if n else np.zeros((0, m))
    else:
        s = ref.dense_scores(v, c, metric) if n else np.zeros((0, 13))
        want = -np.sort(-s, axis=1)[:, :m] if n else np.zeros((0, m))
    tol = 1e-4 * max(1.0, float(np.abs(want).max(initial=1.0)))
    np.testing.assert_allclose(scores, want, atol=tol)  # the m best scores, best first
    np.testing.assert_allclose(np.take_along_axis(s, labels, axis=1), want, atol=tol)  # achieved by the labels
    assert all(len(set(row)) == m for row in labels.tolist())
    if n:
        np.testing.assert_array_equal(labels[:, 0], kernels.assign_nearest(v, c, metric).labels)  # type: ignore[arg-type]


def test_assign_topk_ties_and_bounds(isa: str) -> None:
    c = np.array([[1, 0], [1, 0], [0, 1]], np.float32)
    labels, _ = kernels.assign_topk(np.array([[1, 0]], np.float32), c, 3, "l2")
    np.testing.assert_array_equal(labels, [[0, 1, 2]])
    with pytest.raises(ValueError, match="m must be at most the number of centroids \\(3\\), got 4"):
        kernels.assign_topk(np.zeros((1, 2), np.float32), c, 4)
    with pytest.raises(ValueError, match="vectors row 0"):
        kernels.assign_topk(np.array([[np.nan, 0]], np.float32), c, 2)


def test_assign_ties_go_to_lower_centroid(isa: str) -> None:
    c = np.array([[1, 0], [1, 0], [0, 1]], np.float32)
    labels, _ = kernels.assign_nearest(np.array([[1, 0], [0, 1]], np.float32), c, "l2")
    np.testing.assert_array_equal(labels, [0, 2])


def test_cluster_sums_and_kmeans_step(isa: str, rng: np.random.Generator) -> None:
    v = rng.standard_normal((1023, 384)).astype(np.float32)
    labels = rng.integers(0, 9, size=1023)
    sums, counts = kernels.cluster_sums(v, labels, 10)
    assert sums.dtype == np.float64 and counts.dtype == np.int64
    exp = np.zeros((10, 384))
    np.add.at(exp, labels, v.astype(np.float64))
    np.testing.assert_allclose(sums, exp, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(counts, np.bincount(labels, minlength=10))
    assert counts[9] == 0


def test_centroid_update_validates_in_place_operands(rng: np.random.Generator) -> None:
    c = np.zeros((3, 4), np.float32)
    with pytest.raises(TypeError, match="counts"):
        kernels.centroid_update(c, np.zeros(3, np.int32), [0], np.ones((1, 4)))
    with pytest.raises(ValueError, match="node_ids"):
        kernels.centroid_update(c, np.zeros(3, np.int64), [3], np.ones((1, 4)))
    with pytest.raises(ValueError, match="vectors"):
        kernels.centroid_update(c, np.zeros(3, np.int64), [0], np.ones((1, 5)))
    ro = np.zeros((3, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        kernels.centroid_update(ro, np.zeros(3, np.int64), [0], np.ones((1, 4)))
    counts = np.zeros(3, np.int64)
    with pytest.raises(ValueError, match="NaN"):
        kernels.centroid_update(c, counts, [0], np.full((1, 4), np.nan))
    assert counts.sum() == 0 and not c.any(), "a refused update changed nothing"


def test_a_bad_vector_refuses_the_whole_batch(isa: str, rng: np.random.Generator) -> None:
    c = rng.standard_normal((4, 16)).astype(np.float32)
    counts = np.array([3, 0, 5, 1], np.int64)
    before_c, before_n = c.copy(), counts.copy()
    v = rng.standard_normal((50, 16)).astype(np.float32)
    nodes = rng.integers(0, 4, size=50)
    v[31, 7] = np.inf  # rows 0..30 would already have been applied
    with pytest.raises(ValueError, match="vectors row 31 contains NaN or inf"):
        kernels.centroid_update(c, counts, nodes, v)
    np.testing.assert_array_equal(c, before_c)
    np.testing.assert_array_equal(counts, before_n)
    v[31, 7] = 0.0
    v[12] = 3e38  # finite, but overflows the centroid arithmetic
    c[nodes[12]] = -3e38
    before_c = c.copy()
    with pytest.raises(ValueError, match="vectors row 12"):
        kernels.centroid_update(c, counts, nodes, v)
    np.testing.assert_array_equal(c, before_c)


def test_kmeans_step_matches_reference(isa: str, rng: np.random.Generator) -> None:
    v = rng.standard_normal((1023, 48)).astype(np.float32)
    c = rng.standard_normal((9, 48)).astype(np.float32)
    labels, scores, sums, counts = kernels.kmeans_step(v, c, "cosine", threads=2)
    s = ref.dense_scores(v, c, "cosine")
    want = np.argmax(s, axis=1)
    np.testing.assert_array_equal(labels, want)
    np.testing.assert_allclose(scores, s.max(axis=1), atol=1e-5)
    exp = np.zeros((9, 48))
    np.add.at(exp, want, v.astype(np.float64))
    np.testing.assert_allclose(sums, exp, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(counts, np.bincount(want, minlength=9))


def test_kmeans_step_names_a_bad_row_and_checks_its_operands(rng: np.random.Generator) -> None:
    v = rng.standard_normal((20, 8)).astype(np.float32)
    v[13, 2] = np.nan
    with pytest.raises(kernels.NonFiniteRow, match="vectors row 13") as got:
        kernels.kmeans_step(v, np.ones((2, 8), np.float32))
    assert got.value.row == 13
    with pytest.raises(TypeError, match="vectors"):
        kernels.kmeans_step(v.astype(np.float64), np.ones((2, 8)))
    with pytest.raises(ValueError, match="dimension"):
        kernels.kmeans_step(v, np.ones((2, 9)))
    with pytest.raises(ValueError, match="C-contiguous"):
        kernels.kmeans_step(np.asfortranarray(v), np.ones((2, 8)))


@pytest.mark.parametrize("k,seed", [(1, 0), (3, 1), (6, 2), (8, 3)])
def test_spherical_kmeans_loop_matches_reference(isa: str, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((6, 16))
    x = (centres[rng.integers(0, 6, 600)] + 0.3 * rng.standard_normal((600, 16))).astype(np.float32)
    init = x[rng.choice(600, k, replace=False)].copy()
    if k == 8:
        init[7] = init[6]  # a twin never wins a vector (ties go lower): its cluster empties, is re-seeded
    init /= np.linalg.norm(init, axis=1, keepdims=True)
    for iters in (0, 1, 4, 30):
        cent, labels = kernels.spherical_kmeans_loop(x, init, iters)
        want_c, want_l = ref.spherical_kmeans(x, init, iters)
        assert cent.dtype == np.float32 and labels.dtype == np.int64
        np.testing.assert_array_equal(labels, want_l)
        np.testing.assert_allclose(cent, want_c, atol=1e-5)
        if iters and k == 8:
            assert (np.bincount(labels, minlength=8) > 0).all()


def test_spherical_kmeans_loop_checks_its_operands(rng: np.random.Generator) -> None:
    x = rng.standard_normal((30, 4)).astype(np.float32)
    with pytest.raises(ValueError, match="at least one row"):
        kernels.spherical_kmeans_loop(x, np.zeros((0, 4), np.float32), 3)
    with pytest.raises(ValueError, match="iters"):
        kernels.spherical_kmeans_loop(x, x[:2], -1)
    with pytest.raises(TypeError, match="vectors"):
        kernels.spherical_kmeans_loop(x.astype(np.float16), x[:2], 3)
    x[21, 0] = np.inf
    with pytest.raises(kernels.NonFiniteRow, match="row 21"):
        kernels.spherical_kmeans_loop(x, np.ones((2, 4), np.float32), 3)


@pytest.mark.parametrize("metric", ["l2", "dot", "cosine", "born"])
@pytest.mark.parametrize(("n", "c", "d"), [(1, 1, 1), (7, 16, 3), (37, 17, 385), (1030, 40, 384), (5, 300, 13)])
def test_assign_topk_small_m_agrees_with_the_heap(isa: str, rng: np.random.Generator, metric: str, n: int, c: int,
                                                  d: int) -> None:
    # m <= 16 keeps an insertion-sorted array per row, larger m a heap: each row's first m of the
    # heap's answer must be the array's exactly, labels and scores, ties included (rounded inputs
    # make equal scores common)
    v = np.round(rng.standard_normal((n, d)) * 2).astype(np.float32)
    cent = np.round(rng.standard_normal((c, d)) * 2).astype(np.float32)
    cent[c // 2 :: 3] = cent[0]  # duplicate centroids: exact ties between distinct indices
    wide = min(c, 17) if c > 16 else c
    heap_l, heap_s = kernels.assign_topk(v, cent, wide, metric)  # type: ignore[arg-type]
    for m in sorted({1, min(c, 2), min(c, 8), min(c, 16)}):
        lab, sc = kernels.assign_topk(v, cent, m, metric)  # type: ignore[arg-type]
        if wide > 16:
            np.testing.assert_array_equal(lab, heap_l[:, :m])
            np.testing.assert_array_equal(sc, heap_s[:, :m])
        np.testing.assert_array_equal(lab[:, 0], kernels.assign_nearest(v, cent, metric).labels)  # type: ignore[arg-type]
        s = ref.dense_scores(v, cent, metric) if metric != "l2" else \
            ((v.astype(np.float64)[:, None, :] - cent.astype(np.float64)[None]) ** 2).sum(-1)
        key = s if metric == "l2" else -s
        # reference order: best score first, then the lower index
        want = np.lexsort((np.broadcast_to(np.arange(c), key.shape), key), axis=1)[:, :m]
        tol = 1e-4 * max(1.0, float(np.abs(s).max()))
        np.testing.assert_allclose(np.take_along_axis(s, lab, axis=1), np.take_along_axis(s, want, axis=1), atol=tol)
        assert all(len(set(row)) == m for row in lab.tolist())
        assert (np.diff(sc, axis=1) * (1 if metric == "l2" else -1) >= 0).all()  # best first


def test_assign_topk_small_m_ties_go_to_lower_index(isa: str) -> None:
    cent = np.array([[0, 1], [1, 0], [1, 0], [0, 1], [1, 0]], np.float32)
    for m, want in [(1, [1]), (2, [1, 2]), (3, [1, 2, 4]), (5, [1, 2, 4, 0, 3])]:
        lab, _ = kernels.assign_topk(np.array([[1, 0]], np.float32), cent, m, "dot")
        np.testing.assert_array_equal(lab, [want])

"""N3: Jaccard and weighted Jaccard over CSR id-sets, top-k, against a set-based reference."""

from __future__ import annotations

import numpy as np
import pytest
import reference as ref
from engramdb import kernels
from hypothesis import given, settings
from hypothesis import strategies as st


def random_sets(rng: np.random.Generator, n: int, vocab: int, mean: int) -> list[set[int]]:
    return [set(rng.integers(0, vocab, size=rng.integers(0, 2 * mean + 1)).tolist()) for _ in range(n)]


@pytest.mark.parametrize("n", [0, 1, 7, 9, 1023])
@pytest.mark.parametrize("vocab", [50, 30_000, 2_000_000_000])
def test_jaccard_matches_reference(rng: np.random.Generator, n: int, vocab: int) -> None:
    sets = random_sets(rng, n, vocab if vocab < 1000 else 200, 8)
    if vocab > 1000:  # spread ids over the whole range (large ids take the merge path)
        sets = [{i * (vocab // 200) for i in s} for s in sets]
    query = set(list(sets[0])[:5]) | {3} if n else {1, 2}
    indptr, indices = kernels.csr_from_sets(sets)
    idx, sc = kernels.jaccard_topk(np.array(sorted(query)), indptr, indices, 10)
    expected = ref.jaccard(query, sets)
    assert idx.shape == (min(10, n),)
    np.testing.assert_array_equal(idx, ref.topk_order(expected[None], 10)[0])
    np.testing.assert_allclose(sc, expected[idx], rtol=1e-6)


@pytest.mark.parametrize("vocab", [100, 10_000_000])
def test_weighted_jaccard_matches_reference(rng: np.random.Generator, vocab: int) -> None:
    rows = []
    for _ in range(300):
        ids = np.unique(rng.integers(0, 100, size=rng.integers(0, 20))) * (vocab // 100)
        rows.append({int(i): float(w) for i, w in zip(ids, rng.uniform(0, 2, ids.size).astype(np.float32))})
    qids = np.unique(rng.integers(0, 100, size=12)) * (vocab // 100)
    qw = rng.uniform(0, 2, qids.size).astype(np.float32)
    indptr = np.zeros(len(rows) + 1, np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    indices = np.array([i for r in rows for i in sorted(r)], np.int32)
    weights = np.array([r[i] for r in rows for i in sorted(r)], np.float32)
    order = np.random.default_rng(1).permutation(qids.size)  # query order does not matter
    idx, sc = kernels.jaccard_topk(qids[order], indptr, indices, 15, weights=weights, query_weights=qw[order])
    expected = ref.weighted_jaccard({int(i): float(w) for i, w in zip(qids, qw)}, rows)
    np.testing.assert_allclose(sc, expected[idx], rtol=1e-5)
    kth = np.sort(expected)[::-1][14]
    assert expected[idx].min() >= kth - 1e-6


def test_jaccard_mask_and_empty_sets(rng: np.random.Generator) -> None:
    sets = [set(), {1, 2}, {2}, set(), {1, 2, 3}]
    indptr, indices = kernels.csr_from_sets(sets)
    idx, sc = kernels.jaccard_topk(np.array([1, 2]), indptr, indices, 5)
    np.testing.assert_array_equal(idx, [1, 4, 2, 0, 3])
    np.testing.assert_allclose(sc, [1.0, 2 / 3, 0.5, 0.0, 0.0])
    idx, _ = kernels.jaccard_topk(np.array([1, 2]), indptr, indices, 5, mask=np.array([0, 2, 3]))
    np.testing.assert_array_equal(idx, [2, 0, 3])
    idx, sc = kernels.jaccard_topk(np.array([], np.int64), indptr, indices, 2)
    np.testing.assert_array_equal(sc, [0.0, 0.0])


def test_unsorted_rows_are_refused_by_row() -> None:
    indptr = np.array([0, 2, 4], np.int64)
    indices = np.array([1, 2, 5, 3], np.int32)
    with pytest.raises(ValueError, match="row 1 ids are not strictly increasing"):
        kernels.jaccard_topk(np.array([1]), indptr, indices, 1)
    with pytest.raises(ValueError, match="row 0 holds a negative or non-finite weight"):
        kernels.jaccard_topk(
            np.array([1]), np.array([0, 1], np.int64), np.array([1], np.int32), 1,
            weights=np.array([np.nan], np.float32), query_weights=np.array([1.0]),
        )


@settings(max_examples=40, deadline=None)
@given(
    sets=st.lists(st.sets(st.integers(0, 30), max_size=8), max_size=30),
    query=st.sets(st.integers(0, 30), max_size=8),
    k=st.integers(1, 40),
)
def test_jaccard_ties_break_by_index(sets: list[set[int]], query: set[int], k: int) -> None:
    indptr, indices = kernels.csr_from_sets(sets)
    idx, _ = kernels.jaccard_topk(np.array(sorted(query), dtype=np.int64), indptr, indices, k, threads=2)
    np.testing.assert_array_equal(idx, ref.topk_order(ref.jaccard(query, sets)[None], k)[0])

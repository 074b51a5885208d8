"""The native seam (engramdb._core, issue 27): arguments the C++ kernels would read or write out of
bounds, or overflow on, are refused with a ValueError naming the argument, before any kernel runs.

Found by running the kernels under AddressSanitizer and UndefinedBehaviorSanitizer
(.ci/sanitizers): each case below was a heap overflow, a wild write or a signed overflow there.
The Python wrappers (engramdb.kernels, the tree) pass well-formed arrays today; the binding is the
last line of defence, so a wrapper's slip, or a caller of the seam, cannot corrupt the interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest
from engramdb import _core, kernels


def _csr(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    return indptr, np.array([i for r in rows for i in r], np.int32)


@pytest.mark.parametrize("query", [[5000, 3], [3, 3], [-100000, 3], [-1]])
def test_jaccard_refuses_a_query_that_is_not_strictly_increasing_and_non_negative(query: list[int]) -> None:
    # the kernel sizes its lookup table by the query's last id: an unsorted query wrote past it
    # (heap overflow), a negative id wrote before it
    indptr, ids = _csr([[3], [1, 5000]])
    with pytest.raises(ValueError, match="query"):
        _core.jaccard_topk(np.array(query, np.int32), None, indptr, ids, None, 1)
    with pytest.raises(ValueError, match="query"):
        _core.jaccard_topk(np.array(query, np.int32), np.ones(len(query), np.float32), indptr, ids,
                           np.ones(len(ids), np.float32), 1)


def test_jaccard_still_scores_a_sorted_query() -> None:
    indptr, ids = _csr([[3], [1, 5000], []])
    idx, scores, _, row, code = _core.jaccard_topk(np.array([3, 5000], np.int32), None, indptr, ids, None, 3)
    assert (row, code) == (-1, 0)
    assert idx[0].tolist() == [0, 1, 2]
    assert scores[0].tolist() == pytest.approx([0.5, 1 / 3, 0.0])


def _tree_args(**change: object) -> dict[str, object]:
    """A root with two leaves over keys 0..3 in two matrices; `change` replaces arguments."""
    d = 4
    args: dict[str, object] = {
        "query": np.ones(d, np.float32),
        "centroids": np.eye(3, d, dtype=np.float32),
        "child_ptr": np.array([0, 2, 2, 2], np.int64),
        "child_idx": np.array([1, 2], np.int64),
        "member_ptr": np.array([0, 0, 2, 4], np.int64),
        "member_idx": np.array([0, 1, 2, 3], np.int64),
        "root": 0,
        "height": 2,
        "matrices": [np.ones((2, d), np.float32), np.full((2, d), 2.0, np.float32)],
        "bases": np.array([0, 2, 4], np.int64),
        "allowed": None,
        "beam": 2,
        "probe": 2,
        "k": 4,
    }
    args.update(change)
    return args


def test_tree_search_of_a_sound_tree() -> None:
    keys, scores, stats, leaves, bad = _core.tree_search(**_tree_args())
    assert bad == -1
    assert sorted(keys.tolist()) == [0, 1, 2, 3]
    assert scores.tolist() == pytest.approx([1.0] * 4)
    assert stats == (0, 4, 2)
    assert sorted(leaves.tolist()) == [1, 2]


@pytest.mark.parametrize("name, value", [
    ("child_ptr", np.array([-3, 2, 2, 2], np.int64)),     # read child_idx[-3]
    ("member_ptr", np.array([-5, 0, 2, 4], np.int64)),    # read member_idx[-5]
])
def test_tree_search_refuses_offsets_that_do_not_start_at_zero(name: str, value: np.ndarray) -> None:
    with pytest.raises(ValueError, match=name):
        _core.tree_search(**_tree_args(**{name: value}))


def test_tree_search_refuses_bases_that_do_not_start_at_zero() -> None:
    # bases [1000, 1002, 1004]: key 0 was read 1,000 rows before the first matrix
    with pytest.raises(ValueError, match="bases"):
        _core.tree_search(**_tree_args(bases=np.array([1000, 1002, 1004], np.int64)))


@pytest.mark.parametrize("count", [np.iinfo(np.int64).max, np.iinfo(np.int64).max - 1, -1, -7])
@pytest.mark.parametrize("through", ["kernels", "seam"])
def test_centroid_update_refuses_a_count_out_of_range_and_changes_nothing(count: int, through: str) -> None:
    # n + 1 overflowed int64 at the largest counts (undefined behaviour; two pairs for node 1
    # below); a negative count turned the running mean's weight 1 / (n + 1) into infinity or an
    # extrapolation (engramdb.kernels refused those already; the seam now does too)
    centroids = np.zeros((2, 4), np.float32)
    counts = np.array([3, count], np.int64)
    update = kernels.centroid_update if through == "kernels" else _core.centroid_update
    with pytest.raises(ValueError, match=rf"counts.*{count}" if count > 0 or through == "seam" else "counts"):
        update(centroids, counts, np.array([0, 1, 1], np.int64), np.ones((3, 4), np.float32))
    assert counts.tolist() == [3, count]
    assert not centroids.any()


def test_centroid_update_takes_the_largest_count_that_cannot_overflow() -> None:
    centroids = np.zeros((1, 2), np.float32)
    counts = np.array([np.iinfo(np.int64).max - 2], np.int64)
    kernels.centroid_update(centroids, counts, np.array([0, 0], np.int64), np.ones((2, 2), np.float32))
    assert counts.tolist() == [np.iinfo(np.int64).max]


def test_bm25_query_with_offsets_whose_difference_overflows_reports_them() -> None:
    # the document frequency of a found term was indptr[r + 1] - indptr[r] before the kernel
    # checked the offsets: garbage offsets overflowed int64 there (undefined behaviour)
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    for indptr in ([hi, lo], [lo, hi], [0, -5]):
        idx, scores, code = _core.bm25_query(np.array([7], np.int32), np.ones(1, np.float32), np.array([7], np.int32),
                                             np.array(indptr, np.int64), np.zeros(2, np.int32),
                                             np.ones(2, np.float32), np.ones(3, np.float32), 1.2, 3, 3)
        assert code == 2 and len(idx) == len(scores) == 0


@pytest.mark.parametrize("bad", [np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1])
def test_segment_bases_far_out_of_range_are_refused_without_overflow(bad: int) -> None:
    # a matrix's row count was checked as bases[s + 1] - bases[s], which overflowed int64 for
    # bases near its limits (undefined behaviour) before it could refuse them
    with pytest.raises(ValueError, match="bases|rows"):
        _core.dense_rescore_keys(np.ones(4, np.float32), [np.ones((2, 4), np.float32)] * 2,
                                 np.array([0, 2, bad], np.int64), np.array([1], np.int64), 0, 1)
    with pytest.raises(ValueError, match="bases|rows"):
        _core.tree_search(**_tree_args(bases=np.array([0, 2, bad], np.int64)))

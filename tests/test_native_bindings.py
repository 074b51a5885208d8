"""The native seam (engramdb._core, issue 27): arguments the C++ kernels would read or write out of
bounds, or overflow on, are refused with a ValueError naming the argument, before any kernel runs.

Found by running the kernels under AddressSanitizer and UndefinedBehaviorSanitizer
(.ci/sanitizers): each case below was a heap overflow, a wild write or a signed overflow there.
The Python wrappers (engramdb.kernels, the tree) pass well-formed arrays today; the binding is the
last line of defence, so a wrapper's slip, or a caller of the seam, cannot corrupt the interpreter.

The cases that wrote or read outside the arrays run in a child interpreter (`_isolated`): with an
extension built before the fixes they can crash, and a crash must fail its own test, not take the
rest of a test run down with it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from engramdb import _core, kernels

HERE = Path(__file__).resolve().parent


def _isolated(body: Callable[..., None], *args: object) -> None:
    """Run body(*args) (a function of this module; args with a repr that evaluates back) in a child."""
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import {Path(__file__).stem} as t; "
            f"t.{body.__name__}(*{args!r})")
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


def _csr(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    return indptr, np.array([i for r in rows for i in r], np.int32)


def _jaccard_refuses(query: list[int]) -> None:
    indptr, ids = _csr([[3], [1, 5000]])
    with pytest.raises(ValueError, match="query"):
        _core.jaccard_topk(np.array(query, np.int32), None, indptr, ids, None, 1)
    with pytest.raises(ValueError, match="query"):
        _core.jaccard_topk(np.array(query, np.int32), np.ones(len(query), np.float32), indptr, ids,
                           np.ones(len(ids), np.float32), 1)


@pytest.mark.parametrize("query", [[5000, 3], [3, 3], [-100000, 3], [-1]])
def test_jaccard_refuses_a_query_that_is_not_strictly_increasing_and_non_negative(query: list[int]) -> None:
    # the kernel sizes its lookup table by the query's last id: an unsorted query wrote past it
    # (heap overflow), a negative id wrote before it
    _isolated(_jaccard_refuses, query)


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


def _tree_refuses(name: str, value: list[int]) -> None:
    with pytest.raises(ValueError, match=name):
        _core.tree_search(**_tree_args(**{name: np.array(value, np.int64)}))


@pytest.mark.parametrize("name, value", [
    ("child_ptr", [-3, 2, 2, 2]),     # read child_idx[-3]
    ("member_ptr", [-5, 0, 2, 4]),    # read member_idx[-5]
    ("bases", [1000, 1002, 1004]),    # key 0 read 1,000 rows before the first matrix
])
def test_tree_search_refuses_offsets_and_bases_that_do_not_start_at_zero(name: str, value: list[int]) -> None:
    _isolated(_tree_refuses, name, value)


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


# ---------------------------------------------------------------------------------------- fuzz
# Sound arguments for each seam function with one element of one array replaced by garbage (as
# a damaged index file or a wrapper's slip could hand them over). Every call must answer or raise
# ValueError / IndexError / TypeError; under .ci/sanitizers any read or write outside an array,
# or any undefined behaviour, aborts the run. (This found the overflows above.)

def _sets(rng: np.random.Generator, rows: int, hi: int, dtype: type = np.int32) -> tuple[np.ndarray, np.ndarray]:
    return _csr([sorted({int(x) for x in rng.integers(0, hi, size=rng.integers(0, 5))}) if hi else []
                 for _ in range(rows)]) if dtype is np.int32 else _csr64(rng, rows, hi)


def _csr64(rng: np.random.Generator, rows: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    indptr, ids = _sets(rng, rows, hi)
    return indptr, ids.astype(np.int64)


def _spoil(rng: np.random.Generator, args: dict[str, object], names: list[str]) -> dict[str, object]:
    arr = args[names[int(rng.integers(len(names)))]]
    if rng.random() < 0.2 or not isinstance(arr, np.ndarray) or arr.size == 0:
        return args
    i = int(rng.integers(arr.size))
    if arr.dtype.kind == "f":
        arr.flat[i] = rng.choice([np.nan, np.inf, -np.inf, -1.0, 3e38])
    else:
        info = np.iinfo(arr.dtype)
        arr.flat[i] = rng.choice([info.min, info.max, -1, 0, min(arr.size, info.max), int(arr.flat[i]) ^ 1])
    return args


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _fuzz_jaccard(rng: np.random.Generator) -> bool:
    indptr, ids = _sets(rng, int(rng.integers(1, 8)), int(rng.integers(0, 20)))
    q = np.array(sorted({int(x) for x in rng.integers(0, 20, size=rng.integers(0, 5))}), np.int32)
    w = bool(rng.random() < 0.5)
    args = {"query": q, "query_weights": np.abs(_f32(rng, len(q))) if w else None, "indptr": indptr, "indices": ids,
            "weights": np.abs(_f32(rng, len(ids))) if w else None, "k": int(rng.integers(0, 6)), "full": True}
    *_, row, code = _core.jaccard_topk(**_spoil(rng, args, ["query", "indptr", "indices", "query_weights", "weights"]))
    return bool(code == 0 and row == -1)


def _fuzz_bm25(rng: np.random.Generator) -> bool:
    rows, n_docs = int(rng.integers(1, 6)), int(rng.integers(1, 8))
    indptr, docs = _sets(rng, rows, n_docs)
    qptr, qrows = _csr64(rng, int(rng.integers(1, 4)), rows)
    args = {"query_indptr": qptr, "query_rows": qrows, "query_weights": np.abs(_f32(rng, len(qrows))),
            "indptr": indptr, "docs": docs, "tf": np.abs(_f32(rng, len(docs))) + 1,
            "norm": np.abs(_f32(rng, n_docs)) + 0.1, "k1": 1.2, "k": int(rng.integers(0, 300))}
    *_, query, code = _core.bm25_topk(**_spoil(rng, args, ["query_indptr", "query_rows", "query_weights", "indptr",
                                                            "docs"]))
    return bool(code == 0 and query == -1)


def _fuzz_bm25_query(rng: np.random.Generator) -> bool:
    n_docs = int(rng.integers(1, 8))
    terms = np.unique(rng.integers(0, 30, size=rng.integers(0, 6))).astype(np.int32)
    indptr, docs = _sets(rng, len(terms), n_docs)
    m = int(rng.integers(0, 5))
    args = {"terms": rng.integers(0, 30, size=m).astype(np.int32), "counts": np.ones(m, np.float32),
            "chunk_terms": terms, "indptr": indptr, "docs": docs, "tf": np.ones(len(docs), np.float32),
            "norm": np.ones(n_docs, np.float32), "k1": 1.2, "k": int(rng.integers(0, 300)),
            "n_total": int(rng.integers(0, 20)), "df_total": rng.integers(0, 5, size=m) if rng.random() < 0.3 else None}
    docs_found, _, code = _core.bm25_query(**_spoil(rng, args, ["terms", "chunk_terms", "indptr", "docs", "df_total"]))
    assert code == 0 or len(docs_found) == 0  # an error comes with no results
    return bool(code == 0)


def _fuzz_maxsim(rng: np.random.Generator) -> bool:
    n_docs, d = int(rng.integers(1, 6)), int(rng.integers(0, 12))
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 4, size=n_docs))]).astype(np.int64)
    args = {"query_tokens": _f32(rng, int(rng.integers(0, 10)), d), "doc_tokens": _f32(rng, int(offsets[-1]), d),
            "offsets": offsets, "docs": rng.integers(0, n_docs, size=rng.integers(0, 5)).astype(np.int64)}
    _core.maxsim(**_spoil(rng, args, ["offsets", "docs"]))
    return True


def _fuzz_rescore_keys(rng: np.random.Generator) -> bool:
    d, sizes = int(rng.integers(1, 10)), rng.integers(0, 5, size=rng.integers(0, 4))
    bases = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    keys = rng.integers(0, max(int(bases[-1]), 1), size=rng.integers(0, 8) if bases[-1] else 0).astype(np.int64)
    args = {"query": _f32(rng, d), "matrices": [_f32(rng, int(s), d) for s in sizes], "bases": bases, "keys": keys,
            "metric": int(rng.integers(0, 3)), "k": int(rng.integers(0, 6))}
    _core.dense_rescore_keys(**_spoil(rng, args, ["bases", "keys"]))
    return True


def _fuzz_tree(rng: np.random.Generator) -> bool:
    d, leaves, n_keys = int(rng.integers(1, 6)), int(rng.integers(1, 5)), int(rng.integers(0, 12))
    member_ptr = np.concatenate([[0, 0], np.cumsum(rng.integers(0, 4, size=leaves))]).astype(np.int64)
    half, split = bool(rng.random() < 0.3), int(rng.integers(0, n_keys + 1))
    args = _tree_args(query=_f32(rng, d), centroids=_f32(rng, leaves + 1, d),
                      child_ptr=np.array([0] + [leaves] * (leaves + 1), np.int64),
                      child_idx=np.arange(1, leaves + 1, dtype=np.int64), member_ptr=member_ptr,
                      member_idx=rng.integers(0, max(n_keys, 1), size=int(member_ptr[-1])).astype(np.int64),
                      matrices=[] if half else [_f32(rng, split, d), _f32(rng, n_keys - split, d)],
                      bases=np.zeros(1, np.int64) if half else np.array([0, split, n_keys], np.int64),
                      allowed=rng.integers(0, 2, size=n_keys).astype(np.uint8) if rng.random() < 0.3 else None,
                      beam=int(rng.integers(1, 4)), probe=int(rng.integers(1, 4)), k=int(rng.integers(0, 6)),
                      rows_f16=rng.integers(0, 0x7C00, size=(n_keys, d)).astype(np.uint16) if half else None)
    _core.tree_search(**_spoil(rng, args, ["child_ptr", "child_idx", "member_ptr", "member_idx", "bases", "allowed"]))
    return True


def _fuzz_centroids(rng: np.random.Generator) -> bool:
    c, d, m = int(rng.integers(1, 5)), int(rng.integers(0, 6)), int(rng.integers(0, 6))
    args = {"centroids": _f32(rng, c, d), "counts": rng.integers(0, 10, size=c).astype(np.int64),
            "node_ids": rng.integers(0, c, size=m).astype(np.int64), "vectors": _f32(rng, m, d)}
    _core.centroid_update(**_spoil(rng, args, ["counts", "node_ids", "vectors"]))
    labels = rng.integers(0, c, size=m).astype(np.int64)
    _core.cluster_sums(_f32(rng, m, d), _spoil(rng, {"labels": labels}, ["labels"])["labels"], c)
    return True


_FUZZ = {f.__name__[6:]: f for f in (_fuzz_jaccard, _fuzz_bm25, _fuzz_bm25_query, _fuzz_maxsim, _fuzz_rescore_keys,
                                      _fuzz_tree, _fuzz_centroids)}


def _fuzz(name: str) -> None:
    rng = np.random.default_rng(27)
    answered = refused = 0
    for _ in range(400):
        try:
            ok = _FUZZ[name](rng)
        except (ValueError, IndexError, TypeError):
            ok = False
        answered += ok
        refused += not ok
    assert answered > 40 and refused > 10, (answered, refused)  # both sides of the seam were reached


@pytest.mark.parametrize("name", list(_FUZZ))
def test_garbage_in_one_array_is_refused_or_answered(name: str) -> None:
    _isolated(_fuzz, name)

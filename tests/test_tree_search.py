"""J4's kernel: a centroid tree's descent and leaf scan in one call, against the float64 reference."""

from __future__ import annotations

import numpy as np
import pytest
import reference as ref
from engramdb import kernels

D = 16


def small_tree(rng: np.random.Generator, n: int) -> tuple[np.ndarray, list[list[int]], list[list[int]], np.ndarray]:
    """(centroids, children, members, vectors) of a 3-level tree: 12 leaves under 3 parents
    under the root (leaves are nodes 0-11, parents 12-14, the root 15)."""
    x = rng.standard_normal((n, D)).astype(np.float32)
    leaf_of = rng.integers(0, 12, n)
    members = [np.flatnonzero(leaf_of == i).tolist() for i in range(12)] + [[] for _ in range(4)]
    members[3] += members[5][:4]  # spilled keys: a key in two leaves is scored once
    children = [[] for _ in range(12)] + [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14]]
    cent = np.zeros((16, D), np.float32)
    for i in range(12):
        cent[i] = x[members[i]].mean(axis=0) if members[i] else 0
    for p in range(12, 16):
        cent[p] = cent[children[p]].mean(axis=0)
    return cent, children, members, x


def csr(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(x) for x in lists], out=ptr[1:])
    return ptr, np.array([v for x in lists for v in x], np.int64)


@pytest.mark.parametrize("beam,probe,k", [(1, 1, 5), (2, 3, 10), (3, 12, 50), (2, 20, 1000)])
@pytest.mark.parametrize("layout", ["two matrices", "filtered", "half packed"])
def test_tree_search_matches_reference(isa: str, beam: int, probe: int, k: int, layout: str) -> None:
    rng = np.random.default_rng(beam * 100 + probe)
    cent, children, members, x = small_tree(rng, 900)
    cp, ci = csr(children)
    mp, mi = csr(members)
    allowed = rng.random(len(x)) < 0.5 if layout == "filtered" else None
    rows = x
    for q in rng.standard_normal((10, D)).astype(np.float32):
        if layout == "half packed":
            unit = x / np.linalg.norm(x, axis=1, keepdims=True)
            rows = unit.astype(np.float16).astype(np.float32)
            hits = kernels.tree_search(q, cent, cp, ci, mp, mi, 15, 3, [], np.zeros(1, np.int64), k, beam=beam,
                                       probe=probe, unit_rows=True,
                                       rows_f16=np.ascontiguousarray(unit.astype(np.float16).view(np.uint16)))
        else:
            hits = kernels.tree_search(q, cent, cp, ci, mp, mi, 15, 3, [x[:400], x[400:]],
                                       np.array([0, 400, len(x)], np.int64), k, beam=beam, probe=probe,
                                       allowed=allowed)
        keys, scores, stats, leaves = ref.tree_search(q, cent, children, members, 15, 3, rows, allowed, beam,
                                                      probe, k)
        tol = 2e-3 if layout == "half packed" else 1e-5
        assert hits.keys.dtype == np.int64 and hits.scores.dtype == np.float32
        assert (hits.centroids, hits.memories, hits.leaves) == stats
        assert set(hits.kept_leaves.tolist()) == leaves
        assert len(hits.keys) == len(keys) and len(set(hits.keys.tolist())) == len(keys)
        np.testing.assert_allclose(hits.scores, scores, atol=tol)  # the k best, best first
        full = ref.dense_scores(q, rows, "cosine")[0]
        np.testing.assert_allclose(hits.scores, full[hits.keys], atol=tol)  # each its key's score
        if allowed is not None:
            assert allowed[hits.keys].all()


def test_tree_search_refuses_bad_input_by_name(rng: np.random.Generator) -> None:
    cent, children, members, x = small_tree(rng, 200)
    cp, ci = csr(children)
    mp, mi = csr(members)
    bases = np.array([0, len(x)], np.int64)

    def call(**change: object) -> kernels.TreeHits:
        args: dict[str, object] = {"query": x[0], "centroids": cent, "child_ptr": cp, "child_idx": ci,
                                   "member_ptr": mp, "member_idx": mi, "root": 15, "height": 3, "matrices": [x],
                                   "bases": bases, "k": 5}
        args.update(change)
        return kernels.tree_search(beam=2, probe=3, **args)  # type: ignore[arg-type]

    with pytest.raises(ValueError, match="child_ptr must have length 17"):
        call(child_ptr=cp[:-1])
    with pytest.raises(TypeError, match="member_idx"):
        call(member_idx=mi.astype(np.int32))
    with pytest.raises(ValueError, match="query has dimension 15"):
        call(query=x[0, :15])
    with pytest.raises(ValueError, match="query"):
        call(query=np.full(D, np.nan))
    with pytest.raises(ValueError, match="root must be a node"):
        call(root=16)
    with pytest.raises(ValueError, match="root must be >= 0"):
        call(root=-1)
    with pytest.raises(ValueError, match=r"matrices\[0\] has dimension"):
        call(matrices=[np.ascontiguousarray(x[:, :8])])
    with pytest.raises(ValueError, match="bases must have length 2"):
        call(bases=np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="allowed must have one entry per row"):
        call(allowed=np.ones(3, bool))
    with pytest.raises(ValueError, match="C-contiguous"):
        call(centroids=np.asfortranarray(cent))
    bad = x.copy()
    key = members[int(np.argmax([len(m) for m in members]))][0]
    bad[key] = np.inf
    with pytest.raises(kernels.NonFiniteRow, match=f"key {key}") as got:
        kernels.tree_search(x[0], cent, cp, ci, mp, mi, 15, 3, [bad], bases, 5, beam=4, probe=12)
    assert got.value.row == key

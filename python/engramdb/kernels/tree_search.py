"""Centroid-tree search in one call (J4's kernel): top-K beam descent over a tree's CSR views,
then a top-k cosine scan of the kept leaves' members (cpp/include/engramdb/tree_search.h).

The tree is flat arrays: node i's centroid is row i of `centroids`, its children
`child_idx[child_ptr[i]:child_ptr[i + 1]]`, a leaf's member keys `member_idx[member_ptr[i]:...]`.
Keys number the rows of `matrices` one after another (matrix 0's rows first, `bases[s]` the
first key of matrix s), or the rows of `rows_f16` (a tree's half-precision packed copy).
The checks here are the O(1) ones (dtype, layout, lengths) and the query's: a search runs once per
query, and the tree's arrays were built by hierarchy/, so walking them per call would cost more
than the search; the core itself refuses an offset or key outside its arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import _core
from .. import _validate as v
from ._common import NonFiniteRow, byte_mask, check_vector, exact, index_array


class TreeHits(NamedTuple):
    """What one descent found: `keys` (int64) and cosine `scores` (float32), best first, only
    real hits; `centroids`, `memories` and `leaves`: how many of each it scored or kept;
    `kept_leaves`: the ids of the leaves it scanned."""

    keys: np.ndarray
    scores: np.ndarray
    centroids: int
    memories: int
    leaves: int
    kept_leaves: np.ndarray


def tree_search(
    query: Any,
    centroids: np.ndarray,
    child_ptr: np.ndarray,
    child_idx: np.ndarray,
    member_ptr: np.ndarray,
    member_idx: np.ndarray,
    root: int,
    height: int,
    matrices: Sequence[np.ndarray],
    bases: np.ndarray,
    k: int,
    *,
    beam: int,
    probe: int,
    allowed: np.ndarray | None = None,
    unit_rows: bool = False,
    rows_f16: np.ndarray | None = None,
) -> TreeHits:
    """The k best member keys of a centroid tree for one query by cosine (see the module docstring).

    Args:
        query: (d,) floats; coerced to float32.
        centroids: (n_nodes, d) float32, C-contiguous (unnormalised: scored by cosine).
        child_ptr, member_ptr: (n_nodes + 1,) int64 CSR offsets; child_idx, member_idx: int64.
        root: the root node (a tree of no nodes has none: nothing to search); height: its level
            (leaves are level 1).
        matrices: (n_s, d) float32 C-contiguous rows of the keys, `bases` (len + 1,) int64 their
            first keys and the total last; empty with `rows_f16`.
        k: results wanted (>= 1); beam: nodes kept per level above the leaves; probe: leaves kept.
        allowed: bool or uint8 per key (0 = never scored), or None.
        unit_rows: the rows are unit length already (cosine = dot, no norm pass).
        rows_f16: (n_keys, d) uint16, IEEE binary16 unit rows that member keys index instead.
    A member whose vector holds NaN or inf raises `NonFiniteRow` (a ValueError) with its key.
    """
    q = check_vector("query", query)
    c = exact("centroids", centroids, (np.float32,), 2)
    n_nodes = c.shape[0]
    if c.shape[1] != q.shape[0]:
        raise ValueError(f"query has dimension {q.shape[0]} but centroids has dimension {c.shape[1]}")
    cp = index_array("child_ptr", child_ptr, np.int64, n_nodes + 1)
    ci = index_array("child_idx", child_idx, np.int64)
    mp = index_array("member_ptr", member_ptr, np.int64, n_nodes + 1)
    mi = index_array("member_idx", member_idx, np.int64)
    r = v.integer("root", root, 0)
    if r >= n_nodes:
        raise ValueError(f"root must be a node in 0..{n_nodes - 1}, got {r}")
    h = v.integer("height", height, 1)
    kk, bm, pr = v.check_k(k), v.integer("beam", beam, 1), v.integer("probe", probe, 1)
    if rows_f16 is not None:
        rows = exact("rows_f16", rows_f16, (np.uint16,), 2)
        if rows.shape[1] != c.shape[1]:
            raise ValueError(f"rows_f16 has dimension {rows.shape[1]} but centroids has dimension {c.shape[1]}")
        if len(matrices):
            raise ValueError("give matrices or rows_f16, not both")
        mats: list[np.ndarray] = []
        b = np.zeros(1, np.int64)
        n_keys = rows.shape[0]
    else:
        rows = None
        mats = [exact(f"matrices[{i}]", m, (np.float32,), 2) for i, m in enumerate(matrices)]
        for i, m in enumerate(mats):
            if m.shape[1] != c.shape[1]:
                raise ValueError(f"matrices[{i}] has dimension {m.shape[1]} but centroids has dimension {c.shape[1]}")
        b = index_array("bases", bases, np.int64, len(mats) + 1)
        n_keys = int(b[-1])
    mask = byte_mask("allowed", allowed, n_keys)
    if rows is None:
        keys, scores, (n_cent, n_mem, n_leaves), leaves, bad = _core.tree_search(
            q, c, cp, ci, mp, mi, r, h, mats, b, mask, bm, pr, kk, bool(unit_rows))
    else:
        keys, scores, (n_cent, n_mem, n_leaves), leaves, bad = _core.tree_search(
            q, c, cp, ci, mp, mi, r, h, mats, b, mask, bm, pr, kk, bool(unit_rows), rows)
    if bad >= 0:
        raise NonFiniteRow(f"the vector of key {bad} contains NaN or inf", bad)
    found = keys >= 0
    return TreeHits(keys[found], scores[found], int(n_cent), int(n_mem), int(n_leaves), leaves[leaves >= 0])


__all__ = ["TreeHits", "tree_search"]

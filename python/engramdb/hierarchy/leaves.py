"""A batch build's leaves: every vector's leaf label from coarse cells, k-means inside each cell,
then nearest-leaf refinement (what `CentroidTree.build` groups its memories by)."""

from __future__ import annotations

import math

import numpy as np

from .. import kernels
from .kmeans import spherical_kmeans


def leaf_labels(z: np.ndarray, leaf_size: int, iters: int, refine: int, seed: int) -> tuple[np.ndarray, int]:
    """Leaf label of every row: coarse cells, k-means inside each, then nearest-leaf refinement."""
    n = len(z)
    n_leaves = max(1, math.ceil(n / leaf_size))
    n_cells = max(1, min(n_leaves, round(math.sqrt(n_leaves))))
    cell_cent, cell = spherical_kmeans(z, n_cells, iters=iters, seed=seed) if n_cells > 1 else \
        (None, np.zeros(n, np.int64))
    labels = np.empty(n, np.int64)
    leaf_cell: list[int] = []
    for c in range(n_cells):
        rows = np.flatnonzero(cell == c)
        if len(rows) == 0:
            continue
        k = max(1, math.ceil(len(rows) / leaf_size))
        # half the iterations inside a cell: the refinement passes below move what they leave
        _, lab = spherical_kmeans(z[rows], k, iters=max(4, iters // 2), seed=seed + 1 + c) if k > 1 else \
            (None, np.zeros(len(rows), np.int64))
        labels[rows] = lab + len(leaf_cell)
        leaf_cell.extend([c] * k)
    n_leaves = len(leaf_cell)
    if cell_cent is None or refine <= 0:
        return labels, n_leaves
    leaf_cell_a = np.asarray(leaf_cell)
    near_cells = nearest_cells(z, cell_cent, min(3, n_cells))  # (n, 3)
    for _ in range(refine):
        sums, _ = kernels.cluster_sums(z, labels, n_leaves)
        lc = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
        lc = lc.astype(np.float32)
        best = np.full(n, -np.inf, np.float32)
        for c in range(n_cells):  # each point against the leaves of its nearest cells
            rows = np.flatnonzero((near_cells == c).any(axis=1))
            mine = np.flatnonzero(leaf_cell_a == c)
            if len(rows) == 0 or len(mine) == 0:
                continue
            lab, sc = kernels.assign_nearest(np.ascontiguousarray(z[rows]), lc[mine], "cosine")
            better = sc > best[rows]
            best[rows[better]] = sc[better]
            labels[rows[better]] = mine[lab[better]]
    return labels, n_leaves


def nearest_cells(z: np.ndarray, cells: np.ndarray, m: int) -> np.ndarray:
    """The m most similar cells of every row, (n, m). Scored as a few queries (the cells)
    against many rows, chunk by chunk: the scan parallelises over rows, and a top-3 of 100 cells
    per row is one argpartition (topk with n queries would run one heap per row on one thread)."""
    out = np.empty((len(z), m), np.int64)
    for a in range(0, len(z), 65_536):
        sims = kernels.scores(cells, z[a : a + 65_536], "cosine")  # (cells, chunk)
        out[a : a + 65_536] = np.argpartition(-sims, m - 1, axis=0)[:m].T
    return out

"""A batch build's leaves: every vector's leaf label from coarse cells, k-means inside each cell,
then nearest-leaf refinement (what `CentroidTree.build` groups its memories by)."""

from __future__ import annotations

import math

import numpy as np

from .. import kernels
from .kmeans import spherical_kmeans, two_means

SPLIT_ITERS = 4  # k-means iterations re-clustering an oversized leaf into leaves of about leaf_size


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
    labels, origin = split_oversized(z, labels, len(leaf_cell), leaf_size, 2 * leaf_size, seed)
    leaf_cell = [leaf_cell[o] for o in origin]
    n_leaves = len(leaf_cell)
    if cell_cent is None or refine <= 0:
        return labels, n_leaves
    leaf_cell_a = np.asarray(leaf_cell)
    near_cells = nearest_cells(z, cell_cent, min(3, n_cells))  # (n, 3)
    # the rows near each cell, ascending, once for every pass (a row's nearest cells are distinct):
    # a stable sort of the flattened table groups them, where a scan of it per cell per pass cost 0.3 s
    by_cell = np.argsort(near_cells.ravel(), kind="stable")
    cell_bounds = np.searchsorted(near_cells.ravel()[by_cell], np.arange(n_cells + 1))
    near_rows = by_cell // near_cells.shape[1]
    for _ in range(refine):
        sums, _ = kernels.cluster_sums(z, labels, n_leaves)
        lc = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
        lc = lc.astype(np.float32)
        best = np.full(n, -np.inf, np.float32)
        for c in range(n_cells):  # each point against the leaves of its nearest cells
            rows = near_rows[cell_bounds[c] : cell_bounds[c + 1]]
            mine = np.flatnonzero(leaf_cell_a == c)
            if len(rows) == 0 or len(mine) == 0:
                continue
            lab, sc = kernels.assign_nearest(np.ascontiguousarray(z[rows]), lc[mine], "cosine")
            better = sc > best[rows]
            best[rows[better]] = sc[better]
            labels[rows[better]] = mine[lab[better]]
    labels, origin = split_oversized(z, labels, n_leaves, leaf_size, 2 * leaf_size, seed)  # what refinement overfilled
    return labels, len(origin)


def nearest_cells(z: np.ndarray, cells: np.ndarray, m: int) -> np.ndarray:
    """The m most similar cells of every row, (n, m). Scored as a few queries (the cells)
    against many rows, chunk by chunk: the scan parallelises over rows, and a top-3 of 100 cells
    per row is one argpartition (topk with n queries would run one heap per row on one thread)."""
    out = np.empty((len(z), m), np.int64)
    for a in range(0, len(z), 65_536):
        sims = kernels.scores(cells, z[a : a + 65_536], "cosine")  # (cells, chunk)
        out[a : a + 65_536] = np.argpartition(-sims, m - 1, axis=0)[:m].T
    return out


def split_oversized(z: np.ndarray, labels: np.ndarray, n_leaves: int, size: int, cap: int,
                    seed: int) -> tuple[np.ndarray, list[int]]:
    """Leaves of more than `cap` rows re-clustered into leaves of about `size` (spherical k-means,
    then halving by 2-means while a part is still over cap), so a build's leaves fit before the
    levels above them are made: splitting them afterwards, as inserts do, overfilled their parents,
    and each overfilled parent re-clustered all its leaves' memories (76 times, 5 of 15 s, at 100K).
    Returns the new labels and each new leaf's original leaf: when a leaf is over cap, the leaves
    that fit are numbered first, in order, then the parts, and empty labels are dropped; otherwise
    the labels come back as they are."""
    counts = np.bincount(labels, minlength=n_leaves)
    over = np.flatnonzero(counts > cap)
    if len(over) == 0:
        return labels, list(range(n_leaves))
    order = np.argsort(labels, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)])
    keep = np.flatnonzero((counts > 0) & (counts <= cap))
    renumber = np.full(n_leaves, -1, np.int64)
    renumber[keep] = np.arange(len(keep))
    origin = [int(leaf) for leaf in keep]
    parts: list[tuple[int, np.ndarray]] = []
    for leaf in over:
        rows = order[starts[leaf] : starts[leaf + 1]]
        _, lab = spherical_kmeans(z[rows], math.ceil(len(rows) / size), iters=SPLIT_ITERS, seed=seed + int(leaf))
        todo = [rows[lab == c] for c in range(int(lab.max()) + 1)]
        while todo:
            g = todo.pop()
            if len(g) > cap:
                halves = two_means(z[g], seed=seed + len(todo))
                todo += [g[halves == 0], g[halves == 1]]
            elif len(g):
                parts.append((int(leaf), g))
    labels = renumber[labels]
    for i, (old, g) in enumerate(parts):
        labels[g] = len(keep) + i
        origin.append(old)
    return labels, origin

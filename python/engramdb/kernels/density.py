"""Density clustering: HDBSCAN over a precomputed distance matrix (C4's per-space clustering, in
the C++ core), and DBSCAN with silhouettes over unit vectors by cosine distance (H8's themes, H6's
memory types; numpy, in row blocks so memory stays bounded at any size).

The labels are scikit-learn's `HDBSCAN(metric="precomputed")` labels with its defaults (excess
of mass, no single cluster), step for step, except for the order of the spanning tree's edges of
equal weight, which numpy's sort leaves to the platform: here the pair nearer in plain distance
joins first, then Prim's order (tests/test_density.py compares the two with that order pinned). The kernel releases the GIL, so several spaces cluster side by side, and it
skips scikit-learn's symmetry check: the matrix is taken as given.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from .. import _validate as v


def hdbscan(distances: Any, min_cluster_size: int = 5, min_samples: int | None = None) -> np.ndarray:
    """Cluster labels (int64, -1 for noise) of a square float32 or float64 distance matrix.

    `min_samples` (default: `min_cluster_size`) counts the point itself, as scikit-learn's does.
    The matrix should be symmetric with a zero diagonal; a NaN, an infinity or a negative entry
    raises ValueError naming its row. Fewer rows than `min_samples` raises ValueError."""
    d = v.matrix("distances", distances, (np.float32, np.float64))
    n = d.shape[0]
    if d.shape[1] != n:
        raise ValueError(f"distances must be square, got shape {d.shape}")
    mcs = v.integer("min_cluster_size", min_cluster_size, 2)
    ms = mcs if min_samples is None else v.integer("min_samples", min_samples, 1)
    if ms > n:
        raise ValueError(f"min_samples ({ms}) must be at most the number of rows ({n})")
    labels, bad = _core.hdbscan_precomputed(d, mcs, ms)
    if bad >= 0:
        raise ValueError(f"distances row {bad} holds a NaN, an infinity or a negative distance")
    out: np.ndarray = labels
    return out


def group_sums(distances: Any, rows: Any, cols: Any, starts: Any) -> np.ndarray:
    """Each of `rows`' sums of a square float32 or float64 distance matrix over groups of columns:
    a float64 (len(rows), len(starts)) array whose [i, k] adds distances[rows[i], c] for c in
    group k, `cols[starts[k]:starts[k + 1]]` (the last group runs to the end of `cols`), in that
    order; as `np.add.reduceat(distances[rows][:, cols].astype(np.float64), starts, axis=1)`
    for non-empty groups, an empty group's sum being 0. C4's join: each memory's distances to
    each topic's members. Indices outside 0..n-1, or `starts` not from 0 and non-decreasing up to
    len(cols), raise ValueError."""
    d = v.matrix("distances", distances, (np.float32, np.float64))
    n = d.shape[0]
    if d.shape[1] != n:
        raise ValueError(f"distances must be square, got shape {d.shape}")
    arrays = []
    for name, value in (("rows", rows), ("cols", cols), ("starts", starts)):
        a = np.asarray(value)
        if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
            raise ValueError(f"{name} must be a 1-D array of integers, got dtype {a.dtype} shape {a.shape}")
        arrays.append(np.ascontiguousarray(a, np.int64))
    r, c, s = arrays
    for name, a in (("rows", r), ("cols", c)):
        if a.size and (a.min() < 0 or a.max() >= n):
            bad = a[(a < 0) | (a >= n)][0]
            raise ValueError(f"{name} holds {int(bad)}, outside 0..{n - 1}")
    if s.size and (s[0] != 0 or (np.diff(s) < 0).any() or s[-1] > len(c)):
        raise ValueError(f"starts must begin at 0 and not decrease, at most len(cols) = {len(c)}, got {s.tolist()[:8]}")
    out: np.ndarray = _core.group_sums(d, r, c, s)
    return out


def _writable_square(name: str, value: Any) -> np.ndarray:
    x = v.matrix(name, value, (np.float32,))
    if x.shape[0] != x.shape[1]:
        raise ValueError(f"{name} must be square, got shape {x.shape}")
    if not x.flags.writeable:
        raise ValueError(f"{name} must be writable (it is changed in place)")
    return x


def jaccard_from_overlaps(overlaps: Any, sizes: Any, sums: np.ndarray | None = None) -> None:
    """In place, in one pass: a square float32 matrix of term-set overlaps (whole numbers) of sets
    of these `sizes` becomes 1 - Jaccard: union = (sizes[i] - overlap) + sizes[j] and the distance
    1 - overlap / union, in float32 as numpy computes it on float32 arrays (0 overlap over 0 union
    counts as 0 overlap). C4's lexical distances: numpy took a pass over the matrix per step.
    `sums` (float64, one per row, written): each row's sum of its distances but the diagonal
    entry's, made in the same pass while the row is in cache (see `distances_from_cosines`)."""
    x = _writable_square("overlaps", overlaps)
    s = np.asarray(sizes)
    if s.dtype != np.float32 or s.shape != (x.shape[0],):
        raise ValueError(f"sizes must be float32 of shape ({x.shape[0]},), got {s.dtype} {s.shape}")
    s = np.ascontiguousarray(s)
    _apart("sizes", s, "overlaps", x)
    out = row_sums_out(sums, x.shape[0])
    _apart("sums", out, "overlaps", x)
    _apart("sums", out, "sizes", s)
    _core.jaccard_from_overlaps(x, s, out)


def distances_from_cosines(cosines: Any, sums: np.ndarray | None = None) -> None:
    """In place, in one pass: a square float32 matrix of cosines becomes 1 - cosine, clipped at 0
    (a NaN stays NaN), in float32 as numpy computes it. C4's dense distances. `sums` (float64, one
    per row, written): each row's sum of its distances but the diagonal entry's, in the same pass.
    Exact: every entry is a float32 1 - x with x >= 0, a multiple of 2^-24 (at most 2), and a sum
    of millions of them needs no rounding in float64, in whatever order it is added."""
    x = _writable_square("cosines", cosines)
    out = row_sums_out(sums, x.shape[0])
    _apart("sums", out, "cosines", x)
    _core.distances_from_cosines(x, out)


def row_sums_out(sums: np.ndarray | None, n: int) -> np.ndarray | None:
    """`sums` checked (ValueError otherwise): None, or a writable C-contiguous float64 array of
    `n`, what the kernels above write each row's sum into (and what a caller writing row sums of
    its own, `topics.clustering.distances`, checks alike)."""
    if sums is None:
        return None
    if not isinstance(sums, np.ndarray) or sums.dtype != np.float64 or sums.shape != (n,) \
            or not sums.flags.c_contiguous or not sums.flags.writeable:
        got = f"{sums.dtype} {sums.shape}" if isinstance(sums, np.ndarray) else type(sums).__name__
        raise ValueError(f"sums must be a writable C-contiguous float64 array of shape ({n},), got {got}")
    return sums


def _apart(name: str, a: np.ndarray | None, other: str, b: np.ndarray) -> None:
    """ValueError unless `a` and `b` hold separate memory: the kernels write the matrix (and the
    sums) in place with the GIL released while reading the others, so an operand laid over
    another's bytes gave silently wrong distances and sums (issue 29's adversary). Both are
    C-contiguous, so overlapping bounds are overlapping bytes: the cheap bounds test is exact."""
    if a is not None and np.may_share_memory(a, b):
        raise ValueError(f"{name} must not share memory with {other} (the kernel writes in place)")


COSINE_BLOCK = 1024  # rows of the n x n cosine distances held at once


def _unit_rows(name: str, vectors: Any) -> np.ndarray:
    x = np.asarray(vectors, np.float64)
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} row {int(np.argwhere(~np.isfinite(x))[0][0])} contains NaN or inf")
    n = np.linalg.norm(x, axis=1, keepdims=True)
    out: np.ndarray = np.divide(x, n, out=np.zeros_like(x), where=n > 0)
    return out


def _cosine_block(u: np.ndarray, start: int) -> np.ndarray:
    """1 - cosine of rows start.. (a block) against every row, clipped to [0, 2] as scikit-learn's
    cosine_distances does."""
    d: np.ndarray = u[start:start + COSINE_BLOCK] @ u.T
    np.subtract(1.0, d, out=d)
    np.clip(d, 0.0, 2.0, out=d)
    return d


def dbscan_cosine(vectors: Any, eps: float, min_samples: int) -> np.ndarray:
    """DBSCAN labels (int64, -1 for noise) of row vectors by cosine distance: scikit-learn's
    `DBSCAN(eps, min_samples, metric="cosine")` step for step (neighbours within `eps`, the point
    itself included; clusters grown depth-first from the core points in index order), so its
    labels, border points included. Zero rows are at distance 1 from everything."""
    u = _unit_rows("vectors", vectors)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
        raise ValueError(f"eps must be a number >= 0, got {eps!r}")
    ms = v.integer("min_samples", min_samples, 1)
    n = len(u)
    hoods: list[np.ndarray] = []
    for start in range(0, n, COSINE_BLOCK):
        d = _cosine_block(u, start)
        hoods += [np.flatnonzero(row <= eps) for row in d]
    core = np.array([len(h) >= ms for h in hoods], bool)
    labels = np.full(n, -1, np.int64)
    label = 0
    for i in range(n):
        if labels[i] != -1 or not core[i]:
            continue
        stack: list[int] = []
        j = i
        while True:  # depth first, as scikit-learn's dbscan_inner: border points join, never expand
            if labels[j] == -1:
                labels[j] = label
                if core[j]:
                    stack.extend(v for v in hoods[j].tolist() if labels[v] == -1)
            if not stack:
                break
            j = stack.pop()
        label += 1
    return labels


def silhouette_cosine(vectors: Any, labels: Any) -> np.ndarray:
    """Each row's silhouette by cosine distance (float64): (b - a) / max(a, b), a its mean distance
    to the rest of its cluster, b the least mean distance to another cluster; 0 in a cluster of
    one. scikit-learn's `silhouette_samples(X, labels, metric="cosine")`, to rounding. Needs at
    least two distinct labels, and fewer than rows."""
    u = _unit_rows("vectors", vectors)
    lab = np.asarray(labels)
    if lab.shape != (len(u),):
        raise ValueError(f"labels must have one entry per row ({len(u)}), got shape {lab.shape}")
    kinds, code = np.unique(lab, return_inverse=True)
    if not 2 <= len(kinds) < len(u):
        raise ValueError(f"silhouettes need 2 to {len(u) - 1} distinct labels, got {len(kinds)}")
    sizes = np.bincount(code).astype(np.float64)
    onehot = np.zeros((len(u), len(kinds)))
    onehot[np.arange(len(u)), code] = 1.0
    a = np.empty(len(u))
    b = np.empty(len(u))
    for start in range(0, len(u), COSINE_BLOCK):
        sums = _cosine_block(u, start) @ onehot  # each row's summed distance to every cluster
        rows = np.arange(start, start + len(sums))
        own = code[rows]
        a[rows] = sums[np.arange(len(sums)), own]
        sums[np.arange(len(sums)), own] = np.inf
        b[rows] = (sums / sizes).min(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        a /= sizes[code] - 1
        s = (b - a) / np.maximum(a, b)
    out: np.ndarray = np.nan_to_num(s)
    return out


__all__ = ["dbscan_cosine", "hdbscan", "silhouette_cosine"]

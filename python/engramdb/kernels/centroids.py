"""Centroid kernels (N2): running-mean updates, nearest-centroid assignment, cluster sums."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import _core
from .. import _validate as v
from ._common import (
    ASSIGN_METRICS,
    Assignment,
    AssignMetric,
    ClusterSums,
    NonFiniteRow,
    metric_code,
    raise_bad_row,
)


class KmeansStep(NamedTuple):
    """One Lloyd iteration: each vector's nearest centroid (`labels` int64, `scores` float32, as
    `assign_nearest`'s) and the per-cluster float64 `sums` and int64 `counts` of those labels."""

    labels: np.ndarray
    scores: np.ndarray
    sums: np.ndarray
    counts: np.ndarray


def centroid_update(centroids: np.ndarray, counts: np.ndarray, node_ids: Any, vectors: Any) -> None:
    """Fold vectors into running-mean centroids in place: c <- c + (v - c) / (n + 1), n <- n + 1.

    Pairs are applied in order, so several vectors for one node compound exactly like one-by-one
    updates. `centroids` (c, d) float32 and `counts` (c,) int64 are modified in place. A batch
    holding NaN or inf is refused whole (ValueError naming the row) and changes nothing.
    """
    c = v.matrix("centroids", centroids, (np.float32,))
    cnt = v.matrix("counts", counts, (np.int64,), ndim=1)
    if not (c.flags.writeable and cnt.flags.writeable):
        raise ValueError("centroids and counts must be writeable (they are updated in place)")
    if cnt.shape[0] != c.shape[0]:
        raise ValueError(f"counts has length {cnt.shape[0]} but centroids has {c.shape[0]} rows")
    if (cnt < 0).any():
        raise ValueError("counts must be >= 0")
    vec = v.as_array("vectors", vectors)
    if vec.dtype.kind not in "fiu":
        raise TypeError(f"vectors must be a real float array, got dtype {vec.dtype}")
    if vec.ndim == 1:
        vec = vec[None, :]
    if vec.ndim != 2:
        raise ValueError(f"vectors must be 1-D or 2-D, got {vec.ndim}-D shape {vec.shape}")
    vec = np.ascontiguousarray(vec, dtype=np.float32)  # no copy when already float32
    v.same_dim("vectors", vec, "centroids", c)
    ids = np.ascontiguousarray(v.as_array("node_ids", node_ids)).reshape(-1)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"node_ids must be integers, got dtype {ids.dtype}")
    ids = ids.astype(np.int64)
    if ids.shape[0] != vec.shape[0]:
        raise ValueError(f"node_ids has {ids.shape[0]} entries but vectors has {vec.shape[0]} rows")
    if ids.size and (ids.min() < 0 or ids.max() >= c.shape[0]):
        raise ValueError(f"node_ids must lie in 0..{c.shape[0] - 1}")
    # NaN/inf are found on the touched centroids after the fact (no extra pass over the inputs);
    # the kernel then undoes the whole batch.
    bad = _core.centroid_update(c, cnt, ids, vec)
    if bad >= 0:
        raise ValueError(f"vectors row {bad} contains NaN or inf (or overflows its centroid); nothing was updated")


def _assign_args(vectors: Any, centroids: Any, metric: str, threads: int | None) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Checked (vectors, centroids, metric code, threads) of the assignment kernels."""
    nt = v.check_threads(threads)
    mcode = metric_code(metric, ASSIGN_METRICS)
    vec = v.matrix("vectors", vectors, (np.float32,))
    c, _ = v.float_queries("centroids", centroids)
    v.same_dim("centroids", c, "vectors", vec)
    if c.shape[0] < 1:
        raise ValueError("centroids must have at least one row")
    return vec, c, mcode, nt


def assign_nearest(vectors: np.ndarray, centroids: Any, metric: AssignMetric = "l2", *, threads: int | None = None) -> Assignment:
    """Nearest centroid for every vector (the assignment step of k-means).

    "l2" minimises squared Euclidean distance; "dot", "cosine" and "born" maximise similarity.
    Ties go to the lower centroid index.
    """
    vec, c, mcode, nt = _assign_args(vectors, centroids, metric, threads)
    labels, sc, bad = _core.assign_nearest(vec, c, mcode, nt)
    raise_bad_row("vectors", bad)
    return Assignment(labels, sc)


def assign_topk(vectors: np.ndarray, centroids: Any, m: int, metric: AssignMetric = "l2", *,
                threads: int | None = None) -> Assignment:
    """The m nearest centroids of every vector, nearest first: `labels` and `scores` are (n, m).

    Scores as `assign_nearest`'s (squared distance for l2, similarity otherwise); ties go to the
    lower centroid index. One pass over the centroids per block of vectors, parallel over vectors.
    """
    vec, c, mcode, nt = _assign_args(vectors, centroids, metric, threads)
    mm = v.check_k(m)
    if mm > c.shape[0]:
        raise ValueError(f"m must be at most the number of centroids ({c.shape[0]}), got {m}")
    labels, sc, bad = _core.assign_topk(vec, c, mcode, mm, nt)
    raise_bad_row("vectors", bad)
    return Assignment(labels, sc)


def cluster_sums(vectors: np.ndarray, labels: Any, n_clusters: int) -> ClusterSums:
    """Per-cluster float64 sums and counts (the update step of k-means: means = sums / counts)."""
    vec = v.matrix("vectors", vectors, (np.float32,))
    nc = v.check_k(n_clusters) if n_clusters != 0 else 0
    lab = np.ascontiguousarray(v.as_array("labels", labels)).reshape(-1)
    if lab.dtype.kind not in "iu":
        raise TypeError(f"labels must be integers, got dtype {lab.dtype}")
    lab = lab.astype(np.int64)
    if lab.shape[0] != vec.shape[0]:
        raise ValueError(f"labels has {lab.shape[0]} entries but vectors has {vec.shape[0]} rows")
    if lab.size and (lab.min() < 0 or lab.max() >= nc):
        raise ValueError(f"labels must lie in 0..{nc - 1}")
    if vec.size:
        v.check_finite("vectors", vec)
    sums, counts = _core.cluster_sums(vec, lab, nc)
    return ClusterSums(sums, counts)


def kmeans_step(vectors: np.ndarray, centroids: Any, metric: AssignMetric = "cosine", *,
                threads: int | None = None) -> KmeansStep:
    """`assign_nearest` then `cluster_sums` of its labels: one iteration of k-means, with the
    checks made once for both halves. The sums need no finiteness pass over the vectors (the
    assignment already refuses a row that scores NaN or inf, naming it), and the labels are the
    kernel's own, so in range: on every iteration of a build that pass cost a third of the time.
    """
    vec, c, mcode, nt = _assign_args(vectors, centroids, metric, threads)
    labels, sc, bad = _core.assign_nearest(vec, c, mcode, nt)
    raise_bad_row("vectors", bad)
    sums, counts = _core.cluster_sums(vec, labels, c.shape[0])
    return KmeansStep(labels, sc, sums, counts)


def spherical_kmeans_loop(vectors: np.ndarray, centroids: Any, iters: int) -> tuple[np.ndarray, np.ndarray]:
    """Spherical k-means in one native call on one thread: (unit centroids (k, d) float32,
    labels (n,) int64).

    Each iteration assigns every vector to its most cosine-similar centroid (ties to the lower
    one), re-seeds each emptied cluster with the vector its own cluster fits worst, takes each
    cluster's mean direction (float64 sums cast to float32, then normalised), and stops after
    `iters` or once no more than n // 1000 labels changed. `centroids` (k >= 1 rows) should be
    unit length. For small problems (a leaf split): a Python loop of `kmeans_step` costs more in
    call overhead than in arithmetic there. A vector that scores NaN or inf raises `NonFiniteRow`.
    """
    vec = v.matrix("vectors", vectors, (np.float32,))
    c, _ = v.float_queries("centroids", centroids)
    v.same_dim("centroids", c, "vectors", vec)
    if c.shape[0] < 1:
        raise ValueError("centroids must have at least one row")
    it = v.integer("iters", iters, 0)
    cent, labels, ran = _core.spherical_kmeans_loop(vec, c, it)
    if ran < 0:
        raise NonFiniteRow(f"vectors row {-ran - 1} has a non-finite score", -ran - 1)
    return cent, labels

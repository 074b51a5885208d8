"""Spherical k-means on the N2 kernels (J2): assignment by `assign_nearest`, means by `cluster_sums`.

Spherical because the tree scores by cosine: a point joins the centroid it is most similar to,
and a centroid is the mean direction of its points. Seeding is k-means++ on a sample (D^2
weighting with 1 - cos as the distance), which matters: random seeds leave many tiny clusters on
real text. An emptied cluster is re-seeded with the point its cluster fits worst.
"""

from __future__ import annotations

import numpy as np

from .. import kernels

SEED_SAMPLE = 256  # k-means++ runs on a sample of 8 points per cluster, at least this many
FULL_MATRIX = 512  # samples up to this size get their similarity matrix in one kernel call
NATIVE_LOOP = 4_096  # rows x clusters up to which the iterations run in one native call (one thread)


def _unit(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float32)
    n = np.sqrt(np.einsum("ij,ij->i", a, a))[:, None]  # einsum: no BLAS threads, less overhead than norm
    out: np.ndarray = a / np.where(n > 0, n, np.float32(1.0))
    return out


def plus_plus(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k seeds (rows of x, unit length) chosen by k-means++ with cosine distance on a sample."""
    m = min(len(x), max(SEED_SAMPLE, 8 * k))  # enough to seed well, small enough to stay cheap
    sample = x[rng.choice(len(x), m, replace=False)] if m < len(x) else x
    sample = _unit(np.asarray(sample, dtype=np.float32))
    seeds = [int(rng.integers(m))]
    # similarities by the N1 kernel: numpy's BLAS would spin up threads that then fight the
    # k-means kernels for the same two cores. When k is a good part of a small sample, the whole
    # similarity matrix in one call (k calls of one row each cost more in call overhead than in
    # arithmetic); for a handful of seeds (a leaf split's k = 2 or 3), only their k rows.
    full = kernels.scores(sample, sample, threads=1) if m <= FULL_MATRIX and 8 * k >= m else None

    def sims(i: int) -> np.ndarray:
        row: np.ndarray = full[i] if full is not None else kernels.scores(sample[i], sample, threads=1)
        return row

    dist = np.maximum(1.0 - sims(seeds[0]), 0.0).astype(np.float64)
    for _ in range(1, k):
        cum = np.cumsum(dist)  # D^2 sampling by inverse CDF: rng.choice(p=...) re-checks p each time
        total = float(cum[-1])
        i = min(int(np.searchsorted(cum, rng.random() * total, side="right")), m - 1) if total > 0 else int(rng.integers(m))
        seeds.append(i)
        dist = np.minimum(dist, np.maximum(1.0 - sims(i), 0.0))
    out: np.ndarray = sample[seeds].copy()
    return out


def spherical_kmeans(
    x: np.ndarray, k: int, *, iters: int = 12, seed: int = 0, threads: int | None = None,
    init: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(unit centroids (k, d) float32, labels (n,) int64) of x's rows; k is capped at len(x).

    `init`: starting centroids (rows beyond k are dropped; missing ones are seeded by k-means++),
    for re-clustering points that already have a fair partition. Stops early once fewer than
    0.1% of the labels change in an iteration.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = len(x)
    if n == 0:
        raise ValueError("spherical_kmeans needs at least one vector")
    if not np.isfinite(x).all():
        raise ValueError("spherical_kmeans: the vectors contain NaN or inf")
    k = max(1, min(int(k), n))
    rng = np.random.default_rng(seed)
    if init is None:
        cent = plus_plus(x, k, rng)
    else:
        cent = _unit(np.asarray(init, dtype=np.float32)[:k])
        if len(cent) < k:
            cent = np.concatenate([cent, plus_plus(x, k - len(cent), rng)])
    if n * k <= NATIVE_LOOP and threads in (None, 1):
        # small problems (a leaf split: ~200 rows, k = 2 or 3) run the whole loop natively: the same
        # steps from Python cost ~1.5 ms a call in overhead, most of a 100K insert run's time
        return kernels.spherical_kmeans_loop(x, cent, iters)
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(iters):
        # one call for both halves: cluster_sums alone would re-check every row for NaN on every
        # iteration (a third of a build's time); the assignment already vouches for them
        new, score, sums, counts = kernels.kmeans_step(x, cent, "cosine", threads=threads)
        changed = int((new != labels).sum())
        labels = new
        empty = np.flatnonzero(counts == 0)
        if len(empty):  # re-seed each empty cluster with a point its current cluster fits worst
            worst = np.argsort(score)[: len(empty)]
            sums[empty] = x[worst]
            labels[worst] = empty
        cent = _unit(sums)
        if changed <= n // 1000:
            break
    return cent, labels


LOPSIDED = 8  # a two-way split whose smaller side holds under 1/LOPSIDED of the rows is redone evenly


def two_means(x: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """Labels 0/1 splitting x's rows in two (a split of a full node, J3; the halving of an
    oversized leaf or level group); both sides non-empty, the smaller at least 1/LOPSIDED of them.

    On identical or nearly identical rows 2-means peels one row off (k-means re-seeds its empty
    side with a single row), and every loop that halves until a part fits then ran once per row: a
    tree as deep as n / (2 x fanout), minutes at a few thousand duplicates, and a level past int8.
    Such a split is redone evenly: the rows ordered along the line between the two centroids (by
    position where they tie) and cut at the median, which keeps what separation there is and
    halves duplicates by position."""
    n = len(x)
    if n < 2:
        raise ValueError("two_means needs at least two vectors")
    centroids, labels = spherical_kmeans(x, 2, iters=8, seed=seed, threads=1)
    small = int(np.bincount(labels, minlength=2).min())
    if small * LOPSIDED < n:
        axis = centroids[1] - centroids[0] if len(centroids) == 2 else np.zeros(x.shape[1], np.float32)
        order = np.argsort(np.asarray(x, dtype=np.float32) @ axis, kind="stable")
        labels = np.zeros(n, np.int64)
        labels[order[n // 2:]] = 1
    return labels

"""PCA used only to cluster (J2): k-means in a few principal dimensions, centroids kept in full.

The seed design found 22 dimensions helped its clustering; bench/test_bench_hierarchy.py measures
whether it helps here. Fitted by SVD on a sample, so fitting stays cheap at a million rows.
"""

from __future__ import annotations

import numpy as np

FIT_SAMPLE = 20_000


def fit(x: np.ndarray, dims: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(mean (d,), components (d, dims)) of x's rows, from a sample of at most FIT_SAMPLE rows."""
    if not 1 <= dims <= x.shape[1]:
        raise ValueError(f"pca dims must be in 1..{x.shape[1]}, got {dims}")
    rng = np.random.default_rng(seed)
    s = x[rng.choice(len(x), FIT_SAMPLE, replace=False)] if len(x) > FIT_SAMPLE else x
    s = np.asarray(s, dtype=np.float64)
    mean = s.mean(axis=0)
    _, _, vt = np.linalg.svd(s - mean, full_matrices=False)
    return mean.astype(np.float32), np.ascontiguousarray(vt[:dims].T, dtype=np.float32)


def project(x: np.ndarray, mean: np.ndarray, components: np.ndarray) -> np.ndarray:
    """Rows of x in the principal dimensions (float32, C-contiguous)."""
    return np.ascontiguousarray((np.asarray(x, dtype=np.float32) - mean) @ components)

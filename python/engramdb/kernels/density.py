"""HDBSCAN over a precomputed distance matrix (C4's per-space clustering), in the C++ core.

The labels are scikit-learn's `HDBSCAN(metric="precomputed")` labels with its defaults (excess
of mass, no single cluster), step for step, except for the order of the spanning tree's edges of
equal weight, which numpy's sort leaves to the platform: here the pair nearer in plain distance
joins first, then Prim's order (tests/test_density.py compares the two with that order pinned). The kernel releases the GIL, so several spaces cluster side by side, and it
skips scikit-learn's symmetry check: the matrix is taken as given.
"""

from __future__ import annotations

import operator
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
    mcs = _count("min_cluster_size", min_cluster_size, 2)
    ms = mcs if min_samples is None else _count("min_samples", min_samples, 1)
    if ms > n:
        raise ValueError(f"min_samples ({ms}) must be at most the number of rows ({n})")
    labels, bad = _core.hdbscan_precomputed(d, mcs, ms)
    if bad >= 0:
        raise ValueError(f"distances row {bad} holds a NaN, an infinity or a negative distance")
    out: np.ndarray = labels
    return out


def _count(name: str, value: Any, least: int) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    try:
        k = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}") from None
    if k < least:
        raise ValueError(f"{name} must be at least {least}, got {k}")
    return k


__all__ = ["hdbscan"]

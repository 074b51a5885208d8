"""Sorted unique values of a 1-d array, as `np.unique` returns them, without `np.unique`'s
first call in a process importing `numpy.ma` (it asks `np.ma.is_masked`): 20-30 ms of a new
process's first search on a 2-core machine, inside the call. The request path uses this one;
`np.unique` stays where its other outputs (indices, inverse, counts, axes) are wanted."""

from __future__ import annotations

import numpy as np


def unique(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a 1-d array, as a new array (for keys and codes: a NaN, if
    any, is kept each time where np.unique folds them into one)."""
    x = np.sort(np.asarray(values).ravel())
    if len(x) < 2:
        return x
    keep = np.empty(len(x), bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


__all__ = ["unique"]

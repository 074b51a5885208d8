"""What every kernel family shares: metric names, result tuples, argument and result checks."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from .. import _validate as v

Metric = Literal["dot", "cosine", "born"]
AssignMetric = Literal["l2", "dot", "cosine", "born"]

METRICS: dict[str, int] = {"dot": 0, "cosine": 1, "born": 2}  # the core's codes
ASSIGN_METRICS: dict[str, int] = {"l2": 0, "dot": 1, "cosine": 2, "born": 3}


class TopK(NamedTuple):
    """Best rows per query: `indices` (int64) and `scores` (float32), best first."""

    indices: np.ndarray
    scores: np.ndarray


class NearestCodes(NamedTuple):
    """Closest codes per query: `indices` (int64) and Hamming `distances` (int64), closest first."""

    indices: np.ndarray
    distances: np.ndarray


class Assignment(NamedTuple):
    """Nearest centroid per vector: `labels` (int64) and the winning `scores` (float32; squared
    distance for l2, similarity otherwise)."""

    labels: np.ndarray
    scores: np.ndarray


class ClusterSums(NamedTuple):
    """Per-cluster `sums` (float64, (c, d)) and `counts` (int64, (c,))."""

    sums: np.ndarray
    counts: np.ndarray


def metric_code(metric: str, table: dict[str, int] = METRICS) -> int:
    """The core's code of a metric name (a ValueError names the choices)."""
    if not isinstance(metric, str) or metric not in table:
        raise ValueError(f"metric must be one of {', '.join(map(repr, table))}; got {metric!r}")
    return table[metric]


def shape_out(res: tuple[np.ndarray, np.ndarray], was_1d: bool) -> tuple[np.ndarray, np.ndarray]:
    a, b = res
    return (a[0], b[0]) if was_1d else (a, b)


class NonFiniteRow(ValueError):
    """A row of an operand holds NaN or inf (or overflows float32): `row` is its number, so a
    caller that gathered the operand can name the row in its own terms."""

    def __init__(self, message: str, row: int) -> None:
        super().__init__(message)
        self.row = row


def raise_bad_row(name: str, row: int) -> None:
    if row >= 0:
        raise NonFiniteRow(f"{name} row {row} contains NaN or inf (or its score overflows float32)", row)


def exact(name: str, value: Any, dtypes: tuple[type[Any], ...], ndim: int = 1) -> np.ndarray:
    """`_validate.matrix` with a fast path for the usual case (already right): these checks run on
    every search, where the general one's cost (~1.5 us each) added up to a tenth of a query."""
    if isinstance(value, np.ndarray) and value.ndim == ndim and value.flags.c_contiguous and value.dtype in dtypes:
        return value
    return v.matrix(name, value, dtypes, ndim)


def check_vector(name: str, value: Any) -> np.ndarray:
    """One small query vector as C-contiguous float32 (d,), finite (coerced, as queries are)."""
    if isinstance(value, np.ndarray) and value.dtype == np.float32 and value.ndim == 1 and value.flags.c_contiguous:
        if not math.isfinite(float(np.dot(value, value))):  # finite unless a value is not (or it overflows)
            v.check_finite(name, value)
        return value
    q, was_1d = v.float_queries(name, value)
    if not was_1d:
        raise ValueError(f"{name} must be one vector (d,), got shape {np.shape(value)}")
    out: np.ndarray = q[0]
    return out


def index_array(name: str, value: Any, dtype: type[np.integer[Any]], length: int | None = None) -> np.ndarray:
    """A C-contiguous 1-D integer operand of exactly `dtype` (and `length`, when given)."""
    arr = exact(name, value, (dtype,))
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got {arr.shape[0]}")
    return arr


def byte_mask(name: str, value: Any, length: int) -> np.ndarray | None:
    """A per-row filter given as bool or uint8 bytes (0 = never scored), C-contiguous, `length` long,
    as the uint8 view the core reads (no copy)."""
    if value is None:
        return None
    arr = exact(name, value, (np.bool_, np.uint8))
    if arr.shape[0] != length:
        raise ValueError(f"{name} must have one entry per row ({length}), got {arr.shape[0]}")
    return arr.view(np.uint8)


def merge_topk(keys: Sequence[np.ndarray], scores: Sequence[np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of several (keys, scores) top-k lists of disjoint key sets (one per matrix or
    segment), higher score first, ties to the lower key: the order every scan in engramdb uses."""
    if not keys:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    ak = np.concatenate([np.asarray(x, np.int64) for x in keys])
    asc = np.concatenate([np.asarray(x, np.float32) for x in scores])
    order = np.lexsort((ak, -asc))[:k]
    return ak[order], asc[order]

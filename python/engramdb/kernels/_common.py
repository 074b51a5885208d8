"""What every kernel family shares: metric names, result tuples, argument and result checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np

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


def raise_bad_row(name: str, row: int) -> None:
    if row >= 0:
        raise ValueError(f"{name} row {row} contains NaN or inf (or its score overflows float32)")


def merge_topk(keys: Sequence[np.ndarray], scores: Sequence[np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of several (keys, scores) top-k lists of disjoint key sets (one per matrix or
    segment), higher score first, ties to the lower key: the order every scan in engramdb uses."""
    if not keys:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    ak = np.concatenate([np.asarray(x, np.int64) for x in keys])
    asc = np.concatenate([np.asarray(x, np.float32) for x in scores])
    order = np.lexsort((ak, -asc))[:k]
    return ak[order], asc[order]

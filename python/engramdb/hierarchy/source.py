"""Where a centroid tree reads memory vectors: by key, and a top-k scan over a set of keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from .. import kernels

KeyFilter = Callable[[np.ndarray], np.ndarray]  # keys -> bool array: which may be scored


class VectorSource(Protocol):
    """Where the tree reads memory vectors: by key, and a top-k scan over a set of keys."""

    def take(self, keys: np.ndarray) -> np.ndarray: ...

    def topk(self, query: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...


class MatrixSource:
    """Keys are row numbers of one (n, d) float32 matrix (tests, benchmarks, one segment)."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)

    def take(self, keys: np.ndarray) -> np.ndarray:
        rows: np.ndarray = self.matrix[keys]
        return rows

    def topk(self, query: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if len(keys) == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        idx, sc = kernels.topk(query, self.matrix, k, "cosine", mask=keys, threads=1)
        return idx, sc

    def matrices(self) -> tuple[list[np.ndarray], np.ndarray]:
        """The matrices keys index, and where each starts (for the native descent)."""
        return [self.matrix], np.array([0, len(self.matrix)], np.int64)

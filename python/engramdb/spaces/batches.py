"""Joining and slicing embedding batches of any kind (dense, binary, sparse, multivector)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .protocol import Embedding, SparseBatch, TokenBatch


def concat(parts: Sequence[Embedding]) -> Embedding:
    """One batch holding the rows of `parts` in order (all of one kind)."""
    first = parts[0]
    if isinstance(first, SparseBatch):
        sp = [p for p in parts if isinstance(p, SparseBatch)]
        sizes = np.concatenate([[0]] + [np.diff(p.indptr) for p in sp])
        return SparseBatch(
            np.cumsum(sizes).astype(np.int64),
            np.concatenate([p.indices for p in sp]).astype(np.int32),
            np.concatenate([p.weights for p in sp]).astype(np.float32),
        )
    if isinstance(first, TokenBatch):
        tb = [p for p in parts if isinstance(p, TokenBatch)]
        sizes = np.concatenate([[0]] + [np.diff(p.offsets) for p in tb])
        return TokenBatch(np.concatenate([p.tokens for p in tb]).astype(np.float32), np.cumsum(sizes).astype(np.int64))
    return np.concatenate([np.atleast_2d(np.asarray(p)) for p in parts])


def take(batch: Embedding, rows: Sequence[int] | np.ndarray) -> Embedding:
    """The given rows of a batch, in that order (a copy)."""
    rows = np.asarray(rows, dtype=np.int64)
    if isinstance(batch, SparseBatch):
        return concat([SparseBatch(np.array([0, b - a]), *(x[a:b] for x in (batch.indices, batch.weights)))
                       for a, b in ((int(batch.indptr[r]), int(batch.indptr[r + 1])) for r in rows)]) \
            if rows.size else SparseBatch(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    if isinstance(batch, TokenBatch):
        if not rows.size:
            return TokenBatch(np.zeros((0, batch.tokens.shape[1]), np.float32), np.zeros(1, np.int64))
        return concat([TokenBatch(batch.row(int(r)), np.array([0, batch.row(int(r)).shape[0]])) for r in rows])
    return np.ascontiguousarray(np.asarray(batch)[rows])

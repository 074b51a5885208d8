"""Joining and slicing embedding batches of any kind (dense, binary, sparse, multivector)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .protocol import Embedding, SparseBatch, TokenBatch
from .schema import Space


def concat(parts: Sequence[Embedding]) -> Embedding:
    """One batch holding the rows of `parts` in order (all of one kind), a copy: never a
    caller's array (ingest stores what this returns). One copy, not two: the dtype is cast
    without a second one."""
    first = parts[0]
    if isinstance(first, SparseBatch):
        sp = [p for p in parts if isinstance(p, SparseBatch)]
        sizes = np.concatenate([[0]] + [np.diff(p.indptr) for p in sp])
        return SparseBatch(
            np.cumsum(sizes).astype(np.int64),
            np.concatenate([p.indices for p in sp]).astype(np.int32, copy=False),
            np.concatenate([p.weights for p in sp]).astype(np.float32, copy=False),
        )
    if isinstance(first, TokenBatch):
        tb = [p for p in parts if isinstance(p, TokenBatch)]
        sizes = np.concatenate([[0]] + [np.diff(p.offsets) for p in tb])
        if all(p.table is not None and p.table_rows is not None for p in tb):
            return _concat_tables(tb, np.cumsum(sizes).astype(np.int64))
        return TokenBatch(np.concatenate([p.tokens for p in tb]).astype(np.float32, copy=False),
                          np.cumsum(sizes).astype(np.int64), _joined_codes([p.codes for p in tb]))
    return np.concatenate([np.atleast_2d(np.asarray(p)) for p in parts])


def _concat_tables(tb: Sequence[TokenBatch], offsets: np.ndarray) -> TokenBatch:
    """Batches held as rows of tables (`TokenBatch.of_rows`) joined the same way: the tables
    stacked, each part's rows moved past the tables before it (its codes kept when every part has
    them); nothing gathered."""
    tables = [p.table for p in tb if p.table is not None]
    base = np.cumsum([0] + [len(t) for t in tables])
    rows = np.concatenate([np.asarray(p.table_rows, np.int64) + b for p, b in zip(tb, base.tolist())])
    return TokenBatch.of_rows(np.concatenate(tables).astype(np.float32, copy=False), rows, offsets,
                              _joined_codes([p.table_codes for p in tb]))


def _joined_codes(codes: Sequence[tuple[np.ndarray, np.ndarray] | None]) -> tuple[np.ndarray, np.ndarray] | None:
    """The parts' int8 codes and scales joined in order: kept only when every part has them."""
    if any(c is None for c in codes):
        return None
    return (np.concatenate([c[0] for c in codes if c is not None]),
            np.concatenate([c[1] for c in codes if c is not None]))


def empty_batch(space: Space) -> Embedding:
    """A batch of no rows of `space`'s kind and width."""
    if space.kind == "sparse":
        return SparseBatch(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    if space.kind == "multivector":
        return TokenBatch(np.zeros((0, space.dim), np.float32), np.zeros(1, np.int64))
    if space.kind == "binary":
        return np.zeros((0, space.dim // 8), np.uint8)
    return np.zeros((0, space.dim), np.float32)


def take(batch: Embedding, rows: Sequence[int] | np.ndarray) -> Embedding:
    """The given rows of a batch, in that order (a copy)."""
    rows = np.asarray(rows, dtype=np.int64)
    if isinstance(batch, SparseBatch):
        ptr, pick = _ragged(batch.indptr, rows)
        return SparseBatch(ptr, batch.indices[pick].astype(np.int32), batch.weights[pick].astype(np.float32))
    if isinstance(batch, TokenBatch):
        ptr, pick = _ragged(batch.offsets, rows)
        return TokenBatch(np.ascontiguousarray(batch.tokens[pick], np.float32).reshape(-1, batch.tokens.shape[1]), ptr)
    return np.ascontiguousarray(np.asarray(batch)[rows])


def _ragged(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The offsets of the picked rows of a ragged batch, and the flat positions of their items
    (one gather instead of a slice per row: 2,000 rows cost milliseconds, not tens of them)."""
    starts = np.asarray(ptr, np.int64)[rows]
    sizes = np.asarray(ptr, np.int64)[rows + 1] - starts
    out = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(sizes, out=out[1:])
    pick = np.repeat(starts - out[:-1], sizes) + np.arange(int(out[-1]), dtype=np.int64)
    return out, pick

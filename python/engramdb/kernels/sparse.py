"""Jaccard and weighted Jaccard of id-sets (N3) against CSR id-sets, top-k."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import _core
from .. import _validate as v
from ._common import TopK
from .sets import unique


def csr_from_sets(sets: Iterable[Iterable[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Pack id-sets into CSR (indptr int64, indices int32), each row sorted and de-duplicated."""
    rows = [unique(np.asarray(list(s), dtype=np.int64)) for s in sets]
    for i, r in enumerate(rows):
        if r.size and (r[0] < 0 or r[-1] > np.iinfo(np.int32).max):
            raise ValueError(f"sets[{i}] holds id {int(r[0] if r[0] < 0 else r[-1])}, outside 0..2^31-1")
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([r.size for r in rows], out=indptr[1:])
    indices = np.concatenate(rows).astype(np.int32) if rows else np.zeros(0, np.int32)
    return indptr, indices


_SPARSE_ERRORS = {1: "ids are not strictly increasing", 2: "holds a negative id", 3: "holds a negative or non-finite weight"}


def jaccard_topk(
    query: Any,
    indptr: np.ndarray,
    indices: np.ndarray,
    k: int,
    *,
    weights: np.ndarray | None = None,
    query_weights: Any = None,
    mask: Any = None,
    threads: int | None = None,
) -> TopK:
    """Top-k rows by Jaccard (or weighted Jaccard) similarity to one query id-set.

    Args:
        query: ids of the query set (any order; unique unless weighted, where duplicates are refused).
        indptr: (n + 1,) int64 (int32 accepted) CSR offsets; row r owns indices[indptr[r]:indptr[r+1]].
        indices: int32 ids, each row strictly increasing (use `csr_from_sets`).
        weights / query_weights: float32 weights >= 0 parallel to indices / query, for
            weighted Jaccard sum(min) / sum(max). Give both or neither.
    """
    kk = v.check_k(k)
    nt = v.check_threads(threads)
    qa = v.as_array("query", query)
    if qa.dtype.kind not in "iu" or qa.ndim != 1:
        raise TypeError(f"query must be a 1-D array of integer ids, got dtype {qa.dtype} shape {qa.shape}")
    if qa.size and (qa.min() < 0 or qa.max() > np.iinfo(np.int32).max):
        raise ValueError("query ids must lie in 0..2^31-1")
    ip = v.as_array("indptr", indptr)
    if ip.dtype == np.int32:
        ip = ip.astype(np.int64)
    ip = v.matrix("indptr", ip, (np.int64,), ndim=1)
    ids = v.matrix("indices", indices, (np.int32,), ndim=1)
    if ip.size < 1:
        raise ValueError("indptr must have at least one entry (n + 1 offsets)")
    if (weights is None) != (query_weights is None):
        raise ValueError("weights and query_weights must be given together (weighted Jaccard) or not at all")
    qw = None
    w = None
    if weights is not None:
        w = v.matrix("weights", weights, (np.float32,), ndim=1)
        if w.shape[0] != ids.shape[0]:
            raise ValueError(f"weights has length {w.shape[0]} but indices has {ids.shape[0]}")
        qwa = np.ascontiguousarray(v.as_array("query_weights", query_weights), dtype=np.float32)
        if qwa.shape != qa.shape:
            raise ValueError(f"query_weights has shape {qwa.shape} but query has {qa.shape}")
        v.check_finite("query_weights", qwa)
        if (qwa < 0).any():
            raise ValueError("query_weights must be >= 0")
        order = np.argsort(qa, kind="stable")
        q = qa[order].astype(np.int32)
        if q.size > 1 and (np.diff(q) == 0).any():
            raise ValueError("query ids must be unique when weighted")
        qw = np.ascontiguousarray(qwa[order])
    else:
        q = unique(qa).astype(np.int32)
    n = ip.shape[0] - 1
    mk = v.row_mask(mask, n)
    kk = min(kk, v.allowed_count(mk, n))
    idx, sc, _, row, code = _core.jaccard_topk(q, qw, ip, ids, w, kk, mk, nt, False)
    if row >= 0:
        raise ValueError(f"indices row {row} {_SPARSE_ERRORS.get(code, 'is invalid')}")
    return TopK(idx[0], sc[0])

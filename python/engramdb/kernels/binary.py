"""Hamming distance over packed bit codes (N4): top-k and full distance arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from .. import _validate as v
from ._common import NearestCodes, shape_out


def _codes(name: str, value: Any, *, query: bool) -> tuple[np.ndarray, bool]:
    arr = v.as_array(name, value)
    if arr.dtype not in (np.dtype(np.uint8), np.dtype(np.uint64)):
        raise TypeError(f"{name} must be packed bits as uint8 (np.packbits) or uint64, got dtype {arr.dtype}")
    was_1d = arr.ndim == 1
    if query and was_1d:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows of packed codes), got shape {arr.shape}")
    if query:
        arr = np.ascontiguousarray(arr)
    elif not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    return arr.view(np.uint8), was_1d


def hamming_topk(queries: Any, codes: np.ndarray, k: int, mask: Any = None, *, threads: int | None = None) -> NearestCodes:
    """The k codes nearest each query in Hamming distance (packed bits, any length).

    Args:
        queries: (nbytes,) or (q, nbytes) uint8 (or uint64 words) packed codes.
        codes: (n, nbytes) uint8 or (n, words) uint64, C-contiguous.
    """
    kk = v.check_k(k)
    nt = v.check_threads(threads)
    q, was_1d = _codes("queries", queries, query=True)
    c, _ = _codes("codes", codes, query=False)
    if q.shape[1] != c.shape[1]:
        raise ValueError(f"queries have {q.shape[1]} bytes per code but codes have {c.shape[1]}")
    if c.shape[1] * 8 >= 1 << 24:
        raise ValueError(f"codes of {c.shape[1] * 8} bits are longer than the supported 2^24 bits")
    mk = v.row_mask(mask, c.shape[0])
    kk = min(kk, v.allowed_count(mk, c.shape[0]))
    idx, dist = _core.hamming_topk(q, c, kk, mk, nt)
    return NearestCodes(*shape_out((idx, dist), was_1d))


def hamming_distances(queries: Any, codes: np.ndarray, *, threads: int | None = None) -> np.ndarray:
    """All Hamming distances, (q, n) uint32 (or (n,) for one query)."""
    nt = v.check_threads(threads)
    q, was_1d = _codes("queries", queries, query=True)
    c, _ = _codes("codes", codes, query=False)
    if q.shape[1] != c.shape[1]:
        raise ValueError(f"queries have {q.shape[1]} bytes per code but codes have {c.shape[1]}")
    out = _core.hamming_all(q, c, nt)
    return out[0] if was_1d else out

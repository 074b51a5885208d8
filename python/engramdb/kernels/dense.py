"""Dense scans (N1): fused top-k over float32, float16 or int8 rows, rescoring of given keys,
full score arrays; int8 quantisation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core
from .. import _validate as v
from ._common import METRICS, Metric, TopK, check_vector, exact, metric_code, raise_bad_row, shape_out
from .sets import unique


@dataclass(frozen=True)
class Int8Matrix:
    """Rows quantised to int8 with one global scale: `codes ~= round(rows * scale)`.

    `norms` holds the float32 norms of the original rows (used by the cosine metric). Build one
    with `quantize_i8`; search it with `topk(..., rescore=original_rows)` for exact final scores.
    """

    codes: np.ndarray
    scale: float
    norms: np.ndarray

    @property
    def inv_norms(self) -> np.ndarray:
        """1 / norms (0 for zero rows), computed once: the cosine scan's per-row scale. Kept by
        hand, not by `functools.cached_property`: on Python 3.10-3.11 that holds one lock for
        every instance while any computes, and a child forked then waited for it for ever."""
        got: np.ndarray | None = self.__dict__.get("_inv_norms")
        if got is None:
            n = np.asarray(self.norms, dtype=np.float32)
            got = np.divide(1.0, n, out=np.zeros_like(n), where=n > 0).astype(np.float32)
            self.__dict__["_inv_norms"] = got  # two threads racing compute the same
        return got

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, dims) of the quantised matrix."""
        return (int(self.codes.shape[0]), int(self.codes.shape[1]))


def quantize_i8(matrix: np.ndarray, scale: float | None = None, *, quantile: float = 0.9999) -> Int8Matrix:
    """Quantise float rows to int8 with one scale calibrated on the data.

    The scale maps the `quantile` of |x| to 127 (values beyond clip); a plain max-abs scale wastes
    most of the 8 bits on rare outliers (recall@10 about 0.9 instead of about 0.98 before rescoring).
    """
    m = v.matrix("matrix", matrix, (np.float32, np.float16))
    if m.size:
        v.check_finite("matrix", m)
    if scale is None:
        flat = np.abs(m.reshape(-1))
        if flat.size > 1_000_000:  # calibrate on a fixed sample: the quantile is stable
            flat = flat[np.random.default_rng(0).integers(0, flat.size, 1_000_000)]
        top = float(np.quantile(flat, quantile)) if flat.size else 0.0
        scale = 127.0 / top if top > 0 else 1.0
    elif not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    codes = np.clip(np.rint(m.astype(np.float32) * np.float32(scale)), -127, 127).astype(np.int8)
    norms = np.linalg.norm(m.astype(np.float32), axis=1).astype(np.float32)
    return Int8Matrix(codes=codes, scale=float(scale), norms=norms)


def _quantize_queries(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    peak = np.abs(q).max(axis=1) if q.shape[1] else np.zeros(q.shape[0], np.float32)
    qs = np.where(peak > 0, 127.0 / np.where(peak > 0, peak, 1.0), 1.0).astype(np.float32)
    return np.clip(np.rint(q * qs[:, None]), -127, 127).astype(np.int8), qs


def topk(
    queries: Any,
    matrix: np.ndarray | Int8Matrix,
    k: int,
    metric: Metric = "dot",
    mask: Any = None,
    *,
    rescore: np.ndarray | None = None,
    shortlist: int | None = None,
    threads: int | None = None,
) -> TopK:
    """Top-k rows of `matrix` for each query, fused into one scan (no full score array).

    Args:
        queries: (d,) or (q, d) floats; coerced to float32.
        matrix: (n, d) float32 or float16 rows, C-contiguous, or an `Int8Matrix`.
        k: number of results per query (>= 1; more than the allowed rows returns them all).
        metric: "dot", "cosine" (rows and queries normalised inside the scan) or "born"
            (E = max(0, <q, x>)^2).
        mask: optional bool array (n,) or integer allow-list of rows; other rows are never scored.
        rescore: with an `Int8Matrix`, the original float rows: the int8 scan keeps a shortlist
            that is rescored exactly (recommended). Without it scores are dequantised estimates.
        shortlist: shortlist size for int8 search (default max(4k, 64)).
        threads: worker threads; None = auto (up to the CPU count or ENGRAMDB_NUM_THREADS, never
            a thread for less than ~2M multiply-adds). Pass 1 in a server that runs many searches
            at once. Results do not depend on it.
    """
    kk = v.check_k(k)
    nt = v.check_threads(threads)
    mcode = metric_code(metric, METRICS)
    q, was_1d = v.float_queries("queries", queries)

    if isinstance(matrix, Int8Matrix):
        return _topk_i8(q, was_1d, matrix, kk, metric, mcode, mask, rescore, shortlist, nt)
    if isinstance(matrix, np.ndarray) and matrix.dtype == np.int8:
        raise TypeError("matrix is int8: build it with quantize_i8(rows) so its scale is known")
    m = v.matrix("matrix", matrix, (np.float32, np.float16))
    v.same_dim("queries", q, "matrix", m)
    rows = _short_allow_list(mask, m.shape[0])
    if rows is not None:  # a few rows of a big matrix: score just those, no n-byte mask to walk
        kk = min(kk, len(rows))
        cand = np.ascontiguousarray(np.broadcast_to(rows, (q.shape[0], len(rows))))
        idx, sc, bad = _core.dense_rescore(q, m, mcode, cand, kk)
        raise_bad_row("matrix", bad)
        return TopK(*shape_out((idx, sc), was_1d))
    mk = v.row_mask(mask, m.shape[0])
    kk = min(kk, v.allowed_count(mk, m.shape[0]))
    idx, sc, _, bad = _core.dense_topk(q, m, mcode, kk, mk, nt, False)
    raise_bad_row("matrix", bad)
    return TopK(*shape_out((idx, sc), was_1d))


def rescore_keys(
    query: Any,
    matrices: Sequence[np.ndarray],
    keys: Any,
    k: int,
    metric: Metric = "dot",
    *,
    threads: int | None = None,
) -> TopK:
    """Exact scores of one query for rows named by global keys across several matrices.

    Keys number the rows of `matrices` one after another (matrix 0's rows first), the way a
    store numbers its segments' rows. They may come in any order and repeat (each is scored
    once), so the candidates of several recall methods can be passed concatenated. Returns the
    min(k, unique keys) best as (keys, scores), higher first, ties to the lower key.

    Args:
        query: (d,) or (1, d) floats.
        matrices: (n_s, d) float32 or float16 C-contiguous arrays, all of one dtype.
        keys: int64 keys in [0, total rows).
        k: number of results (>= 1).
        metric: "dot", "cosine" or "born", as in `topk`.
        threads: as in `topk`; a thread takes at least 2,048 keys.
    """
    kk = v.check_k(k)
    nt = v.check_threads(threads)
    mcode = metric_code(metric, METRICS)
    q, _ = v.float_queries("query", query)
    if q.shape[0] != 1:
        raise ValueError(f"query must be one vector, (d,) or (1, d), got shape {np.shape(query)}")
    mats = [v.matrix(f"matrices[{i}]", m, (np.float32, np.float16)) for i, m in enumerate(matrices)]
    bases = np.zeros(len(mats) + 1, np.int64)
    np.cumsum([m.shape[0] for m in mats], out=bases[1:])
    ks = np.ascontiguousarray(keys, np.int64).reshape(-1)
    idx, sc, bad = _core.dense_rescore_keys(q[0], mats, bases, ks, mcode, kk, nt)
    if bad >= 0:
        s = int(np.searchsorted(bases, bad, side="right")) - 1
        raise ValueError(f"matrices[{s}] row {bad - int(bases[s])} (key {bad}) holds a non-finite value or "
                         "overflows float32")
    return TopK(idx, sc)


def rescore_rows(query: Any, matrix: np.ndarray, rows: np.ndarray, k: int, metric: Metric = "dot") -> TopK:
    """Exact scores of one query for the given rows of one matrix only; the min(k, rows) best as
    (rows, scores), higher first, ties to the lower row.

    For a shortlist already made distinct (a tree's candidates): unlike `topk`'s allow-list the
    rows are neither sorted nor de-duplicated here (a repeated row comes back repeated), so the
    cost is the scoring alone.

    Args:
        query: (d,) floats; coerced to float32.
        matrix: (n, d) float32 or float16 rows, C-contiguous.
        rows: int64 row numbers in [0, n), C-contiguous.
        k: number of results (>= 1).
        metric: "dot", "cosine" or "born", as in `topk`.
    """
    kk = v.check_k(k)
    mcode = metric_code(metric, METRICS)
    q = check_vector("query", query)
    m = exact("matrix", matrix, (np.float32, np.float16), 2)
    if m.shape[1] != q.shape[0]:
        raise ValueError(f"query has dimension {q.shape[0]} but matrix has dimension {m.shape[1]}")
    r = exact("rows", rows, (np.int64,))
    if not r.size:
        return TopK(np.empty(0, np.int64), np.empty(0, np.float32))
    if int(np.maximum.reduce(r.view(np.uint64))) >= m.shape[0]:  # one pass: a negative row is huge as unsigned
        bad = r[(r < 0) | (r >= m.shape[0])][0]
        raise ValueError(f"rows holds row {int(bad)}, outside 0..{m.shape[0] - 1}")
    idx, sc, bad = _core.dense_rescore(q[None, :], m, mcode, r[None, :], min(kk, r.shape[0]))
    raise_bad_row("matrix", bad)
    return TopK(idx[0], sc[0])


def _short_allow_list(mask: Any, n: int) -> np.ndarray | None:
    """Sorted unique rows of an integer allow-list covering under 1/16 of n rows, else None."""
    if mask is None or isinstance(mask, (bool, np.bool_)):
        return None
    arr = np.asarray(mask)
    if arr.dtype.kind not in "iu" or arr.ndim != 1 or arr.size * 16 >= n:
        return None
    v.row_mask(arr[:0], n)  # dtype/shape checks only
    rows = unique(arr.astype(np.int64, copy=False))
    if rows.size and (rows[0] < 0 or rows[-1] >= n):
        bad = rows[0] if rows[0] < 0 else rows[-1]
        raise ValueError(f"mask allow-list holds row {int(bad)}, outside 0..{n - 1}")
    return rows


def _topk_i8(
    q: np.ndarray,
    was_1d: bool,
    m8: Int8Matrix,
    k: int,
    metric: str,
    mcode: int,
    mask: Any,
    rescore: np.ndarray | None,
    shortlist: int | None,
    threads: int,
) -> TopK:
    codes = v.matrix("matrix.codes", m8.codes, (np.int8,))
    v.same_dim("queries", q, "matrix", codes)
    n = codes.shape[0]
    mk = v.row_mask(mask, n)
    allowed = v.allowed_count(mk, n)
    k = min(k, allowed)
    if metric == "cosine":
        inv = m8.inv_norms
        if inv.shape != (n,):
            raise ValueError(f"matrix.norms has shape {m8.norms.shape}, expected ({n},)")
        qn = np.linalg.norm(q, axis=1)
        q = np.divide(q, qn[:, None], out=np.zeros_like(q), where=qn[:, None] > 0)
    else:
        inv = None
    q8, qs = _quantize_queries(q)
    if rescore is None:
        idx, s = _core.dense_topk_i8(q8, codes, k, inv, mk, threads)
        s = s / (qs[:, None] * np.float32(m8.scale))
        if metric == "born":
            s = np.square(np.maximum(s, 0))
        return TopK(*shape_out((idx, s.astype(np.float32)), was_1d))
    rows = v.matrix("rescore", rescore, (np.float32, np.float16))
    if rows.shape != codes.shape:
        raise ValueError(f"rescore has shape {rows.shape} but the int8 matrix has shape {codes.shape}")
    if shortlist is None:
        L = max(4 * k, 64)
    else:
        L = v.check_k(shortlist)
    L = min(max(L, k), allowed)
    cand, _ = _core.dense_topk_i8(q8, codes, L, inv, mk, threads)
    idx, sc, bad = _core.dense_rescore(q, rows, mcode, cand, k)
    raise_bad_row("rescore", bad)
    return TopK(*shape_out((idx, sc), was_1d))


def scores(queries: Any, matrix: np.ndarray, metric: Metric = "dot", mask: Any = None, *, threads: int | None = None) -> np.ndarray:
    """All scores, shape (q, n) (or (n,) for one query); rows outside `mask` get -inf.

    Materialises the full array: use `topk` when only the best rows matter.
    """
    nt = v.check_threads(threads)
    mcode = metric_code(metric, METRICS)
    q, was_1d = v.float_queries("queries", queries)
    m = v.matrix("matrix", matrix, (np.float32, np.float16))
    v.same_dim("queries", q, "matrix", m)
    mk = v.row_mask(mask, m.shape[0])
    _, _, full, bad = _core.dense_topk(q, m, mcode, 0, mk, nt, True)
    raise_bad_row("matrix", bad)
    assert full is not None  # asked for above
    return full[0] if was_1d else full

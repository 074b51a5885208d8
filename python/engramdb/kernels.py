"""The native kernels (N1-N6), typed and validated.

Every function here takes whole batches and makes one call into the C++ core (`engramdb._core`),
which releases the GIL for the duration of the work. Arguments are checked first: a wrong dtype
raises `TypeError`, a wrong shape, layout or value raises `ValueError`, and each names the
argument. Large operands (the matrix, codes, CSR arrays, token matrices) are used in place and
must be C-contiguous with the documented dtype; queries are small and are coerced to float32.

Results are sorted best first; ties go to the lower row index. `k` larger than the number of
(allowed) rows returns all of them. A single 1-D query returns 1-D results; a 2-D batch returns
arrays of shape (q, k).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from . import _core
from . import _validate as v

Metric = Literal["dot", "cosine", "born"]
AssignMetric = Literal["l2", "dot", "cosine", "born"]

_METRICS: dict[str, int] = {"dot": 0, "cosine": 1, "born": 2}
_ASSIGN_METRICS: dict[str, int] = {"l2": 0, "dot": 1, "cosine": 2, "born": 3}


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


@dataclass(frozen=True)
class Int8Matrix:
    """Rows quantised to int8 with one global scale: `codes ~= round(rows * scale)`.

    `norms` holds the float32 norms of the original rows (used by the cosine metric). Build one
    with `quantize_i8`; search it with `topk(..., rescore=original_rows)` for exact final scores.
    """

    codes: np.ndarray
    scale: float
    norms: np.ndarray

    @functools.cached_property
    def inv_norms(self) -> np.ndarray:
        """1 / norms (0 for zero rows), computed once: the cosine scan's per-row scale."""
        n = np.asarray(self.norms, dtype=np.float32)
        return np.divide(1.0, n, out=np.zeros_like(n), where=n > 0).astype(np.float32)

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, dims) of the quantised matrix."""
        return (int(self.codes.shape[0]), int(self.codes.shape[1]))


def _metric(metric: str, table: dict[str, int]) -> int:
    if not isinstance(metric, str) or metric not in table:
        raise ValueError(f"metric must be one of {', '.join(map(repr, table))}; got {metric!r}")
    return table[metric]


def _shape_out(res: tuple[np.ndarray, np.ndarray], was_1d: bool) -> tuple[np.ndarray, np.ndarray]:
    a, b = res
    return (a[0], b[0]) if was_1d else (a, b)


def _raise_bad_row(name: str, row: int) -> None:
    if row >= 0:
        raise ValueError(f"{name} row {row} contains NaN or inf (or its score overflows float32)")


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
    mcode = _metric(metric, _METRICS)
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
        _raise_bad_row("matrix", bad)
        return TopK(*_shape_out((idx, sc), was_1d))
    mk = v.row_mask(mask, m.shape[0])
    kk = min(kk, v.allowed_count(mk, m.shape[0]))
    idx, sc, _, bad = _core.dense_topk(q, m, mcode, kk, mk, nt, False)
    _raise_bad_row("matrix", bad)
    return TopK(*_shape_out((idx, sc), was_1d))


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
    mcode = _metric(metric, _METRICS)
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


def _short_allow_list(mask: Any, n: int) -> np.ndarray | None:
    """Sorted unique rows of an integer allow-list covering under 1/16 of n rows, else None."""
    if mask is None or isinstance(mask, (bool, np.bool_)):
        return None
    arr = np.asarray(mask)
    if arr.dtype.kind not in "iu" or arr.ndim != 1 or arr.size * 16 >= n:
        return None
    v.row_mask(arr[:0], n)  # dtype/shape checks only
    rows = np.unique(arr.astype(np.int64, copy=False))
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
        return TopK(*_shape_out((idx, s.astype(np.float32)), was_1d))
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
    _raise_bad_row("rescore", bad)
    return TopK(*_shape_out((idx, sc), was_1d))


def scores(queries: Any, matrix: np.ndarray, metric: Metric = "dot", mask: Any = None, *, threads: int | None = None) -> np.ndarray:
    """All scores, shape (q, n) (or (n,) for one query); rows outside `mask` get -inf.

    Materialises the full array: use `topk` when only the best rows matter.
    """
    nt = v.check_threads(threads)
    mcode = _metric(metric, _METRICS)
    q, was_1d = v.float_queries("queries", queries)
    m = v.matrix("matrix", matrix, (np.float32, np.float16))
    v.same_dim("queries", q, "matrix", m)
    mk = v.row_mask(mask, m.shape[0])
    _, _, full, bad = _core.dense_topk(q, m, mcode, 0, mk, nt, True)
    _raise_bad_row("matrix", bad)
    assert full is not None  # asked for above
    return full[0] if was_1d else full


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
    return NearestCodes(*_shape_out((idx, dist), was_1d))


def hamming_distances(queries: Any, codes: np.ndarray, *, threads: int | None = None) -> np.ndarray:
    """All Hamming distances, (q, n) uint32 (or (n,) for one query)."""
    nt = v.check_threads(threads)
    q, was_1d = _codes("queries", queries, query=True)
    c, _ = _codes("codes", codes, query=False)
    if q.shape[1] != c.shape[1]:
        raise ValueError(f"queries have {q.shape[1]} bytes per code but codes have {c.shape[1]}")
    out = _core.hamming_all(q, c, nt)
    return out[0] if was_1d else out


def csr_from_sets(sets: Iterable[Iterable[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Pack id-sets into CSR (indptr int64, indices int32), each row sorted and de-duplicated."""
    rows = [np.unique(np.asarray(list(s), dtype=np.int64)) for s in sets]
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
        q = np.unique(qa).astype(np.int32)
    n = ip.shape[0] - 1
    mk = v.row_mask(mask, n)
    kk = min(kk, v.allowed_count(mk, n))
    idx, sc, _, row, code = _core.jaccard_topk(q, qw, ip, ids, w, kk, mk, nt, False)
    if row >= 0:
        raise ValueError(f"indices row {row} {_SPARSE_ERRORS.get(code, 'is invalid')}")
    return TopK(idx[0], sc[0])


def maxsim(
    query_tokens: Any,
    doc_tokens: np.ndarray,
    offsets: np.ndarray,
    docs: Any = None,
    *,
    threads: int | None = None,
) -> np.ndarray:
    """Late-interaction scores sum_i max_j <q_i, d_j> for ragged documents.

    Args:
        query_tokens: (m, d) query token vectors (coerced to float32).
        doc_tokens: (T, d) float32 token vectors of all documents, stacked.
        offsets: (n + 1,) int64: document t owns doc_tokens[offsets[t]:offsets[t + 1]].
        docs: optional shortlist of document numbers to score (default: all).
    Returns float32 scores, one per scored document (0 for a document without tokens).
    """
    nt = v.check_threads(threads)
    q, _ = v.float_queries("query_tokens", query_tokens)
    t = v.matrix("doc_tokens", doc_tokens, (np.float32,))
    v.same_dim("query_tokens", q, "doc_tokens", t)
    off = v.matrix("offsets", offsets, (np.int64,), ndim=1)
    if off.size < 1 or off[0] != 0 or off[-1] != t.shape[0] or (off.size > 1 and (np.diff(off) < 0).any()):
        raise ValueError(f"offsets must rise from 0 to len(doc_tokens)={t.shape[0]} without decreasing")
    d_arr = None
    if docs is not None:
        d_arr = np.ascontiguousarray(v.as_array("docs", docs), dtype=np.int64).reshape(-1)
        n_docs = off.shape[0] - 1
        if d_arr.size and (d_arr.min() < 0 or d_arr.max() >= n_docs):
            raise ValueError(f"docs must be document numbers in 0..{n_docs - 1}")
    out, bad = _core.maxsim(q, t, off, d_arr, nt)
    if bad >= 0:
        raise ValueError(f"doc_tokens of document {bad} contain NaN or inf")
    return out


def centroid_update(centroids: np.ndarray, counts: np.ndarray, node_ids: Any, vectors: Any) -> None:
    """Fold vectors into running-mean centroids in place: c <- c + (v - c) / (n + 1), n <- n + 1.

    Pairs are applied in order, so several vectors for one node compound exactly like one-by-one
    updates. `centroids` (c, d) float32 and `counts` (c,) int64 are modified in place. A batch
    holding NaN or inf is refused whole (ValueError naming the row) and changes nothing.
    """
    c = v.matrix("centroids", centroids, (np.float32,))
    cnt = v.matrix("counts", counts, (np.int64,), ndim=1)
    if not (c.flags.writeable and cnt.flags.writeable):
        raise ValueError("centroids and counts must be writeable (they are updated in place)")
    if cnt.shape[0] != c.shape[0]:
        raise ValueError(f"counts has length {cnt.shape[0]} but centroids has {c.shape[0]} rows")
    if (cnt < 0).any():
        raise ValueError("counts must be >= 0")
    vec = v.as_array("vectors", vectors)
    if vec.dtype.kind not in "fiu":
        raise TypeError(f"vectors must be a real float array, got dtype {vec.dtype}")
    if vec.ndim == 1:
        vec = vec[None, :]
    if vec.ndim != 2:
        raise ValueError(f"vectors must be 1-D or 2-D, got {vec.ndim}-D shape {vec.shape}")
    vec = np.ascontiguousarray(vec, dtype=np.float32)  # no copy when already float32
    v.same_dim("vectors", vec, "centroids", c)
    ids = np.ascontiguousarray(v.as_array("node_ids", node_ids)).reshape(-1)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"node_ids must be integers, got dtype {ids.dtype}")
    ids = ids.astype(np.int64)
    if ids.shape[0] != vec.shape[0]:
        raise ValueError(f"node_ids has {ids.shape[0]} entries but vectors has {vec.shape[0]} rows")
    if ids.size and (ids.min() < 0 or ids.max() >= c.shape[0]):
        raise ValueError(f"node_ids must lie in 0..{c.shape[0] - 1}")
    # NaN/inf are found on the touched centroids after the fact (no extra pass over the inputs);
    # the kernel then undoes the whole batch.
    bad = _core.centroid_update(c, cnt, ids, vec)
    if bad >= 0:
        raise ValueError(f"vectors row {bad} contains NaN or inf (or overflows its centroid); nothing was updated")


def _assign_args(vectors: Any, centroids: Any, metric: str, threads: int | None) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Checked (vectors, centroids, metric code, threads) of the assignment kernels."""
    nt = v.check_threads(threads)
    mcode = _metric(metric, _ASSIGN_METRICS)
    vec = v.matrix("vectors", vectors, (np.float32,))
    c, _ = v.float_queries("centroids", centroids)
    v.same_dim("centroids", c, "vectors", vec)
    if c.shape[0] < 1:
        raise ValueError("centroids must have at least one row")
    return vec, c, mcode, nt


def assign_nearest(vectors: np.ndarray, centroids: Any, metric: AssignMetric = "l2", *, threads: int | None = None) -> Assignment:
    """Nearest centroid for every vector (the assignment step of k-means).

    "l2" minimises squared Euclidean distance; "dot", "cosine" and "born" maximise similarity.
    Ties go to the lower centroid index.
    """
    vec, c, mcode, nt = _assign_args(vectors, centroids, metric, threads)
    labels, sc, bad = _core.assign_nearest(vec, c, mcode, nt)
    _raise_bad_row("vectors", bad)
    return Assignment(labels, sc)


def assign_topk(vectors: np.ndarray, centroids: Any, m: int, metric: AssignMetric = "l2", *,
                threads: int | None = None) -> Assignment:
    """The m nearest centroids of every vector, nearest first: `labels` and `scores` are (n, m).

    Scores as `assign_nearest`'s (squared distance for l2, similarity otherwise); ties go to the
    lower centroid index. One pass over the centroids per block of vectors, parallel over vectors.
    """
    vec, c, mcode, nt = _assign_args(vectors, centroids, metric, threads)
    mm = v.check_k(m)
    if mm > c.shape[0]:
        raise ValueError(f"m must be at most the number of centroids ({c.shape[0]}), got {m}")
    labels, sc, bad = _core.assign_topk(vec, c, mcode, mm, nt)
    _raise_bad_row("vectors", bad)
    return Assignment(labels, sc)


def cluster_sums(vectors: np.ndarray, labels: Any, n_clusters: int) -> ClusterSums:
    """Per-cluster float64 sums and counts (the update step of k-means: means = sums / counts)."""
    vec = v.matrix("vectors", vectors, (np.float32,))
    nc = v.check_k(n_clusters) if n_clusters != 0 else 0
    lab = np.ascontiguousarray(v.as_array("labels", labels)).reshape(-1)
    if lab.dtype.kind not in "iu":
        raise TypeError(f"labels must be integers, got dtype {lab.dtype}")
    lab = lab.astype(np.int64)
    if lab.shape[0] != vec.shape[0]:
        raise ValueError(f"labels has {lab.shape[0]} entries but vectors has {vec.shape[0]} rows")
    if lab.size and (lab.min() < 0 or lab.max() >= nc):
        raise ValueError(f"labels must lie in 0..{nc - 1}")
    if vec.size:
        v.check_finite("vectors", vec)
    sums, counts = _core.cluster_sums(vec, lab, nc)
    return ClusterSums(sums, counts)


def read_bandwidth_probe(matrix: np.ndarray, *, threads: int | None = 1) -> float:
    """Sum every element with a plain streaming read: the memory-bandwidth ceiling of a scan.

    Time it beside `topk` with the same `threads` to see how close the scan runs to the memory.
    """
    m = v.matrix("matrix", matrix, (np.float32,), ndim=matrix.ndim if isinstance(matrix, np.ndarray) else 2)
    return float(_core.stream_sum(m, v.check_threads(threads)))


def active_isa() -> str:
    """The instruction set the kernels run on now."""
    return str(_core.isa())


def available_isas() -> list[str]:
    """Instruction sets this CPU can run, best first."""
    return list(_core.available_isas())


@contextlib.contextmanager
def use_isa(name: str) -> Iterator[str]:
    """Run the enclosed code on instruction set `name` (process-wide), then restore the previous one.

    Raises ValueError if `name` is not compiled in or not supported by this CPU.
    """
    before = active_isa()
    if not _core.set_isa(name):
        raise ValueError(f"instruction set {name!r} is not available here (available: {available_isas()})")
    try:
        yield name
    finally:
        _core.set_isa(before)


__all__: Sequence[str] = [
    "Assignment",
    "ClusterSums",
    "Int8Matrix",
    "NearestCodes",
    "TopK",
    "active_isa",
    "assign_nearest",
    "available_isas",
    "centroid_update",
    "cluster_sums",
    "csr_from_sets",
    "hamming_distances",
    "hamming_topk",
    "jaccard_topk",
    "maxsim",
    "quantize_i8",
    "read_bandwidth_probe",
    "rescore_keys",
    "scores",
    "topk",
    "use_isa",
]


def merge_topk(keys: Sequence[np.ndarray], scores: Sequence[np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of several (keys, scores) top-k lists of disjoint key sets (one per matrix or
    segment), higher score first, ties to the lower key: the order every scan in engramdb uses."""
    if not keys:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    ak = np.concatenate([np.asarray(x, np.int64) for x in keys])
    asc = np.concatenate([np.asarray(x, np.float32) for x in scores])
    order = np.lexsort((ak, -asc))[:k]
    return ak[order], asc[order]

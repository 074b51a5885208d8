"""BM25 over an inverted index (N3's scorer; cpp/include/engramdb/bm25.h): one query's top-k
against one chunk of postings, term lookup and Lucene idf folded into the call.

The index itself (chunks, merges, corpus statistics) is engramdb.index's; this is its kernel.
Checks here are the O(1) ones (dtype, layout, lengths) and the query's: only the posting rows a
query touches are read, so the core checks those (a bad offset or document number is a
ValueError naming what is wrong, never a crash), and a pass over every posting per query would
cost more than the search.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _core
from .. import _validate as v
from ._common import TopK, byte_mask, exact, index_array

_ERRORS = {1: "chunk names a posting row out of range", 2: "chunk has bad posting offsets",
           3: "chunk names a document out of range",
           4: "query has a weight (idf x count) that is negative or not finite: an infinite count, or a df above n_total"}


def bm25_query(
    terms: Any,
    counts: Any,
    chunk_terms: np.ndarray,
    indptr: np.ndarray,
    docs: np.ndarray,
    tf: np.ndarray,
    norm: np.ndarray,
    k1: float,
    k: int,
    n_total: int,
    *,
    df_total: Any = None,
    mask: np.ndarray | None = None,
    sorted_k: int | None = None,
) -> TopK:
    """The k best documents of one chunk by Lucene's BM25, only documents matching a term.

    score(d) = sum over query terms t of idf_t * count_t * tf(t, d) * (k1 + 1) / (tf(t, d) + norm[d]),
    idf_t = ln(1 + (n_total - df_t + 0.5) / (df_t + 0.5)), df_t the postings of t in this chunk
    (or `df_total`, the counts over every chunk of an index).

    Args:
        terms: the query's term ids (int32; coerced) and `counts` (float32 >= 0; coerced), as many.
        chunk_terms: (T,) int32 sorted unique term ids of the chunk, C-contiguous; `indptr`
            (T + 1,) int64 offsets into `docs` (int32 document numbers, ascending per term) and
            `tf` (float32 term frequencies), both C-contiguous and as long as each other.
        norm: (n_docs,) float32, k1 * (1 - b + b * len / avgdl) per document number.
        k1: BM25's k1 (finite, >= 0). k: results wanted (>= 1). n_total: documents in the index.
        df_total: int64 document frequency of each query term over the whole index, or None.
        mask: bool or uint8 per document (0 = never returned), or None.
        sorted_k: only the first sorted_k (>= 0) results need be in order (the rest follow
            unordered, each worse than those); None sorts all.
    Returns (documents int64, scores float32), best first, ties to the lower document.
    """
    q = np.ascontiguousarray(v.as_array("terms", terms), dtype=np.int32).reshape(-1)
    c = np.ascontiguousarray(v.as_array("counts", counts), dtype=np.float32).reshape(-1)
    if c.shape != q.shape:
        raise ValueError(f"counts has {c.shape[0]} entries but terms has {q.shape[0]}")
    wrong = [x for x in c.tolist() if not x >= 0]  # a query's few terms: a Python pass is the cheapest
    if wrong:
        raise ValueError(f"counts must be finite and >= 0, got {wrong[0]!r}")
    ct = index_array("chunk_terms", chunk_terms, np.int32)
    ip = index_array("indptr", indptr, np.int64, ct.shape[0] + 1)
    dd = index_array("docs", docs, np.int32)
    t = exact("tf", tf, (np.float32,))
    if t.shape != dd.shape:
        raise ValueError(f"tf has {t.shape[0]} entries but docs has {dd.shape[0]}")
    nm = exact("norm", norm, (np.float32,))
    if isinstance(k1, bool) or not isinstance(k1, (int, float, np.floating)) or not (math.isfinite(k1) and k1 >= 0):
        raise ValueError(f"k1 must be a finite number >= 0, got {k1!r}")
    kk = v.check_k(k)
    n = v.integer("n_total", n_total, 0)
    df = None if df_total is None else index_array("df_total", df_total, np.int64, q.shape[0])
    mk = byte_mask("mask", mask, nm.shape[0])
    sk = None if sorted_k is None else v.integer("sorted_k", sorted_k, 0)
    idx, sc, code = _core.bm25_query(q, c, ct, ip, dd, t, nm, float(k1), kk, n, df, mk, sk)
    if code:
        raise ValueError(f"BM25 {_ERRORS.get(code, 'chunk is invalid')}")
    return TopK(idx, sc)


__all__ = ["bm25_query"]

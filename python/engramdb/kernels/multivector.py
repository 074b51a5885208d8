"""MaxSim late interaction (N5) over ragged token matrices."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from .. import _validate as v
from ._common import NonFiniteRow


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
        docs: optional shortlist of document numbers to score (default: all); then only the
            offsets of those documents are checked (all of them otherwise).
    Returns float32 scores, one per scored document (0 for a document without tokens).
    """
    nt = v.check_threads(threads)
    q, _ = v.float_queries("query_tokens", query_tokens)
    t = v.matrix("doc_tokens", doc_tokens, (np.float32,))
    v.same_dim("query_tokens", q, "doc_tokens", t)
    off = v.matrix("offsets", offsets, (np.int64,), ndim=1)
    if off.size < 1 or off[0] != 0 or off[-1] != t.shape[0]:
        raise ValueError(f"offsets must rise from 0 to len(doc_tokens)={t.shape[0]} without decreasing")
    d_arr = None
    if docs is None:
        if off.size > 1 and (np.diff(off) < 0).any():
            raise ValueError(f"offsets must rise from 0 to len(doc_tokens)={t.shape[0]} without decreasing")
    else:
        d_arr = np.ascontiguousarray(v.as_array("docs", docs), dtype=np.int64).reshape(-1)
        n_docs = off.shape[0] - 1
        if d_arr.size and (d_arr.min() < 0 or d_arr.max() >= n_docs):
            raise ValueError(f"docs must be document numbers in 0..{n_docs - 1}")
        # only the shortlist's spans are read: check those (a shortlist of a big batch would
        # otherwise pay a pass over every offset per call, more than its scoring)
        lo, hi = off[d_arr], off[d_arr + 1]
        if d_arr.size and ((lo > hi).any() or lo.min() < 0 or hi.max() > t.shape[0]):
            raise ValueError(f"offsets must rise from 0 to len(doc_tokens)={t.shape[0]} without decreasing")
    out, bad = _core.maxsim(q, t, off, d_arr, nt)
    if bad >= 0:
        raise NonFiniteRow(f"doc_tokens of document {bad} contain NaN or inf", bad)
    return out

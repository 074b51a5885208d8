"""The lexical method (H1): BM25 over the lexical space's term counts, filtered inside the scan;
and its pseudo-relevance feedback variant (RM3, retrieval/feedback.py)."""

from __future__ import annotations

import numpy as np

from ..index.bm25 import Bm25Index
from ..spaces.protocol import SparseBatch
from .feedback import rm3_query
from .query_context import QueryContext, Ranked

Terms = tuple[np.ndarray, np.ndarray]  # (term ids, counts) of a query


def namespace_index(ctx: QueryContext) -> Bm25Index | None:
    """The query namespace's BM25 index as of the snapshot (None without a lexical space or
    without documents in that namespace)."""
    sp = ctx.lexical
    if sp is None:
        return None
    version = ctx.indexes.bm25(sp, ctx.view).sync(ctx.view)
    return version.namespace(ctx.namespace, ctx.view.rows)


def bm25_keys(ctx: QueryContext, terms: Terms, n: int, sorted_k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """BM25's n best as (global keys, scores) arrays (best first up to `sorted_k`, see
    `Bm25Index.search`)."""
    keys, scores, _ = bm25_parts(ctx, terms, n, sorted_k)
    return keys, scores


def bm25_parts(ctx: QueryContext, terms: Terms, n: int,
               sorted_k: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BM25's n best as (global keys, scores, passage numbers): a long memory scores as its best
    passage (C7), and says which."""
    if ctx.lexical is None:
        raise ValueError("this store has no sparse lexical space for BM25")
    ix = namespace_index(ctx)
    if ix is None or len(terms[0]) == 0:
        return np.empty(0, np.int64), np.empty(0, np.float32), np.empty(0, np.int32)
    mask = ctx.view.key_mask(ctx.namespace, ctx.known_us, ctx.t, ctx.at_now, ctx.types)
    return ix.search_parts(terms[0], terms[1], n, allowed=mask, sorted_k=sorted_k)


def bm25_found(ctx: QueryContext, terms: Terms, n: int) -> Ranked:
    """BM25's n best ((segment, row), score) in the namespace, filtered inside the scan (H1, H4)."""
    keys, scores = bm25_keys(ctx, terms, n)
    return list(zip(ctx.view.locs(keys), scores.tolist()))


def bm25_feedback(ctx: QueryContext, terms: Terms, n: int, sorted_k: int, docs: int) -> tuple[np.ndarray, np.ndarray]:
    """BM25 of the query expanded by RM3 from its own `docs` best hits (pseudo-relevance
    feedback), filtered like every method; the plain query when nothing matches it."""
    keys, scores = bm25_keys(ctx, terms, docs)
    if len(keys) == 0:
        return keys, scores
    ix = namespace_index(ctx)
    assert ix is not None  # it just found keys
    expanded = rm3_query(terms[0], terms[1], sparse_rows(ctx, keys), scores, df=ix.df, n_docs=len(ix))
    return bm25_keys(ctx, expanded, n, sorted_k)


def sparse_rows(ctx: QueryContext, keys: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The lexical space's (term ids, tf) row of each global key (what feedback reads)."""
    sp = ctx.lexical
    assert sp is not None
    out = []
    for si, row in ctx.view.locs(np.asarray(keys, np.int64)):
        sb = ctx.view.vectors(si, sp.name)
        assert isinstance(sb, SparseBatch)
        out.append(sb.row(row))
    return out


def bm25_of_keys(ctx: QueryContext, terms: Terms, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(score, passage number) of each given global key: what the top-n list would say of a
    memory it did not reach, read from the postings (0 for a key the namespace's index does not
    hold)."""
    keys = np.asarray(keys, np.int64)
    ix = namespace_index(ctx)
    if ix is None:
        return np.zeros(len(keys)), np.zeros(len(keys), np.int32)
    return ix.score_keys(terms[0], terms[1], keys)

"""Pseudo-relevance feedback for BM25 (RM3): expand a query with the words of its best hits.

RM3 (Lavrenko and Croft's relevance model, interpolated with the query, as in Anserini and
Lucene's query expansion): the top `docs` hits of a first BM25 pass are taken as relevant; each
term's weight in them is P(w|R) = sum over those docs of P(w|d) x P(d|q), with P(w|d) = tf / |d|
and P(d|q) = the doc's BM25 score / the sum of their scores; the `terms` heaviest are kept and
normalised, and the new query is lam x P(w|q) + (1 - lam) x P(w|R), P(w|q) = count / |q|.
Defaults are Anserini's (10 docs, 10 terms, lam 0.5), not fitted to any data set. One filter
is added, as Lucene's MoreLikeThis has (maxDocFreqPct): a term found in more than `FB_MAX_DF`
(10%) of the documents is never added. RM3 weighs terms by their share of the feedback docs
without idf, so without it the commonest words of a collection (in a conversation: its speakers'
names) are the likeliest expansions, and the longest postings lists to score.

A cost bound is added too: expansion terms are taken heaviest first while their postings fit
`FB_BUDGET` times the query's own (the expanded query costs at most about twice the plain one).
On LoCoMo neither filter binds the useful terms (recall unchanged); on a 100,000-document Zipf
corpus they halve the expansion's cost.

The pipeline's sparse recall runs it with `stages={"feedback": 10}` (its job is recall: a turn
that answers a question often shares words with the turns that match the question, not with the
question itself).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

FB_DOCS = 10
FB_TERMS = 10
FB_LAMBDA = 0.5
FB_MAX_DF = 0.1  # share of documents above which a term is too common to add
FB_BUDGET = 1.0  # expansion postings allowed, as a multiple of the query's own


def rm3_query(
    terms: np.ndarray,
    counts: np.ndarray,
    doc_rows: Sequence[tuple[np.ndarray, np.ndarray]],
    doc_scores: np.ndarray,
    *,
    n_terms: int = FB_TERMS,
    lam: float = FB_LAMBDA,
    df: Callable[[np.ndarray], np.ndarray] | None = None,
    n_docs: int = 0,
    max_df: float = FB_MAX_DF,
    budget: float = FB_BUDGET,
) -> tuple[np.ndarray, np.ndarray]:
    """The expanded query as (term ids ascending, weights) from the query's (term ids, counts)
    and the feedback docs' (term ids, tf) rows with their first-pass scores.

    With `df` (term ids -> documents holding each, over `n_docs` documents) two bounds apply: a
    term in more than `max_df` of the documents is never added, and expansion terms are taken
    heaviest first while their postings fit `budget` times the query's own (a lighter one may
    still fit after a heavy one did not). The query's own terms always stay."""
    if not 0 <= lam <= 1:
        raise ValueError(f"lam must be in [0, 1], got {lam!r}")
    q_ids = np.asarray(terms, np.int64)
    q_w = np.asarray(counts, np.float64)
    parts_i: list[np.ndarray] = [q_ids]
    parts_w: list[np.ndarray] = [lam * q_w / q_w.sum() if q_w.sum() > 0 else np.zeros(len(q_ids))]
    s = np.asarray(doc_scores, np.float64)
    if len(doc_rows) and s.sum() > 0 and n_terms > 0 and lam < 1:
        # P(w|R) over the feedback docs in one pass: each posting weighs P(d|q) x tf / |d|
        ids = np.concatenate([np.asarray(i, np.int64) for i, _ in doc_rows])
        tf = np.concatenate([np.asarray(f, np.float64) for _, f in doc_rows])
        lengths = np.array([float(np.sum(f)) for _, f in doc_rows])
        per_doc = np.divide(s / s.sum(), lengths, out=np.zeros(len(lengths)), where=lengths > 0)
        w = tf * np.repeat(per_doc, [len(i) for i, _ in doc_rows])
        uniq, inv = np.unique(ids, return_inverse=True)
        rel = np.bincount(inv, weights=w, minlength=len(uniq))
        keep = rel > 0
        cost = np.asarray(df(uniq), np.float64) if df is not None else np.zeros(len(uniq))
        if df is not None:
            keep &= cost <= max_df * n_docs
        uniq, rel, cost = uniq[keep], rel[keep], cost[keep]
        if len(uniq):
            order = np.lexsort((uniq, -rel))  # heaviest first, ties to the lower id
            if df is not None:
                # greedy, not a prefix: a term past the budget is skipped, the next may fit
                allowed = budget * float(np.sum(df(q_ids)))
                spent, kept = 0.0, list[int]()
                for j in order.tolist():
                    if len(kept) == n_terms:
                        break
                    if spent + cost[j] <= allowed:
                        spent += cost[j]
                        kept.append(j)
                order = np.array(kept, np.int64)
            order = order[:n_terms]
            parts_i.append(uniq[order])
            parts_w.append((1 - lam) * rel[order] / rel[order].sum())
    all_i = np.concatenate(parts_i)
    out_i, inv = np.unique(all_i, return_inverse=True)
    out_w = np.bincount(inv, weights=np.concatenate(parts_w), minlength=len(out_i))
    return out_i.astype(np.int32), out_w.astype(np.float32)

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

The pipeline's sparse recall runs it (its job is recall: a turn that answers a question often
shares words with the turns that match the question, not with the question itself).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

FB_DOCS = 10
FB_TERMS = 10
FB_LAMBDA = 0.5
FB_MAX_DF = 0.1  # share of documents above which a term is too common to add


def rm3_query(
    terms: np.ndarray,
    counts: np.ndarray,
    doc_rows: Sequence[tuple[np.ndarray, np.ndarray]],
    doc_scores: np.ndarray,
    *,
    n_terms: int = FB_TERMS,
    lam: float = FB_LAMBDA,
    too_common: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The expanded query as (term ids ascending, weights) from the query's (term ids, counts)
    and the feedback docs' (term ids, tf) rows with their first-pass scores. `too_common` maps
    term ids to a bool mask of those never to add (the query's own terms always stay)."""
    if not 0 <= lam <= 1:
        raise ValueError(f"lam must be in [0, 1], got {lam!r}")
    q_total = float(np.sum(counts))
    new: dict[int, float] = {}
    if q_total > 0:
        for t, c in zip(np.asarray(terms).tolist(), np.asarray(counts).tolist()):
            new[int(t)] = new.get(int(t), 0.0) + lam * float(c) / q_total
    s = np.asarray(doc_scores, np.float64)
    if len(doc_rows) and s.sum() > 0 and n_terms > 0 and lam < 1:
        p_d = s / s.sum()
        rel: dict[int, float] = {}
        for (ids, tf), pd in zip(doc_rows, p_d.tolist()):
            length = float(np.sum(tf))
            if length <= 0:
                continue
            for t, f in zip(np.asarray(ids).tolist(), np.asarray(tf).tolist()):
                rel[int(t)] = rel.get(int(t), 0.0) + pd * float(f) / length
        if too_common is not None and rel:
            cand = np.fromiter(rel, np.int64, len(rel))
            for t in cand[np.asarray(too_common(cand), bool)].tolist():
                del rel[int(t)]
        top = sorted(rel.items(), key=lambda kv: (-kv[1], kv[0]))[:n_terms]
        z = sum(v for _, v in top)
        for t, v in top:
            new[t] = new.get(t, 0.0) + (1 - lam) * v / z
    ids = np.array(sorted(new), np.int32)
    return ids, np.array([new[t] for t in ids.tolist()], np.float32)

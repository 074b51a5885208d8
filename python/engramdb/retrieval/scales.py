"""One scale for every score: each method's raw evidence mapped to [0, 1] on a fixed, absolute
scale, and their weighted mean (a convex combination with theoretical bounds, as in Bruch et al.,
"An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023: unlike rank fusion, a weak
list cannot displace strong hits, and the fused score means the same in every query).

- lexical: BM25 over the query's *ideal* score, the score of a memory of average length holding
  each query term once (sum of idf x query count: Lucene's tf part is exactly 1 there). "0.5" =
  the memory holds half the query's term weight. When the best candidate beats the ideal (a
  term said twice, a short memory), the scale tops out at that best instead, so no two
  lexical matches ever tie at a clipped 1.
- semantic: a space's similarity, 0 at its `low` threshold (what unrelated text reaches) and 1 at
  its `high` (a paraphrase), linear between; like the lexical scale it tops out at the best
  candidate when one is above `high` (so near-duplicates keep their order).
A hit's score is the weighted mean of its methods' scaled scores over every method the strategy
ran (a method that did not find it contributes 0), times the recency factor when recency is on.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..index.bm25 import Bm25Index
from ..spaces.schema import Space


def lexical_ideal(ix: Bm25Index | None, terms: np.ndarray, counts: np.ndarray) -> float:
    """The BM25 score of a memory of average length that holds every query term once."""
    if ix is None or len(terms) == 0:
        return 0.0
    return float(np.sum(ix.idf(np.asarray(terms, np.int32)) * np.asarray(counts, np.float64)))


def stretched_ideal(ideal: float, raw: np.ndarray) -> float:
    """The lexical scale's top: the ideal score, or the best raw score when it is higher."""
    return max(float(ideal), float(np.max(raw))) if len(raw) else float(ideal)


def lexical_scaled(raw: np.ndarray, ideal: float) -> np.ndarray:
    """BM25 scores on the [0, 1] scale (see the module docstring)."""
    raw = np.asarray(raw, np.float64)
    if ideal <= 0:
        return np.zeros_like(raw)
    out: np.ndarray = np.clip(raw / ideal, 0.0, 1.0)
    return out


def semantic_scaled(raw: np.ndarray, sp: Space, top: float | None = None) -> np.ndarray:
    """A space's similarities on the [0, 1] scale: 0 at its `low` threshold, 1 at its `high`
    (or at `top`, the best candidate's similarity when it is above `high`)."""
    raw = np.asarray(raw, np.float64)
    lo, hi = float(sp.low), max(float(sp.high), float(top) if top is not None else float(sp.high))
    if not hi > lo:
        return (raw >= hi).astype(np.float64)
    out: np.ndarray = np.clip((raw - lo) / (hi - lo), 0.0, 1.0)
    return out


def combine(parts: Mapping[str, np.ndarray], weights: Mapping[str, float]) -> np.ndarray:
    """The weighted mean of the scaled scores of each method (arrays over the same candidates)."""
    total = sum(float(weights.get(m, 1.0)) for m in parts)
    if not parts or total <= 0:
        n = len(next(iter(parts.values()))) if parts else 0
        return np.zeros(n)
    acc = sum(float(weights.get(m, 1.0)) * np.asarray(v, np.float64) for m, v in parts.items())
    return np.asarray(acc, np.float64) / total

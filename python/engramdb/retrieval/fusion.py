"""Weighted reciprocal rank fusion (H3): sum over methods of w_m / (k + rank_m).

Ranks start at 1. A key a method did not return gets nothing from it, so fusion is monotone in
every rank (a better rank never lowers a fused score) and a method that failed or found nothing
simply drops out. Ties of fused score go to the key the heaviest method ranked first (methods
taken by weight, then in the order given), so results are deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

RRF_K = 60
# SPEC H3 names vector 1.0, BM25 0.8, graph 0.6. BM25 is raised to 1.0 (lexical and semantic recall
# weigh the same): at 0.8 with k = 60 no BM25 hit can outrank the vector's 10th, and on LoCoMo
# conversations that cost 13 points of recall@10 (bench/RESULTS.md). "neighbours" (the turns around
# the best hits) weighs like a method of its own; "sessions" scales the hybrid's session support
# (retrieval/session_support.py; the rank-fused strategies do not use it).
DEFAULT_WEIGHTS: dict[str, float] = {"vector": 1.0, "bm25": 1.0, "graph": 0.6, "neighbours": 1.0, "sessions": 1.0}

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass
class Fused(Generic[K]):
    """One fused result: its key, fused score, and per method (rank, score) where it was found."""

    key: K
    score: float
    methods: dict[str, tuple[int, float]] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)  # what explain adds (a calibrated score's parts)
    # ranked by a share of another result's score (the hybrid's expansion): that result's key, and
    # this one's own score (what its hit reports); None when it ranks by its own
    via: Any = None
    own: float | None = None


def _heaviest_first(ranked: Mapping[str, V], weights: Mapping[str, float]) -> list[tuple[str, V]]:
    """Methods by weight, heaviest first (stable): equal fused scores go to the more trusted method's pick."""
    return sorted(ranked.items(), key=lambda kv: -_weight(weights, kv[0]))


def _checked_weight(weights: Mapping[str, float], method: str) -> float:
    """A method's weight (1.0 when not given), refused unless finite and >= 0."""
    w = float(weights.get(method, 1.0))
    if not w >= 0 or w == float("inf"):
        raise ValueError(f"weight of method {method!r} must be finite and >= 0, got {w!r}")
    return w


def _weight(weights: Mapping[str, float], method: str) -> float:
    w = float(weights.get(method, 1.0))
    return w if not math.isnan(w) else 0.0  # NaN is refused where the weight is used


def rrf(
    ranked: Mapping[str, Sequence[tuple[K, float]]],
    weights: Mapping[str, float],
    *,
    k: int = RRF_K,
) -> list[Fused[K]]:
    """Fuse ranked lists {method: [(key, score), ...] best first} by weighted RRF, best first.

    A method missing from `weights` weighs 1.0; weights must be finite and >= 0.
    """
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k}")
    # plain dicts while accumulating (one Fused per key at the end): every search runs this
    score: dict[K, float] = {}
    methods: dict[K, dict[str, tuple[int, float]]] = {}  # insertion order: the tie-break order
    for method, items in _heaviest_first(ranked, weights):
        w = _checked_weight(weights, method)
        for rank, (key, s) in enumerate(items, start=1):
            found = methods.get(key)
            if found is None:
                methods[key] = found = {}
                score[key] = 0.0
            elif method in found:
                continue  # a method's own duplicate keeps its best rank only
            score[key] += w / (k + rank)
            found[method] = (rank, float(s))
    best = sorted(score, key=lambda key: -score[key])  # stable: ties keep first-appearance order
    return [Fused(key, score[key], methods[key]) for key in best]


def rrf_arrays(
    ranked: Mapping[str, tuple[np.ndarray, np.ndarray]],
    weights: Mapping[str, float],
    *,
    k: int = RRF_K,
    top: int | None = None,
) -> list[Fused[int]]:
    """`rrf` for long lists of int64 keys given as (keys, scores) arrays, best first (vectorised:
    thousands of candidates per method cost array passes, not Python loops). Same scores and
    tie order as `rrf`; only the `top` best become `Fused` objects."""
    names = [m for m, pair in _heaviest_first(ranked, weights) if len(pair[0])]
    if not names:
        return []
    keys_all = np.concatenate([np.asarray(ranked[m][0], np.int64) for m in names])
    # lists are concatenated heaviest first, so a key's first position is its tie-break order
    uniq, first, inv = np.unique(keys_all, return_index=True, return_inverse=True)
    fused = np.zeros(len(uniq))
    ranks: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    at = 0
    for m in names:
        w = _checked_weight(weights, m)
        n = len(ranked[m][0])
        idx = inv[at : at + n]
        at += n
        r = np.zeros(len(uniq), np.int64)  # 0: not returned by this method
        s = np.zeros(len(uniq), np.float64)
        rk = np.arange(n, 0, -1, dtype=np.int64)  # written in reverse: a duplicate key keeps its best rank
        r[idx[::-1]] = rk
        s[idx[::-1]] = np.asarray(ranked[m][1], np.float64)[::-1]
        hit = r > 0
        fused[hit] += w / (k + r[hit])
        ranks[m], scores[m] = r, s
    if top is not None and top < len(uniq):
        # only the best `top` (and any tied with the last of them) need the full sort
        cut = np.partition(-fused, top - 1)[top - 1]
        sel = np.flatnonzero(-fused <= cut)
        order = sel[np.lexsort((first[sel], -fused[sel]))][:top]
    else:
        order = np.lexsort((first, -fused))
    out = []
    rows = {m: (ranks[m][order].tolist(), scores[m][order].tolist()) for m in names}
    for j, (key, score) in enumerate(zip(uniq[order].tolist(), fused[order].tolist())):
        methods = {m: (rr[j], ss[j]) for m, (rr, ss) in rows.items() if rr[j] > 0}
        out.append(Fused(key, score, methods))
    return out


def exact_depth(weights: Sequence[float], top: int, *, k: int = RRF_K, w_max: float | None = None) -> int:
    """How deep each list must be read for the `top` best fused keys to be exact.

    The heaviest method's own `top` keys each score at least w_max / (k + top); a key past depth D
    in every list scores at most sum(w) / (k + D + 1). So D = ceil(sum(w) (k + top) / w_max) - k
    lists suffice (e.g. two methods of weight 1, k = 60, top 5: 70). `w_max`: the weight of the
    list whose head is counted on, when it is not simply the heaviest (a weight that may still
    shrink is counted in the sum but not trusted as the head)."""
    ws = [float(w) for w in weights if w > 0]
    head = max(ws, default=0.0) if w_max is None else float(w_max)
    if not ws or head <= 0:
        return top
    return max(top, math.ceil(sum(ws) * (k + top) / head) - k)

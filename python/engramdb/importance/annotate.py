"""ELO on search hits (E6): annotation, not ranking, unless the caller asks.

Every hit carries its memory's ELO (decayed to now) and tier; the order stays the relevance order
(the echo-chamber rule: a popular memory must not bury a relevant one). Two opt-ins:

- `elo_weight` w in (0, 1]: hits are re-ranked by (1 - w) x relevance (see `by_elo`) + w x the
  ELO on [0, 1] (800 -> 0, 1600 -> 1) over a deeper candidate list, then cut to k;
- `explore` share s in (0, 1): round(s x k) of the k places (at least one) go to candidates
  below the relevance cut, picked by Thompson sampling over their feedback: each draws from
  Beta(1 + used, 1 + shown - used) and the highest draws win, so a memory rarely shown (a wide
  posterior) surfaces often and one shown many times and never used rarely. Those hits say
  `explored=True`.
"""

from __future__ import annotations

import dataclasses
import random

from ..model.hit import Hit
from .elo import FLOOR, tier
from .ratings import Ratings

ELO_SPAN = 800.0  # 800 -> 0, 1600 (HIGH) -> 1 on the score scale


def annotated(hits: list[Hit], ratings: Ratings, now_us: int) -> list[Hit]:
    """The hits with `elo` and `tier` set (order unchanged)."""
    out = []
    for h in hits:
        elo = ratings.elo_now(h.id, now_us)
        out.append(h.with_importance(round(elo, 3), tier(elo)))
    return out


def by_elo(hits: list[Hit], weight: float) -> list[Hit]:
    """Annotated hits (in relevance order) re-ranked by (1 - weight) x relevance + weight x scaled
    ELO (stable on ties). A hit's relevance is the best score among it and the hits below it: its
    score where the order is the scores', and at least its place where the search ranked it above
    its own match (its session's support, a date the query names, the hit a neighbour came with:
    each hit's score stays its own match), so equal ELOs leave the relevance order as it was."""
    relevance, best = [0.0] * len(hits), float("-inf")
    for i in range(len(hits) - 1, -1, -1):
        best = max(best, hits[i].score)
        relevance[i] = best

    def blended(i: int) -> float:
        scaled = min(1.0, max(0.0, ((hits[i].elo or FLOOR) - FLOOR) / ELO_SPAN))
        return (1.0 - weight) * relevance[i] + weight * scaled

    return [hits[i] for i in sorted(range(len(hits)), key=lambda i: -blended(i))]


def explored(hits: list[Hit], k: int, share: float, ratings: Ratings, rng: random.Random) -> list[Hit]:
    """The k hits with round(share x k) places (at least one) filled by Thompson sampling from
    the candidates below the cut (see the module docstring)."""
    n = max(1, round(share * k))
    keep, pool = hits[: max(0, k - n)], hits[max(0, k - n):]
    if not pool:
        return hits[:k]
    draws = []
    for h in pool:
        r = ratings.by_id.get(h.id)
        used, shown = (r.used, r.shown) if r is not None else (0, 0)
        draws.append((rng.betavariate(1 + used, 1 + max(0, shown - used)), h))
    picked = [dataclasses.replace(h, explored=True) for _, h in sorted(draws, key=lambda d: -d[0])[:n]]
    return keep + picked


__all__ = ["annotated", "by_elo", "explored"]

"""The curator (K2): the most useful candidates that fit a token budget, chosen listwise.

Greedy: at each step take the candidate with the highest value = its score - 0.3 x its largest
main-space similarity to what is already chosen (redundancy) - 0.05 x its tokens over 100 (a
token cost: between two equally good memories the shorter wins), among those that still fit; stop
when none fits. The value orders the picks; it does not leave budget unused (a weak match that
fits is still worth more than nothing: stopping at value <= 0, with a 10% margin, held 1.7
points less evidence on LoCoMo at 1,000 tokens). Candidates that match nothing (score 0) are
never taken.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REDUNDANCY = 0.3
TOKEN_COST = 0.05  # per 100 tokens


@dataclass(frozen=True)
class Candidate:
    """What the curator weighs: an id, its score, its token count and its unit main-space vector."""

    id: str
    score: float
    tokens: int
    vector: np.ndarray


@dataclass(frozen=True)
class Pick:
    """A chosen candidate, with the value it was chosen at and the redundancy it paid."""

    id: str
    score: float
    tokens: int
    value: float
    redundancy: float


def curate(cands: list[Candidate], budget: int) -> list[Pick]:
    """The chosen candidates in the order chosen (see the module docstring)."""
    left = budget
    chosen: list[Pick] = []
    vecs: list[np.ndarray] = []
    pool = list(cands)
    while pool:
        best, best_value, best_red = -1, -np.inf, 0.0
        chosen_m = np.stack(vecs) if vecs else None
        for i, c in enumerate(pool):
            if c.tokens > left or c.score <= 0:
                continue
            red = float(np.max(chosen_m @ c.vector)) if chosen_m is not None else 0.0
            value = c.score - REDUNDANCY * max(0.0, red) - TOKEN_COST * c.tokens / 100
            if value > best_value:
                best, best_value, best_red = i, value, red
        if best < 0:
            break
        c = pool.pop(best)
        chosen.append(Pick(c.id, c.score, c.tokens, round(best_value, 4), round(best_red, 4)))
        vecs.append(c.vector)
        left -= c.tokens
    return chosen


__all__ = ["Candidate", "Pick", "curate"]

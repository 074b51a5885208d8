"""Recency factors (C3): applied to fused results after retrieval, never inside a method."""

from __future__ import annotations

HOUR_US = 3_600 * 1_000_000
DAY_US = 24 * HOUR_US
# (age below, factor): the first bound an age is under gives its factor; older than all: 0.8
RECENCY: tuple[tuple[int, float], ...] = ((HOUR_US, 1.3), (DAY_US, 1.2), (7 * DAY_US, 1.1), (30 * DAY_US, 1.0),
                                          (90 * DAY_US, 0.9))
OLDEST = 0.8
# scores stay in [0, 1]: a hit's score is multiplied by its factor over the largest factor, so
# the freshest memories keep their match score and older ones lose up to 38%; the order is C3's
TOP = max(f for _, f in RECENCY)


def recency_factor(age_us: int) -> float:
    """The multiplier for a memory this old (microseconds; a future memory counts as new)."""
    for bound, factor in RECENCY:
        if age_us < bound:
            return factor
    return OLDEST

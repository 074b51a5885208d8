"""The ELO formulas of seed 001 (E2-E4) and the importance of C5, exactly as written there.

- expected = 1 / (1 + 10^((opponent - elo) / 400)); new = elo + K (outcome - expected), K = 16
  while a memory has had fewer than 30 updates, 8 after; outcome 1 = used, 0 = shown, not used;
- R-gating: when the access's relevance (the hit's score, [0, 1]) is below `RELEVANCE_THRESHOLD`
  the change is x 0.25, so what a weak match did (or did not) earn counts a quarter;
- forgetting: decayed = 800 + (elo - 800) x exp(-days_since_access / 30) (the seed writes 30 as
  the half-life and exp(-d / 30) as the curve: the curve is kept, so 30 days take it 63% of the way
  to 800);
- tiers: HIGH >= 1600, MEDIUM 1200-1599, LOW 800-1199, VERY_LOW < 800;
- C5 importance = sat(log(1 + accesses)) x exp(-ln 2 / 45 x days), sat(x) = x (k1 + 1) / (x + k1),
  k1 = 1.2.

A memory never rated starts at `INITIAL_ELO`, 1400, the middle of MEDIUM (the seed names no start).
A memory nobody has judged is neither proven nor forgotten, so it must sit inside a tier, not on
a boundary: at 1200, the MEDIUM/LOW boundary, one lost match or the first microsecond of decay
made every memory LOW with no feedback at all, and LOW is what pruning compresses (E7). From the
middle it takes about 25 lost matches at K 16, or 12 days shown and unused (800 + 600 e^(-d/30)
= 1200 at d = 12.2), to reach LOW; a memory never shown keeps it (no access, no decay).
"""

from __future__ import annotations

import math

INITIAL_ELO = 1400.0  # mid-MEDIUM (see the module docstring); ratings format 2 (importance/ratings.py)
FLOOR = 800.0
K_NEW, K_ESTABLISHED, ESTABLISHED_AFTER = 16.0, 8.0, 30
GATE = 0.25
RELEVANCE_THRESHOLD = 0.3  # a score of 0.3 on the one scale: below it a hit is a weak match (docs/guides/search.md "Scores")
DECAY_DAYS = 30.0
TIERS = (("HIGH", 1600.0), ("MEDIUM", 1200.0), ("LOW", 800.0))
IMPORTANCE_K1 = 1.2
IMPORTANCE_HALF_LIFE_DAYS = 45.0
DAY_US = 86_400 * 1_000_000


def expected(elo: float, opponent: float) -> float:
    """The chance the seed's ELO gives `elo` of beating `opponent`."""
    return float(1.0 / (1.0 + 10.0 ** ((opponent - elo) / 400.0)))


def k_factor(updates: int) -> float:
    """16 while a memory has had fewer than 30 updates, 8 after."""
    return K_NEW if updates < ESTABLISHED_AFTER else K_ESTABLISHED


def delta(elo: float, opponent: float, outcome: float, updates: int, relevance: float,
          threshold: float = RELEVANCE_THRESHOLD) -> tuple[float, float, float, bool]:
    """(the change, expected, K, gated) of one update."""
    exp_ = expected(elo, opponent)
    k = k_factor(updates)
    gated = relevance < threshold
    return k * (outcome - exp_) * (GATE if gated else 1.0), exp_, k, gated


def decayed(elo: float, days_since_access: float) -> float:
    """The rating after `days_since_access` days without use (toward the 800 floor)."""
    return FLOOR + (elo - FLOOR) * math.exp(-max(0.0, days_since_access) / DECAY_DAYS)


def tier(elo: float) -> str:
    """HIGH, MEDIUM, LOW or VERY_LOW."""
    for name, low in TIERS:
        if elo >= low:
            return name
    return "VERY_LOW"


def importance(accesses: int, days: float) -> float:
    """C5: saturated log accesses times a 45-day half-life decay, in [0, 2.2)."""
    x = math.log1p(max(0, accesses))
    sat = x * (IMPORTANCE_K1 + 1) / (x + IMPORTANCE_K1) if x > 0 else 0.0
    return sat * math.exp(-math.log(2) / IMPORTANCE_HALF_LIFE_DAYS * max(0.0, days))


__all__ = ["FLOOR", "INITIAL_ELO", "RELEVANCE_THRESHOLD", "decayed", "delta", "expected", "importance", "k_factor",
           "tier"]

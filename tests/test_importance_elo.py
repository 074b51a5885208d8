"""The ELO formulas of seed 001 and C5's importance, against the seed's own formulas in float64."""

from __future__ import annotations

import math

import pytest
from engramdb.importance import elo


def seed_expected(entity: float, opponent: float) -> float:
    return 1 / (1 + 10 ** ((opponent - entity) / 400))


@pytest.mark.parametrize(("entity", "opponent"), [(1200, 1200), (1600, 1200), (800, 1400), (1000, 1000.5)])
def test_expected_is_the_seeds(entity: float, opponent: float) -> None:
    assert elo.expected(entity, opponent) == pytest.approx(seed_expected(entity, opponent), rel=1e-12)


def test_k_is_16_for_the_first_30_updates_then_8() -> None:
    assert [elo.k_factor(n) for n in (0, 29, 30, 31)] == [16, 16, 8, 8]


def test_an_update_moves_by_k_times_outcome_minus_expected_gated_below_the_threshold() -> None:
    change, expected, k, gated = elo.delta(1200, 1300, 1.0, updates=3, relevance=0.8)
    assert expected == pytest.approx(seed_expected(1200, 1300))
    assert not gated and k == 16 and change == pytest.approx(16 * (1 - seed_expected(1200, 1300)))
    change, _, k, gated = elo.delta(1200, 1300, 0.0, updates=40, relevance=0.1)
    assert gated and k == 8 and change == pytest.approx(8 * (0 - seed_expected(1200, 1300)) * 0.25)
    assert elo.delta(1200, 1200, 1.0, 0, relevance=elo.RELEVANCE_THRESHOLD)[3] is False  # at the threshold: passes


def test_decay_goes_toward_800_with_the_seeds_curve() -> None:
    assert elo.decayed(1600, 0) == 1600
    assert elo.decayed(1600, 30) == pytest.approx(800 + 800 * math.exp(-1))
    assert elo.decayed(700, 30) == pytest.approx(800 - 100 * math.exp(-1))  # below the floor: toward it
    assert elo.decayed(1600, 10_000) == pytest.approx(800)
    assert elo.decayed(1600, -5) == 1600  # a clock running backwards never raises a rating


@pytest.mark.parametrize(("value", "tier"), [(1600, "HIGH"), (1599.99, "MEDIUM"), (1200, "MEDIUM"), (1199.9, "LOW"),
                                             (800, "LOW"), (799.9, "VERY_LOW")])
def test_tiers(value: float, tier: str) -> None:
    assert elo.tier(value) == tier


def test_c5_importance_saturates_and_halves_in_45_days() -> None:
    x = math.log1p(9)
    assert elo.importance(9, 0) == pytest.approx(x * 2.2 / (x + 1.2))
    assert elo.importance(9, 45) == pytest.approx(elo.importance(9, 0) / 2)
    assert elo.importance(0, 0) == 0.0
    assert elo.importance(10_000, 0) < 2.2  # saturated: below k1 + 1

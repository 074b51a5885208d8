"""The handoff (K6): subgraph (edge budget) -> navigator (step budget) -> curator (token budget), each
stage's spend against its budget, and the dual variables that price the budgets over calls.

A call's cost-shaped utility is U = r - l_edge c_edge - l_step c_step - l_tok c_tok - l_lat c_lat
(the seed's r - l_edge c_edge - l_lat c_lat - l_tok c_tok, with the navigator's steps priced as
well): r is the summed score of what the context holds, and each c is a spend over its budget
(1 = exactly the budget). The lambdas are the dual variables of the constraints "spend <=
budget". After each call each moves by a projected subgradient step,

    l <- min(CAP, max(0, l + RATE x g)),  g = min(1, wanted / budget - 1),

where `wanted` is what the stage would have spent without its budget: the links the subgraph
would still have read, the steps the navigator still found worth taking, the tokens of the
candidates worth their tokens at the token price (score > price x tokens / budget), the
milliseconds the call took. A stage its budget keeps
cutting raises its price; one that stops under its budget lowers its price toward 0. The step is
clipped at 1 so one outlier (a first call that computes the namespace's topics) moves a price by
RATE at most.

Edges, steps and tokens are hard bounds (never exceeded); their prices shape the next calls
within them: the subgraph reads a node only when what it could pass on is worth its links, the
navigator takes a hop only when it is worth a step and the tokens it would take (`worth`: the
token price settles where the candidates worth their tokens just fill the budget, so a hop must
beat the last candidate that makes it in). The curator itself is not charged: its budget is
already a hard bound, and ordering by score per token lost evidence on LoCoMo (bench/RESULTS.md). The
latency budget cannot be a hard bound; its price shrinks the subgraph's and the navigator's
budgets (the stages a context can do without). The lambdas live in the open store (`Duals`), one
set per store, and each context shows them in `stats["duals"]`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass

KINDS = ("edges", "steps", "tokens", "latency")
RATE = 0.5  # the subgradient step
CAP = 16.0  # the largest price (a 50-token line at a 1,000-token budget then costs 0.8 of a score)
EDGE_BUDGET = 200  # links read around the seeds (two neighbouring turns each of 50 hits, and 100 more)
STEP_BUDGET = 12  # hops the navigator takes
LATENCY_MS = 50.0  # a context's target time (the p95 goal with a model's query embedding)


@dataclass(frozen=True)
class Spend:
    """One budget in one call: what a stage spent (<= budget for the hard bounds), what it wanted,
    and the budget."""

    spent: float
    wanted: float
    budget: float

    @property
    def cost(self) -> float:
        """The spend over the budget (K6's c): 1 = exactly the budget."""
        return self.spent / self.budget if self.budget > 0 else 0.0

    @property
    def gradient(self) -> float:
        """The subgradient of the budget's constraint: what it wanted over the budget, minus 1, at most 1."""
        return min(1.0, self.wanted / self.budget - 1.0) if self.budget > 0 else 0.0


class Duals:
    """The dual variables (one price per budget kind) of one open store, updated after each call
    (see the module docstring). Thread-safe: calls side by side each read a consistent set."""

    def __init__(self, rate: float = RATE, cap: float = CAP) -> None:
        self.rate, self.cap = rate, cap
        self._prices = dict.fromkeys(KINDS, 0.0)
        self._lock = threading.Lock()
        self.updates = 0

    def prices(self) -> dict[str, float]:
        """The current price of each budget kind."""
        with self._lock:
            return dict(self._prices)

    def update(self, spends: Mapping[str, Spend]) -> dict[str, float]:
        """One subgradient step from a call's spends (kinds it did not spend keep their price);
        returns the new prices."""
        with self._lock:
            for kind, s in spends.items():
                if kind not in self._prices:
                    raise ValueError(f"budget kind must be one of {KINDS}, got {kind!r}")
                self._prices[kind] = round(min(self.cap, max(0.0, self._prices[kind] + self.rate * s.gradient)), 6)
            self.updates += 1
            return dict(self._prices)


def shrunk(budget: int, latency_price: float) -> int:
    """A stage's budget under a latency price: budget / (1 + price), at least 1 when it was."""
    if budget <= 0:
        return 0
    return max(1, math.ceil(budget / (1.0 + max(0.0, latency_price))))


def token_bar(price: float, tokens: float, budget: int) -> float:
    """The score a candidate of `tokens` needs to be worth its tokens at the token price."""
    return max(0.0, price) * tokens / budget if budget > 0 else 0.0


def utility(reward: float, spends: Mapping[str, Spend], prices: Mapping[str, float]) -> dict[str, object]:
    """The cost-shaped utility of a call at the prices it ran with: reward, each cost, and the value
    r - sum(l c)."""
    costs = {k: round(s.cost, 4) for k, s in spends.items()}
    value = reward - sum(prices.get(k, 0.0) * c for k, c in costs.items())
    return {"reward": round(reward, 4), "costs": costs, "value": round(value, 4)}


__all__ = ["CAP", "EDGE_BUDGET", "KINDS", "LATENCY_MS", "RATE", "STEP_BUDGET", "Duals", "Spend", "shrunk",
           "token_bar", "utility"]

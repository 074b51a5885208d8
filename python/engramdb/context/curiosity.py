"""The curiosity queue's items (K7): the hops that surprised the navigator, kept for background
exploration.

A hop surprises when its actual score (its own match to the query) and the score the navigator
expected from the link that reached it (context/navigator.py) differ by more than THRESHOLD:
- "stronger": the memory matches the query much better than its link predicted (a link that
  should be stronger, or a memory the search's words missed);
- "weaker": the link promised more than the memory holds for this query (a link that does not
  carry this kind of question).
Each call queues at most PER_CALL, the largest surprises first, and never a second item for a
link (namespace, parent, memory, kind) already waiting. Pure logic: the store keeps the queue
(storage/curiosity_log.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from ..model.memory import utc_now
from .navigator import Hop

THRESHOLD = 0.3  # of the one [0, 1] scale: the gap between a weak (0.2) and a good (0.5) match
PER_CALL = 5

Key = tuple[str, str, str, str]  # (namespace, parent id, memory id, link kind)


@dataclass(frozen=True)
class CuriosityItem:
    """One surprising hop: `memory_id` reached from `parent_id` (on a walk from `seed_id`) over a
    link of kind `via` while answering `query`; `expected` and `actual` on the one scale."""

    id: str
    namespace: str
    memory_id: str
    parent_id: str
    seed_id: str
    via: str
    query: str
    expected: float
    actual: float
    at: datetime

    @property
    def error(self) -> float:
        """|expected - actual|: how surprising the hop was."""
        return round(abs(self.expected - self.actual), 4)

    @property
    def surprise(self) -> str:
        """"stronger" (it matched more than its link predicted) or "weaker"."""
        return "stronger" if self.actual > self.expected else "weaker"

    @property
    def key(self) -> Key:
        """The link it is about: one waiting item per link."""
        return (self.namespace, self.parent_id, self.memory_id, self.via)


def surprises(hops: Iterable[Hop], *, namespace: str, query: str, waiting: Collection[Key] = (),
              threshold: float = THRESHOLD, limit: int = PER_CALL, at: datetime | None = None) -> list[CuriosityItem]:
    """The hops to queue (see the module docstring), largest surprise first."""
    when = at or utc_now()
    found: dict[Key, CuriosityItem] = {}
    for h in sorted(hops, key=lambda h: -abs(h.expected - h.relevance)):
        if abs(h.expected - h.relevance) <= threshold:
            break
        item = CuriosityItem(uuid.uuid4().hex, namespace, h.id, h.parent, h.seed, h.via, query,
                             float(h.expected), float(h.relevance), when)
        if item.key in waiting or item.key in found:
            continue
        found[item.key] = item
        if len(found) >= limit:
            break
    return list(found.values())


def ranked(items: Iterable[CuriosityItem]) -> list[CuriosityItem]:
    """Items in the order to explore them: the largest surprise first, then the oldest."""
    return sorted(items, key=lambda i: (-i.error, i.at, i.id))


__all__ = ["PER_CALL", "THRESHOLD", "CuriosityItem", "Key", "ranked", "surprises"]

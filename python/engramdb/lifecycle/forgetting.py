"""Who forgot a memory, and why (S7, issue 25): the record a forget by one of the engine's own
verbs leaves, and which forgotten memories the restore window's purge may take.

A forget is soft (S7): the memory is hidden and `restore` brings it back. After the 30-day
window, `purge_forgotten` and `consolidate(dry_run=False)` delete it for good, but only when a
person, or a rule the user chose, forgot it:

- a forget with no record (`forget(id)`, `delete(id)`, a store written before records existed)
  is a person's: purged once its window has passed;
- `forget_concept(..., dry_run=False)` forgets what its caller named: recorded (by
  "forget_concept", the match that chose each memory) and confirmed: purged like a person's;
- the dream's forget of an exact copy is the engine's own proposal: recorded (by "dream", the
  copy it repeats) and not confirmed. It stays restorable for as long as it stays forgotten, and
  no purge by window takes it, until someone confirms it (`Store.confirm_forgotten`) or purges
  it by id. `Store.forget_proposals` lists the ones waiting.

The record sits in the forgotten version's metadata under `KEY`: {"by", "reason", "at_us" (the
forget's time, microseconds), "confirmed"}. It speaks for the forget whose `forgotten_at` it
names: once a memory is restored the record it keeps describes the past, and a later
`forget(id)` by hand is a person's forget.
"""

from __future__ import annotations

from typing import Any

from ..model.memory import Memory, micros

KEY = "forgetting"  # the metadata key of the record
BY_DREAM, BY_CONCEPT = "dream", "forget_concept"


def record(by: str, reason: str, at_us: int, *, confirmed: bool) -> dict[str, Any]:
    """The record of one forget: who (`by`), why, when (the forgotten_at it is written with), and
    whether a person stands behind it."""
    return {"by": by, "reason": reason, "at_us": int(at_us), "confirmed": bool(confirmed)}


def of(m: Memory) -> dict[str, Any] | None:
    """The record of `m`'s current forget, or None (not forgotten, or forgotten by hand)."""
    if m.forgotten_at is None:
        return None
    rec = m.metadata.get(KEY)
    if not isinstance(rec, dict) or rec.get("at_us") != micros(m.forgotten_at):
        return None  # no record, or one left from an earlier forget that was restored
    return rec


def purgeable(m: Memory) -> bool:
    """Whether the restore window's purge may take `m` once its window has passed: forgotten by
    a person or at a person's word (a confirmed record), never on the engine's own proposal."""
    if m.forgotten_at is None:
        return False
    rec = of(m)
    return rec is None or rec.get("confirmed") is True


def held_because(m: Memory) -> str:
    """Why a forgotten memory past its window was kept (its record's author and reason)."""
    rec = of(m) or {}
    return f"forgotten by {rec.get('by', '?')} ({rec.get('reason', '')}), not confirmed: restorable until confirmed"


def confirmed(rec: dict[str, Any], at_us: int) -> dict[str, Any]:
    """`rec` confirmed by a person at `at_us` (its forget's time unchanged: the window counts
    from the forget)."""
    return {**rec, "confirmed": True, "confirmed_at_us": int(at_us)}


class Forgotten(list[str]):
    """The ids a forgetting verb forgot (or would, in a dry run), in order, with `.reasons`
    (id -> why that memory) and `.dry_run`."""

    def __init__(self, ids: list[str], reasons: dict[str, str], dry_run: bool) -> None:
        super().__init__(ids)
        self.reasons, self.dry_run = reasons, dry_run


__all__ = ["BY_CONCEPT", "BY_DREAM", "KEY", "Forgotten", "confirmed", "held_because", "of", "purgeable", "record"]

"""Optimistic concurrency's merge rule (K4): what an update written against an old version becomes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..model.errors import ConflictError, StoreError
from ..model.memory import Memory

RETRY_DELAYS = (0.1, 0.2, 0.4)  # seconds before each retry of a conflicting update
MergeRule = Callable[[Memory, dict[str, Any]], "dict[str, Any] | None"]


def merge_newer(current: Memory, changes: dict[str, Any]) -> dict[str, Any]:
    """The built-in rule: this change's fields win (its text is the newer), metadata is merged key
    by key (the change's keys over the current ones), and the confidence is the higher of the two."""
    out = dict(changes)
    if "metadata" in changes and isinstance(changes["metadata"], dict):
        out["metadata"] = {**current.metadata, **changes["metadata"]}
    if "confidence" in changes and isinstance(changes["confidence"], (int, float)):
        out["confidence"] = max(float(changes["confidence"]), current.confidence)
    return out


def merged_update(id: str, expected: int, merge: MergeRule, changes: dict[str, Any],
                  current_of: Callable[[], Memory | None], write: Callable[[str, int, dict[str, Any]], Memory]) -> Memory:
    """Retry a conflicting update through the merge rule: after each delay, merge the change into
    the version current then and write it against that version; `ConflictError` when the rule
    cannot merge by the last retry (or yet another writer keeps coming between)."""
    current = None
    for delay in RETRY_DELAYS:
        time.sleep(delay)
        current = current_of()
        if current is None:
            raise StoreError(f"no memory with id {id!r}")
        merged = merge(current, dict(changes))
        if merged is not None:
            try:
                return write(id, current.version, dict(merged))
            except ConflictError:
                continue  # another writer came between: wait and merge again
    assert current is not None
    raise ConflictError(id, expected, current.version, "the merge rule could not merge the change")


__all__ = ["RETRY_DELAYS", "MergeRule", "merge_newer", "merged_update"]

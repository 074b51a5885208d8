"""Typed directed edges between memories (S7 `link`, H2): the record and its checks.

An edge is (src, dst, type) plus a confidence, a reason and an optional validity interval in the
user's timeline. Types are UPPER_SNAKE_CASE (`SUPERSEDES`, `CAUSED_BY`, ...). A later row for the
same key replaces the earlier one; a row with `removed_at` set ends the edge (unlink). Both ends
are in one namespace: the partition holds for edges too.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from . import checks
from .errors import InvalidMemory
from .memory import as_utc

EDGE_TYPE_RE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
MAX_REASON = 2_000

EdgeKey = tuple[str, str, str]  # (src, dst, type)


@dataclass(frozen=True)
class Edge:
    """One typed directed edge `src -[type]-> dst` (a version of it; the newest one counts)."""

    src: str
    dst: str
    type: str
    namespace: str
    confidence: float = 1.0
    reason: str | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    created_at: datetime | None = None
    removed_at: datetime | None = None

    @property
    def key(self) -> EdgeKey:
        return (self.src, self.dst, self.type)

    def valid_at(self, t: datetime) -> bool:
        """True when the relation held at valid time t (open ends count)."""
        return (self.valid_from is None or self.valid_from <= t) and (self.valid_until is None or t < self.valid_until)


def is_confidence(value: object) -> bool:
    """A real number in [0, 1] (not a bool, not NaN). The range first: `math.isfinite` of an int
    past a float's range (10**400) raises OverflowError."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= 1 \
        and math.isfinite(value)


def validate_edge_fields(type: str, confidence: float, reason: str | None,
                         valid_from: datetime | None, valid_until: datetime | None) -> tuple[float, datetime | None, datetime | None]:
    """Check the caller's part of an edge; returns (confidence, valid_from, valid_until) normalised."""
    if not isinstance(type, str) or not EDGE_TYPE_RE.match(type) or len(type) > 64:
        raise InvalidMemory(f"edge type must be UPPER_SNAKE_CASE (e.g. CAUSED_BY), at most 64 characters, got {type!r}")
    if not is_confidence(confidence):
        raise InvalidMemory(f"edge confidence must be a number in [0, 1], got {checks.shown(confidence)}")
    if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON):
        raise InvalidMemory(f"edge reason must be a string of at most {MAX_REASON} characters, got {reason!r:.80}")
    if reason is not None:
        checks.utf8("edge reason", reason)
    start, end = as_utc("valid_from", valid_from), as_utc("valid_until", valid_until)
    if start is not None and end is not None and end < start:
        raise InvalidMemory(f"edge valid_until ({end.isoformat()}) is before valid_from ({start.isoformat()})")
    return float(confidence), start, end

"""The dream's replay (C9, issue 25): which memory is an exact copy of another, on evidence about
the two memories themselves.

A memory is a copy of an older one when all of these hold:

- both are live and in force: current, not forgotten, not archived (their content is in an
  archive file, not in the row), and their validity has not ended (an ended memory, such as one
  a correction superseded, says what used to be true: "I live in Paris" said again after
  "Berlin" ended it is the current fact, not a copy of the old one);
- their own texts are the same word for word (case and spacing aside): a memory's own text is
  what it was stored or updated with, never a summary a compression wrote over it (two notes that
  open alike compress to the same leading sentences and are still two notes);
- they are the same record otherwise: every field a user sets is equal (memory type, role,
  session, validity at both ends, confidence, source, provenance and metadata), the engine's
  own metadata aside: a `compressed` mark, a `merged_duplicates` count or a `forgetting` record
  in the shape the engine writes them (a user's own value under one of those names is the
  user's, and compared);
- the newer holds no edge of its own (an edge in or out is something said about that memory:
  forgetting it would hide the edge);
- the newer was first stored (its first version, not a later rewrite) in the window the dream
  looks at (`RECENT_DAYS`), outside any session (a turn said twice in a conversation is an
  event, and stays).

The older stays; the newer is proposed for forgetting, with the older's id as its reason. A copy
records the versions of both as they were judged: applied, the forget is written only while both
are still at those versions (a memory changed since is a different record, and is left).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..model.memory import Memory, micros
from . import forgetting
from .statements import own_text

RECENT_DAYS = 7


@dataclass(frozen=True)
class Seen:
    """What the dream knows of one memory: its current version, its own text, when it was first
    stored (microseconds) and whether it holds an edge (in or out)."""

    memory: Memory
    text: str
    first_learned_us: int
    linked: bool = False


@dataclass(frozen=True)
class Copy:
    """`copy` repeats `original` word for word; `reason` says so; `versions` are theirs (original,
    copy) as judged."""

    original: str
    copy: str
    reason: str
    versions: tuple[int, int] = (0, 0)


def key(text: str) -> str:
    """The text compared: lowercased, runs of whitespace as one space."""
    return " ".join(text.lower().split())


def in_force(m: Memory, now: datetime) -> bool:
    """Live and true now: not forgotten, not ended."""
    if m.forgotten_at is not None or m.superseded_by is not None:
        return False
    return m.valid_until is None or m.valid_until > now


def engine_mark(key: str, value: Any) -> bool:
    """Whether a metadata entry is one the engine writes, in the engine's shape: a compression's
    mark, a merged copy's count, a forget's record."""
    if key == "compressed":
        return isinstance(value, dict) and {"at_us", "chars_before"} <= set(value)
    if key == "merged_duplicates":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    if key == forgetting.KEY:
        return isinstance(value, dict) and {"by", "at_us", "confirmed"} <= set(value)
    return False


def _record(s: Seen) -> tuple[Any, ...]:
    """The fields two copies share besides their text: every one a user sets. A start equal to
    when the memory was first stored is the engine's (a later version of a memory stored without
    `valid_from` carries that start, model/memory.py): it counts as none."""
    m = s.memory
    meta = {k: v for k, v in m.metadata.items() if not engine_mark(k, v)}
    start = None if m.valid_from is not None and micros(m.valid_from) == s.first_learned_us else m.valid_from
    return (m.memory_type, m.role, m.session_id, start, m.valid_until, float(m.confidence), m.source,
            json.dumps(m.provenance, sort_keys=True, default=str), json.dumps(meta, sort_keys=True, default=str))


def copies(seen: Sequence[Seen], now: datetime, days: float = RECENT_DAYS) -> list[Copy]:
    """The copies among `seen` (memories whose current texts matched: the candidates), newer
    after older, each with the memory it repeats (see the module docstring)."""
    since = micros(now) - int(days * 86_400_000_000)
    first: dict[tuple[str, tuple[Any, ...]], Seen] = {}
    out = []
    for s in sorted(seen, key=lambda s: (s.first_learned_us, s.memory.id)):
        if not in_force(s.memory, now) or not s.text.strip():
            continue
        k = (key(s.text), _record(s))
        older = first.get(k)
        if older is None:
            first[k] = s
        elif s.memory.session_id is None and s.first_learned_us >= since and not s.linked:
            out.append(Copy(older.memory.id, s.memory.id,
                            f"an exact copy of {older.memory.id} (its own text, word for word, every field the "
                            f"same), first stored within {days:g} days of the dream, outside any session",
                            (older.memory.version, s.memory.version)))
    return out


__all__ = ["RECENT_DAYS", "Copy", "Seen", "copies", "engine_mark", "in_force", "key", "own_text"]

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
- they are the same record otherwise: memory type, role, valid_from and metadata (the engine's
  own keys aside) equal;
- the newer was first stored (its first version, not a later rewrite) in the window the dream
  looks at (`RECENT_DAYS`), outside any session (a turn said twice in a conversation is an
  event, and stays).

The older stays; the newer is proposed for forgetting, with the older's id as its reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..model.memory import Memory, micros
from . import forgetting

RECENT_DAYS = 7
ENGINE_KEYS = frozenset({"compressed", "merged_duplicates", forgetting.KEY})  # metadata the engine writes


@dataclass(frozen=True)
class Seen:
    """What the dream knows of one memory: its current version, its own text and when it was
    first stored (microseconds)."""

    memory: Memory
    text: str
    first_learned_us: int


@dataclass(frozen=True)
class Copy:
    """`copy` repeats `original` word for word; `reason` says so."""

    original: str
    copy: str
    reason: str


def key(text: str) -> str:
    """The text compared: lowercased, runs of whitespace as one space."""
    return " ".join(text.lower().split())


def own_text(versions: Sequence[Memory]) -> str:
    """A memory's own text from its versions (oldest first): its newest content, except that a
    content a compression wrote (the version that set a new `compressed` mark and changed the
    text) leaves the text as it was before."""
    text = ""
    before: Memory | None = None
    for v in versions:
        if before is None or v.content != before.content:
            mark = v.metadata.get("compressed")
            if before is None or not mark or mark == before.metadata.get("compressed"):
                text = v.content
        before = v
    return text


def in_force(m: Memory, now: datetime) -> bool:
    """Live and true now: not forgotten, not ended."""
    if m.forgotten_at is not None or m.superseded_by is not None:
        return False
    return m.valid_until is None or m.valid_until > now


def _record(m: Memory) -> tuple[Any, ...]:
    """The fields two copies share besides their text."""
    meta = {k: v for k, v in m.metadata.items() if k not in ENGINE_KEYS}
    return m.memory_type, m.role, m.valid_from, json.dumps(meta, sort_keys=True, default=str)


def copies(seen: Sequence[Seen], now: datetime, days: float = RECENT_DAYS) -> list[Copy]:
    """The copies among `seen` (memories whose current texts matched: the candidates), newer
    after older, each with the memory it repeats (see the module docstring)."""
    since = micros(now) - int(days * 86_400_000_000)
    first: dict[tuple[str, tuple[Any, ...]], Seen] = {}
    out = []
    for s in sorted(seen, key=lambda s: (s.first_learned_us, s.memory.id)):
        if not in_force(s.memory, now) or not s.text.strip():
            continue
        k = (key(s.text), _record(s.memory))
        older = first.get(k)
        if older is None:
            first[k] = s
        elif s.memory.session_id is None and s.first_learned_us >= since:
            out.append(Copy(older.memory.id, s.memory.id,
                            f"an exact copy of {older.memory.id} (its own text, word for word), first stored "
                            f"within {days:g} days of the dream, outside any session"))
    return out


__all__ = ["RECENT_DAYS", "Copy", "Seen", "copies", "in_force", "key", "own_text"]

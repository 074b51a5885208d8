"""How a memory reads in a context block: one line with who said it, grouped under the date it was
said or held.

- The line: "- <role>: <text>" ("- user: I live in Paris.", "- Caroline: ..."), or "- <text>" for
  a memory without a role or whose text begins with "<role>:" itself (a chat log stored as it
  reads); the text with its whitespace runs made one space; for a memory longer
  than a passage, the passage that matched (C7) between "...".
- Its group: the turns of one session sit under one line holding the session's date and its id
  ("2023-05-08, session_1:"; a range when its shown turns span days); a dated memory of no session
  under its day ("2025-03-01:"); an undated one (no `valid_from`, or one equal to when it was
  learned: nothing said of when it holds) under no line at all. A session's date is when its turns
  were said (their `valid_from`, else when they were learned). A session id that reads as a
  machine's (a run of 16 hex digits or more, or a UUID) is left out of the line: it tells a reader
  nothing and costs a dozen tokens.
- Its mark: a fact that no longer holds says so at the end of its line, with the date it ended
  ("(superseded 2025-05-01)", "(ended 2025-05-01)"); one that holds now but ends later says until
  when ("(until 2026-01-01)"). A fact that holds with no end has none.
- Its key: the line's words, case folded, whitespace runs made one space; two memories with one
  key are one line (a prompt repeated five times is pasted once).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from ..model.memory import Memory
from ..spaces.query import QUIET_AFTER_PURGE

T = TypeVar("T")
_MACHINE_ID = re.compile(r"[0-9a-fA-F]{16,}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}")


def flat(text: str) -> str:
    """A text on one line: whitespace runs (line breaks too) made one space."""
    return " ".join(text.split())


# Lines and keys made, by (role, text): a context weighs, dedupes, walks and places each line several
# times (~300 keys a context at 100,000 memories), and an agent's next question meets the same
# memories. Plain dicts of strings, emptied when full (an LRU's nodes would be objects the cyclic
# garbage collector tracks).
_MADE_KEPT = 8_192
_lines: dict[tuple[str, str], str] = {}
_keys: dict[tuple[str, str], tuple[str, str]] = {}
# A purge empties them, and for QUIET_AFTER_PURGE (the query cache's) nothing is kept: a context under
# way as it ran (its walk read the store before it) would keep the purged text again
_quiet_until = 0.0  # time.monotonic() before which nothing is kept


def forget_made() -> None:
    """Empty the lines and keys made (a purge: they hold memories' text), and keep none for
    QUIET_AFTER_PURGE seconds."""
    global _quiet_until
    _quiet_until = time.monotonic() + QUIET_AFTER_PURGE  # first: see _keep
    _lines.clear()
    _keys.clear()


def _keep(cache: dict[tuple[str, str], T], at: tuple[str, str], value: T) -> T:
    """Keep `value` unless a purge is recent. The check follows the insert: a purge that began
    meanwhile is seen here, or empties the cache after it (it sets the time first)."""
    if len(cache) >= _MADE_KEPT:
        cache.clear()
    cache[at] = value
    if time.monotonic() < _quiet_until:
        cache.pop(at, None)
    return value


def made_texts() -> list[str]:
    """The texts whose lines and keys are kept now (what a purge must leave none of)."""
    return [text for _, text in (*list(_lines), *list(_keys))]


def line(m: Memory, text: str) -> str:
    """A memory (or the passage of it that matched, `text`) as its line, without its mark."""
    at = (m.role or "", text)
    found = _lines.get(at)
    if found is None:
        found = _keep(_lines, at, "- " + _said(m.role, flat(text)))
    return found


def key(m: Memory, text: str) -> tuple[str, str]:
    """Two memories with one key are one line (see the module docstring): the line's own words,
    case folded, so that two that read the same ("- Maya: hi" from role "Maya" and "hi", or from
    no role and "Maya: hi") are pasted once."""
    at = (m.role or "", text)
    found = _keys.get(at)
    if found is None:
        found = _keep(_keys, at, ("", _said(m.role, flat(text)).casefold()))
    return found


def _said(role: str | None, body: str) -> str:
    """"<role>: <body>", or the body alone without a role or when it begins with "<role>:"
    itself (a chat log stored as it reads, "Maya: I got the job!": its speaker named once)."""
    who = f"{flat(role)}: " if role and role.strip() else ""
    return body if not who or body.casefold().startswith(who.casefold()) else who + body


def dated(m: Memory) -> bool:
    """Whether a memory says when it holds (a `valid_from` of its own, not just when it was learned)."""
    return m.valid_from is not None and m.valid_from != m.learned_at


def said_at(m: Memory) -> datetime | None:
    """When a memory was said or holds from: its `valid_from`, else when it was learned."""
    return m.valid_from or m.learned_at


def _day(t: datetime | None) -> str:
    return t.date().isoformat() if t is not None else ""


def ended(m: Memory, now: datetime) -> bool:
    """Whether a fact no longer holds (its validity ended by `now`)."""
    return m.valid_until is not None and m.valid_until <= now


def mark(m: Memory, now: datetime) -> str:
    """The end of a fact's validity, as its line shows it ("" when it holds with no end)."""
    if m.valid_until is None:
        return ""
    if m.valid_until > now:
        return f"(until {_day(m.valid_until)})"
    return f"({'superseded' if m.superseded_by else 'ended'} {_day(m.valid_until)})"


def session_name(session_id: str | None) -> str:
    """A session id as a group line shows it ("" for none, or one that reads as a machine id)."""
    if not session_id or _MACHINE_ID.search(session_id):
        return ""
    return flat(session_id)


@dataclass(frozen=True)
class Group:
    """What a line sits under: `key` ("" for no group: an undated memory of no session), the
    session's shown name, and the dates its memories were said (first, last)."""

    key: str
    session: str = ""
    first: datetime | None = None
    last: datetime | None = None

    def header(self) -> str:
        """The group's line ("" for no group): "2023-05-08, session_1:", "2023-05-08 to 2023-05-09:"."""
        if not self.key:
            return ""
        a, b = _day(self.first), _day(self.last)
        when = a if a == b else f"{a} to {b}"
        return f"{', '.join(p for p in (when, self.session) if p)}:"

    def joined(self, other: Group) -> Group:
        """The group with `other`'s dates too (one group's memories, gathered)."""
        firsts = [t for t in (self.first, other.first) if t is not None]
        lasts = [t for t in (self.last, other.last) if t is not None]
        return Group(self.key, self.session, min(firsts) if firsts else None, max(lasts) if lasts else None)


def group(m: Memory) -> Group:
    """A memory's group (see the module docstring)."""
    when = said_at(m)
    if m.session_id:
        return Group(f"s:{m.session_id}", session_name(m.session_id), when, when)
    if dated(m):
        return Group(f"d:{_day(when)}", "", when, when)
    return Group("")


__all__ = ["Group", "dated", "ended", "flat", "group", "key", "line", "mark", "said_at", "session_name"]

"""The memory record (S1) with its bi-temporal fields (S2).

A memory is one turn, tool observation, response summary, document chunk or fact. Valid time
(`valid_from`, `valid_until`) is the user's timeline: when the content was true. System time
(`learned_at`, `expired_at`) is the store's: when it learned the content and when it stopped
believing it. All four are timezone-aware UTC datetimes; naive datetimes are refused, never
guessed. Nothing here touches disk: `validate_memory` is the single gate every write passes.
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta, timezone
from typing import Any, TypeGuard

from . import checks
from .errors import InvalidMemory

SOURCES_BUILTIN = ("turn", "hook", "response", "file_chunk", "fact")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}$")
_NS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}$")


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(timezone.utc)


def as_utc(name: str, value: Any) -> datetime | None:
    """Check a timestamp field: None, or an aware datetime (converted to UTC).

    Naive datetimes are refused: the store cannot know which zone they meant; so is one that falls
    outside years 1-9999 once in UTC (`datetime(1, 1, 1, tzinfo=<UTC+5>)`), which Python cannot
    represent.
    """
    if value is None:
        return None
    if not isinstance(value, datetime):
        hint = " (for an ISO-8601 string with its UTC offset use datetime.fromisoformat(...))" \
            if isinstance(value, str) else ""
        raise InvalidMemory(f"{name} must be a timezone-aware datetime, got {type(value).__name__} {value!r:.80}{hint}")
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise InvalidMemory(
            f"{name} is a naive datetime ({value.isoformat()}); pass an aware one, "
            f"e.g. datetime(..., tzinfo=timezone.utc)"
        )
    if value.tzinfo is timezone.utc:
        return value
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise InvalidMemory(f"{name} {value.isoformat()} is out of range: in UTC it falls outside years 1-9999, "
                            "the range a datetime holds") from None


def content_hash(content: str) -> str:
    """Exact-duplicate key (S8): BLAKE2b-128 of the UTF-8 content, hex."""
    return hashlib.blake2b(content.encode("utf-8"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class Memory:
    """One stored memory. Immutable: `update` and `supersede` produce new versions."""

    id: str
    namespace: str
    content: str
    session_id: str | None = None
    seq: int | None = None
    source: str = "turn"
    role: str | None = None
    memory_type: str | None = None
    confidence: float = 1.0
    metadata: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    learned_at: datetime | None = None
    expired_at: datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    forgotten_at: datetime | None = None

    @property
    def content_hash(self) -> str:
        """BLAKE2b-128 of the content (exact-duplicate detection)."""
        return content_hash(self.content)

    def is_current(self) -> bool:
        """True while the memory is believed (not expired), still valid and not forgotten."""
        return self.expired_at is None and self.valid_until is None and self.forgotten_at is None

    def valid_at(self, t: datetime) -> bool:
        """Was the content true at valid time t? (valid_from <= t < valid_until; open ends count)."""
        start = self.valid_from or self.learned_at
        return (start is None or start <= t) and (self.valid_until is None or t < self.valid_until)

    def known_at(self, t: datetime) -> bool:
        """Did the store believe it at system time t? (learned_at <= t < expired_at)."""
        return (self.learned_at is None or self.learned_at <= t) and (self.expired_at is None or t < self.expired_at)

    def detached(self) -> Memory:
        """A copy with its own metadata and provenance dicts (Memory is frozen, its dicts are not:
        a caller editing one must not change what the next caller gets). A plain field copy, ~10x
        cheaper than `dataclasses.replace`: every search materialises its hits through it."""
        new = object.__new__(Memory)
        fields_ = new.__dict__
        fields_.update(self.__dict__)
        fields_["metadata"] = copy.deepcopy(self.metadata) if self.metadata else {}
        fields_["provenance"] = copy.deepcopy(self.provenance) if self.provenance else {}
        return new

    def kept(self) -> tuple[Any, ...]:
        """The fields as a plain tuple, in declaration order (the metadata and provenance dicts
        copied, None when empty): what a cache keeps of a memory. Python's cyclic garbage collector stops tracking a
        tuple of strings, numbers, times and such dicts at its first pass, so a cache of them does
        not make its full collections longer or more frequent, as a cache of Memory objects does
        (`from_kept` makes the Memory again)."""
        values = list(map(self.__dict__.__getitem__, _FIELD_NAMES))  # one C-level pass: a search keeps 50
        for i in _DICT_POSITIONS:
            # an empty dict kept as None: any dict in a tuple, even an untracked one, keeps it tracked
            values[i] = copy.deepcopy(values[i]) if values[i] else None
        return tuple(values)

    @staticmethod
    def from_kept(kept: tuple[Any, ...]) -> Memory:
        """The Memory whose `kept()` `kept` is (its own copies of the dicts, as `detached`)."""
        new = object.__new__(Memory)
        fields_ = new.__dict__
        fields_.update(zip(_FIELD_NAMES, kept))
        for name in _DICT_FIELDS:
            fields_[name] = copy.deepcopy(fields_[name]) if fields_[name] else {}
        return new

    def with_changes(self, **changes: Any) -> Memory:
        """A copy with some fields replaced (validated by the caller through validate_memory).

        A new version (a higher `version`) of a memory stored without `valid_from` gets the start
        it had: this version's `valid_from`, else its `learned_at` (S2: valid from when it was
        learned). Every writer of a new version (update, supersede, forget, restore, compression,
        contradictions, merges) passes here; without the rule a version's missing start read as its
        OWN `learned_at`, so a fact corrected later had never held before the correction.
        An end before the start (a memory superseded by one that started first: it never held on
        its own) gives an empty interval, as the contradiction verbs make one: a start this rule
        supplies moves to the end (no error about a start the caller never gave); a start the
        memory was given keeps it, and a supersede (`superseded_by` given) ends the version there.
        """
        new = replace(self, **changes)
        if not (isinstance(new.version, int) and isinstance(self.version, int) and new.version > self.version):
            return new
        inherited = new.valid_from is None
        start = (self.valid_from or self.learned_at) if inherited else new.valid_from
        end = new.valid_until
        if _aware(start) and _aware(end) and end < start:
            if inherited:
                start = end
            elif "superseded_by" in changes and new.superseded_by is not None:
                new = replace(new, valid_until=start)
        if inherited and start is not None:
            new = replace(new, valid_from=start)
        return new



_FIELD_NAMES = tuple(f.name for f in fields(Memory))
_DICT_FIELDS = frozenset({"metadata", "provenance"})
_DICT_POSITIONS = tuple(i for i, name in enumerate(_FIELD_NAMES) if name in _DICT_FIELDS)

def _aware(t: Any) -> TypeGuard[datetime]:
    """An aware datetime (what can be compared safely before validation)."""
    return isinstance(t, datetime) and t.tzinfo is not None and t.tzinfo.utcoffset(t) is not None


def _check_name(field_name: str, value: Any, pattern: re.Pattern[str], *, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not pattern.match(value):
        raise InvalidMemory(
            f"{field_name} must be 1-128 characters of letters, digits and ._:@/+- "
            f"(starting with a letter or digit), got {checks.shown(value)}"
        )


def check_namespace(value: Any) -> None:
    """Refuse a namespace that no memory could have (the rule `validate_memory` applies), naming it."""
    _check_name("namespace", value, _NS_RE, optional=False)


def validate_memory(m: Memory, earlier: Memory | None = None, *, stored: bool = False) -> Memory:
    """Check every field of `m`; return it with timestamps normalised to UTC.

    `earlier`: the version `m` replaces (update, forget, supersede...): a seq it keeps is the
    store's, which may be an automatic position above `checks.MAX_SEQ` (a session whose last turn
    had seq 2**62 - 1, then a turn without one). `stored`: `m` is a record a store wrote (an
    export's line), whose seq may be such a position too. A caller's own seq stays at most MAX_SEQ.

    Raises `InvalidMemory` (a ValueError) naming the first bad field and its value.
    """
    _check_name("id", m.id, _ID_RE, optional=False)
    _check_name("namespace", m.namespace, _NS_RE, optional=False)
    if not isinstance(m.content, str) or not m.content.strip():
        raise InvalidMemory(f"content must be a non-empty string, got {checks.shown(m.content)}")
    checks.utf8("content", m.content)
    checks.short_text("session_id", m.session_id, 256)
    checks.seq(m.seq, automatic=stored or (earlier is not None and m.seq == earlier.seq))
    checks.short_text("source", m.source, 100, optional=False)
    checks.short_text("role", m.role, 100)
    checks.short_text("memory_type", m.memory_type, 100)
    conf = m.confidence
    # the range test first: math.isfinite of an int too large for a float raises OverflowError
    # (and the range test alone refuses NaN and inf)
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1 or not math.isfinite(conf):
        raise InvalidMemory(f"confidence must be a number in [0, 1], got {checks.shown(conf)}")
    checks.json_tree("metadata", m.metadata)
    checks.json_tree("provenance", m.provenance)
    if isinstance(m.version, bool) or not isinstance(m.version, int) or m.version < 1:
        raise InvalidMemory(f"version must be an integer >= 1, got {m.version!r}")
    times: dict[str, Any] = {
        name: as_utc(name, getattr(m, name))
        for name in ("valid_from", "valid_until", "learned_at", "expired_at", "forgotten_at")
    }
    if times["valid_from"] and times["valid_until"] and times["valid_until"] < times["valid_from"]:
        raise InvalidMemory(
            f"valid_until ({times['valid_until'].isoformat()}) is before valid_from ({times['valid_from'].isoformat()})"
        )
    if times["learned_at"] and times["expired_at"] and times["expired_at"] < times["learned_at"]:
        raise InvalidMemory(
            f"expired_at ({times['expired_at'].isoformat()}) is before learned_at ({times['learned_at'].isoformat()})"
        )
    for name in ("supersedes", "superseded_by"):
        _check_name(name, getattr(m, name), _ID_RE, optional=True)
    if type(conf) is float and all(times[k] is getattr(m, k) for k in times):
        return m  # already canonical: skip the copy (the common case on the write path)
    return replace(m, confidence=float(conf), **times)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICRO = timedelta(microseconds=1)


def micros(t: datetime) -> int:
    """An aware datetime as integer microseconds since the Unix epoch (the scans' time unit).
    Exact: integer arithmetic on the timedelta, never a float (a float's 53 bits drop the last
    microsecond of some instants, so `as_of` at the very instant of a supersede saw the old fact)."""
    return (t - _EPOCH) // _MICRO


def from_micros(us: int) -> datetime:
    """Integer microseconds since the Unix epoch as an aware UTC datetime (exact: `micros`'s inverse)."""
    return _EPOCH + timedelta(microseconds=us)

"""The boundary checks every way into engramdb shares (API, CLI, MCP tools, hooks, capture).

Whatever a caller hands in is checked here before it reaches anything other calls share (the WAL,
the access log's buffer, the spool): a value that would fail later, for every caller at once,
fails now, for this caller only, with an error naming the field and the value.

- Text: every string must encode as UTF-8. A lone surrogate (half an emoji, as clipping UTF-16
  leaves it) cannot be written to Arrow, JSON files or the log, so it is refused here.
- JSON trees (`metadata`, `provenance`): keys and values checked at any depth, nesting at most
  `MAX_DEPTH` levels (a deeper tree would exhaust the JSON encoder's recursion), walked without
  recursion.
- `seq`: an integer in [0, `MAX_SEQ`]; the store's column is a signed 64-bit integer and the
  automatic next positions count on from the highest one given, so room is left above it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .errors import InvalidMemory

MAX_DEPTH = 64  # nesting levels of a metadata or provenance tree (dicts and lists)
MAX_SEQ = 2**62 - 1  # the highest seq a caller may give: 2**62 automatic positions stay above it
INT64_MAX = 2**63 - 1  # the seq column's limit


_SHOWN_BITS = 128


def shown(value: Any) -> str:
    """`value` as an error message shows it: its repr, but an integer of more than 128 bits by its
    size (past 4,300 digits Python refuses to write an int out: the message itself would raise a
    ValueError naming neither the field nor the value)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _SHOWN_BITS:
        return f"an integer of {value.bit_length():,} bits"
    return repr(value)


def utf8(name: str, value: str, error: type[ValueError] = InvalidMemory) -> None:
    """Refuse a string UTF-8 cannot encode (a lone surrogate), naming `name`, the character and
    where it is. A string of ASCII (the common case) costs one flag test."""
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"{name} holds a character UTF-8 cannot encode ({exc.reason}: {value[exc.start:exc.end]!r} "
                    f"at position {exc.start}); a lone surrogate is half a character, as clipping UTF-16 text "
                    "leaves it") from None


def encodes(value: str) -> bool:
    """True when the string encodes as UTF-8 (what `utf8` checks, as a test)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def json_tree(name: str, value: Any) -> None:
    """Check a metadata or provenance dict: JSON-serialisable (no NaN or inf), every string key
    and value encodable at any depth, nested at most MAX_DEPTH levels. Raises InvalidMemory naming
    the field and the path to the bad part, e.g. `metadata['a'][0]`."""
    if not isinstance(value, dict):
        raise InvalidMemory(f"{name} must be a dict (stored as JSON), got {type(value).__name__}")
    if not value:
        return
    stack: list[tuple[str, Any, int]] = [(name, value, 1)]
    while stack:
        where, node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidMemory(f"{name} is nested deeper than {MAX_DEPTH} levels (at {where[:80]}...); "
                                f"flatten it (the limit is engramdb.model.checks.MAX_DEPTH)")
        if isinstance(node, Mapping):
            for k, v in node.items():
                if not isinstance(k, str):  # JSON would store 1 as "1": get() would not return what was added
                    raise InvalidMemory(f"{where} key {shown(k)} must be a string (a JSON object's keys are)")
                utf8(f"{where} key {k!r}", k)
                stack.append((f"{where}[{k!r}]", v, depth + 1))
        elif isinstance(node, (list, tuple)):
            stack.extend((f"{where}[{i}]", v, depth + 1) for i, v in enumerate(node))
        elif isinstance(node, str):
            utf8(where, node)
    try:
        json.dumps(value, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidMemory(f"{name} must be JSON-serialisable: {exc}") from None


_DATE_ALONE = re.compile(r"^(\d{4}-?\d{2}-?\d{2})(?:Z|[+-]\d{2}:?\d{2})?$")


def iso_time(name: str, value: str, error: type[ValueError] = ValueError) -> datetime:
    """An ISO-8601 time given as text (an argument, a flag, a chat API's JSON), with its UTC offset:
    the store never guesses a zone. `error` names `name` and the value when it is not one."""
    day = _DATE_ALONE.match(value.strip())
    if day is not None:  # Python would read "2025-03-20+00:00" as a naive time: say what a day needs
        raise error(f"{name} {value!r:.80} is a date without a time: give the time and its offset, e.g. "
                    f"{day.group(1)}T00:00:00Z or {day.group(1)}T00:00:00+02:00")
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise error(f"{name} {value!r:.80} is not an ISO-8601 time (e.g. 2024-06-14T12:00:00Z)") from None
    if t.tzinfo is None or t.utcoffset() is None:
        raise error(f"{name} {value!r:.80} has no UTC offset: add one (Z, +00:00, +02:00)")
    return t


def seq(value: Any, *, automatic: bool = False) -> None:
    """A caller's seq: None, or an integer in [0, MAX_SEQ]. With `automatic`, a seq the store may
    have set itself (a stored version's, an export's record): up to the column's INT64_MAX, as the
    automatic positions count on above MAX_SEQ."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidMemory(f"seq must be an integer >= 0, got {shown(value)}")
    if automatic:
        if value > INT64_MAX:  # the limit named is the one that applies: a stored seq may pass MAX_SEQ
            raise InvalidMemory(f"seq must be at most {INT64_MAX:,} (2**63 - 1: the store's 64-bit column), got "
                                f"{shown(value) if value.bit_length() > _SHOWN_BITS else format(value, ',')}")
        return
    if value > MAX_SEQ:
        raise InvalidMemory(f"seq must be at most {MAX_SEQ:,} (2**62 - 1: the automatic next positions count on "
                            f"above it within the store's 64-bit column), got "
                            f"{shown(value) if value.bit_length() > _SHOWN_BITS else format(value, ',')}")


def short_text(name: str, value: Any, most: int, *, optional: bool = True) -> None:
    """A short string field (session_id, source, role, memory_type): 1 to `most` characters that
    encode as UTF-8 (None allowed when `optional`)."""
    if value is None and optional:
        return
    if not isinstance(value, str) or not 1 <= len(value) <= most:
        raise InvalidMemory(f"{name} must be a string of 1-{most} characters, got {shown(value)}")
    utf8(name, value)


def name(field: str, value: Any) -> str:
    """An argument naming something the store holds (a namespace, an id, a query id): a non-empty
    string that encodes as UTF-8, else ValueError (TypeError for a non-string) naming `field`."""
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a string, got {type(value).__name__} {value!r:.80}")
    if not value:
        raise ValueError(f"{field} must not be empty")
    utf8(field, value, ValueError)
    return value


def id_list(field: str, value: Any) -> list[str]:
    """An iterable of memory ids: each a non-empty string UTF-8 can encode (TypeError, or
    ValueError, naming `field` and the first bad one)."""
    if not isinstance(value, Iterable) or isinstance(value, (str, bytes, Mapping)):
        raise TypeError(f"{field} must be an iterable of memory ids, got {value!r:.80}")
    out = list(value)
    bad = [i for i in out if not isinstance(i, str) or not i]
    if bad:
        raise TypeError(f"{field} must be memory ids (non-empty strings), got {bad[0]!r:.80}")
    for i in out:
        utf8(field, i, ValueError)
    return out


def path(field: str, value: Any) -> str:
    """A file or folder path argument: a str or os.PathLike whose name encodes as UTF-8 (the file
    system, the spool and every message that names the path need it), else an error naming `field`."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{field} must be a path (str or os.PathLike), got {type(value).__name__} {value!r:.80}")
    text = os.fspath(value)
    if isinstance(text, bytes):
        raise TypeError(f"{field} must be a text path, got bytes {text!r:.80}")
    if not text:
        raise ValueError(f"{field} must not be empty")
    utf8(field, text, ValueError)
    return text


__all__ = ["INT64_MAX", "MAX_DEPTH", "MAX_SEQ", "encodes", "id_list", "json_tree", "name", "path", "seq", "short_text", "utf8"]

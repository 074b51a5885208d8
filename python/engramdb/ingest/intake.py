"""add_many's intake: a batch of record dicts -> one validated Arrow table, column by column.

Building a `Memory` and running `validate_memory` per record costs tens of microseconds, which
caps a batch with caller vectors far below what the WAL and the segment files can take. Here
each field is gathered as one column and checked with a cheap test that only passes values
already in canonical form (a str of the right length, an aware UTC datetime, a float in [0, 1]).
A row failing any cheap test is a *suspect*: it goes through the full `validate_memory`, which
either normalises it (an int confidence, a datetime in another zone) or raises the error naming
the record and the field. So the accepted set and the stored values are exactly those of the
per-record path (tests/test_intake.py checks this with Hypothesis), at a fraction of the cost.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow_numpy import arrow_of, table_of
from ..model.checks import MAX_SEQ, encodes
from ..model.errors import InvalidMemory
from ..model.memory import _ID_RE, _NS_RE, Memory, validate_memory
from ..storage.columns import MEMORY_SCHEMA, _json

_FIELDS = tuple(f.name for f in fields(Memory))
_ALLOWED = frozenset(_FIELDS) | {"vectors"}
_TIMES = ("valid_from", "valid_until", "expired_at", "forgotten_at")
_DEFAULTS: dict[str, Any] = {"source": "turn", "confidence": 1.0}
# nullable columns: all null when no record of a batch sets them (none is required, none defaulted)
_NULLABLE = tuple(f.name for f in MEMORY_SCHEMA if f.nullable and f.name not in ("version", "learned_at"))


@dataclass
class Intake:
    """A validated batch: its Arrow rows (MEMORY_SCHEMA) and what the store needs beside them."""

    table: pa.Table
    ids: list[str]
    namespaces: list[str]
    contents: list[str]
    vectors: list[Mapping[str, Any]]  # caller vectors per record ({} when none)
    # the caller chose this record's id: dedup never drops such a record, and only such an id can
    # be stored already (the store's own are 128 random bits: add_many looks up the named ones)
    named: list[bool]


def _new_ids(n: int) -> list[str]:
    """n random 128-bit hex ids (uuid4-like), drawn in one call instead of n."""
    raw = os.urandom(16 * n).hex()
    return [raw[32 * i : 32 * i + 32] for i in range(n)]


def _short_str(v: Any, hi: int) -> bool:
    return type(v) is str and 1 <= len(v) <= hi and (v.isascii() or encodes(v))


def _cheap_ok(name: str, v: Any) -> bool:
    """True only for values validate_memory would accept unchanged (None = the field is unset)."""
    if name in ("id", "supersedes", "superseded_by"):
        return (v is None and name != "id") or (type(v) is str and _ID_RE.match(v) is not None)
    if name == "namespace":
        return type(v) is str and _NS_RE.match(v) is not None
    if name == "content":
        return type(v) is str and bool(v) and not v.isspace()
    if name == "session_id":
        return v is None or _short_str(v, 256)
    if name in ("source", "role", "memory_type"):
        return v is None or _short_str(v, 100)
    if name == "seq":
        return v is None or (type(v) is int and 0 <= v <= MAX_SEQ)
    if name == "confidence":
        return v is None or (type(v) is float and 0.0 <= v <= 1.0)
    if name in ("metadata", "provenance"):
        return v is None or (type(v) is dict and not v)
    if name in _TIMES:
        return v is None or (type(v) is datetime and v.tzinfo is timezone.utc)
    return v is None  # version and learned_at are the store's to set


def _gather(records: Iterable[Mapping[str, Any] | Memory]) -> tuple[dict[str, list[Any]], int]:
    """The batch as one list per field some record sets (None where a record does not), and its size."""
    if isinstance(records, (Mapping, Memory, str, bytes)) or not isinstance(records, Iterable):
        # one record where a batch belongs: a dict iterated is its keys ('records[0] must be a dict,
        # got str'), an int raised 'not iterable'
        raise TypeError(f"records must be an iterable of records (dicts or Memory), got {type(records).__name__} "
                        f"{records!r:.80}; pass [record] for one (or use add())")
    recs = records if isinstance(records, list) else list(records)
    first = recs[0] if recs else None
    if type(first) is dict:
        keys = first.keys()
        # the common batch: plain dicts with one key set, gathered a column at a time in C
        if keys <= _ALLOWED and all(type(r) is dict and r.keys() == keys for r in recs):
            return {k: list(map(itemgetter(k), recs)) for k in keys}, len(recs)
    cols: dict[str, list[Any]] = {}  # only the fields some record sets; the rest stay unset
    n = 0
    for i, rec in enumerate(recs):
        if isinstance(rec, Memory):
            rec = {f: getattr(rec, f) for f in _FIELDS}
        elif not isinstance(rec, Mapping):
            raise InvalidMemory(f"records[{i}] must be a dict or Memory, got {type(rec).__name__}")
        for key, value in rec.items():
            col = cols.get(key)
            if col is None:
                if key not in _ALLOWED:
                    raise InvalidMemory(f"records[{i}] has unknown field(s) {_sorted_keys(set(rec) - _ALLOWED)}")
                col = cols[key] = [None] * i
            col.append(value)
        n = i + 1
        for col in cols.values():
            if len(col) < n:
                col.append(None)
    return cols, n


def _sorted_keys(keys: set[Any]) -> list[Any]:
    """Keys in order; keys of mixed types (1 and 'b') by their repr, which always sorts."""
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=repr)


def build_intake(records: Iterable[Mapping[str, Any] | Memory], now: datetime,
                 max_content_bytes: int = 1 << 20) -> Intake:
    """Validate a batch and lay it out as MEMORY_SCHEMA columns (version 1, learned_at = now).

    Raises InvalidMemory naming `records[i]` and the field (content over `max_content_bytes` of
    UTF-8 included); nothing is written by this step.
    """
    cols, n = _gather(records)
    vectors = _vector_maps(cols.pop("vectors", None), n)
    for name in ("version", "learned_at"):  # the store's to set
        cols.pop(name, None)
    set_fields = set(cols)
    for name in _FIELDS:
        if name not in ("version", "learned_at"):
            cols.setdefault(name, [None] * n)
    if "id" in set_fields:
        named = [v is not None for v in cols["id"]]
        missing = [i for i, v in enumerate(cols["id"]) if v is None]
        for i, new in zip(missing, _new_ids(len(missing))):
            cols["id"][i] = new
    else:  # no record names an id (the common batch): all generated, none looked for
        named = [False] * n
        cols["id"] = _new_ids(n)
    suspects: set[int] = set()
    for name, col in cols.items():
        if name == "id" and not any(named):
            continue  # every id generated here: canonical by construction
        if name not in set_fields and name not in ("id", "content", "namespace"):
            continue  # no record set it: all None, the default (required fields have none)
        suspects.update(_failing(name, col))
    # order checks on rows that passed the cheap tests (aware UTC datetimes compare safely)
    suspects.update(i for i, (x, y) in enumerate(zip(cols["valid_from"], cols["valid_until"]))
                    if x is not None and y is not None and i not in suspects and y < x)
    suspects.update(i for i, x in enumerate(cols["expired_at"]) if x is not None and i not in suspects and x < now)
    for i in sorted(suspects):
        for name in ("id", "namespace", "content"):  # required: name them, not Memory's signature
            if cols[name][i] is None:
                raise InvalidMemory(f"records[{i}]: {name} is required (a non-empty string), got None")
        row = {name: cols[name][i] for name in cols if cols[name][i] is not None}
        _refuse_huge_ints(row, i)
        row.update(learned_at=now, version=1)
        try:
            m = validate_memory(Memory(**row))
        except (TypeError, InvalidMemory) as exc:
            raise InvalidMemory(f"records[{i}]: {exc}") from None
        for name, col in cols.items():
            col[i] = getattr(m, name)
    for name, default in _DEFAULTS.items():
        col = cols[name]
        cols[name] = [default if v is None else v for v in col]
    contents: list[str] = cols["content"]
    arrays: dict[str, Any] = dict(cols)
    arrays["metadata"] = [_json(v) if v else "{}" for v in cols["metadata"]]
    arrays["provenance"] = [_json(v) if v else "{}" for v in cols["provenance"]]
    arrays["version"] = arrow_of(np.ones(n, np.int64))
    arrays["learned_at"] = [now] * n
    arrays["content_hash"] = _content_hashes(contents, max_content_bytes)
    for name in _NULLABLE:
        if name not in set_fields and cols[name].count(None) == n:  # a column of nulls, not n Nones converted
            arrays[name] = pa.nulls(n, MEMORY_SCHEMA.field(name).type)
    try:
        table = table_of(arrays, MEMORY_SCHEMA)
    except (UnicodeEncodeError, pa.ArrowException):
        _name_unencodable(cols)
        raise
    return Intake(table, cols["id"], cols["namespace"], contents, vectors, named)


def _vector_maps(given: list[Any] | None, n: int) -> list[Mapping[str, Any]]:
    """Each record's caller vectors as a mapping ({} when none), a record whose `vectors` is not a
    mapping refused by name (an array's truth value raised, an int was iterated, a str was read as
    a set of one-letter space names)."""
    if given is None:
        return [{}] * n
    out: list[Mapping[str, Any]] = []
    for i, v in enumerate(given):
        if v is None:
            out.append({})
        elif isinstance(v, Mapping):
            out.append(v)
        else:
            raise InvalidMemory(f"records[{i}]: vectors must be a dict of space name -> vector, got "
                                f"{type(v).__name__} {v!r:.80}")
    return out


_INT_BITS = 128  # no field takes an integer this long (seq stops at 2**62 - 1, confidence at 1)


def _refuse_huge_ints(row: Mapping[str, Any], i: int) -> None:
    """Refuse an integer no field takes by its size: the field checks name a bad value by its repr,
    and past 4,300 digits Python refuses to write an int out (a raw ValueError, 'Exceeds the limit
    for integer string conversion', naming neither the record nor the field)."""
    for name, v in row.items():
        if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > _INT_BITS:
            raise InvalidMemory(f"records[{i}]: {name} must not be an integer of {v.bit_length():,} bits "
                                f"(no field takes one this large)")


def content_bytes(content: str, i: int | None, limit: int) -> bytes:
    """The UTF-8 of one content, refused (naming the record) when it holds a lone surrogate or is
    over `limit` bytes."""
    where = f"records[{i}]: " if i is not None else ""
    try:
        raw = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidMemory(f"{where}content holds a character UTF-8 cannot encode ({exc.reason}: "
                            f"{content[exc.start:exc.end]!r} at position {exc.start})") from None
    if len(raw) > limit:
        raise InvalidMemory(f"{where}content is {len(raw):,} bytes of UTF-8; the limit is {limit:,} "
                            f"(Tuning.max_content_bytes): split long documents into chunks")
    return raw


def _content_hashes(contents: list[str], limit: int) -> list[bytes]:
    """BLAKE2b-128 of each content's UTF-8; the first content that cannot be stored is named as
    `content_bytes` names it."""
    try:
        raw = [c.encode("utf-8") for c in contents]
    except UnicodeEncodeError:
        raw = []
    if len(raw) != len(contents) or (raw and max(map(len, raw)) > limit):
        raw = [content_bytes(c, i, limit) for i, c in enumerate(contents)]  # raises, naming the record
    blake = hashlib.blake2b
    return [blake(r, digest_size=16).digest() for r in raw]


def _name_unencodable(cols: dict[str, list[Any]]) -> None:
    """Find the string field Arrow could not store (a lone surrogate) and name it."""
    for name, col in cols.items():
        for i, v in enumerate(col):
            if isinstance(v, str):
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise InvalidMemory(f"records[{i}]: {name} holds a character UTF-8 cannot encode "
                                        f"({exc.reason}: {v[exc.start:exc.end]!r} at position {exc.start})") from None


_SHORT = {"session_id": 256, "source": 100, "role": 100, "memory_type": 100}


def _failing(name: str, col: list[Any]) -> list[int]:
    """Rows whose value fails `_cheap_ok`, by one pass with the field's own test (no call per value
    where the test is inline); a column of a few distinct strings tests each string once."""
    if (name in _SHORT or name == "namespace") and set(map(type, col)) == {str}:
        bad = {v for v in set(col) if not _cheap_ok(name, v)}
        return [i for i, v in enumerate(col) if v in bad] if bad else []
    if name == "content":
        return [i for i, v in enumerate(col) if type(v) is not str or not v or v.isspace()]
    if name in _TIMES:
        utc = timezone.utc
        return [i for i, v in enumerate(col) if v is not None and (type(v) is not datetime or v.tzinfo is not utc)]
    return [i for i, v in enumerate(col) if not _cheap_ok(name, v)]


def _hashable(v: Any) -> Any:
    """A set key for any value (unhashable ones by identity; they fail the cheap test anyway)."""
    try:
        hash(v)
    except TypeError:
        return ("unhashable", id(v))
    return v

"""Memory records <-> Arrow tables (the column layout of segments and WAL frames).

One row per memory *version*. Timestamps are `timestamp[us, UTC]`; metadata and provenance are
JSON strings (any engine can read them); the content hash is stored so reopening a large store
does not rehash every memory. The layout is part of the on-disk format: changing it means a new
`FORMAT_VERSION` and a golden file for the old one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow_numpy import string_offsets, table_of, whole
from ..model.memory import Memory, content_hash

# 1: memories only; 2: + edge files and edge frames in the WAL; 3: + checksums; 4: + files that
# describe themselves (storage/describe.py: a lost manifest can be rebuilt), spaces in the marker;
# 5: multivector tokens as int8 codes with a scale each (storage/vectors.py; format-4 float32
# tokens are still read); 6: the store's id and generation in the manifest, every file's
# description and the WAL's header (storage/identity.py; version-1 WAL headers are still read)
FORMAT_VERSION = 6
TS = pa.timestamp("us", tz="UTC")

MEMORY_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("namespace", pa.string(), nullable=False),
        pa.field("content", pa.large_string(), nullable=False),
        pa.field("session_id", pa.string()),
        pa.field("seq", pa.int64()),
        pa.field("source", pa.string(), nullable=False),
        pa.field("role", pa.string()),
        pa.field("memory_type", pa.string()),
        pa.field("confidence", pa.float64(), nullable=False),
        pa.field("metadata", pa.string(), nullable=False),
        pa.field("provenance", pa.string(), nullable=False),
        pa.field("version", pa.int64(), nullable=False),
        pa.field("valid_from", TS),
        pa.field("valid_until", TS),
        pa.field("learned_at", TS),
        pa.field("expired_at", TS),
        pa.field("supersedes", pa.string()),
        pa.field("superseded_by", pa.string()),
        pa.field("forgotten_at", TS),
        pa.field("content_hash", pa.binary(16), nullable=False),
    ],
    metadata={b"engramdb.format_version": str(FORMAT_VERSION).encode()},
)

_TIME_FIELDS = ("valid_from", "valid_until", "learned_at", "expired_at", "forgotten_at")
_READ_FIELDS = tuple(f.name for f in MEMORY_SCHEMA if f.name != "content_hash")  # Memory's fields
_PLAIN_FIELDS = ("id", "namespace", "content", "session_id", "seq", "source", "role", "memory_type", "confidence",
                 "version", "supersedes", "superseded_by")


def _json(value: dict[str, object]) -> str:
    """Canonical compact JSON (sorted keys); the empty dict, the common case, without a call."""
    return "{}" if not value else json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def memories_to_table(memories: Sequence[Memory]) -> pa.Table:
    """Arrow table of validated memories, in order, with MEMORY_SCHEMA."""
    cols: dict[str, list[object]] = {f.name: [] for f in MEMORY_SCHEMA}
    for m in memories:
        for name in _PLAIN_FIELDS:
            cols[name].append(getattr(m, name))
        for name in _TIME_FIELDS:
            cols[name].append(getattr(m, name))
        cols["metadata"].append(_json(m.metadata))
        cols["provenance"].append(_json(m.provenance))
        cols["content_hash"].append(bytes.fromhex(content_hash(m.content)))
    return table_of(cols, MEMORY_SCHEMA)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _utc(us: int | None) -> datetime | None:
    """A timestamp's microseconds as a UTC datetime: plain arithmetic (pyarrow's own conversion
    goes through a time-zone lookup per value, ~7-10 us each, most of a hit's cost)."""
    return None if us is None else _EPOCH + timedelta(microseconds=us)


def _times(col: pa.ChunkedArray) -> list[datetime | None]:
    """UTC datetimes of a timestamp[us] column."""
    return [_utc(x) for x in col.cast(pa.int64()).to_pylist()]


def _loads(s: str) -> dict[str, Any]:
    return {} if s == "{}" else dict(json.loads(s))


class RowReader:
    """Memories one row at a time from a table written with MEMORY_SCHEMA (a search materialises
    its few hits this way, from wherever in the segments they are). Each column is read in place
    through its Arrow buffers (the values, the offsets of its strings, its validity bits) as numpy
    views, made once per table: a row's field is then a slice and a decode, where pyarrow's scalar
    and `as_py` cost ~2.5 us a field (~55 us a memory on a 2-core machine, most of a context's
    materialising). A column of another type (an older layout) is read through pyarrow's scalars."""

    def __init__(self, table: pa.Table) -> None:
        self._fields: list[tuple[str, Callable[[int], Any]]] = []
        for name in _READ_FIELDS:
            col = table.column(name)
            # a segment file's one chunk read in place; a WAL's frames joined once
            arr = whole(col)
            self._fields.append((name, _field_reader(name, arr)))

    def memory(self, row: int) -> Memory:
        # the values were checked when written (and the file's checksum when read): built as
        # Memory.from_kept builds one, without the frozen dataclass's per-field __setattr__
        new = object.__new__(Memory)
        new.__dict__.update([(name, read(row)) for name, read in self._fields])
        return new


class _Validity:
    """A column's validity bits read in place: `valid[row]` is whether the row's value is set (the
    bitmap is not unpacked: a new process's first context makes ~360 of these, one per nullable
    field of each segment it reads, and unpacking each cost more than the rows it then read)."""

    __slots__ = ("_bits", "_offset")

    def __init__(self, bits: pa.Buffer, offset: int) -> None:
        self._bits, self._offset = memoryview(bits), offset

    def __getitem__(self, row: int) -> bool:
        at = self._offset + row
        return bool(self._bits[at >> 3] >> (at & 7) & 1)


def _validity(arr: pa.Array) -> _Validity | None:
    """Whether each value is set (Arrow's bits, least significant first), or None when none is null."""
    bits = arr.buffers()[0]
    if arr.null_count == 0 or bits is None:
        return None
    return _Validity(bits, arr.offset)


_NUMBERS = {pa.int64(): np.int64, pa.float64(): np.float64, TS: np.int64}


def _field_reader(name: str, arr: pa.Array) -> Callable[[int], Any]:
    """`read(row)`: the Python value of `arr`'s row as Memory holds it (see RowReader)."""
    valid = _validity(arr)
    kind = arr.type
    if (pa.types.is_string(kind) or pa.types.is_large_string(kind)) and len(arr):
        buffers = arr.buffers()
        offsets = string_offsets(arr)
        data = memoryview(buffers[2]) if buffers[2] is not None else memoryview(b"")

        def text(row: int) -> str | None:
            if valid is not None and not valid[row]:
                return None
            return str(data[offsets[row]:offsets[row + 1]], "utf-8")

        if name in ("metadata", "provenance"):  # a null or "" raises, as in the whole-table read (an import names the row)
            return lambda row: _loads(text(row))  # type: ignore[arg-type]
        return text
    numbers = _NUMBERS.get(kind)
    if numbers is not None and len(arr):
        values = np.frombuffer(arr.buffers()[1], numbers)[arr.offset:arr.offset + len(arr)]
        if name in _TIME_FIELDS:
            return lambda row: None if valid is not None and not valid[row] else _EPOCH + timedelta(
                microseconds=int(values[row]))
        cast = int if numbers is np.int64 else float
        return lambda row: None if valid is not None and not valid[row] else cast(values[row])
    # another layout's type (or an empty column): pyarrow's scalars
    if name in _TIME_FIELDS:  # the stored integer: pyarrow makes a zoned datetime ~10x slower
        return lambda row: _utc(arr[row].value)
    if name in ("metadata", "provenance"):
        return lambda row: _loads(arr[row].as_py())
    return lambda row: arr[row].as_py()


def table_to_memories(table: pa.Table) -> list[Memory]:
    """Memories of a table written with MEMORY_SCHEMA (or a compatible older layout), column by
    column (whole tables: exports, imports, archives; a search's few hits use RowReader)."""
    cols: dict[str, list[Any]] = {}
    for name in _READ_FIELDS:
        col = table.column(name)
        if name in _TIME_FIELDS:
            cols[name] = _times(col)
        elif name in ("metadata", "provenance"):
            cols[name] = [_loads(x) for x in col.to_pylist()]
        else:
            cols[name] = col.to_pylist()
    return [Memory(**dict(zip(_READ_FIELDS, values))) for values in zip(*(cols[n] for n in _READ_FIELDS))]

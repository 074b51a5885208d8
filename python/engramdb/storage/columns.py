"""Memory records <-> Arrow tables (the column layout of segments and WAL frames).

One row per memory *version*. Timestamps are `timestamp[us, UTC]`; metadata and provenance are
JSON strings (any engine can read them); the content hash is stored so reopening a large store
does not rehash every memory. The layout is part of the on-disk format: changing it means a new
`FORMAT_VERSION` and a golden file for the old one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa

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
    return pa.Table.from_pydict(cols, schema=MEMORY_SCHEMA)


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
    """Memories one row at a time from a table written with MEMORY_SCHEMA: scalar reads of
    whole-column arrays, ~15 us a memory where a one-row table costs ~300 (a search materialises
    its few hits this way, from wherever in the segments they are)."""

    def __init__(self, table: pa.Table) -> None:
        self.cols: dict[str, pa.Array] = {}
        for name in _READ_FIELDS:
            col = table.column(name)
            # a segment file's one chunk read in place (joining and casting every column copied
            # it: most of a first context's cost of its hits at 100,000 memories); a WAL's
            # frames joined once
            self.cols[name] = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()

    def memory(self, row: int) -> Memory:
        values: dict[str, Any] = {}
        for name in _READ_FIELDS:
            v: Any
            if name in _TIME_FIELDS:  # the stored integer: pyarrow makes a zoned datetime ~10x slower
                v = _utc(self.cols[name][row].value)
            elif name in ("metadata", "provenance"):
                v = _loads(self.cols[name][row].as_py())
            else:
                v = self.cols[name][row].as_py()
            values[name] = v
        return Memory(**values)


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

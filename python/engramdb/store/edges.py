"""Typed directed edges between memories (S7 `link`, H2): records, Arrow layout, the live set.

An edge is (src, dst, type) plus a confidence, a reason and an optional validity interval in the
user's timeline. Types are UPPER_SNAKE_CASE (`SUPERSEDES`, `CAUSED_BY`, ...). Edges are stored
the way memories are: append-only rows, in WAL frames first and `edges-NNNNNN.arrow` files after
a checkpoint. A later row for the same key replaces the earlier one; a row with `removed_at` set
ends the edge (unlink). Both ends are in one namespace: the partition holds for edges too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pyarrow as pa

from .columns import FORMAT_VERSION, TS
from .record import InvalidMemory, as_utc

EDGE_TYPE_RE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
MAX_REASON = 2_000
KIND_KEY = b"engramdb.kind"  # schema metadata that tells edge frames from memory frames in the WAL

EDGE_SCHEMA = pa.schema(
    [
        pa.field("src", pa.string(), nullable=False),
        pa.field("dst", pa.string(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("namespace", pa.string(), nullable=False),
        pa.field("confidence", pa.float64(), nullable=False),
        pa.field("reason", pa.large_string()),
        pa.field("valid_from", TS),
        pa.field("valid_until", TS),
        pa.field("created_at", TS, nullable=False),
        pa.field("removed_at", TS),
    ],
    metadata={KIND_KEY: b"edges", b"engramdb.format_version": str(FORMAT_VERSION).encode()},
)

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
    """A real number in [0, 1] (not a bool, not NaN)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) \
        and 0 <= value <= 1


def validate_edge_fields(type: str, confidence: float, reason: str | None,
                         valid_from: datetime | None, valid_until: datetime | None) -> tuple[float, datetime | None, datetime | None]:
    """Check the caller's part of an edge; returns (confidence, valid_from, valid_until) normalised."""
    if not isinstance(type, str) or not EDGE_TYPE_RE.match(type) or len(type) > 64:
        raise InvalidMemory(f"edge type must be UPPER_SNAKE_CASE (e.g. CAUSED_BY), at most 64 characters, got {type!r}")
    if not is_confidence(confidence):
        raise InvalidMemory(f"edge confidence must be a number in [0, 1], got {confidence!r}")
    if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON):
        raise InvalidMemory(f"edge reason must be a string of at most {MAX_REASON} characters, got {reason!r:.80}")
    start, end = as_utc("valid_from", valid_from), as_utc("valid_until", valid_until)
    if start is not None and end is not None and end < start:
        raise InvalidMemory(f"edge valid_until ({end.isoformat()}) is before valid_from ({start.isoformat()})")
    return float(confidence), start, end


def edges_to_table(edges: Iterable[Edge]) -> pa.Table:
    """Arrow rows (EDGE_SCHEMA) of edges, in order."""
    rows = list(edges)
    cols = {f.name: [getattr(e, f.name) for e in rows] for f in EDGE_SCHEMA}
    return pa.Table.from_pydict(cols, schema=EDGE_SCHEMA)


def table_to_edges(table: pa.Table) -> list[Edge]:
    """Edges of a table written with EDGE_SCHEMA."""
    return [Edge(**row) for row in table.select([f.name for f in EDGE_SCHEMA]).to_pylist()]


def read_edges_file(path: Path) -> pa.Table:
    """An edges file through a memory map."""
    return pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()


def is_edge_table(table: pa.Table) -> bool:
    """True for an edges frame or file (memory tables carry no kind)."""
    return (table.schema.metadata or {}).get(KIND_KEY) == b"edges"


class EdgeSet:
    """The live edges (newest row per key, not removed) with out- and in-adjacency."""

    def __init__(self) -> None:
        self._live: dict[EdgeKey, Edge] = {}
        self._out: dict[str, dict[EdgeKey, None]] = {}  # insertion-ordered sets
        self._in: dict[str, dict[EdgeKey, None]] = {}

    def __len__(self) -> int:
        return len(self._live)

    def apply(self, edges: Iterable[Edge]) -> None:
        """Fold rows in, oldest first: a row replaces its key; a removed row ends it."""
        for e in edges:
            key = e.key
            if e.removed_at is not None:
                if self._live.pop(key, None) is not None:
                    self._out[e.src].pop(key, None)
                    self._in[e.dst].pop(key, None)
                continue
            self._live[key] = e
            self._out.setdefault(e.src, {})[key] = None
            self._in.setdefault(e.dst, {})[key] = None

    def get(self, key: EdgeKey) -> Edge | None:
        return self._live.get(key)

    def outgoing(self, id: str) -> list[Edge]:
        return [self._live[k] for k in self._out.get(id, ())]

    def incoming(self, id: str) -> list[Edge]:
        return [self._live[k] for k in self._in.get(id, ())]

    def all(self) -> list[Edge]:
        return list(self._live.values())

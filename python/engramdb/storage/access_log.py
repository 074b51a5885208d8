"""The two logs of the importance layer, as Arrow rows in the store folder's `access/` (E1, E5).

- the access log (`access-*.arrow`): one row per hit of every logged search (kind "search": its
  query id, namespace, session, time, query text, strategy, memory id, rank, score), one row per
  memory a caller reports it used (kind "feedback") or a context injected (kind "inject"), and
  one row for a search that found nothing (memory id null);
- the ELO update log (`elo-*.arrow`): every rating change the batch update made, with its inputs.

Namespaces stay apart: every row names its namespace, and readers filter by it.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from .arrow_log import ArrowLog

ACCESS_SCHEMA = pa.schema([
    ("seq", pa.int64()),
    ("kind", pa.string()),  # "search" | "feedback" | "inject"
    ("query_id", pa.string()),
    ("namespace", pa.string()),
    ("session_id", pa.string()),
    ("at", pa.timestamp("us", tz="UTC")),
    ("query", pa.string()),
    ("strategy", pa.string()),
    ("memory_id", pa.string()),
    ("rank", pa.int32()),
    ("score", pa.float64()),
    ("used", pa.bool_()),
    ("latency_ms", pa.float64()),  # the search's own time (its first row), for the metrics
])

ELO_SCHEMA = pa.schema([
    ("seq", pa.int64()),
    ("memory_id", pa.string()),
    ("namespace", pa.string()),
    ("query_id", pa.string()),
    ("at", pa.timestamp("us", tz="UTC")),
    ("before", pa.float64()),
    ("after", pa.float64()),
    ("expected", pa.float64()),
    ("outcome", pa.float64()),
    ("k", pa.float64()),
    ("opponent", pa.float64()),
    ("relevance", pa.float64()),
    ("gated", pa.bool_()),
])


def access_log(folder: Path | None, *, writable: bool, flush_rows: int = 1024) -> ArrowLog:
    """The store's access log."""
    return ArrowLog(folder, "access", ACCESS_SCHEMA, writable=writable, flush_rows=flush_rows)


def elo_log(folder: Path | None, *, writable: bool) -> ArrowLog:
    """The store's ELO update log."""
    return ArrowLog(folder, "elo", ELO_SCHEMA, writable=writable, flush_rows=1 << 30, flush_seconds=float("inf"))


__all__ = ["ACCESS_SCHEMA", "ELO_SCHEMA", "access_log", "elo_log"]

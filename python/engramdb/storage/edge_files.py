"""Edge rows on disk: the Arrow layout of edge WAL frames and `edges-NNNNNN.arrow` files.

Edges are stored the way memories are: append-only rows, in WAL frames first and edge files after
a checkpoint. A frame or file says it holds edges in its schema metadata, so WAL replay can tell
edge frames from memory frames.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

from .._arrow_numpy import table_of
from ..model.edge import Edge
from .columns import FORMAT_VERSION, TS

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


def edges_to_table(edges: Iterable[Edge]) -> pa.Table:
    """Arrow rows (EDGE_SCHEMA) of edges, in order."""
    rows = list(edges)
    cols = {f.name: [getattr(e, f.name) for e in rows] for f in EDGE_SCHEMA}
    return table_of(cols, EDGE_SCHEMA)


def table_to_edges(table: pa.Table) -> list[Edge]:
    """Edges of a table written with EDGE_SCHEMA."""
    return [Edge(**row) for row in table.select([f.name for f in EDGE_SCHEMA]).to_pylist()]


def read_edges_file(path: Path) -> pa.Table:
    """An edges file through a memory map."""
    return pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()


def is_edge_table(table: pa.Table) -> bool:
    """True for an edges frame or file (memory tables carry no kind)."""
    return (table.schema.metadata or {}).get(KIND_KEY) == b"edges"

"""Archival (J7): the content of old memories moves to `archive-NNNNNN.arrow`; vectors stay.

An archived memory keeps its rows, vectors and place in the centroid tree (its leaf's centroid
still steers retrieval), so it can still be a search hit; the hit says it is archived and its
content is empty until `unarchive` puts the text back. The archive file holds every version's
record (all MEMORY_SCHEMA columns), keyed by (id, version), which is unique per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .columns import MEMORY_SCHEMA

RECORD_COLUMNS = [f.name for f in MEMORY_SCHEMA]


def rows_of(table: pa.Table, ids: set[str]) -> np.ndarray:
    """Bool mask of the rows of `table` whose id is in `ids`."""
    if not ids:
        return np.zeros(table.num_rows, bool)
    mask = pc.is_in(table.column("id"), value_set=pa.array(sorted(ids), pa.string()))
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


def strip_content(table: pa.Table, mask: np.ndarray) -> tuple[pa.Table, pa.Table]:
    """(the table with content emptied on `mask` rows, those rows' full records)."""
    records = table.filter(pa.array(mask)).select(RECORD_COLUMNS)
    content = pc.if_else(pa.array(mask), pa.scalar("", pa.large_string()), table.column("content"))
    i = table.schema.get_field_index("content")
    return table.set_column(i, table.schema.field("content"), content), records


def restore_content(table: pa.Table, archived: pa.Table) -> tuple[pa.Table, int]:
    """The table with content put back on rows whose (id, version) is in `archived`; and how many."""
    if archived.num_rows == 0:
        return table, 0
    saved = {(i, v): c for i, v, c in zip(archived.column("id").to_pylist(), archived.column("version").to_pylist(),
                                          archived.column("content").to_pylist())}
    ids, versions = table.column("id").to_pylist(), table.column("version").to_pylist()
    content = table.column("content").to_pylist()
    n = 0
    for r, key in enumerate(zip(ids, versions)):
        if key in saved:
            content[r] = saved[key]
            n += 1
    if n == 0:
        return table, 0
    i = table.schema.get_field_index("content")
    return table.set_column(i, table.schema.field("content"), pa.array(content, pa.large_string())), n

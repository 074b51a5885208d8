"""A hit's memory read from its segment one row at a time (storage/columns.py `RowReader`, the storage
layer's seam): the same Memory as the whole-table read, for a segment file's one chunk read in
place and a WAL's many frames, times missing or set, metadata and provenance parsed."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest
from engramdb.model.memory import Memory
from engramdb.storage.columns import RowReader, memories_to_table, table_to_memories

T0 = datetime(2024, 5, 17, 9, 30, 12, 345678, tzinfo=timezone.utc)


def _memories() -> list[Memory]:
    out = []
    for i in range(7):
        out.append(Memory(
            id=f"m{i}", namespace="ns" if i % 2 else "other", content=f"text {i} é ✓", session_id=None if i == 3 else "s",
            seq=None if i == 4 else i, source="turn", role="user" if i % 2 else None, memory_type=None,
            confidence=0.25 * (i % 4), metadata={"k": [i, {"x": "y"}]} if i % 3 else {}, provenance={"p": i},
            version=1 + i % 2, valid_from=T0 + timedelta(days=i) if i != 2 else None,
            valid_until=T0 + timedelta(days=30, microseconds=i) if i == 5 else None,
            learned_at=T0 - timedelta(microseconds=i), expired_at=T0 if i == 6 else None,
            supersedes="m0" if i == 1 else None, superseded_by=None,
            forgotten_at=datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc) if i == 5 else None))
    return out


@pytest.mark.parametrize("chunks", [1, 3, 7])
def test_rows_read_one_at_a_time_equal_the_whole_table_read(chunks: int) -> None:
    mems = _memories()
    whole = memories_to_table(mems)
    step = -(-len(mems) // chunks)
    table = pa.Table.from_batches([b for lo in range(0, len(mems), step)
                                   for b in whole.slice(lo, step).to_batches()], schema=whole.schema)
    assert table.column("id").num_chunks == chunks
    reader = RowReader(table)
    got = [reader.memory(row) for row in range(len(mems))]
    assert got == mems == table_to_memories(table)
    assert all(m.learned_at is not None and m.learned_at.tzinfo == timezone.utc for m in got)

"""A hit's memory read from its segment one row at a time (storage/columns.py `RowReader`, the storage
layer's seam): the same Memory as the whole-table read, for a segment file's one chunk read in
place and a WAL's many frames, times missing or set, metadata and provenance parsed."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import engramdb
import pyarrow as pa
import pyarrow.ipc
import pytest
from engramdb.model.errors import InvalidMemory
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


@pytest.mark.parametrize(("lo", "n"), [(0, 7), (1, 5), (2, 3), (3, 4), (6, 1), (5, 0)])
def test_rows_of_a_slice_read_at_its_offset(lo: int, n: int) -> None:
    """The columns are read through their buffers: a slice's values, offsets and validity bits start
    at its offset (a table read from a file at an offset, or sliced by the engine)."""
    mems = _memories()
    table = memories_to_table(mems).slice(lo, n)
    assert n == 0 or table.column("id").chunk(0).offset == lo
    reader = RowReader(table)
    assert [reader.memory(row) for row in range(n)] == mems[lo:lo + n]


def test_an_older_layouts_column_types_read_the_same() -> None:
    """A column of another type than MEMORY_SCHEMA's (content as string, not large_string; a
    dictionary-encoded role) is read through pyarrow's scalars, to the same memories."""
    mems = _memories()
    table = memories_to_table(mems)
    table = table.set_column(table.schema.get_field_index("content"), "content", table.column("content").cast(pa.string()))
    role = table.schema.get_field_index("role")
    table = table.set_column(role, "role", table.column("role").dictionary_encode())
    reader = RowReader(table)
    assert [reader.memory(row) for row in range(len(mems))] == mems


def test_an_empty_string_and_a_long_one_read_whole() -> None:
    base = _memories()[0]
    mems = [base.with_changes(id="empty", content=""), base.with_changes(id="long", content="ünï ✓ " * 20_000)]
    reader = RowReader(memories_to_table(mems))
    assert [reader.memory(0).content, reader.memory(1).content] == ["", "ünï ✓ " * 20_000]


@pytest.mark.parametrize("bad", [None, ""])
def test_a_null_or_empty_metadata_fails_as_the_whole_table_read_does(tmp_path: Path, bad: str | None) -> None:
    """An import reads the whole table, and on failure each row, to name the row whose metadata is
    not a JSON object: a row read that took a null or "" for {} named none, and the import raised a
    bare TypeError (stop 41's adversary)."""
    mems = [Memory(id=f"m{i}", namespace="n", content=f"c{i}", learned_at=T0) for i in range(3)]
    table = memories_to_table(mems)
    i = table.schema.get_field_index("metadata")
    table = table.set_column(i, pa.field("metadata", pa.string()), pa.array(["{}", bad, "{}"], pa.string()))
    src = tmp_path / "bad.arrow"
    with pa.ipc.new_file(src, table.schema) as writer:
        writer.write_table(table)
    with engramdb.open(tmp_path / "store") as db, pytest.raises(InvalidMemory, match="row 1"):
        db.admin.import_(src)

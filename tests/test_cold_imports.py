"""Imports a new process's loop does not need. pyarrow imports pandas, when installed, the first
time it converts a column to numpy or builds one from Python or numpy values: 400-500 ms of a new
process's first `engramdb.open` at 100,000 memories on a 2-core machine, for nothing
(engramdb/_arrow_numpy.py); `np.unique`'s first call imports numpy.ma, 20-30 ms inside the first
search (engramdb/kernels/sets.py). The loop a user's process runs (open a folder, context, add,
add_messages, search, feedback, context, close; a new folder; a reader) asks for neither. Checked
in a new process by a finder that records every attempt to import them, so the check holds
whether or not pandas is installed. And the buffer-built columns against pyarrow's own conversions."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from engramdb._arrow_numpy import (
    array_of,
    arrow_of,
    empty_table,
    is_null_mask,
    numpy_of,
    scalar_of,
    table_of,
    whole,
)
from engramdb.storage.access_log import ACCESS_SCHEMA, ELO_SCHEMA
from engramdb.storage.columns import MEMORY_SCHEMA
from hypothesis import given, settings
from hypothesis import strategies as st

CHILD = """
import json, sys, traceback
asked = []
class Recorder:
    def find_spec(self, name, path=None, target=None):
        if name in ("pandas", "numpy.ma") or name.startswith("pandas."):
            asked.append("".join(traceback.format_stack(limit=8)))
        return None
sys.meta_path.insert(0, Recorder())
import engramdb
folder, fresh = sys.argv[1], sys.argv[2] == "new"
db = engramdb.open(folder)
if fresh:
    db.add_messages([{"role": "user", "content": f"turn {i} about coffee and the garden"} for i in range(30)],
                    namespace="user-1", session_id="s0")
    db.admin.settle()
db.context("What did I say about coffee?", namespace="user-1", max_tokens=500)
db.add("I moved to Lisbon last week.", namespace="user-1", session_id="live", role="user")
db.add_messages([{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi!"}],
                namespace="user-1", session_id="live")
hits = db.search("Lisbon", namespace="user-1", k=3)
db.feedback(hits.query_id, [hits[0].id])
db.context("Where do I live?", namespace="user-1", max_tokens=500, session_id="live")
db.admin.settle()
db.close()
with engramdb.open(folder, read_only=True) as ro:
    ro.search("garden", namespace="user-1", k=3)
    ro.context("garden", namespace="user-1", max_tokens=300)
print(json.dumps(asked))
"""


def _asked(folder: Path, mode: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(folder), mode], capture_output=True, text=True,
                         check=True, timeout=300)
    got: list[str] = json.loads(out.stdout)
    return got


def test_the_loop_of_a_new_process_never_asks_for_pandas_or_numpy_ma(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    assert _asked(folder, "new") == []  # a new folder: made, written, read, closed
    assert _asked(folder, "again") == []  # the folder again: its segments, indexes, ratings and logs read


# ------------------------------------------------------------------------------------ the columns
_WHEN = st.one_of(st.none(), st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1),
                                          timezones=st.just(timezone.utc)))


def _same(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> None:
    assert whole(a).equals(whole(b)), (a, b)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(), st.one_of(st.none(), st.text()), st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)),
                          st.floats(allow_nan=False), _WHEN, st.binary(min_size=16, max_size=16)), max_size=20))
def test_a_memory_table_built_from_buffers_equals_pyarrows(rows: list[tuple[Any, ...]]) -> None:
    cols: dict[str, list[Any]] = {f.name: [None] * len(rows) for f in MEMORY_SCHEMA}
    for name in ("id", "namespace", "content", "source", "metadata", "provenance"):
        cols[name] = [r[0] for r in rows]
    cols["session_id"] = cols["role"] = [r[1] for r in rows]
    cols["seq"] = [r[2] for r in rows]
    cols["version"] = [1 for _ in rows]
    cols["confidence"] = [r[3] for r in rows]
    cols["valid_from"] = cols["learned_at"] = [r[4] for r in rows]
    cols["content_hash"] = [r[5] for r in rows]
    try:
        want = pa.Table.from_pydict(cols, schema=MEMORY_SCHEMA)
    except UnicodeEncodeError:  # a lone surrogate: refused as pyarrow refuses it
        with pytest.raises(UnicodeEncodeError):
            table_of(cols, MEMORY_SCHEMA)
        return
    got = table_of(cols, MEMORY_SCHEMA)
    assert got.schema == want.schema and got.equals(want)


def test_log_rows_and_odd_values_build_as_pyarrow_builds_them() -> None:
    at = datetime(2026, 11, 28, 5, 0, tzinfo=timezone.utc)
    rows = [{"seq": 1, "kind": "search", "query_id": "q", "at": at, "rank": 0, "score": 0.5, "used": True},
            {"seq": 2, "kind": "feedback", "at": 1_795_839_003_518_525, "used": None, "latency_ms": 3.25},
            {"seq": 3, "memory_id": "é日本", "at": None, "score": float("inf"), "used": False}]
    assert table_of_rows_equal(rows, ACCESS_SCHEMA)
    assert table_of_rows_equal([{"seq": 1, "before": 1200.0, "after": 1210.5, "gated": False}], ELO_SCHEMA)
    # what the builders pass to pyarrow: its own conversion, its own error
    assert array_of([1, 2.5], pa.float64()).equals(pa.array([1, 2.5], pa.float64()))  # an int in a float column
    assert array_of([np.int64(3)], pa.int64()).equals(pa.array([3], pa.int64()))
    naive = datetime(2026, 1, 1)
    assert array_of([naive], MEMORY_SCHEMA.field("learned_at").type).equals(
        pa.array([naive], MEMORY_SCHEMA.field("learned_at").type))
    with pytest.raises(pa.ArrowTypeError, match="Expected integer, got bool"):
        array_of([True], pa.int64())  # pyarrow refuses a bool for an int, and still does
    with pytest.raises(pa.ArrowException):
        array_of(["x"], pa.int64())
    with pytest.raises(OverflowError):
        array_of([2**64], pa.int64())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's cast would warn where pyarrow is silent (found by the adversary pass)
        assert array_of([1e300, -1e300], pa.float32()).equals(pa.array([1e300, -1e300], pa.float32()))
    assert scalar_of(5, pa.int64()).equals(pa.scalar(5, pa.int64()))
    assert empty_table(ACCESS_SCHEMA).equals(ACCESS_SCHEMA.empty_table())


def table_of_rows_equal(rows: list[dict[str, Any]], schema: pa.Schema) -> bool:
    from engramdb._arrow_numpy import table_of_rows

    return bool(table_of_rows(rows, schema).equals(pa.Table.from_pylist(rows, schema=schema)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-2**40, 2**40)), max_size=40), st.integers(0, 10), st.integers(0, 40),
       st.sampled_from([pa.int8(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.timestamp("us", tz="UTC"),
                        pa.bool_()]))
def test_numpy_of_reads_every_slice_as_to_numpy_does(values: list[int | None], start: int, length: int,
                                                     kind: pa.DataType) -> None:
    if pa.types.is_boolean(kind):
        values = [None if v is None else int(v % 2 == 0) for v in values]
    elif pa.types.is_integer(kind):
        bits = kind.bit_width - 1
        values = [None if v is None else v % (1 << bits) for v in values]
    arr = pa.array(values, type=pa.int64() if pa.types.is_timestamp(kind) else None).cast(kind, safe=False) \
        if not pa.types.is_boolean(kind) else pa.array([None if v is None else bool(v) for v in values], pa.bool_())
    part = arr.slice(start, length)
    chunked = pa.chunked_array([part, part]) if length % 2 else pa.chunked_array([], kind) if length == 0 else part
    for col in (part, chunked):
        a = whole(col)
        assert is_null_mask(col).tolist() == [v is None for v in a.to_pylist()]
        if a.null_count == 0 or not pa.types.is_boolean(kind):
            want = a.cast(pa.int64()) if pa.types.is_timestamp(kind) else a
            if a.null_count == 0:
                assert numpy_of(col).tolist() == want.to_pylist()
            filled = numpy_of(col, fill=-1) if not pa.types.is_boolean(kind) else None
            if filled is not None:
                assert filled.tolist() == [-1 if v is None else v for v in want.to_pylist()]


def test_arrow_of_shares_the_buffer_and_refuses_what_it_cannot_hold() -> None:
    x = np.arange(5, dtype=np.float32)
    a = arrow_of(x[1:4])
    assert a.type == pa.float32() and a.to_pylist() == [1.0, 2.0, 3.0]
    assert arrow_of(np.array([0, 86_400_000_000], np.int64), pa.timestamp("us", tz="UTC")).to_pylist()[1] == \
        datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(days=1)
    with pytest.raises(TypeError, match="float64 do not hold Arrow type int64"):
        arrow_of(np.zeros(2), pa.int64())
    with pytest.raises(ValueError, match="must be 1-d"):
        arrow_of(np.zeros((2, 2), np.float32))

"""Arrow columns as numpy arrays, and numpy arrays as Arrow columns, without pyarrow's conversions.

pyarrow imports pandas, when it is installed, the first time it converts a column to numpy
(`to_numpy`, `np.asarray`) or builds one from Python or numpy values (`pa.array`): its conversion
code looks for pandas' null and time types. That import is 400-500 ms of a new process's first
`engramdb.open` on a 2-core machine (of 1.0-1.2 s at 100,000 memories), paid by every command,
server and script that opens a store, for nothing. The store therefore views a fixed-width
column's buffers in place (what `to_numpy` returns for them: the same values, read-only, no copy)
and builds the columns it writes (from numpy arrays, and from Python strings, bytes, numbers, bools,
aware datetimes and lists of them) from their buffers. Anything else goes through pyarrow as before,
which converts it, or refuses it with its own error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pyarrow as pa

_FIXED = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
          pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
          pa.float32(): np.float32, pa.float64(): np.float64}


def whole(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A column as one array: its one chunk as it is, several joined, none as an empty array
    (`combine_chunks` of no chunks builds it from a Python list, which imports pandas)."""
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            return col.chunk(0)
        return col.combine_chunks() if col.num_chunks else pa.nulls(0, col.type)
    return col


def dtype_of(kind: pa.DataType) -> Any:
    """The numpy dtype of a fixed-width Arrow number type (int64 for a time), else None."""
    if pa.types.is_timestamp(kind) or pa.types.is_duration(kind):
        return np.int64  # the stored integers, as the read path uses them (a view as datetime64 is not)
    return _FIXED.get(kind)


def string_offsets(arr: pa.Array) -> np.ndarray:
    """The `len(arr) + 1` offsets of a string (or large string) array's values into its data
    buffer, as a read-only view of its offsets buffer (the slice's own, `arr.offset` on)."""
    width = np.int32 if pa.types.is_string(arr.type) else np.int64
    return np.frombuffer(arr.buffers()[1], width, len(arr) + 1, arr.offset * np.dtype(width).itemsize)


def numpy_of(col: pa.Array | pa.ChunkedArray, fill: float | None = None) -> np.ndarray:
    """The values of a column as a numpy array: a read-only view of its buffer for a fixed-width
    number (integers, floats; timestamps as their int64 count) without nulls, and booleans
    unpacked from their bits. With `fill`, a fixed-width column's nulls read as `fill` (a new
    array). Anything else goes through `to_numpy(zero_copy_only=False)`."""
    arr = whole(col)
    n, kind = len(arr), arr.type
    dtype = dtype_of(kind)
    if arr.null_count == 0 or (fill is not None and dtype is not None):
        if pa.types.is_boolean(kind):
            bits = arr.buffers()[1]
            if n == 0 or bits is None:
                return np.zeros(n, bool)
            packed = np.frombuffer(bits, np.uint8)
            return np.unpackbits(packed, bitorder="little")[arr.offset:arr.offset + n].astype(bool)
        if dtype is not None:
            if n == 0:
                return np.empty(0, dtype)
            values = np.frombuffer(arr.buffers()[1], dtype)[arr.offset:arr.offset + n]
            return values if arr.null_count == 0 else np.where(is_null_mask(arr), np.asarray(fill, dtype), values)
    if fill is not None:
        arr = arr.fill_null(pa.scalar(fill, arr.type))
    out: np.ndarray = arr.to_numpy(zero_copy_only=False)
    return out.view(np.int64) if out.dtype.kind in "mM" else out  # a time's stored count, as above


def is_null_mask(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Whether each value of a column is null, as a numpy bool array."""
    arr = whole(col)
    n = len(arr)
    if arr.null_count == 0:
        return np.zeros(n, bool)
    bits = arr.buffers()[0]
    if bits is None:  # a null type: every value is null
        return np.ones(n, bool)
    valid = np.unpackbits(np.frombuffer(bits, np.uint8), bitorder="little")[arr.offset:arr.offset + n]
    missing: np.ndarray = valid == 0
    return missing


def arrow_of(values: np.ndarray, kind: pa.DataType | None = None) -> pa.Array:
    """A numpy array of fixed-width numbers (1-d) as an Arrow array without nulls, sharing its
    memory when it is contiguous. `kind` names the Arrow type when it is not the dtype's own
    (a timestamp from int64 counts)."""
    x = np.ascontiguousarray(values)
    if x.ndim != 1:
        raise ValueError(f"arrow_of: values must be 1-d, got shape {x.shape}")
    if kind is None:
        kind = pa.from_numpy_dtype(x.dtype)
    want = dtype_of(kind)
    if want is None or np.dtype(want) != x.dtype:
        raise TypeError(f"arrow_of: values of dtype {x.dtype} do not hold Arrow type {kind}")
    return pa.Array.from_buffers(kind, len(x), [None, pa.py_buffer(x)])


def lists_of(parts: Sequence[np.ndarray], value_type: pa.DataType, large: bool = False) -> pa.Array:
    """`pa.array(parts, pa.list_(value_type))` (`pa.large_list` when `large`) from the parts' own
    buffers: each part a 1-d numpy array of numbers, cast to the value type's dtype."""
    width = np.int64 if large else np.int32
    offsets = np.zeros(len(parts) + 1, width)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    dtype = dtype_of(value_type)
    values = np.concatenate([np.asarray(p, dtype) for p in parts]) if parts else np.empty(0, dtype)
    kind = pa.LargeListArray if large else pa.ListArray
    return kind.from_arrays(arrow_of(offsets), arrow_of(values, value_type))


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)


def _validity(missing: list[bool]) -> pa.Buffer | None:
    return pa.py_buffer(np.packbits(~np.asarray(missing, bool), bitorder="little")) if any(missing) else None


def _strings(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    parts = [b"" if v is None else v.encode("utf-8") for v in values]  # a str's own encode: a lone surrogate raises
    width = np.int64 if pa.types.is_large_string(kind) or pa.types.is_large_binary(kind) else np.int32
    offsets = np.zeros(len(parts) + 1, width)
    np.cumsum(np.fromiter(map(len, parts), width, len(parts)), out=offsets[1:])
    if width is np.int32 and len(parts) and int(offsets[-1]) != sum(map(len, parts)):
        raise OverflowError("string column over 2 GiB")
    return pa.Array.from_buffers(kind, len(parts), [_validity([v is None for v in values]),
                                                    pa.py_buffer(offsets), pa.py_buffer(b"".join(parts))])


def _column(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """One column built from its buffers (see the module docstring); raises on a value it does not
    take, for the caller to hand the column to pyarrow."""
    n = len(values)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if not all(v is None or type(v) is str for v in values):
            raise TypeError("not a str")
        return _strings(values, kind)
    if pa.types.is_fixed_size_binary(kind):
        width = kind.byte_width
        if not all(type(v) is bytes and len(v) == width for v in values):
            raise TypeError("not bytes of the width")
        return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(b"".join(values))])
    missing = [v is None for v in values]
    if pa.types.is_timestamp(kind) and kind.unit == "us":
        if not all(v is None or type(v) is int or (type(v) is datetime and v.tzinfo is not None) for v in values):
            raise TypeError("not an aware datetime or a count")  # a naive one: pyarrow's own reading
        counts = np.array([0 if v is None else v if type(v) is int else (v - _EPOCH) // _US for v in values], np.int64)
        return pa.Array.from_buffers(kind, n, [_validity(missing), pa.py_buffer(counts)])
    dtype = _FIXED.get(kind)
    if dtype is not None:
        ok = int if np.issubdtype(dtype, np.integer) else float  # an int for a float column: pyarrow's rules
        if not all(v is None or type(v) is ok for v in values):
            raise TypeError("not a number")
        with np.errstate(over="ignore"):  # an int out of range raises OverflowError; a float32 overflow is inf, as in pyarrow
            arr = np.array([0 if v is None else v for v in values], dtype)
        return pa.Array.from_buffers(kind, n, [_validity(missing), pa.py_buffer(arr)])
    if pa.types.is_boolean(kind):
        if not all(v is None or type(v) is bool for v in values):
            raise TypeError("not a bool")
        bits = np.packbits(np.array([bool(v) for v in values], bool), bitorder="little")
        return pa.Array.from_buffers(kind, n, [_validity(missing), pa.py_buffer(bits)])
    if pa.types.is_list(kind):  # lists of any of the above (a topic's members, a centroid)
        if not all(v is None or type(v) is list for v in values):
            raise TypeError("not a list")
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum([0 if v is None else len(v) for v in values], out=offsets[1:])
        child = array_of([x for v in values if v is not None for x in v], kind.value_type)
        return pa.ListArray.from_buffers(kind, n, [_validity(missing), pa.py_buffer(offsets)], children=[child])
    raise TypeError(f"no builder for {kind}")


def array_of(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """`pa.array(values, kind)`, built from buffers where `table_of` would."""
    try:
        return _column(values, kind)
    except (TypeError, ValueError, OverflowError, UnicodeError):
        return pa.array(values, kind)


def scalar_of(value: Any, kind: pa.DataType) -> pa.Scalar:
    """`pa.scalar(value, kind)` (for a compute function's operand: given a Python value, the
    function makes one through pyarrow's conversion)."""
    return array_of([value], kind)[0]


def table_of(columns: Mapping[str, Sequence[Any] | pa.Array], schema: pa.Schema) -> pa.Table:
    """`pa.Table.from_pydict(columns, schema=schema)`, the same table, each column of plain Python
    values (str, int, float, bool, bytes, aware datetimes, None) built from its buffers; a column
    of anything else, or a value its type does not take, goes to pyarrow, which converts it or
    raises its own error."""
    arrays = []
    for f in schema:
        values = columns[f.name]
        if isinstance(values, (pa.Array, pa.ChunkedArray)):  # made already
            arrays.append(values)
            continue
        arrays.append(array_of(values, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def table_of_rows(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """`pa.Table.from_pylist(rows, schema=schema)` by `table_of` (a key a row lacks is None)."""
    return table_of({f.name: [r.get(f.name) for r in rows] for f in schema}, schema)


def empty_table(schema: pa.Schema) -> pa.Table:
    """`schema.empty_table()` (which builds its columns from Python lists, importing pandas)."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)

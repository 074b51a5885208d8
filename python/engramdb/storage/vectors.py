"""Vector columns (S4 + S6): each space's vectors as Arrow columns, and back without copies.

Column `v.<space>` per space:
- dense: FixedSizeList<float32>[dim]; read back as a zero-copy (n, dim) float32 view.
- binary: FixedSizeBinary[dim / 8]; read back as a zero-copy (n, dim / 8) uint8 view.
- sparse: List<Struct<id: int32, w: float32>>; read back as a SparseBatch (CSR).
- multivector: List<Struct<scale: float32, q: FixedSizeList<int8>[dim]>> since format 5 (each
  token as int8 codes times its own scale, max |x| / 127; List<FixedSizeList<float32>[dim]>
  before, still read); read back as a float32 TokenBatch. Token vectors only rerank a shortlist
  (MaxSim) and were about 70% of a segment's bytes: a quarter of the bytes plus 4 per token,
  each component within half a step (max |x| / 254) of what was given.
Zero-copy means the numpy array points into the (memory-mapped) Arrow buffer: the kernels scan
the file's pages directly.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .._arrow_numpy import arrow_of, numpy_of, whole
from ..kernels.codes import quantize_int8
from ..spaces.protocol import Embedding, SparseBatch, TokenBatch
from ..spaces.schema import Schema, Space


def column_name(space: Space) -> str:
    """The Arrow column holding `space`'s vectors."""
    return f"v.{space.name}"


def arrow_type(space: Space) -> pa.DataType:
    """The Arrow type of a space's vector column."""
    if space.kind == "dense":
        return pa.list_(pa.float32(), space.dim)
    if space.kind == "binary":
        return pa.binary(space.dim // 8)
    if space.kind == "sparse":
        return pa.list_(pa.struct([("id", pa.int32()), ("w", pa.float32())]))
    return pa.list_(pa.struct([("scale", pa.float32()), ("q", pa.list_(pa.int8(), space.dim))]))


def conform(table: pa.Table, schema: Schema) -> pa.Table:
    """`table` with each vector column in this format's type (an older segment's float32 tokens
    quantised), so segments of different formats can be joined into one."""
    for space in schema:
        name, want = column_name(space), arrow_type(space)
        i = table.schema.get_field_index(name)
        if i >= 0 and table.schema.field(i).type != want:
            table = table.set_column(i, pa.field(name, want, nullable=False),
                                     to_arrow(space, from_arrow(space, table.column(i))))
    return table


def quantize_tokens(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 codes, float32 scale per token): each token as round(x / s) with s = max |x| / 127.

    One native pass (kernels.quantize_int8: numpy's max / divide / rint / clip bit for bit, without
    their four temporaries of the token matrix's size; a long-turn batch holds ~100 MB of tokens)."""
    return quantize_int8(np.ascontiguousarray(tokens, np.float32))


def _codes_of(batch: TokenBatch) -> tuple[np.ndarray, np.ndarray]:
    """The batch's int8 codes and scales: the embedder's own when it made them (each distinct term
    quantised once, then gathered: what quantize_tokens makes of the tokens, bit for bit), else made."""
    table, rows, table_codes = batch.table, batch.table_rows, batch.table_codes
    if table is not None and rows is not None and table_codes is not None:
        q, scale = table_codes  # a table's codes: gathered by token, the float tokens never made
        if (q.dtype == np.int8 and scale.dtype == np.float32 and q.shape == table.shape
                and scale.shape == table.shape[:1]):
            return np.ascontiguousarray(q[rows]), scale[rows]
    if batch.codes is not None:
        q, scale = batch.codes
        t = batch.tokens
        if (q.dtype == np.int8 and scale.dtype == np.float32 and q.shape == t.shape and scale.shape == t.shape[:1]
                and q.flags.c_contiguous):
            return q, scale
    return quantize_tokens(batch.tokens)


def to_arrow(space: Space, value: Embedding) -> pa.Array:
    """A validated batch (from Space.check) as an Arrow array of arrow_type(space)."""
    if space.kind == "dense":
        arr = np.ascontiguousarray(value, dtype=np.float32)
        return pa.FixedSizeListArray.from_arrays(arrow_of(arr.reshape(-1)), space.dim)
    if space.kind == "binary":
        arr = np.ascontiguousarray(value, dtype=np.uint8)
        n, width = arr.shape
        return pa.Array.from_buffers(pa.binary(width), n, [None, pa.py_buffer(arr.tobytes())])
    if space.kind == "sparse":
        assert isinstance(value, SparseBatch)
        items = pa.StructArray.from_arrays(
            [arrow_of(value.indices.astype(np.int32)), arrow_of(value.weights.astype(np.float32))], names=["id", "w"]
        )
        return pa.ListArray.from_arrays(arrow_of(value.indptr.astype(np.int32)), items)
    assert isinstance(value, TokenBatch)
    q, scale = _codes_of(value)
    toks = pa.StructArray.from_arrays(
        [arrow_of(np.asarray(scale, np.float32)), pa.FixedSizeListArray.from_arrays(arrow_of(np.asarray(q, np.int8).reshape(-1)), space.dim)],
        names=["scale", "q"])
    return pa.ListArray.from_arrays(arrow_of(value.offsets.astype(np.int32)), toks)


def from_arrow(space: Space, column: pa.ChunkedArray | pa.Array) -> Embedding:
    """Vectors of one column, zero-copy where the layout allows (a single chunk, no nulls)."""
    arr = whole(column)
    n = len(arr)
    if space.kind == "dense":
        child = arr.flatten()  # honours slices
        if child.null_count:
            raise pa.ArrowInvalid(f"dense column of space {space.name!r} holds {child.null_count} null values")
        flat: np.ndarray = numpy_of(child)  # no copy
        return flat.reshape(n, space.dim)
    if space.kind == "binary":
        width = space.dim // 8
        buf = arr.buffers()[1]
        return np.frombuffer(buf, dtype=np.uint8, count=n * width, offset=arr.offset * width).reshape(n, width)
    if space.kind == "sparse":
        offsets = numpy_of(arr.offsets).astype(np.int64)
        items = arr.values
        ids = numpy_of(items.field("id"))
        w = numpy_of(items.field("w"))
        base = offsets[0]
        return SparseBatch(offsets - base, ids[base : offsets[-1]].astype(np.int32), w[base : offsets[-1]])
    offsets = numpy_of(arr.offsets).astype(np.int64)
    base, end = int(offsets[0]), int(offsets[-1])
    values = arr.values
    if pa.types.is_struct(values.type):  # format 5: int8 codes and a scale per token
        scale_col, q_col = values.flatten()  # flatten() honours the struct's own offset
        scale = numpy_of(scale_col)[base:end].astype(np.float32)
        q = numpy_of(q_col.flatten()).reshape(-1, space.dim)[base:end]
        return TokenBatch(q.astype(np.float32) * scale[:, None], offsets - base)
    toks = numpy_of(values.flatten()).reshape(-1, space.dim)  # format 4: float32
    return TokenBatch(np.ascontiguousarray(toks[base:end], np.float32), offsets - base)


def vector_fields(schema: Schema) -> list[pa.Field]:
    """The vector fields a segment of this schema carries, in schema order."""
    return [pa.field(column_name(s), arrow_type(s), nullable=False) for s in schema]

"""Self-describing files: what a store file is, read from the file alone, so a lost or damaged
manifest can be rebuilt from the files (storage/repair.py).

Every segment, edges and archive file the store writes carries, in its Arrow schema metadata
under `engramdb.file`, a JSON description:

- `kind` ("seg", "edges", "archive") and `seq` (the number in its name; numbers never repeat);
- `order`: where its rows go among the files of its kind. A new file's order is its own seq; a
  rewrite (purge, archive, compaction) takes the order of the file it replaces (compaction: the
  first), so the files sort into the manifest's order without the manifest;
- `replaces`: the files (or the WAL) whose rows it holds now: those are superseded once it exists;
- `requires`: files that must exist beside it for it to be whole (a segment whose content moved
  to an archive file needs that archive; a checkpoint's segment and edges file need each other);
- `wal_bytes` (a checkpoint's files): the size of the WAL they replace when they were written; a
  WAL that grew since (the checkpoint failed and writes went on) is not theirs to replace;
- `store` and `generation` (format 6): the id of the store that wrote it and the manifest
  generation it was written for (storage/identity.py): a repair leaves out another store's files;
- `epoch` (the row epoch it was written in), `rows`, `body`: the XXH3-64 of the file's record
  batch messages (the bytes between the schema message and the footer), `fields`: of the schema
  without its metadata, and `self`: of the description itself. A repair checks all three and
  that the footer (with its copy of the schema and metadata) leads to exactly those batches, so
  no flipped byte a reader would follow goes unnoticed: only padding and the end-of-stream marker
  are not covered, and no reader reads them (tests/test_repair.py flips bytes to show it).

Segments also carry the store's spaces (`engramdb.spaces`) so a schema can be recovered.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import xxhash

FILE_KEY = b"engramdb.file"
SPACES_KEY = b"engramdb.spaces"
_CONTINUATION = 0xFFFFFFFF
_EOS = 8  # the end-of-stream marker the file writer puts between the last batch and the footer


def description(kind: str, name: str, *, order: int | None, replaces: Sequence[str] = (),
                requires: Sequence[str] = (), epoch: int = 0, wal_bytes: int | None = None,
                store: str = "", generation: int = 0) -> dict[str, Any]:
    """The description of a file about to be written as `name` (see the module docstring)."""
    seq = seq_of(name)
    desc = {"kind": kind, "seq": seq, "order": seq if order is None else int(order),
            "replaces": sorted(set(replaces)), "requires": sorted(set(requires)), "epoch": int(epoch),
            "store": store, "generation": int(generation)}
    if wal_bytes is not None:
        desc["wal_bytes"] = int(wal_bytes)
    return desc


def seq_of(name: str) -> int:
    """The number in a store file's name (`seg-000007.arrow` -> 7)."""
    return int(name.split("-", 1)[1].split(".", 1)[0])


def described(batches: list[pa.RecordBatch], schema: pa.Schema, desc: dict[str, Any],
              spaces: dict[str, Any] | None = None) -> pa.Schema:
    """`schema` with `desc` (plus rows and the body checksum of `batches`) in its metadata."""
    hasher = xxhash.xxh3_64()
    for b in batches:
        hasher.update(b.serialize())  # exactly the bytes the file writer writes for the batch
    full = {**desc, "rows": sum(b.num_rows for b in batches), "body": hasher.hexdigest(),
            "fields": fields_digest(schema)}
    full["self"] = _self_digest(full)
    meta = dict(schema.metadata or {})
    meta[FILE_KEY] = json.dumps(full, sort_keys=True).encode()
    if spaces is not None:
        meta[SPACES_KEY] = json.dumps(spaces, sort_keys=True).encode()
    return schema.with_metadata(meta)


def fields_digest(schema: pa.Schema) -> str:
    """XXH3-64 of a schema's fields (its metadata left out: the description lives there)."""
    return xxhash.xxh3_64_hexdigest(schema.remove_metadata().serialize().to_pybytes())


def _self_digest(desc: dict[str, Any]) -> str:
    return xxhash.xxh3_64_hexdigest(json.dumps({k: v for k, v in desc.items() if k != "self"}, sort_keys=True).encode())


def read_description(data: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """(description, spaces, problem) of an Arrow IPC file's bytes, reading only its schema
    message and hashing its body, never the footer: `problem` is "" when the body matches the
    description, else what is wrong; (None, None, "") for a file without a description."""
    view = memoryview(data)
    size = len(view)
    if size < 16 or bytes(view[:6]) != b"ARROW1":
        return None, None, "not an Arrow IPC file (no ARROW1 magic)"
    cont, meta_len = struct.unpack("<Ii", bytes(view[8:16]))
    if cont != _CONTINUATION or meta_len <= 0 or 16 + meta_len > size - 10:
        return None, None, "its schema message is damaged"
    (footer_len,) = struct.unpack("<i", bytes(view[size - 10:size - 6]))
    end = size - 10 - footer_len - _EOS
    start = 16 + meta_len
    if bytes(view[size - 6:]) != b"ARROW1" or not start <= end:
        return None, None, "its footer is damaged or the file is cut short"
    try:
        schema = pa.ipc.read_schema(pa.py_buffer(bytes(view[8:start])))
    except (pa.ArrowException, ValueError, OSError) as exc:
        return None, None, f"its schema message is unreadable ({type(exc).__name__})"
    meta = schema.metadata or {}
    if FILE_KEY not in meta:
        return None, None, ""
    try:
        desc = json.loads(meta[FILE_KEY])
        spaces = json.loads(meta[SPACES_KEY]) if SPACES_KEY in meta else None
        if not isinstance(desc, dict) or not {"kind", "seq", "order", "body", "rows", "fields", "self"} <= desc.keys():
            raise ValueError("fields missing")
    except ValueError as exc:
        return None, None, f"its description is unreadable ({exc})"
    if _self_digest(desc) != desc["self"]:
        return None, None, "its description does not match its own checksum"
    if fields_digest(schema) != desc["fields"]:
        return desc, spaces, "its schema's fields do not match its description"
    got = xxhash.xxh3_64_hexdigest(view[start:end])
    if got != desc["body"]:
        return desc, spaces, f"its body's XXH3 is {got}, its description says {desc['body']}"
    return desc, spaces, _footer_problem(data, schema, desc)


def schema_description(head: bytes) -> dict[str, Any] | None:
    """The description in the schema message at the start of an Arrow IPC file's bytes `head`
    (the file's first bytes are enough; nothing is checked but that it parses), or None."""
    if len(head) < 16 or head[:6] != b"ARROW1":
        return None
    cont, meta_len = struct.unpack("<Ii", head[8:16])
    if cont != _CONTINUATION or meta_len <= 0 or 16 + meta_len > len(head):
        return None
    try:
        meta = pa.ipc.read_schema(pa.py_buffer(head[8:16 + meta_len])).metadata or {}
        desc = json.loads(meta[FILE_KEY]) if FILE_KEY in meta else None
    except (pa.ArrowException, ValueError, OSError):
        return None
    return desc if isinstance(desc, dict) else None


def _footer_problem(data: Any, schema: pa.Schema, desc: dict[str, Any]) -> str:
    """What is wrong with the footer (the block index the reader follows), or "": it must lead
    to exactly the batches the body checksum covers, with the schema the description covers."""
    try:
        reader = pa.ipc.open_file(pa.BufferReader(pa.py_buffer(data)))
        if not reader.schema.equals(schema, check_metadata=True):
            return "its footer's schema differs from its schema message"
        hasher = xxhash.xxh3_64()
        rows = 0
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            batch.validate(full=True)
            rows += batch.num_rows
            hasher.update(batch.serialize())
    except (pa.ArrowException, ValueError, OSError, UnicodeDecodeError) as exc:
        return f"its footer is unreadable ({type(exc).__name__})"
    if rows != desc["rows"] or hasher.hexdigest() != desc["body"]:
        return "its footer does not lead to the batches its description covers"
    return ""

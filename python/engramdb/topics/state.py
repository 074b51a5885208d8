"""Topics' history between runs (C4), saved beside the indexes: `index/topics-state.arrow`.

One row per topic of the last run of each namespace (namespace, topic id, members, runs, created,
main-space centroid); the next topic number per namespace and the merges `merge_concepts` made
ride in the file's metadata (inside the CRC-checked bytes); the JSON sidecar holds the format and
the data file's size and CRC-32. Derived data: a missing
or damaged state starts the topics' history over (new ids, no stability yet); nothing else is lost.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from ..storage.derived_files import DerivedFiles, bytes_table, table_bytes
from .model import Previous

STATE_FORMAT = 1
DATA, SIDE = "topics-state.arrow", "topics-state.json"
_SCHEMA = pa.schema([("namespace", pa.string()), ("topic_id", pa.string()), ("members", pa.list_(pa.string())),
                     ("runs", pa.int64()), ("created_us", pa.int64()), ("centroid", pa.list_(pa.float64()))])


def save(files: DerivedFiles, prev: dict[str, Previous], merges: dict[str, dict[str, str]]) -> None:
    """Write the state (data file first, then its sidecar)."""
    if not files.writable:
        return
    rows: dict[str, list[Any]] = {name: [] for name in _SCHEMA.names}
    for ns, p in sorted(prev.items()):
        for tid, (members, centroid, runs, created) in sorted(p.topics.items()):
            for name, value in (("namespace", ns), ("topic_id", tid), ("members", sorted(members)), ("runs", runs),
                                ("created_us", created),
                                ("centroid", None if centroid is None else [float(v) for v in centroid])):
                rows[name].append(value)
    table = pa.table(rows, schema=_SCHEMA).replace_schema_metadata({
        "next_id": json.dumps({ns: p.next_id for ns, p in prev.items()}), "merges": json.dumps(merges)})
    entry = files.write(DATA, table_bytes(table))
    files.write_sidecar(SIDE, {"format": STATE_FORMAT, **entry})


def load(files: DerivedFiles) -> tuple[dict[str, Previous], dict[str, dict[str, str]], str]:
    """The saved state, and "adopted" or why it starts over."""
    meta = files.read_sidecar(SIDE)
    if isinstance(meta, str):
        return {}, {}, meta
    if meta.get("format") != STATE_FORMAT:
        return {}, {}, f"format {meta.get('format')!r}"
    raw = files.read(DATA, meta)
    if isinstance(raw, str):
        return {}, {}, raw
    try:
        table = bytes_table(raw)
        if not table.schema.remove_metadata().equals(_SCHEMA):
            return {}, {}, "unexpected columns"
        extra = table.schema.metadata or {}
        out: dict[str, Previous] = {ns: Previous(next_id=int(n))
                                    for ns, n in json.loads(extra[b"next_id"]).items()}
        for ns, tid, members, runs, created, centroid in zip(*(table.column(c).to_pylist() for c in _SCHEMA.names)):
            p = out.setdefault(str(ns), Previous())
            p.topics[str(tid)] = (frozenset(members), None if centroid is None else np.asarray(centroid, np.float64),
                                  int(runs), int(created))
        merges = {str(ns): {str(a): str(b) for a, b in m.items()} for ns, m in json.loads(extra[b"merges"]).items()}
        return out, merges, "adopted"
    except Exception as exc:  # noqa: BLE001 - a derived file is never trusted
        return {}, {}, f"unreadable ({type(exc).__name__})"


__all__ = ["load", "save"]

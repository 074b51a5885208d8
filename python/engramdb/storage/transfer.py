"""Export and import files (S7): `.jsonl` (records, any tool reads it) or `.arrow` (the segment
layout, with every space's vectors).

Export writes current memories of a snapshot, forgotten ones included (marked), archived ones
with their text read back from the archive. Import reads such a file back into add_many records
(version restarts at 1; Arrow files written with the same spaces bring their vectors).
"""

from __future__ import annotations

import builtins
import json
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..model.errors import InvalidMemory
from ..model.memory import Memory
from ..spaces.batches import take
from ..spaces.schema import Schema
from .archive import restore_content
from .columns import table_to_memories
from .segment import read_arrow, read_segment, write_segment
from .vectors import column_name, conform, from_arrow
from .view import View

_TIMES = ("valid_from", "valid_until", "learned_at", "expired_at", "forgotten_at")
_FIELDS = frozenset(f.name for f in fields(Memory))


def export(view: View, path: str | Path, table_schema: pa.Schema, namespace: str | None) -> int:
    """Write the view's current memories (of one namespace, or all) to `path`; returns how many."""
    out = Path(path)
    if out.suffix not in (".jsonl", ".arrow"):
        raise ValueError(f"export path must end in .jsonl or .arrow, got {out.name!r}")
    if not out.parent.is_dir():
        raise ValueError(f"export path {str(out)!r}: its folder {str(out.parent)!r} does not exist; create it first")
    if out.is_dir():
        raise ValueError(f"export path {str(out)!r} is a folder; give a file name ending in .jsonl or .arrow")
    locs = sorted(loc for _, loc in view.current()
                  if namespace is None or view.segments[loc[0]].namespace(loc[1]) == namespace)
    tables = [conform(view.segments[si].checked().slice(row, 1), view.schema) for si, row in locs]
    table = pa.concat_tables(tables) if tables else table_schema.empty_table()
    archived = {view.archived[i] for i in table.column("id").to_pylist() if i in view.archived}
    if archived and view.folder is not None:  # an export carries the text, wherever it lives now
        texts = pa.concat_tables([read_arrow(view.folder / f) for f in sorted(archived)])
        table, _ = restore_content(table, texts)
    try:
        if out.suffix == ".arrow":
            write_segment(out, table)
        else:
            with builtins.open(out, "w", encoding="utf-8") as fh:
                for m in table_to_memories(table):
                    rec = {f.name: getattr(m, f.name) for f in fields(Memory)}
                    for key, value in rec.items():
                        if isinstance(value, datetime):
                            rec[key] = value.isoformat()
                    fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
    except OSError as exc:  # a folder that is not writable, a full disk: the path and why, not a traceback
        raise ValueError(f"cannot write export file {str(out)!r}: {exc.strerror or exc}") from None
    return len(locs)


def read_export(path: str | Path, schema: Schema) -> list[dict[str, Any]]:
    """The add_many records of an export file (history fields kept, version restarts). A file that
    cannot be read, or a line that is not one exported record, raises naming the file (and line)."""
    src = Path(path)
    if src.suffix in (".jsonl", ".arrow") and not src.is_file():
        raise ValueError(f"import path {str(src)!r} is not a file (missing, or a folder)")
    if src.suffix == ".arrow":
        table = read_segment(src).table
        memories = table_to_memories(table)
        same = all(column_name(sp) in table.column_names for sp in schema)
        vecs: list[dict[str, Any]] = [{} for _ in memories]
        if same:
            for sp in schema:
                batch = from_arrow(sp, table.column(column_name(sp)))
                for i in range(len(memories)):
                    vecs[i][sp.name] = take(batch, [i])
        return [_record(m, v) for m, v in zip(memories, vecs)]
    if src.suffix == ".jsonl":
        records = []
        with builtins.open(src, encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as exc:
                    raise InvalidMemory(f"{src.name} line {line_no}: not JSON ({exc})") from None
                if not isinstance(rec, dict):
                    raise InvalidMemory(f"{src.name} line {line_no}: not an exported record (a JSON object), "
                                        f"got {type(rec).__name__}")
                unknown = sorted(set(rec) - _FIELDS)
                if unknown:
                    raise InvalidMemory(f"{src.name} line {line_no}: unknown field(s) {unknown}")
                for key in _TIMES:
                    if isinstance(rec.get(key), str):
                        try:
                            rec[key] = datetime.fromisoformat(rec[key])
                        except ValueError:
                            raise InvalidMemory(f"{src.name} line {line_no}: {key} {rec[key]!r} is not an ISO "
                                                "time") from None
                for key in ("id", "namespace", "content"):
                    if key not in rec:
                        raise InvalidMemory(f"{src.name} line {line_no}: {key} is missing")
                records.append(_record(Memory(**rec), {}))
        return records
    raise ValueError(f"import path must end in .jsonl or .arrow, got {src.name!r}")


def _record(m: Memory, vectors: dict[str, Any]) -> dict[str, Any]:
    """An add_many record from an exported memory (history fields kept, version restarts)."""
    rec = {f.name: getattr(m, f.name) for f in fields(Memory)}
    for key in ("version", "learned_at", "expired_at"):
        rec.pop(key)
    rec["vectors"] = vectors
    return rec

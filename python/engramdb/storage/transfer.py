"""Export and import files (S7): `.jsonl` (one memory a line, any tool reads it) or `.arrow` (the
segment layout, with every space's vectors). Both carry everything the store knows of a memory:

- every version, oldest first, as it was stored: version number, content, valid time
  (`valid_from`/`valid_until`), system time (`learned_at`/`expired_at`), forgotten state,
  supersedes links, metadata and provenance. Archived memories are written with their text (read
  back from the archive); whether a text was archived is the exporting store's storage tiering,
  not part of the memory, and is not carried;
- every edge row between the exported memories, in write order: live edges, the rows they
  replaced and removals (`unlink`), each with its type, confidence, reason, validity and times.

JSONL: a first line `{"engramdb_export": {"format": N}}`, then one line per memory (forgotten
ones included), in store order, then a last line `{"engramdb_export_end": {"memories": N}}`: a
file cut short is refused whole, never imported in part (files without the first line, written
before it, are read as they are). The file is written under a temporary name and renamed, so a
failed export leaves the previous one as it was. A memory line's top-level fields are
the current version's (what a tool reading the file wants); `history` holds its earlier versions
(full records, oldest first) and `edges` the edge rows leaving it, each present only when not
empty. No vectors: an import embeds the text again.

Arrow: one row per version, in store order, with each space's vector column, and in the schema
metadata under `engramdb.export` (JSON) the exporting store's schema and the edge rows.

Import (`read_export`, written by `Store.admin.import_` in one write, all or nothing) brings versions
back as they were, numbers and system times included, so `history` and `as_of` answer in the new
store as in the old one. Vectors of a space are kept only when the file's recorded space has the
same kind, dimension and embedder as the store's; otherwise (a JSONL file, a store of another
profile, an Arrow file without a recorded schema) that space is embedded again from the text, and
`Imported.reembedded` says which and why. A file that does not hold exported records is refused
naming the file and the line (JSONL, from 1) or row (Arrow, from 0) and the field.
"""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..model.checks import INT64_MAX
from ..model.edge import Edge, validate_edge_fields
from ..model.errors import InvalidMemory
from ..model.memory import Memory, as_utc, validate_memory
from ..spaces.batches import take
from ..spaces.protocol import Embedding
from ..spaces.schema import Schema, Space, SpaceError
from .archive import restore_content
from .columns import FORMAT_VERSION, MEMORY_SCHEMA, RowReader, table_to_memories
from .segment import read_arrow, write_segment
from .vectors import arrow_type, column_name, conform, from_arrow
from .view import View

EXPORT_KEY = b"engramdb.export"  # Arrow schema metadata: {"format", "schema", "edges"} as JSON
EXPORT_FORMAT = 2  # 1: current versions only, no edges, no schema; 2: every version, edges, schema
_MEMORY_FIELDS = tuple(f.name for f in fields(Memory))
_EDGE_FIELDS = tuple(f.name for f in fields(Edge))
HEAD_KEY, END_KEY = "engramdb_export", "engramdb_export_end"  # a JSONL export's first and last lines
_LINE_FIELDS = frozenset(_MEMORY_FIELDS) | {"history", "edges"}  # a JSONL line: the current version and these
_MEMORY_TIMES = ("valid_from", "valid_until", "learned_at", "expired_at", "forgotten_at")
_EDGE_TIMES = ("valid_from", "valid_until", "created_at", "removed_at")


class Imported(builtins.list[str]):
    """What `Store.import_` returns: the ids it stored, in file order (a plain list of them), and
    `reembedded`: space -> why that space's vectors were embedded again from the text rather
    than taken from the file (empty when every vector came from the file); `versions` and
    `edges`: the memory versions and edge rows written."""

    def __init__(self, ids: builtins.list[str], reembedded: Mapping[str, str], versions: int, edges: int) -> None:
        super().__init__(ids)
        self.reembedded = dict(reembedded)
        self.versions = versions
        self.edges = edges


@dataclass
class Incoming:
    """An export file read and checked against itself and the store's schema (not yet against
    the store's contents: that is the writer's, under its lock)."""

    name: str  # the file's name, for messages
    memories: list[Memory]  # every version, in the order to write (each id's versions ascending)
    where: list[str]  # per version: "line 3", "line 3 history[0]", "row 7"
    edges: list[Edge]  # edge rows in write order
    edge_where: list[str]  # per edge row: "line 3 edges[0]", "edges[5]"
    vectors: dict[str, Embedding]  # space -> the file's vectors of every version, for the spaces kept
    reembedded: dict[str, str] = field(default_factory=dict)  # space -> why it is embedded again

    def ids(self) -> list[str]:
        """Each memory's id once, in file order."""
        return list(dict.fromkeys(m.id for m in self.memories))


def given_rows(incoming: Incoming, embeddable: set[str]) -> list[dict[str, Any]]:
    """The kept vectors row by row, for the embedding step that fills the other spaces: dense and
    binary ones as row views (cheap), sparse and multivector ones only for a space the store has
    no embedder for (splitting those rows costs more than embedding the text; the caller puts the
    file's whole columns over what that step made for the spaces kept)."""
    rows: list[dict[str, Any]] = [{} for _ in incoming.memories]
    for name, batch in incoming.vectors.items():
        if isinstance(batch, np.ndarray):
            for i, row in enumerate(rows):
                row[name] = batch[i]
        elif name not in embeddable:
            for i, row in enumerate(rows):
                row[name] = take(batch, [i])
    return rows


# ------------------------------------------------------------------------------ export
def export(view: View, path: str | Path, table_schema: pa.Schema, namespace: str | None) -> int:
    """Write every version of the view's memories (of one namespace, or all) and the edges between
    them to `path` (see the module docstring); returns how many memories."""
    out = Path(path)
    if out.suffix not in (".jsonl", ".arrow"):
        raise ValueError(f"export path must end in .jsonl or .arrow, got {out.name!r}")
    if not out.parent.is_dir():
        raise ValueError(f"export path {str(out)!r}: its folder {str(out.parent)!r} does not exist; create it first")
    if out.is_dir():
        raise ValueError(f"export path {str(out)!r} is a folder; give a file name ending in .jsonl or .arrow")
    table = _rows(view, table_schema, namespace)
    ids = table.column("id").to_pylist()
    exported = set(ids)
    edges = [e for e in view.edges.rows(view.edge_rows) if e.src in exported and e.dst in exported]
    try:
        if out.suffix == ".arrow":
            meta = {b"engramdb.format_version": str(FORMAT_VERSION).encode(),
                    EXPORT_KEY: json.dumps({"format": EXPORT_FORMAT, "schema": view.schema.to_dict(),
                                            "edges": [_as_json(e, _EDGE_FIELDS) for e in edges]},
                                           ensure_ascii=False, sort_keys=True).encode()}
            write_segment(out, table.replace_schema_metadata(meta))
        else:
            _write_lines(out, table_to_memories(table), edges)
    except OSError as exc:  # a folder that is not writable, a full disk: the path and why, not a traceback
        raise ValueError(f"cannot write export file {str(out)!r}: {exc.strerror or exc}") from None
    return len(exported)


def _rows(view: View, table_schema: pa.Schema, namespace: str | None) -> pa.Table:
    """Every stored row (version) of the namespace's memories, in store order, archived text put
    back. Every row of the view is a version of a memory it holds: a purge removes them all."""
    parts = []
    for seg in view.segments:
        if namespace is None:
            rows = np.arange(len(seg))
        else:
            code = seg.ns_codes.get(namespace)
            rows = np.empty(0, np.int64) if code is None else np.flatnonzero(seg.ns_index == code)
        if len(rows):
            parts.append(conform(seg.checked().take(pa.array(rows)), view.schema))
    table = pa.concat_tables(parts) if parts else table_schema.empty_table()
    archived = {view.archived[i] for i in set(table.column("id").to_pylist()) if i in view.archived}
    if archived and view.folder is not None:  # an export carries the text, wherever it lives now
        texts = pa.concat_tables([read_arrow(view.folder / f) for f in sorted(archived)])
        table, _ = restore_content(table, texts)
    return table


def _write_lines(out: Path, versions: list[Memory], edges: list[Edge]) -> None:
    """One JSON line per memory, in the order of its current version (see the module docstring)."""
    by_id: dict[str, list[Memory]] = {}
    last: dict[str, int] = {}
    for i, m in enumerate(versions):
        by_id.setdefault(m.id, []).append(m)
        last[m.id] = i
    leaving: dict[str, list[dict[str, Any]]] = {}
    for e in edges:
        leaving.setdefault(e.src, []).append(_as_json(e, _EDGE_FIELDS))
    tmp = out.with_name(out.name + ".tmp")  # a failed export leaves the previous file as it was
    try:
        with builtins.open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({HEAD_KEY: {"format": EXPORT_FORMAT}}) + "\n")
            for mid in sorted(by_id, key=last.__getitem__):
                *earlier, current = by_id[mid]
                rec = _as_json(current, _MEMORY_FIELDS)
                if earlier:
                    rec["history"] = [_as_json(m, _MEMORY_FIELDS) for m in earlier]
                if mid in leaving:
                    rec["edges"] = leaving[mid]
                fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
            fh.write(json.dumps({END_KEY: {"memories": len(by_id)}}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _as_json(obj: Memory | Edge, names: tuple[str, ...]) -> dict[str, Any]:
    """A record's fields as JSON values (times as ISO 8601 with their UTC offset)."""
    rec = {name: getattr(obj, name) for name in names}
    for key, value in rec.items():
        if isinstance(value, datetime):
            rec[key] = value.isoformat()
    return rec


# ------------------------------------------------------------------------------ import
def read_export(path: str | Path, schema: Schema) -> Incoming:
    """Read and check an export file (see the module docstring): every record valid, each id's
    versions ascending and in one namespace, every edge between memories of the file. Raises
    InvalidMemory naming the file, the line or row, and the field; nothing is written here."""
    src = Path(path)
    if src.suffix not in (".jsonl", ".arrow"):
        raise ValueError(f"import path must end in .jsonl or .arrow, got {src.name!r}")
    if not src.is_file():
        raise ValueError(f"import path {str(src)!r} is not a file (missing, or a folder)")
    incoming = _read_arrow(src, schema) if src.suffix == ".arrow" else _read_lines(src, schema)
    _check_versions(incoming)
    _check_edges(incoming)
    return incoming


def _read_lines(src: Path, schema: Schema) -> Incoming:
    memories: list[Memory] = []
    where: list[str] = []
    edges: list[Edge] = []
    edge_where: list[str] = []
    line_of: dict[str, int] = {}
    try:
        data = src.read_bytes()  # bytes: a line that is not UTF-8 is named by its own number
    except OSError as exc:
        raise ValueError(f"cannot read import file {str(src)!r}: {exc.strerror or exc}") from None
    head = end = None
    for line_no, raw in enumerate(data.split(b"\n"), 1):
        at = f"{src.name} line {line_no}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidMemory(f"{at}: not UTF-8 text ({exc.reason} at byte {exc.start} of the line)") from None
        if not line.strip():
            continue
        rec = _json_object(line, at)
        if end is not None:
            raise InvalidMemory(f"{at}: a line after the export's last one (line {end[0]})")
        if HEAD_KEY in rec or END_KEY in rec:
            if HEAD_KEY in rec and (line_no != 1 or len(rec) != 1):
                raise InvalidMemory(f"{at}: the export's first line is its header, and only line 1 is")
            if END_KEY in rec:
                end = (line_no, rec[END_KEY])
            else:
                head = rec[HEAD_KEY]
            continue
        unknown = sorted(set(rec) - _LINE_FIELDS)
        if unknown:
            raise InvalidMemory(f"{at}: unknown field(s) {unknown}")
        history = [_memory(old, f"{at} history[{k}]")
                   for k, old in enumerate(_json_list(rec.pop("history", []), f"{at}: history"))]
        leaving = _json_list(rec.pop("edges", []), f"{at}: edges")
        current = _memory(rec, at)
        if current.id in line_of:
            raise InvalidMemory(f"{at}: id {current.id!r} is on line {line_of[current.id]} too (a memory's "
                                "earlier versions go in its line's history)")
        line_of[current.id] = line_no
        for k, old in enumerate(history):
            if old.id != current.id:
                raise InvalidMemory(f"{at} history[{k}]: id {old.id!r} is not the line's id {current.id!r}")
        memories += [*history, current]
        where += [f"line {line_no} history[{k}]" for k in range(len(history))] + [f"line {line_no}"]
        for k, item in enumerate(leaving):
            e = _edge(item, f"{at} edges[{k}]")
            if e.src != current.id:
                raise InvalidMemory(f"{at} edges[{k}]: src {e.src!r} is not the line's id {current.id!r} (a "
                                    "line holds the edges leaving its memory)")
            edges.append(e)
            edge_where.append(f"line {line_no} edges[{k}]")
    if head is not None:  # written by this version: whole only with its last line, which counts the memories
        if end is None:
            raise InvalidMemory(f"{src.name}: the export is cut short (its last line, which counts its memories, "
                                "is missing): nothing was imported")
        count = end[1].get("memories") if isinstance(end[1], dict) else None
        if count != len(line_of):
            raise InvalidMemory(f"{src.name} line {end[0]}: the export says {count!r} memories, the file holds "
                                f"{len(line_of)}: nothing was imported")
    why = "a JSONL export holds no vectors: the text is embedded"
    return Incoming(src.name, memories, where, edges, edge_where, {}, {sp.name: why for sp in schema})


def _json_object(line: str, at: str) -> dict[str, Any]:
    try:
        rec = json.loads(line)
    except ValueError as exc:
        raise InvalidMemory(f"{at}: not JSON ({exc})") from None
    except RecursionError:
        raise InvalidMemory(f"{at}: not an exported record (JSON nested too deep to read)") from None
    if not isinstance(rec, dict):
        raise InvalidMemory(f"{at}: not an exported record (a JSON object), got {type(rec).__name__}")
    return rec


def _json_list(value: Any, at: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidMemory(f"{at} must be a list of records, got {type(value).__name__}")
    return value


def _memory(rec: Any, at: str) -> Memory:
    """A checked Memory of one exported record (dict of JSON values), or InvalidMemory naming `at`."""
    if not isinstance(rec, dict):
        raise InvalidMemory(f"{at}: not an exported record (a JSON object), got {type(rec).__name__}")
    unknown = sorted(set(rec).difference(_MEMORY_FIELDS))
    if unknown:
        raise InvalidMemory(f"{at}: unknown field(s) {unknown}")
    for key in ("id", "namespace", "content"):
        if key not in rec:
            raise InvalidMemory(f"{at}: {key} is missing")
    rec = dict(rec)
    for key in _MEMORY_TIMES:
        rec[key] = _time(rec.get(key), key, at)
    for key in ("metadata", "provenance"):
        if rec.get(key) is None:
            rec.pop(key, None)  # an exporter writes {}; null means the same
    return _checked(Memory(**rec), at)


def _checked(m: Memory, at: str) -> Memory:
    try:
        m = validate_memory(m, stored=True)  # an export's seq may be an automatic one
    except (InvalidMemory, TypeError) as exc:
        raise InvalidMemory(f"{at}: {exc}") from None
    if m.version > INT64_MAX:
        raise InvalidMemory(f"{at}: version must be at most {INT64_MAX:,} (a 64-bit integer), got {m.version}")
    return m


def _time(value: Any, key: str, at: str) -> Any:
    """An ISO 8601 string as a datetime (its zone checked by the record's validation)."""
    if not isinstance(value, str):
        return value
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise InvalidMemory(f"{at}: {key} {value!r} is not an ISO time") from None


def _edge(rec: Any, at: str) -> Edge:
    """A checked Edge of one exported edge record, or InvalidMemory naming `at` and the field."""
    if not isinstance(rec, dict):
        raise InvalidMemory(f"{at}: not an edge record (a JSON object), got {type(rec).__name__}")
    unknown = sorted(set(rec).difference(_EDGE_FIELDS))
    if unknown:
        raise InvalidMemory(f"{at}: unknown field(s) {unknown}")
    for key in ("src", "dst", "type", "namespace"):
        if not isinstance(rec.get(key), str):
            raise InvalidMemory(f"{at}: {key} must be a string, got {rec.get(key)!r:.80}")
    times = {}
    for key in _EDGE_TIMES:
        try:
            times[key] = as_utc(key, _time(rec.get(key), key, at))
        except InvalidMemory as exc:
            raise InvalidMemory(f"{at}: {exc}") from None
    try:
        confidence, start, end = validate_edge_fields(rec["type"], rec.get("confidence", 1.0), rec.get("reason"),
                                                      times["valid_from"], times["valid_until"])
    except InvalidMemory as exc:
        raise InvalidMemory(f"{at}: {exc}") from None
    if times["created_at"] is None:
        raise InvalidMemory(f"{at}: created_at is missing (when the edge row was written)")
    return Edge(rec["src"], rec["dst"], rec["type"], rec["namespace"], confidence, rec.get("reason"), start, end,
                times["created_at"], times["removed_at"])


def _read_arrow(src: Path, schema: Schema) -> Incoming:
    try:
        table = pa.ipc.open_file(pa.memory_map(str(src), "r")).read_all()
        table.validate(full=True)  # the structure, before any column is read
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InvalidMemory(f"{src.name}: not a readable Arrow export ({type(exc).__name__}: {exc})") from None
    for f in MEMORY_SCHEMA:
        i = table.schema.get_field_index(f.name)
        if i < 0:
            raise InvalidMemory(f"{src.name}: column {f.name!r} is missing (not an engramdb export)")
        if table.schema.field(i).type != f.type:
            raise InvalidMemory(f"{src.name}: column {f.name!r} is {table.schema.field(i).type}, an export "
                                f"writes {f.type}")
    header = _header(src.name, table.schema.metadata or {})
    memories = [_checked(m, f"{src.name} row {r}") for r, m in enumerate(_table_memories(src.name, table))]
    where = [f"row {r}" for r in range(len(memories))]
    edges = [_edge(raw, f"{src.name} edges[{k}]") for k, raw in enumerate(header.get("edges", []))]
    vectors: dict[str, Embedding] = {}
    reembedded: dict[str, str] = {}
    recorded = header.get("spaces")
    for sp in schema:
        why = _unfit(sp, recorded, table)
        if why:
            reembedded[sp.name] = why
            continue
        try:
            vectors[sp.name] = sp.check(from_arrow(sp, table.column(column_name(sp))), len(memories))
        except (SpaceError, ValueError, pa.ArrowException) as exc:
            raise InvalidMemory(f"{src.name}: column {column_name(sp)!r} (rows from 0): {exc}") from None
    return Incoming(src.name, memories, where, edges, [f"edges[{k}]" for k in range(len(edges))], vectors, reembedded)


def _table_memories(name: str, table: pa.Table) -> list[Memory]:
    """The rows as Memory records; a row whose metadata or provenance is not a JSON object is
    named (found row by row, only when the whole-table read fails)."""
    try:
        return table_to_memories(table)
    except (ValueError, TypeError, RecursionError):
        reader = RowReader(table)
        for r in range(table.num_rows):
            try:
                reader.memory(r)
            except (ValueError, TypeError, RecursionError) as exc:
                raise InvalidMemory(f"{name} row {r}: metadata or provenance is not a JSON object "
                                    f"({type(exc).__name__}: {exc})") from None
        raise


def _header(name: str, meta: Mapping[bytes, bytes]) -> dict[str, Any]:
    """The export's own metadata: {"spaces": name -> recorded space (None when the file records no
    schema: an export of format 1), "edges": [...]}; a damaged one is refused, naming the file."""
    raw = meta.get(EXPORT_KEY)
    if raw is None:
        return {"spaces": None, "edges": []}
    try:
        head = json.loads(raw)
        spaces = {s["name"]: s for s in head["schema"]["spaces"]}
        edges = head.get("edges", [])
        if not isinstance(edges, list) or not all(isinstance(s, dict) for s in spaces.values()):
            raise TypeError("edges must be a list, spaces objects")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise InvalidMemory(f"{name}: its export metadata ({EXPORT_KEY.decode()}) is unreadable "
                            f"({type(exc).__name__}: {exc})") from None
    return {"spaces": spaces, "edges": edges}


def _unfit(sp: Space, recorded: Mapping[str, Any] | None, table: pa.Table) -> str:
    """Why the file's vectors for `sp` cannot be taken as they are ("" when they can)."""
    name = column_name(sp)
    i = table.schema.get_field_index(name)
    if i < 0:
        return f"the file has no {name!r} column"
    if recorded is None:  # a format-1 export: its vectors' embedder is unknown
        if sp.embedder is not None:
            return "the file records no schema, so the embedder of its vectors is unknown"
        if table.schema.field(i).type != arrow_type(sp) and sp.kind != "multivector":  # format-4 tokens read too
            return f"the file's {name!r} is {table.schema.field(i).type}, this store's space is {arrow_type(sp)}"
        return ""
    theirs = recorded.get(sp.name)
    if theirs is None:
        return f"the exporting store had no space {sp.name!r}"
    mine = {"kind": sp.kind, "dim": sp.dim, "embedder": sp.embedder}
    other = {key: theirs.get(key) for key in mine}
    if other != mine:
        return (f"the file's vectors are {other['kind']} {other['dim']}-d by embedder {other['embedder']!r}, this "
                f"store's are {sp.kind} {sp.dim}-d by {sp.embedder!r}")
    return ""


def _check_versions(incoming: Incoming) -> None:
    """Each id's versions strictly ascending in write order, all in one namespace."""
    seen: dict[str, Memory] = {}
    for m, at in zip(incoming.memories, incoming.where):
        before = seen.get(m.id)
        if before is not None:
            if m.version <= before.version:
                raise InvalidMemory(f"{incoming.name} {at}: version {m.version} of {m.id!r} comes after version "
                                    f"{before.version} (a memory's versions go oldest first)")
            if m.namespace != before.namespace:
                raise InvalidMemory(f"{incoming.name} {at}: namespace {m.namespace!r} of {m.id!r} differs from its "
                                    f"earlier version's {before.namespace!r}")
        seen[m.id] = m


def _check_edges(incoming: Incoming) -> None:
    """Every edge joins two memories of the file, in their namespace."""
    namespace = {m.id: m.namespace for m in incoming.memories}
    for e, at in zip(incoming.edges, incoming.edge_where):
        for end in ("src", "dst"):
            mid = getattr(e, end)
            if mid not in namespace:
                raise InvalidMemory(f"{incoming.name} {at}: {end} {mid!r} is not a memory of the file (edge "
                                    f"{e.src} -[{e.type}]-> {e.dst})")
            if namespace[mid] != e.namespace:
                raise InvalidMemory(f"{incoming.name} {at}: namespace {e.namespace!r} is not its {end}'s "
                                    f"{namespace[mid]!r} (edge {e.src} -[{e.type}]-> {e.dst})")

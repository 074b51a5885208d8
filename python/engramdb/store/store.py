"""The embedded store: memories with bi-temporal versions, spaces, a WAL and Arrow segments.

Write path: validate (record + every space, all or nothing) -> one Arrow table -> one fsynced WAL
frame (the write is acknowledged here) -> an in-memory segment. When enough rows wait in the WAL,
or on close, they are folded into an Arrow segment file and the manifest is replaced atomically.

Read path: every version is a row; a memory's current version is the newest row of its id. A
query scans each segment with the kernels, filtering inside the scan by namespace, liveness,
valid time (`as_of`) and system time (`known_at`), and merges the per-segment top-k.
"""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _core, kernels
from ..retrieval.bm25 import Bm25Index
from ..retrieval.edge_inference import MIN_CONFIDENCE, InferenceReport, Inferrer
from ..spaces.analyzer import term_id
from ..spaces.profiles import embedders_for, names_match, profile_schema
from ..spaces.protocol import Embedder, Embedding, SparseBatch, TokenBatch
from ..spaces.schema import Schema, Space, SpaceError, default_schema
from .archive import restore_content, rows_of, strip_content
from .batches import concat, take
from .bm25_index import StoreBm25
from .columns import FORMAT_VERSION, MEMORY_SCHEMA, memories_to_table, table_to_memories
from .dedup import DedupEvent, Policy, check_policy, within_batch
from .edges import (
    Edge,
    EdgeSet,
    edges_to_table,
    is_edge_table,
    read_edges_file,
    table_to_edges,
    validate_edge_fields,
)
from .hnsw_index import HnswIndex
from .intake import Intake, build_intake
from .lock import WriterLock
from .manifest import Manifest, read_manifest, write_manifest
from .record import InvalidMemory, Memory, as_utc, utc_now, validate_memory
from .segment import NEVER, Segment, read_arrow, read_segment, write_segment
from .tree_index import BEAM as TREE_BEAM
from .tree_index import PROBE as TREE_PROBE
from .tree_index import TREE_MIN_ROWS, TreeIndex
from .vectors import column_name, from_arrow, to_arrow, vector_fields
from .wal import WriteAheadLog, read_frames

CHECKPOINT_ROWS = 4096  # WAL rows folded into a segment file at this size (and on close)
_MEMORY_FIELDS = {f.name for f in fields(Memory)}


class StoreError(RuntimeError):
    """An operation the store's state does not allow (unknown id, version conflict, closed store)."""


@dataclass(frozen=True)
class Hit:
    """One search result: the memory, its score in the searched space, and why (if asked)."""

    id: str
    score: float
    memory: Memory
    explain: dict[str, Any] | None = None
    archived: bool = False  # content is in an archive file (memory.content is empty): `unarchive` it


_ROW = (1 << 32) - 1


def _split(loc: int) -> tuple[int, int]:
    """(segment, row) of an id-index entry."""
    return loc >> 32, loc & _ROW


def _micros(t: datetime) -> int:
    return int((t - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds() * 1_000_000)


class Store:
    """A memory store in a folder (or in memory when `path` is None). Use `engramdb.open`."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        schema: Schema | None = None,
        embedders: Mapping[str, Embedder] | None = None,
        read_only: bool = False,
        dedup: str = "skip",
        dedup_threshold: float = 0.90,
        profile: str | None = None,
        index: str = "tree",
    ) -> None:
        self._lock = threading.RLock()
        self.dedup: Policy = check_policy(dedup)
        if not 0 < dedup_threshold <= 1:
            raise ValueError(f"dedup_threshold must be in (0, 1], got {dedup_threshold!r}")
        self.dedup_threshold = float(dedup_threshold)
        self.last_dedup: list[DedupEvent] = []
        self.path = Path(path) if path is not None else None
        self.read_only = read_only
        self._writer_lock: WriterLock | None = None
        self._segments: list[Segment] = []
        # id -> segment << 32 | row of its newest version (ints, not tuples). None until first needed
        # after an open: a reader that only searches never builds it (1M ids: ~0.6 s of dict work)
        self._index_map: dict[str, int] | None = {}
        self._opening = False
        self._wal: WriteAheadLog | None = None
        self._edges = EdgeSet()
        self._edges_pending: list[pa.Table] = []  # edge frames in the WAL, not yet in an edges file
        self._trees: dict[str, TreeIndex] = {}  # dense space -> its namespaces' centroid trees (derived)
        self._hnsw: dict[str, HnswIndex] = {}  # dense space -> its namespaces' usearch graphs (derived)
        self._bm25: dict[str, StoreBm25] = {}  # sparse space -> its namespaces' BM25 indexes (derived)
        self._turn_maps: dict[str, tuple[int, dict[tuple[str, int], tuple[int, int]]]] = {}
        self._bases_cache: tuple[tuple[int, int], np.ndarray] | None = None
        if index not in ("tree", "tree-packed", "hnsw", "none"):
            raise ValueError(f"index must be 'tree', 'tree-packed', 'hnsw' or 'none', got {index!r}")
        # "tree-packed": trees that keep their own leaf-ordered half-precision copy of the vectors
        # (about the dense space's size again, like HNSW's copy) and scan contiguous blocks
        self.pack_trees = index == "tree-packed"
        self.index_kind = "tree" if self.pack_trees else index
        self._last_tree_stats: dict[str, Any] = {}
        self._archived: dict[str, str] = {}  # memory id -> the archive file holding its content (J7)
        self._generation = 0  # bumped whenever rows or their derived state change (mask cache key)
        self._mask_cache: dict[tuple[str, int, frozenset[str] | None], tuple[int, int, np.ndarray]] = {}
        self._closed = False
        manifest = None
        if self.path is not None:
            if read_only and not (self.path / "manifest.json").exists():
                raise StoreError(f"no engramdb store at {self.path} to open read-only")
            self.path.mkdir(parents=True, exist_ok=True)
            if not read_only:
                self._writer_lock = WriterLock(self.path)
            manifest = read_manifest(self.path)
        if profile is not None:
            if schema is not None:
                raise ValueError("pass schema= or profile=, not both")
            schema = profile_schema(profile)
        if manifest is not None and manifest.spaces:
            stored = Schema.from_dict(manifest.spaces)
            if schema is not None and schema != stored:
                raise SpaceError(f"the store at {self.path} has schema {stored!r}; it was opened with {schema!r}")
            schema = stored
        self.schema = schema or default_schema()
        self.embedders: dict[str, Embedder] = dict(embedders) if embedders is not None else embedders_for(self.schema)
        for name, emb in self.embedders.items():
            declared = self.schema[name].embedder if name in self.schema.spaces else None
            if declared is not None and not names_match(emb, declared):
                raise SpaceError(
                    f"space {name!r} is declared to hold {declared!r} vectors but the embedder given for it is "
                    f"{emb.name!r}; use a schema (or profile=) that names it, e.g. profile='minilm' for MiniLM"
                )
        self._manifest = manifest or Manifest(spaces=self.schema.to_dict(), created_by="engramdb")
        self._table_schema = pa.schema(list(MEMORY_SCHEMA) + vector_fields(self.schema), metadata=MEMORY_SCHEMA.metadata)
        if self.path is not None:
            self._opening = True  # segments are attached without indexing until the open is done
            for entry in self._manifest.segments:
                self._attach(read_segment(self.path / entry["file"]))
            for entry in self._manifest.edges:
                self._edges.apply(table_to_edges(read_edges_file(self.path / entry["file"])))
            for entry in self._manifest.archives:
                ids = read_arrow(self.path / entry["file"]).column("id").to_pylist()
                self._archived.update(dict.fromkeys(ids, entry["file"]))
            if read_only:  # the WAL as it is now; never repaired or appended by a reader
                if (self.path / self._manifest.wal).exists():
                    for table in read_frames(self.path / self._manifest.wal)[0]:
                        self._replay(table)
            else:
                self._wal = WriteAheadLog(self.path / self._manifest.wal)
                for table in self._wal.recover():
                    self._replay(table)
                if manifest is None or manifest.format_version < FORMAT_VERSION:
                    # an older store is upgraded in place before anything newer reaches its WAL
                    self._manifest.format_version = FORMAT_VERSION
                    write_manifest(self.path, self._manifest)
                self._remove_debris()
            self._opening = False
            self._close_versions_at_open()
            self._index_map = None

    # ----------------------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Fold the WAL into a segment file and release the files. Idempotent."""
        with self._lock:
            if self._closed:
                return
            if self._wal is not None:
                self.checkpoint()
                self._save_trees()
                self._wal.close()
            if self._writer_lock is not None:
                self._writer_lock.release()
            self._closed = True

    def __enter__(self) -> Store:  # noqa: PYI034 - Store is not meant to be subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def checkpoint(self) -> None:
        """Write the rows waiting in the WAL to one segment file, then empty the WAL."""
        with self._lock:
            self._check_open()
            if self.path is None or self._wal is None:
                return
            pending = [i for i, s in enumerate(self._segments) if s.file is None]
            if not pending and not self._edges_pending:
                return
            merged = None
            if pending:
                table = pa.concat_tables([self._segments[i].table for i in pending])
                name = self._next_file("seg")
                write_segment(self.path / name, table)
                merged = read_segment(self.path / name)
                # carry derived state (replacements by newer versions) over to the merged rows
                merged.sys_end = np.concatenate([self._segments[i].sys_end for i in pending])
                self._manifest.segments.append({"file": name, "rows": merged.table.num_rows})
            if self._edges_pending:
                edges = pa.concat_tables(self._edges_pending)
                name = self._next_file("edges")
                write_segment(self.path / name, edges)
                self._manifest.edges.append({"file": name, "rows": edges.num_rows})
            # The rows move from the WAL to the files in one atomic step: the new manifest names the
            # files and a fresh, empty WAL together. A crash before it leaves the old manifest and
            # the old WAL (the new files are debris); after it, the old WAL is the debris.
            old_wal = self._wal
            wal_name = f"wal-{self._manifest.next_segment:06d}.log"
            self._manifest.next_segment += 1
            self._wal = WriteAheadLog(self.path / wal_name)
            self._manifest.wal = wal_name
            write_manifest(self.path, self._manifest)  # committed
            old_wal.close()
            old_wal.path.unlink(missing_ok=True)
            self._edges_pending = []
            if merged is not None:
                # WAL segments always trail the committed ones, so they are replaced as one block.
                first = pending[0]
                self._segments = self._segments[:first] + [merged]
                self._reindex_from(first)
                self._save_trees()

    # ----------------------------------------------------------------------------- writes
    def add(
        self,
        content: str,
        *,
        namespace: str,
        session_id: str | None = None,
        role: str | None = None,
        memory_type: str | None = None,
        valid_from: datetime | None = None,
        id: str | None = None,
        vectors: Mapping[str, Any] | None = None,
        **fields_: Any,
    ) -> Memory:
        """Store one memory; returns it as stored (with id, version 1, learned_at)."""
        record = {"content": content, "namespace": namespace, "session_id": session_id, "role": role,
                  "memory_type": memory_type, "valid_from": valid_from, "id": id, "vectors": vectors, **fields_}
        ids = self.add_many([record])
        got = self.get(ids[0])
        assert got is not None
        return got

    def add_many(self, records: Iterable[Mapping[str, Any] | Memory]) -> list[str]:
        """Store many memories in one batch (one WAL frame); returns their ids in order.

        Each record is a dict with the keys of `add` (or a Memory). All or nothing: one bad
        record refuses the batch, naming the record and the field.
        """
        batch = build_intake(records, utc_now())
        n = len(batch.ids)
        if not n:
            return []
        with self._lock:
            self._check_open()
            if len(set(batch.ids)) != n or any(i in self._index for i in batch.ids):
                seen: set[str] = set()
                for mid in batch.ids:
                    if mid in self._index or mid in seen:
                        raise StoreError(f"id {mid!r} already exists; use update() to change it")
                    seen.add(mid)
            vectors = self._vectors_for(batch.contents, batch.vectors)
            self.last_dedup = self._find_duplicates(batch, vectors) if self.dedup != "off" else []
            if not self.last_dedup:
                self._write_table(batch.table, vectors)
                return batch.ids
            dup = {e.index: e for e in self.last_dedup}
            keep = [i for i in range(n) if i not in dup]
            if keep:
                self._write_table(batch.table.take(keep), {k: take(v, keep) for k, v in vectors.items()})
            if self.dedup == "merge":
                self._merge_duplicates(self.last_dedup)
            return [dup[i].duplicate_of if i in dup else batch.ids[i] for i in range(n)]

    def update(self, id: str, *, expected_version: int | None = None, **changes: Any) -> Memory:
        """Write a new version of a memory with some fields changed (optimistic: name the version read)."""
        vectors = changes.pop("vectors", None)
        bad = set(changes) - (_MEMORY_FIELDS - {"id", "namespace", "version", "learned_at"})
        if bad:
            raise InvalidMemory(f"update cannot change {sorted(bad)}")
        with self._lock:
            old = self._current(id)
            if expected_version is not None and old.version != expected_version:
                raise StoreError(f"memory {id!r} is at version {old.version}, not {expected_version}: reread and retry")
            new = validate_memory(old.with_changes(version=old.version + 1, learned_at=utc_now(), **changes))
            keep = {} if "content" in changes and changes["content"] != old.content else self._row_vectors(id)
            if vectors:
                keep.update(vectors)
            self._write([new], self._vectors_for([new.content], [keep]))
            return new

    def supersede(self, old_id: str, new_id: str) -> tuple[Memory, Memory]:
        """`old` stops being true where `new` starts (S3); both are linked. Nothing is deleted."""
        with self._lock:
            old, new = self._current(old_id), self._current(new_id)
            end = new.valid_from or new.learned_at
            now = utc_now()
            o2 = validate_memory(old.with_changes(version=old.version + 1, learned_at=now, valid_until=end,
                                                  superseded_by=new.id))
            n2 = validate_memory(new.with_changes(version=new.version + 1, learned_at=now, supersedes=old.id))
            vecs = self._vectors_for([o2.content, n2.content], [self._row_vectors(old_id), self._row_vectors(new_id)])
            self._write([o2, n2], vecs)
            self._write_edges([Edge(new.id, old.id, "SUPERSEDES", new.namespace, 1.0, "supersede", created_at=now)])
            return o2, n2

    def link(
        self,
        src: str,
        dst: str,
        type: str,
        *,
        confidence: float = 1.0,
        reason: str | None = None,
        valid_from: datetime | None = None,
        valid_until: datetime | None = None,
    ) -> Edge:
        """Add (or replace) the typed edge `src -[type]-> dst` between two memories of one namespace.

        `type` is UPPER_SNAKE_CASE (`CAUSED_BY`, `PART_OF`, ...); `confidence` in [0, 1]; `reason`
        says why (shown by explain); `valid_from`/`valid_until` bound when the relation held.
        Linking the same (src, dst, type) again replaces the edge.
        """
        with self._lock:
            edge = self._edge_for(src, dst, type, confidence, reason, valid_from, valid_until)
            self._write_edges([edge])
            return edge

    def _edge_for(self, src: str, dst: str, type: str, confidence: float, reason: str | None,
                  valid_from: datetime | None, valid_until: datetime | None) -> Edge:
        """The checked edge `link` would write (the caller holds the lock and writes it)."""
        conf, start, end = validate_edge_fields(type, confidence, reason, valid_from, valid_until)
        a, b = self._current(src), self._current(dst)
        if a.id == b.id:
            raise InvalidMemory(f"an edge joins two different memories; src and dst are both {src!r}")
        if a.namespace != b.namespace:
            raise StoreError(f"src {src!r} is in namespace {a.namespace!r} and dst {dst!r} in {b.namespace!r}: "
                             "edges never cross namespaces")
        return Edge(a.id, b.id, type, a.namespace, conf, reason, start, end, created_at=utc_now())

    def infer_edges(
        self,
        ids: Iterable[str] | None = None,
        *,
        namespace: str | None = None,
        inferrer: Inferrer | None = None,
        candidates: int = 10,
        min_confidence: float = MIN_CONFIDENCE,
    ) -> InferenceReport:
        """Propose typed edges for memories and store the sure ones (H2).

        Give `ids` (these memories) or `namespace` (every live memory in it). Each memory's
        `candidates` nearest memories in the main space are shown to `inferrer`, a callable
        `(memory, candidates) -> EdgeProposal`s (an LLM hook, say); the default is the built-in
        `HeuristicInferrer` (CAUSED_BY from causal cues, RELATED_TO from shared words and high
        similarity). Only valid proposals with confidence >= `min_confidence` (at least 0.7)
        become edges, written as `link` writes them; the report lists what was stored, what was
        below the bar, what was rejected and why, and where the inferrer failed.
        """
        from .inference import infer_edges

        return infer_edges(self, ids, namespace, inferrer, candidates, min_confidence)

    def _idf(self, namespace: str) -> Callable[[Sequence[str]], Sequence[float]] | None:
        """BM25 idf of analysed terms within a namespace (None without a lexical space)."""
        with self._lock:
            ix = self._bm25_namespace(namespace)
        if ix is None:
            return None

        def idf(terms: Sequence[str]) -> Sequence[float]:
            ids = np.array([term_id(t) for t in terms], np.int64)
            return ix.idf(ids).tolist()  # type: ignore[no-any-return]

        return idf

    def _live_ids(self, namespace: str) -> list[str]:
        """Ids of the current memories of a namespace, in key order."""
        with self._lock:
            self._check_open()
            t, at_now = self._when(None, None)
            mask = self._key_mask(self._segments, namespace, None, t, at_now)
            out: list[str] = []
            for si, row in self._locs(np.flatnonzero(mask)):
                out.append(self._segments[si].ids[row])
            return out

    def unlink(self, src: str, dst: str, type: str) -> bool:
        """End the edge `src -[type]-> dst`; False when there was none. History keeps the old rows."""
        with self._lock:
            self._check_writable()
            old = self._edges.get((src, dst, type))
            if old is None:
                return False
            self._write_edges([Edge(src, dst, type, old.namespace, old.confidence, old.reason,
                                    old.valid_from, old.valid_until, created_at=old.created_at, removed_at=utc_now())])
            return True

    def edges(
        self,
        id: str,
        *,
        direction: str = "out",
        type: str | None = None,
        as_of: datetime | None = None,
        include_forgotten: bool = False,
    ) -> list[Edge]:
        """The live edges of a memory: `direction` "out" (id is src), "in" (id is dst) or "both".

        Edges to a forgotten memory are hidden unless asked; `as_of` keeps edges valid then.
        """
        if direction not in ("out", "in", "both"):
            raise ValueError(f"direction must be 'out', 'in' or 'both', got {direction!r}")
        t = as_utc("as_of", as_of)
        with self._lock:
            self._check_open()
            found = (self._edges.outgoing(id) if direction != "in" else []) + \
                    (self._edges.incoming(id) if direction != "out" else [])
            out = []
            for e in found:
                if type is not None and e.type != type:
                    continue
                if t is not None and not e.valid_at(t):
                    continue
                if not include_forgotten and not all(self._live(x) for x in (e.src, e.dst)):
                    continue
                out.append(e)
            return out

    def forget(self, id: str) -> Memory:
        """Soft delete: hidden from search and get, restorable (S7)."""
        with self._lock:
            old = self._current(id)
            if old.forgotten_at is not None:
                return old
            return self._rewrite(old, forgotten_at=utc_now())

    def restore(self, id: str) -> Memory:
        """Undo `forget`."""
        with self._lock:
            old = self._current(id, include_forgotten=True)
            if old.forgotten_at is None:
                return old
            return self._rewrite(old, forgotten_at=None)

    def compact(self) -> int:
        """Merge all committed segments (and the WAL) into one segment file (S6).

        Every version is kept (history is data); what goes is the per-segment overhead: fewer
        files to map on open and fewer scans per query. Atomic: the new manifest lists the merged
        file in place of the old ones. Returns the number of segments merged.
        """
        with self._lock:
            self._check_writable()
            self.checkpoint()
            if self.path is None or (len(self._segments) <= 1 and len(self._manifest.edges) <= 1):
                return len(self._segments) if self.path is not None else 0
            old = [s.file for s in self._segments if s.file] + [e["file"] for e in self._manifest.edges]
            table = pa.concat_tables([s.table for s in self._segments])
            name = self._next_file("seg")
            write_segment(self.path / name, table)
            merged = read_segment(self.path / name)
            self._manifest.segments = [{"file": name, "rows": len(merged)}]
            if self._manifest.edges:  # every edge row is kept (history), in one file
                edges = pa.concat_tables([read_edges_file(self.path / e["file"]) for e in self._manifest.edges])
                ename = self._next_file("edges")
                write_segment(self.path / ename, edges)
                self._manifest.edges = [{"file": ename, "rows": edges.num_rows}]
            write_manifest(self.path, self._manifest)  # committed
            for f in old:
                (self.path / f).unlink(missing_ok=True)
            self._segments, self._index = [], {}
            self._attach(merged)
            return len(old)

    def purge(self, id: str) -> int:
        """Hard delete for privacy requests: every version's content leaves every file (S7).

        Folds the WAL into a segment first, then rewrites each segment holding the memory without
        its rows and drops the old files. Returns how many versions were removed.
        """
        with self._lock:
            self._check_writable()
            if id not in self._index:
                raise StoreError(f"no memory with id {id!r} to purge")
            self.checkpoint()
            removed = 0
            kept: list[Segment] = []
            dropped: list[str] = []
            for seg in self._segments:
                keep = np.fromiter((i != id for i in seg.ids), dtype=bool, count=len(seg))
                if keep.all():
                    kept.append(seg)
                    continue
                removed += int((~keep).sum())
                table = seg.table.filter(pa.array(keep))
                if seg.file is not None:
                    dropped.append(seg.file)
                if table.num_rows == 0:
                    continue
                if self.path is None:
                    kept.append(Segment(table))
                else:
                    name = self._next_file("seg")
                    write_segment(self.path / name, table)
                    kept.append(read_segment(self.path / name))
            edge_tables = self._purge_edges(id, dropped)
            if id in self._archived and self.path is not None:
                self._purge_archive(id, dropped)
            self._manifest.row_epoch += 1  # rows renumbered: every tree is stale
            self._trees, self._hnsw, self._bm25 = {}, {}, {}
            if self.path is not None:
                for f in (self.path / "index").glob("*") if (self.path / "index").is_dir() else []:
                    f.unlink()  # derived from the purged rows too: gone before the purge commits
                self._manifest.segments = [{"file": s.file, "rows": len(s)} for s in kept]
                write_manifest(self.path, self._manifest)  # committed: the old files are unlisted
                for name in dropped:
                    (self.path / name).unlink(missing_ok=True)
            self._segments = []
            self._index = {}
            for seg in kept:
                seg.reset_sys_end()
                self._attach(seg)
            self._edges = EdgeSet()
            for t in edge_tables:
                self._edges.apply(table_to_edges(t))
            return removed

    def _purge_edges(self, id: str, dropped: list[str]) -> list[pa.Table]:
        """Edge tables without any row touching `id` (files rewritten, old names added to `dropped`)."""
        tables = self._edges_pending if self.path is None else \
            [read_edges_file(self.path / e["file"]) for e in self._manifest.edges]
        out: list[pa.Table] = []
        entries = []
        for i, t in enumerate(tables):
            touch = pc.or_(pc.equal(t.column("src"), id), pc.equal(t.column("dst"), id))
            if not pc.any(touch).as_py():
                out.append(t)
                if self.path is not None:
                    entries.append(self._manifest.edges[i])
                continue
            t = t.filter(pc.invert(touch))
            if self.path is not None:
                dropped.append(self._manifest.edges[i]["file"])
                if t.num_rows:
                    name = self._next_file("edges")
                    write_segment(self.path / name, t)
                    entries.append({"file": name, "rows": t.num_rows})
            if t.num_rows:
                out.append(t)
        if self.path is None:
            self._edges_pending = out
        else:
            self._manifest.edges = entries
        return out

    def _purge_archive(self, id: str, dropped: list[str]) -> None:
        """Rewrite the archive file holding `id` without its rows (the manifest is written by purge)."""
        assert self.path is not None
        name = self._archived.pop(id)
        entries = []
        for e in self._manifest.archives:
            if e["file"] != name:
                entries.append(e)
                continue
            table = read_arrow(self.path / name)
            keep = table.filter(pa.array(~rows_of(table, {id})))
            dropped.append(name)
            if keep.num_rows:
                new = self._next_file("archive")
                write_segment(self.path / new, keep)
                entries.append({"file": new, "rows": keep.num_rows})
                for mid in set(keep.column("id").to_pylist()):
                    self._archived[mid] = new
        self._manifest.archives = entries

    # ----------------------------------------------------------------------------- archival (J7)
    def archive(self, older_than: datetime, *, namespace: str | None = None) -> dict[str, Any]:
        """Move the content of old memories to an archive file (J7); vectors and tree stay.

        A memory is old when its current version was learned before `older_than`. Where its
        namespace has a centroid tree, whole leaves go (every memory of a leaf is old); elsewhere
        memory by memory. Archived memories still match searches (their hits carry
        `archived=True` and empty content) and can be brought back with `unarchive`. Returns a
        report: memories and leaves archived, and the archive file.
        """
        cutoff = _micros(as_utc("older_than", older_than))  # type: ignore[arg-type]
        with self._lock:
            self._check_writable()
            if self.path is None:
                raise StoreError("archive needs a store folder: the archive is a file")
            self.checkpoint()
            old = {mid for mid, (si, r) in self._locations()
                   if self._segments[si].learned_at[r] < cutoff and mid not in self._archived
                   and (namespace is None or self._segments[si].namespace(r) == namespace)}
            chosen, leaves = self._archivable(old, namespace)
            if not chosen:
                return {"memories": 0, "leaves": 0, "file": None}
            parts: list[pa.Table] = []

            def strip(table: pa.Table) -> pa.Table | None:
                mask = rows_of(table, chosen)
                if not mask.any():
                    return None
                stripped, records = strip_content(table, mask)
                parts.append(records)
                return stripped

            dropped = self._rewrite_segments(strip)
            name = self._next_file("archive")
            records = pa.concat_tables(parts)
            write_segment(self.path / name, records)
            self._manifest.archives.append({"file": name, "rows": records.num_rows})
            self._commit_rewrite(dropped)
            self._archived.update(dict.fromkeys(chosen, name))
            for tree, leaf in leaves:
                tree.archived[leaf] = True
            for ti in self._trees.values():
                ti.dirty = True  # the archived marks are saved with the trees
            return {"memories": len(chosen), "leaves": len(leaves), "file": name}

    def unarchive(self, ids: Iterable[str] | None = None) -> int:
        """Put archived content back (all archived memories when `ids` is None); returns how many."""
        with self._lock:
            self._check_writable()
            which = set(self._archived) if ids is None else set(ids)
            unknown = sorted(which - set(self._archived))
            if unknown:
                raise StoreError(f"not archived: {unknown[:5]}")
            if not which or self.path is None:
                return 0
            self.checkpoint()
            files = sorted({self._archived[i] for i in which})
            back = pa.concat_tables([read_arrow(self.path / f) for f in files])
            back = back.filter(pa.array(rows_of(back, which)))

            def put_back(table: pa.Table) -> pa.Table | None:
                restored, n = restore_content(table, back)
                return restored if n else None

            dropped = self._rewrite_segments(put_back)
            entries = []
            for e in self._manifest.archives:
                if e["file"] not in files:
                    entries.append(e)
                    continue
                table = read_arrow(self.path / e["file"])
                keep = table.filter(pa.array(~rows_of(table, which)))
                dropped.append(e["file"])
                if keep.num_rows:
                    new = self._next_file("archive")
                    write_segment(self.path / new, keep)
                    entries.append({"file": new, "rows": keep.num_rows})
                    for mid in set(keep.column("id").to_pylist()):
                        self._archived[mid] = new
            self._manifest.archives = entries
            self._commit_rewrite(dropped)
            for mid in which:
                del self._archived[mid]
            for ti in self._trees.values():  # leaves are archived only while all they hold is
                ti.dirty = True
                for tree in ti.trees.values():
                    tree.archived[: tree.n_nodes] = False
            return len(which)

    def is_archived(self, id: str) -> bool:
        """True when the memory's content is in an archive file (J7)."""
        with self._lock:
            return id in self._archived

    def _archivable(self, old: set[str], namespace: str | None) -> tuple[set[str], list[tuple[Any, int]]]:
        """The old memories to archive: whole old leaves in namespaces with a tree, the rest one by one."""
        main = self.schema[self.schema.main]
        chosen: set[str] = set()
        leaves: list[tuple[Any, int]] = []
        treed: set[str] = set()
        if main.kind == "dense" and self.index_kind == "tree":
            committed = [s for s in self._segments if s.file]
            ti = self._tree_index(main)
            src = ti.sync(committed, self.schema, self._manifest.row_epoch)
            for ns, tree in ti.trees.items():
                if namespace is not None and ns != namespace:
                    continue
                treed.add(ns)
                for leaf in tree.leaves():
                    keys = tree.members[int(leaf)]
                    seg_of, row = src.locate(keys)
                    ids = {committed[int(a)].ids[int(b)] for a, b in zip(seg_of, row)}
                    if ids and all(i in old or i in self._archived for i in ids):  # the whole leaf is old
                        chosen |= ids & old
                        leaves.append((tree, int(leaf)))
        for mid in old:
            si, r = _split(self._index[mid])
            if self._segments[si].namespace(r) not in treed:
                chosen.add(mid)
        return chosen, leaves

    def _rewrite_segments(self, change: Any) -> list[str]:
        """Replace each committed segment `change(table)` alters (same rows, same order: keys and
        trees stay valid) by a new file; returns the replaced files (commit with _commit_rewrite)."""
        assert self.path is not None
        dropped = []
        for i, seg in enumerate(self._segments):
            new_table = change(seg.table) if seg.file else None
            if new_table is None:
                continue
            name = self._next_file("seg")
            write_segment(self.path / name, new_table)
            new = read_segment(self.path / name)
            new.sys_end = seg.sys_end.copy()
            dropped.append(seg.file)
            self._segments[i] = new
            self._generation += 1
        return [d for d in dropped if d]

    def _commit_rewrite(self, dropped: list[str]) -> None:
        assert self.path is not None
        self._manifest.segments = [{"file": s.file, "rows": len(s)} for s in self._segments if s.file]
        write_manifest(self.path, self._manifest)  # committed: the replaced files are unlisted
        for name in dropped:
            (self.path / name).unlink(missing_ok=True)

    def export(self, path: str | Path, *, namespace: str | None = None) -> int:
        """Write current memories (forgotten ones included, marked) to `.jsonl` or `.arrow`.

        Archived memories are written with their text (read back from the archive). JSONL holds the records (any tool reads it; vectors are re-made on import). Arrow holds
        records and every space's vectors, in the segment layout. Returns the count written.
        """
        out = Path(path)
        if out.suffix not in (".jsonl", ".arrow"):
            raise ValueError(f"export path must end in .jsonl or .arrow, got {out.name!r}")
        with self._lock:
            self._check_open()
            locs = sorted(
                (si, row) for mid, (si, row) in self._locations()
                if namespace is None or self._segments[si].namespace(row) == namespace
            )
            tables = [self._segments[si].table.slice(row, 1) for si, row in locs]
            table = pa.concat_tables(tables) if tables else self._table_schema.empty_table()
            archived = {self._archived[i] for i in table.column("id").to_pylist() if i in self._archived}
            if archived and self.path is not None:  # an export carries the text, wherever it lives now
                texts = pa.concat_tables([read_arrow(self.path / f) for f in sorted(archived)])
                table, _ = restore_content(table, texts)
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
        return len(locs)

    def import_(self, path: str | Path) -> list[str]:
        """Add the memories of an `export` file (`.jsonl` or `.arrow`) as new memories (version 1).

        Arrow files written with this store's spaces bring their vectors; JSONL records are
        embedded again. Ids must not exist here yet.
        """
        src = Path(path)
        if src.suffix == ".arrow":
            table = read_segment(src).table
            memories = table_to_memories(table)
            same = all(column_name(sp) in table.column_names for sp in self.schema)
            vecs: list[dict[str, Any]] = [{} for _ in memories]
            if same:
                for sp in self.schema:
                    batch = from_arrow(sp, table.column(column_name(sp)))
                    for i in range(len(memories)):
                        vecs[i][sp.name] = take(batch, [i])
            records = [_import_record(m, v) for m, v in zip(memories, vecs)]
        elif src.suffix == ".jsonl":
            records = []
            with builtins.open(src, encoding="utf-8") as fh:
                for line_no, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except ValueError as exc:
                        raise InvalidMemory(f"{src.name} line {line_no}: not JSON ({exc})") from None
                    for key in ("valid_from", "valid_until", "learned_at", "expired_at", "forgotten_at"):
                        if isinstance(rec.get(key), str):
                            rec[key] = datetime.fromisoformat(rec[key])
                    records.append(_import_record(Memory(**rec), {}))
        else:
            raise ValueError(f"import path must end in .jsonl or .arrow, got {src.name!r}")
        return self.add_many(records)

    # ----------------------------------------------------------------------------- reads
    def get(self, id: str, *, include_forgotten: bool = False) -> Memory | None:
        """The current version of a memory, or None (unknown, or forgotten unless asked)."""
        with self._lock:
            loc = self._index.get(id)
            if loc is None:
                return None
            m = self._memory_at(*_split(loc))
            if m.forgotten_at is not None and not include_forgotten:
                return None
            return m

    def __len__(self) -> int:
        """Memories with a current version that is not forgotten."""
        with self._lock:
            return sum(1 for _, (s, r) in self._locations() if not self._segments[s].forgotten[r])

    def search(
        self,
        query: str | np.ndarray | Embedding,
        *,
        namespace: str,
        k: int = 10,
        space: str | None = None,
        strategy: str | None = None,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        types: Iterable[str] | None = None,
        explain: bool = False,
        weights: Mapping[str, float] | None = None,
        query_vector: np.ndarray | None = None,
        recency: bool | None = None,
        stages: Mapping[str, int] | None = None,
    ) -> list[Hit]:
        """The k memories of a namespace that best match a query, filtered inside every method by
        time and type (H4).

        Strategies:
        - None: the main dense space through its index (tree or HNSW) when the namespace has one,
          else an exact scan; "exact", "tree", "hnsw" force one; "dense_only" (C1) is None's
          behaviour under its C1 name.
        - "bm25": BM25 over the content alone (H1).
        - "hybrid" (H3): dense + BM25 + 2-hop graph expansion fused by weighted RRF.
        - "multi_space" (C1): hybrid plus the enhancer spaces, routed by the query's intent and
          the strong/weak main-match rule (C2).
        - "pipeline" (C1): sparse recall -> dense -> RRF -> topic filter (when topics exist) ->
          MaxSim rerank; stage sizes in `stages` ("sparse", "dense", "fused", "topics").

        `as_of` (valid time): memories true at that time. `known_at` (system time): what the store
        believed then, older versions included. Neither: current memories only. `types`: only
        memories of these memory_type values. `weights`: RRF weights per method ("vector",
        "bm25", "graph", enhancer space names). `query_vector`: the main space's query vector when
        the caller already has it (the text still feeds BM25 and the other spaces). `recency`:
        apply the C3 recency factors (default on for multi_space and pipeline). `explain`: each hit
        carries why it ranked (fused score, methods, ranks, scores).
        """
        from .hybrid import DENSE_STRATEGIES, FUSED_STRATEGIES, run_fused

        if strategy not in DENSE_STRATEGIES and strategy not in FUSED_STRATEGIES:
            raise ValueError(f"strategy must be one of {sorted(s for s in DENSE_STRATEGIES if s)} or "
                             f"{sorted(FUSED_STRATEGIES)} (or None), got {strategy!r}")
        k = int(k)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not isinstance(namespace, str) or not namespace:
            raise ValueError(f"namespace must be a non-empty string, got {namespace!r}")
        type_set = None
        if types is not None:
            if isinstance(types, str):
                types = [types]
            type_set = frozenset(types)
            if not type_set or not all(isinstance(x, str) and x for x in type_set):
                raise ValueError(f"types must be a non-empty list of memory_type names, got {types!r}")
        sp = self.schema[space or self.schema.main]
        as_of_us = _micros(as_utc("as_of", as_of)) if as_of is not None else None  # type: ignore[arg-type]
        known_us = _micros(as_utc("known_at", known_at)) if known_at is not None else None  # type: ignore[arg-type]
        if strategy in FUSED_STRATEGIES:
            return run_fused(self, strategy, query, namespace=namespace, k=k, main=sp, as_of_us=as_of_us,
                             known_us=known_us, types=type_set, explain=explain, weights=weights,
                             query_vector=query_vector, recency=recency, stages=stages)
        qv = sp.check(query_vector, 1) if query_vector is not None else self._query_vector(sp, query)
        with self._lock:
            self._check_open()
            found, info = self._dense_found(sp, qv, namespace, k, known_us, as_of_us, strategy, type_set)
            memories = self._memories_at([(si, row) for _, si, row in found])
            hits = []
            for (score, si, row), m in zip(found, memories):
                why = None
                if explain:
                    why = {"space": sp.name, "metric": sp.metric, "segment": si, "row": row,
                           "strategy": info["index"] if info is not None else "exact"}
                    if info is not None:
                        why["tree"] = info
                hits.append(Hit(m.id, float(score), m, why, m.id in self._archived))
            return hits

    def _when(self, known_us: int | None, as_of_us: int | None) -> tuple[int | None, bool]:
        """(valid time to filter on, whether it is the clock's now) for a query's time options."""
        now_us = _micros(utc_now())
        t = as_of_us if as_of_us is not None else (now_us if known_us is None else None)
        return t, as_of_us is None

    def _dense_found(self, sp: Space, qv: Any, namespace: str, k: int, known_us: int | None,
                     as_of_us: int | None, strategy: str | None,
                     types: frozenset[str] | None) -> tuple[list[tuple[float, int, int]], dict[str, Any] | None]:
        """The k best (score, segment, row) of one space: its index when it has one (tree or HNSW,
        plus hot rows and the WAL scanned exactly), else an exact scan. Caller holds the lock."""
        t, at_now = self._when(known_us, as_of_us)
        found: list[tuple[float, int, int]] = []
        tree_info: dict[str, Any] | None = None
        exact_from = 0  # segments from here on are scanned exactly
        kind = strategy if strategy in ("tree", "hnsw") else self.index_kind if strategy in (None, "dense_only") else "none"
        if kind in ("tree", "hnsw") and (sp.kind != "dense" or sp.metric != "cosine"):
            if strategy in ("tree", "hnsw"):
                raise ValueError(f"strategy {strategy!r} needs a dense cosine space; {sp.name!r} is "
                                 f"{sp.kind} with metric {sp.metric!r}: use strategy='exact'")
            kind = "none"  # indexes rank by cosine: other metrics are scanned exactly
        if kind != "none":
            tree_info = self._index_search(kind, sp, namespace, qv, k, known_us, t, at_now,
                                           strategy in ("tree", "hnsw"), found, types)
            if tree_info is not None:
                exact_from = tree_info.pop("_committed")
        for si in range(exact_from, len(self._segments)):
            seg = self._segments[si]
            mask = self._row_filter(seg, namespace, known_us, t, types=types)
            if mask is None:
                continue
            for row, score in _scan(sp, qv, seg.vectors(self.schema, sp.name), mask, k):
                found.append((score, si, row))
        return sorted(set(found), key=lambda x: (-x[0], x[1], x[2]))[:k], tree_info

    # ----------------------------------------------------------------------------- fused methods
    def _lexical_space(self) -> Space | None:
        """The sparse space BM25 indexes: the first sparse space with an embedder (its term counts)."""
        for sp in self.schema:
            if sp.kind == "sparse" and sp.name in self.embedders:
                found: Space = sp
                return found
        return None

    def _query_terms(self, sp: Space, text: str) -> tuple[np.ndarray, np.ndarray]:
        from .hybrid import query_terms

        sb = self.embedders[sp.name].embed([text])
        assert isinstance(sb, SparseBatch)
        return query_terms(sb)

    def _bm25_index(self, sp: Space) -> StoreBm25:
        bi = self._bm25.get(sp.name)
        if bi is None:
            bi = self._bm25[sp.name] = StoreBm25(sp.name)
            if self.path is not None:
                committed = sum(len(s) for s in self._segments if s.file)
                bi.load(self.path, self._manifest.row_epoch, committed)
        return bi

    def _bm25_found(self, terms: tuple[np.ndarray, np.ndarray], namespace: str, n: int, known_us: int | None,
                    t: int | None, at_now: bool, types: frozenset[str] | None) -> list[tuple[tuple[int, int], float]]:
        """BM25's n best ((segment, row), score) in a namespace, filtered inside the scan (H1, H4)."""
        sp = self._lexical_space()
        if sp is None:
            raise ValueError("this store has no sparse lexical space for BM25")
        keys, scores = self._bm25_keys(terms, namespace, n, known_us, t, at_now, types)
        return list(zip(self._locs(keys), scores.tolist()))

    def _bm25_keys(self, terms: tuple[np.ndarray, np.ndarray], namespace: str, n: int, known_us: int | None,
                   t: int | None, at_now: bool, types: frozenset[str] | None,
                   sorted_k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """BM25's n best as (global keys, scores) arrays: keys number rows across all segments
        (best first up to `sorted_k`, see `Bm25Index.search`)."""
        if self._lexical_space() is None:
            raise ValueError("this store has no sparse lexical space for BM25")
        ix = self._bm25_namespace(namespace)
        if ix is None or len(terms[0]) == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        mask = self._key_mask(self._segments, namespace, known_us, t, at_now, types)
        return ix.search(terms[0], terms[1], n, allowed=mask, sorted_k=sorted_k)

    def _sparse_rows(self, keys: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """The lexical space's (term ids, tf) row of each global key (BM25 feedback reads them)."""
        sp = self._lexical_space()
        assert sp is not None
        out = []
        for si, row in self._locs(np.asarray(keys, np.int64)):
            sb = self._segments[si].vectors(self.schema, sp.name)
            assert isinstance(sb, SparseBatch)
            out.append(sb.row(row))
        return out

    def _bm25_namespace(self, namespace: str) -> Bm25Index | None:
        """A namespace's BM25 index, brought up to date with every row (None without a lexical
        space or without documents in that namespace). The caller holds the lock."""
        sp = self._lexical_space()
        if sp is None:
            return None
        bi = self._bm25_index(sp)
        bi.sync(self._segments, self.schema, self._manifest.row_epoch)
        return bi.indexes.get(namespace)

    def _bases(self) -> np.ndarray:
        """Where each segment starts in the global key space (and the total), cached per generation."""
        if self._bases_cache is None or self._bases_cache[0] != (self._generation, len(self._segments)):
            b = np.zeros(len(self._segments) + 1, np.int64)
            np.cumsum([len(sg) for sg in self._segments], out=b[1:])
            self._bases_cache = ((self._generation, len(self._segments)), b)
        return self._bases_cache[1]

    def _locs(self, keys: np.ndarray) -> list[tuple[int, int]]:
        """(segment, row) of global keys."""
        bases = self._bases()
        seg = np.searchsorted(bases, keys, side="right") - 1
        return list(zip(seg.tolist(), (keys - bases[seg]).tolist()))

    def _keys(self, locs: list[tuple[int, int]]) -> np.ndarray:
        """Global keys of (segment, row) locations."""
        if not locs:
            return np.empty(0, np.int64)
        a = np.asarray(locs, np.int64)
        out: np.ndarray = self._bases()[a[:, 0]] + a[:, 1]
        return out

    def _dense_keys(self, sp: Space, qv: Any, keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact scores of one dense space for the given global keys only (any order, repeats
        allowed), n best first, as arrays: the pipeline's dense stage over thousands of candidates,
        one native call across all segments (both cores when there are thousands)."""
        mats = [np.asarray(seg.vectors(self.schema, sp.name)) for seg in self._segments]
        got = kernels.rescore_keys(qv, mats, keys, n, _dense_metric(sp))
        return got.indices, got.scores

    def _graph_found(self, seeds: list[tuple[int, int]], namespace: str, n: int, known_us: int | None,
                     t: int | None, types: frozenset[str] | None) -> list[tuple[tuple[int, int], float]]:
        """Memories up to 2 hops from the seeds over live typed edges valid at t (H2), scored by the
        product of edge confidences (x HOP_DECAY for the second hop), best first."""
        from .hybrid import HOP_DECAY

        when = None if t is None else datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=t)
        seed_ids = {self._segments[si].ids[row] for si, row in seeds}
        best: dict[str, float] = {}
        frontier = {mid: 1.0 for mid in seed_ids}
        for hop in range(2):
            nxt: dict[str, float] = {}
            for mid, s in frontier.items():
                for e in self._edges.outgoing(mid) + self._edges.incoming(mid):
                    if when is not None and not e.valid_at(when):
                        continue
                    other = e.dst if e.src == mid else e.src
                    if other == mid:
                        continue  # a seed that is also a neighbour of another seed keeps the vote
                    v = s * e.confidence * (HOP_DECAY if hop == 1 else 1.0)
                    if v > best.get(other, 0.0):
                        best[other] = v
                        nxt[other] = max(nxt.get(other, 0.0), s * e.confidence)
            frontier = nxt
        out = []
        for mid, score in best.items():
            loc = self._index.get(mid)
            if loc is None:
                continue
            si, row = loc >> 32, loc & _ROW
            ok = self._row_filter(self._segments[si], namespace, known_us, t, rows=np.array([row]), types=types)
            if ok is not None and bool(ok[0]):
                out.append(((si, row), score))
        out.sort(key=lambda x: (-x[1], x[0]))
        return out[:n]

    def _maxsim_locations(self, qv: Any, sp: Space, locs: list[tuple[int, int]],
                          n: int) -> list[tuple[tuple[int, int], float]]:
        """MaxSim of a shortlist spread over segments in one kernel call: the rows' token vectors
        are gathered into one ragged batch (a call per segment cost more than the scoring)."""
        assert isinstance(qv, TokenBatch)
        if qv.tokens.shape[0] == 0:
            return []
        parts = []
        for si, row in locs:
            tb = self._segments[si].vectors(self.schema, sp.name)
            assert isinstance(tb, TokenBatch)
            parts.append(tb.tokens[int(tb.offsets[row]) : int(tb.offsets[row + 1])])
        offsets = np.zeros(len(parts) + 1, np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        tokens = np.ascontiguousarray(np.concatenate(parts), np.float32)
        raw, bad = _core.maxsim(np.ascontiguousarray(qv.tokens, np.float32), tokens, offsets, None, 1)
        if bad >= 0:
            raise ValueError(f"token vectors of {locs[bad]} contain NaN or inf")
        scores = raw / qv.tokens.shape[0]
        order = np.lexsort((np.arange(len(locs)), -scores))[:n]
        return [(locs[i], float(scores[i])) for i in order.tolist()]

    def _turn_map(self, namespace: str) -> dict[tuple[str, int], tuple[int, int]]:
        """(session_id, seq) -> newest location of that turn in a namespace (cached per generation)."""
        cached = self._turn_maps.get(namespace)
        if cached is not None and cached[0] == self._generation:
            return cached[1]
        out: dict[tuple[str, int], tuple[int, int]] = {}
        for si, seg in enumerate(self._segments):
            code = seg.ns_codes.get(namespace)
            if code is None:
                continue
            sess, names, seq = seg.turns()
            rows = np.flatnonzero((seg.ns_index == code) & (sess >= 0) & (seq >= 0))
            for r, c, q in zip(rows.tolist(), sess[rows].tolist(), seq[rows].tolist()):
                out[(names[c], q)] = (si, r)
        if len(self._turn_maps) > 64:
            self._turn_maps.clear()
        self._turn_maps[namespace] = (self._generation, out)
        return out

    def _neighbours_found(self, seeds: list[tuple[int, int]], namespace: str, n: int, known_us: int | None,
                          t: int | None, types: frozenset[str] | None) -> list[tuple[tuple[int, int], float]]:
        """The turns just after and just before each seed in its session (same session_id, seq +- 1),
        in seed order, the reply first: an answer often sits in the turn after the one that
        matched the question's words. Scored 1 / seed rank."""
        turns = self._turn_map(namespace)
        out: list[tuple[tuple[int, int], float]] = []
        seen: set[tuple[int, int]] = set()  # a seed next to another seed gets the vote too
        for rank, (si, row) in enumerate(seeds, start=1):
            sess, names, seq = self._segments[si].turns()
            if sess[row] < 0 or seq[row] < 0:
                continue
            for step in (1, -1):
                loc = turns.get((names[int(sess[row])], int(seq[row]) + step))
                if loc is None or loc in seen:
                    continue
                ok = self._row_filter(self._segments[loc[0]], namespace, known_us, t, rows=np.array([loc[1]]),
                                      types=types)
                if ok is not None and bool(ok[0]):
                    seen.add(loc)
                    out.append((loc, 1.0 / rank))
        return out[:n]

    def _scan_locations(self, sp: Space, qv: Any, locs: list[tuple[int, int]], n: int) -> list[tuple[tuple[int, int], float]]:
        """Exact scores of one space for given locations only, n best first (rerank, restricted scans)."""
        if sp.kind == "multivector" and locs:
            return self._maxsim_locations(qv, sp, locs, n)
        by_seg: dict[int, list[int]] = {}
        for si, row in locs:
            by_seg.setdefault(si, []).append(row)
        found: list[tuple[tuple[int, int], float]] = []
        for si, rows in by_seg.items():
            seg = self._segments[si]
            mask = np.zeros(len(seg), bool)
            mask[rows] = True
            found += [((si, r), s) for r, s in _scan(sp, qv, seg.vectors(self.schema, sp.name), mask, n)]
        found.sort(key=lambda x: (-x[1], x[0]))
        return found[:n]

    def _row_filter(self, seg: Segment, namespace: str, known_us: int | None, t: int | None,
                    rows: np.ndarray | None = None, types: frozenset[str] | None = None) -> np.ndarray | None:
        """Which rows (all, or `rows`) a query may see: its namespace, alive then, valid then,
        of one of `types` when given."""
        code = seg.ns_codes.get(namespace)
        if code is None:
            return None  # the namespace has no row in this segment

        def pick(a: np.ndarray) -> np.ndarray:
            return a if rows is None else a[rows]

        mask = pick(seg.ns_index) == code
        sys_end = pick(seg.sys_end)
        if known_us is None:
            mask &= (sys_end == NEVER) & ~pick(seg.forgotten)
        else:
            mask &= (pick(seg.learned_at) <= known_us) & (known_us < sys_end)
        if t is not None:
            mask &= (pick(seg.valid_from) <= t) & (t < pick(seg.valid_until))
        if types is not None:
            mask &= pick(seg.type_mask(types))
        return mask if rows is not None or mask.any() else None

    def _index_search(self, kind: str, sp: Space, namespace: str, qv: Any, k: int, known_us: int | None,
                      t: int | None, at_now: bool, forced: bool,
                      found: list[tuple[float, int, int]],
                      types: frozenset[str] | None = None) -> dict[str, Any] | None:
        """Search the namespace's index ("tree": J4, "hnsw": usearch) into `found`; None when
        exact scan should answer instead (a small namespace, or no index for it yet).

        Indexes cover committed rows; the caller scans the WAL's rows exactly, and the newest
        HOT_ROWS keys of the namespace are scanned here directly (J5), so a memory added a moment
        ago is found whatever leaf or graph neighbourhood it joined.
        """
        committed = [s for s in self._segments if s.file]
        if not forced and sum(s.ns_count(namespace) for s in committed) < TREE_MIN_ROWS:
            return None
        ti: TreeIndex | HnswIndex = self._tree_index(sp) if kind == "tree" else self._hnsw_index(sp)
        src = ti.sync(committed, self.schema, self._manifest.row_epoch)
        if namespace not in (ti.trees if isinstance(ti, TreeIndex) else ti.graphs):
            return None  # no index yet (a small namespace): brute force answers

        mask = self._key_mask(committed, namespace, known_us, t, at_now, types)

        def allowed(keys: np.ndarray) -> np.ndarray:
            out: np.ndarray = mask[keys]
            return out

        q = np.asarray(qv, dtype=np.float32).reshape(-1)
        if isinstance(ti, TreeIndex):
            tree = ti.trees[namespace]
            if self.pack_trees and not tree.packed:  # after a build, load or insert: copy once
                tree.pack(src)
            keys, scores, st = tree.search(src, q, k, probe=TREE_PROBE, beam=TREE_BEAM, allowed=mask)
            info: dict[str, Any] = {"e_computations": st.e_computations, "centroids": st.centroids,
                                    "memories": st.memories, "leaves": st.leaves}
        else:
            keys, scores, info = ti.query(namespace, q, k, allowed)
        hot = ti.recent.get(namespace, np.empty(0, np.int64))
        hot = hot[allowed(hot)] if len(hot) else hot
        hk, hs = src.topk(q, hot, k) if len(hot) else (np.empty(0, np.int64), np.empty(0, np.float32))
        seg_i, row_i = src.locate(np.concatenate([keys, hk]))
        found.extend(zip(np.concatenate([scores, hs]).astype(float).tolist(), seg_i.tolist(), row_i.tolist()))
        if "e_computations" in info:
            info["e_computations"] += len(hot)
            info["memories"] += len(hot)
        self._last_tree_stats = {"index": kind, "namespace": namespace, "space": sp.name, **info, "hot_rows": len(hot)}
        return {**self._last_tree_stats, "_committed": len(committed)}

    def _key_mask(self, committed: list[Segment], namespace: str, known_us: int | None, t: int | None,
                  at_now: bool, types: frozenset[str] | None = None) -> np.ndarray:
        """Which keys of `committed` (a prefix of the segments) a query may see (its namespace,
        alive, valid, typed): one bool per key.

        The common query (current memories, valid now) reuses its mask until the store changes or
        the clock passes the next valid_from / valid_until of the namespace; others build theirs.
        """
        now_query = known_us is None and t is not None and at_now  # t is the clock: cacheable
        cache_key = (namespace, len(committed), types)
        cached = self._mask_cache.get(cache_key)
        if now_query and t is not None and cached is not None and cached[0] == self._generation and t < cached[1]:
            return cached[2]
        parts, change = [], NEVER
        for seg in committed:
            m = self._row_filter(seg, namespace, known_us, t, types=types)
            parts.append(m if m is not None else np.zeros(len(seg), bool))
            if now_query and t is not None and namespace in seg.ns_codes:  # even when no row passes now
                mine = seg.ns_index == seg.ns_codes[namespace]
                for edge in (seg.valid_from[mine], seg.valid_until[mine]):
                    later = edge[edge > t]
                    if len(later):
                        change = min(change, int(later.min()))
        mask = np.concatenate(parts) if parts else np.zeros(0, bool)
        if now_query and t is not None:
            self._mask_cache[cache_key] = (self._generation, change, mask)
        return mask

    def _hnsw_index(self, sp: Space) -> HnswIndex:
        hi = self._hnsw.get(sp.name)
        if hi is None:
            hi = self._hnsw[sp.name] = HnswIndex(sp.name, sp.dim)
            if self.path is not None:
                committed = sum(len(s) for s in self._segments if s.file)
                hi.load(self.path, self._manifest.row_epoch, committed)
        return hi

    def _tree_index(self, sp: Space) -> TreeIndex:
        ti = self._trees.get(sp.name)
        if ti is None:
            ti = self._trees[sp.name] = TreeIndex(sp.name, sp.dim)
            if self.path is not None:
                committed = sum(len(s) for s in self._segments if s.file)
                ti.load(self.path, self._manifest.row_epoch, committed)
        return ti

    def _save_trees(self) -> None:
        """Bring the trees up to the committed rows and write them (derived files, writer only)."""
        if self.path is None or self.read_only:
            return
        committed = [s for s in self._segments if s.file]
        indexes: list[TreeIndex | HnswIndex] = [*self._trees.values(), *self._hnsw.values()]
        for ti in indexes:
            ti.sync(committed, self.schema, self._manifest.row_epoch)
            if ti.dirty:
                ti.save(self.path)
        if len(committed) == len(self._segments):  # BM25 keys span every segment: save when all are files
            for bi in self._bm25.values():
                bi.sync(committed, self.schema, self._manifest.row_epoch)
                if bi.dirty:
                    bi.save(self.path)

    def build_index(self, *, space: str | None = None) -> dict[str, int]:
        """Build (or bring up to date) the index of every namespace with TREE_MIN_ROWS or more
        committed memories in a dense space, and the BM25 index of every namespace, and save them. Indexes are otherwise built by the
        first search that needs one; call this after a bulk load so no query pays for it.
        Returns namespace -> memories indexed."""
        sp = self.schema[space or self.schema.main]
        with self._lock:
            self._check_open()
            if not self.read_only:
                self.checkpoint()
            lex = self._lexical_space()
            if lex is not None and space is None:  # BM25 of every namespace, saved with the trees
                bi = self._bm25_index(lex)
                bi.sync(self._segments, self.schema, self._manifest.row_epoch)
                if self.path is not None and not self.read_only and bi.dirty and all(s.file for s in self._segments):
                    bi.save(self.path)
            if sp.kind != "dense" or self.index_kind == "none":
                return {}
            committed = [s for s in self._segments if s.file]
            ti: TreeIndex | HnswIndex = self._tree_index(sp) if self.index_kind == "tree" else self._hnsw_index(sp)
            ti.sync(committed, self.schema, self._manifest.row_epoch)
            if self.path is not None and not self.read_only and ti.dirty:
                ti.save(self.path)
            if isinstance(ti, TreeIndex):
                return {ns: len(t) for ns, t in ti.trees.items()}
            return {ns: len(g) for ns, g in ti.graphs.items()}

    def tree_recall(self, namespace: str, *, space: str | None = None, sample: int = 50, k: int = 10) -> float:
        """Recall@k of the namespace's tree against exact search, on `sample` of its own vectors
        used as queries (J6). NaN when the namespace has no tree."""
        sp = self.schema[space or self.schema.main]
        with self._lock:
            committed = [s for s in self._segments if s.file]
            ti = self._tree_index(sp)
            src = ti.sync(committed, self.schema, self._manifest.row_epoch)
            tree = ti.trees.get(namespace)
            if tree is None:
                return float("nan")
            keys = np.sort(np.concatenate([tree.members[int(x)] for x in tree.leaves()]))
            rng = np.random.default_rng(0)
            qs = src.take(rng.choice(keys, min(sample, len(keys)), replace=False))
            hit = 0
            for q in qs:
                want, _ = src.topk(q, keys, k)
                got, _, _ = tree.search(src, q, k, probe=TREE_PROBE, beam=TREE_BEAM)
                hit += len(set(want.tolist()) & set(got.tolist()))
            return hit / (k * len(qs))

    def stats(self) -> dict[str, Any]:
        """Counts and layout: memories, versions, segments, WAL size, namespaces, spaces."""
        with self._lock:
            namespaces: dict[str, int] = {}
            for _, (s, r) in self._locations():
                ns = self._segments[s].namespace(r)
                namespaces[ns] = namespaces.get(ns, 0) + 1
            return {
                "memories": len(self._index),
                "versions": sum(len(s) for s in self._segments),
                "segments": sum(1 for s in self._segments if s.file),
                "wal_segments": sum(1 for s in self._segments if not s.file),
                "wal_bytes": self._wal.size() if self._wal else 0,
                "namespaces": namespaces,
                "edges": len(self._edges),
                "spaces": [s.name for s in self.schema],
                "path": str(self.path) if self.path else None,
                "trees": {
                    name: {ns: {"levels": t.height, "nodes_per_level": t.nodes_per_level(), "memories": len(t)}
                           for ns, t in ti.trees.items()}
                    for name, ti in self._trees.items()
                },
                "last_tree_search": dict(self._last_tree_stats),
                "bm25": {  # indexes loaded or built so far (searches and build_index build them)
                    name: {ns: {"documents": len(ix), "postings": ix.postings, "chunks": len(ix.chunks)}
                           for ns, ix in bi.indexes.items()}
                    for name, bi in self._bm25.items()
                },
            }

    # ----------------------------------------------------------------------------- dedup (S8)
    def _find_duplicates(self, batch: Intake, vectors: Mapping[str, Embedding]) -> list[DedupEvent]:
        """Duplicates of each new memory among current memories of its namespace, then within the batch."""
        main = self.schema[self.schema.main]
        q = np.asarray(vectors[main.name], dtype=np.float32)
        action = "merged" if self.dedup == "merge" else "skipped"
        events: dict[int, DedupEvent] = {}
        by_ns: dict[str, list[int]] = {}
        for i, ns in enumerate(batch.namespaces):
            by_ns.setdefault(ns, []).append(i)
        for ns, rows in by_ns.items():
            best: dict[int, tuple[float, int, int]] = {}
            for si, seg in enumerate(self._segments):
                code = seg.ns_codes.get(ns)
                if code is None:
                    continue
                mask = (seg.ns_index == code) & (seg.sys_end == NEVER) & ~seg.forgotten
                if not mask.any():
                    continue
                idx, sc = kernels.topk(q[rows], np.asarray(seg.vectors(self.schema, main.name)), 1, "cosine",
                                       mask=mask, threads=1)
                for j, r in enumerate(rows):
                    if idx.shape[1] and sc[j, 0] > self.dedup_threshold and sc[j, 0] > best.get(r, (-2.0, 0, 0))[0]:
                        best[r] = (float(sc[j, 0]), si, int(idx[j, 0]))
            for r, (sim, si, row) in best.items():
                old = self._memory_at(si, row)
                kind = "exact" if old.content == batch.contents[r] else "near"
                events[r] = DedupEvent(r, old.id, kind, sim, action)  # type: ignore[arg-type]
        inside = within_batch(q, batch.namespaces, self.dedup_threshold)
        for j, (i, sim) in inside.items():
            if j in events:
                continue
            first = events[i].duplicate_of if i in events else batch.ids[i]
            kind = "exact" if batch.contents[i] == batch.contents[j] else "near"
            events[j] = DedupEvent(j, first, kind, sim, action)  # type: ignore[arg-type]
        return [events[k] for k in sorted(events)]

    def _merge_duplicates(self, events: list[DedupEvent]) -> None:
        """Record merged copies on the memories they duplicate (one new version each)."""
        counts: dict[str, int] = {}
        for e in events:
            counts[e.duplicate_of] = counts.get(e.duplicate_of, 0) + 1
        for mid, n in counts.items():
            old = self._current(mid)
            meta = dict(old.metadata)
            meta["merged_duplicates"] = int(meta.get("merged_duplicates", 0)) + n
            self._rewrite(old, metadata=meta, confidence=old.confidence)

    # ----------------------------------------------------------------------------- internals
    def _remove_debris(self) -> None:
        """Delete files a crash left behind: unlisted segments and logs, temp files."""
        assert self.path is not None
        keep = {e["file"] for e in self._manifest.segments + self._manifest.edges + self._manifest.archives}
        keep |= {self._manifest.wal, "manifest.json", "LOCK"}
        for p in self.path.iterdir():
            if p.name in keep or not p.is_file():
                continue
            if p.suffix == ".tmp" or (p.name.startswith(("seg-", "wal-", "edges-", "archive-")) and p.suffix in (".arrow", ".log")):
                p.unlink(missing_ok=True)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise StoreError("the store is open read-only")

    def _current(self, id: str, include_forgotten: bool = False) -> Memory:
        self._check_open()
        if id in self._archived:
            raise StoreError(f"memory {id!r} is archived (its content is in {self._archived[id]}); unarchive it first")
        m = self.get(id, include_forgotten=include_forgotten)
        if m is None:
            raise StoreError(f"no memory with id {id!r}" + ("" if include_forgotten else " (or it is forgotten)"))
        return m

    def _memories_at(self, locs: list[tuple[int, int]]) -> list[Memory]:
        """Memories at (segment, row) locations, in order (each segment reads and keeps its rows)."""
        return [self._segments[si].memory_at(row) for si, row in locs]

    def _memory_at(self, si: int, row: int) -> Memory:
        return self._segments[si].memory_at(row)

    def _row_vectors(self, id: str) -> dict[str, Embedding]:
        return {s.name: self._row_vector(id, s.name) for s in self.schema}

    def _row_vector(self, id: str, space: str) -> Embedding:
        """One space's stored vector of the current version of a memory, as a batch of one."""
        si, row = _split(self._index[id])
        return take(self._segments[si].vectors(self.schema, space), [row])

    def _rewrite(self, old: Memory, **changes: Any) -> Memory:
        new = validate_memory(old.with_changes(version=old.version + 1, learned_at=utc_now(), **changes))
        self._write([new], self._vectors_for([new.content], [self._row_vectors(old.id)]))
        return new

    def _vectors_for(self, contents: Sequence[str], given: Sequence[Mapping[str, Any]]) -> dict[str, Embedding]:
        """Every space's vectors for the batch: the caller's where given, else embedded."""
        out: dict[str, Embedding] = {}
        for sp in self.schema:
            have = [g.get(sp.name) for g in given]
            if all(h is not None for h in have):
                width = sp.dim if sp.kind == "dense" else sp.dim // 8
                arrays = [np.asarray(h) for h in have]
                if sp.kind in ("dense", "binary") and all(a.shape in ((width,), (1, width)) for a in arrays):
                    out[sp.name] = sp.check(np.stack([a.reshape(width) for a in arrays]), len(have))
                    continue  # one stacked array, checked once; odd shapes go row by row below
                out[sp.name] = concat([sp.check(h, 1) for h in have])
                continue
            emb = self.embedders.get(sp.name)
            if emb is None:
                raise SpaceError(f"no vector given for space {sp.name!r} and no embedder for it")
            if all(h is None for h in have):  # the common case: one batched embed, no reshuffling
                base = _derived_from(emb, self.embedders, out)
                if base:
                    made = emb.project(out[base])  # type: ignore[attr-defined]
                else:
                    made = _embed_in_chunks(emb, list(contents), sp.name)
                out[sp.name] = sp.check(made, len(contents))
                continue
            todo = [i for i, h in enumerate(have) if h is None]
            made = sp.check(emb.embed([contents[i] for i in todo]), len(todo))
            parts_by_row: list[Embedding | None] = [None] * len(contents)
            for j, i in enumerate(todo):
                parts_by_row[i] = take(made, [j])
            for i, h in enumerate(have):
                if h is not None:
                    parts_by_row[i] = sp.check(h, 1)
            out[sp.name] = concat([p for p in parts_by_row if p is not None])
        return self.schema.check_all(out, len(contents))

    def _write(self, memories: list[Memory], vectors: Mapping[str, Embedding]) -> None:
        self._write_table(memories_to_table(memories), vectors)

    def _write_table(self, table: pa.Table, vectors: Mapping[str, Embedding]) -> None:
        """Append rows (MEMORY_SCHEMA) with their vectors: one WAL frame, then an in-memory segment."""
        self._check_writable()
        cols = {column_name(sp): to_arrow(sp, vectors[sp.name]) for sp in self.schema}
        for name, arr in cols.items():
            table = table.append_column(self._table_schema.field(name), arr)
        table = table.replace_schema_metadata(self._table_schema.metadata)
        if self._wal is not None and self.path is not None and table.num_rows >= CHECKPOINT_ROWS:
            # A batch this large would be checkpointed at once: write it straight to a segment
            # file (data written once, not twice), acknowledged when the manifest lists it.
            self.checkpoint()  # earlier rows first, so file order stays version order
            name = self._next_file("seg")
            write_segment(self.path / name, table)
            seg = read_segment(self.path / name)
            self._manifest.segments.append({"file": name, "rows": len(seg)})
            write_manifest(self.path, self._manifest)  # acknowledged from here on
            self._attach(seg)
            return
        if self._wal is not None:
            self._wal.append(table)  # acknowledged from here on
        self._attach(Segment(table))
        if self._wal is not None and sum(len(s) for s in self._segments if s.file is None) >= CHECKPOINT_ROWS:
            self.checkpoint()

    def _write_edges(self, edges: list[Edge]) -> None:
        """Append edge rows: one WAL frame (acknowledged), then the live set."""
        self._check_writable()
        table = edges_to_table(edges)
        if self._wal is not None:
            self._wal.append(table)
        self._edges_pending.append(table)
        self._edges.apply(edges)

    def _replay(self, table: pa.Table) -> None:
        """One recovered WAL frame: memory rows or edge rows."""
        if is_edge_table(table):
            self._edges_pending.append(table)
            self._edges.apply(table_to_edges(table))
        else:
            self._attach(Segment(table))

    def _next_file(self, kind: str) -> str:
        """A fresh file name (`seg-000007.arrow`, `edges-000008.arrow`); numbers never repeat."""
        name = f"{kind}-{self._manifest.next_segment:06d}.arrow"
        self._manifest.next_segment += 1
        return name

    def _live(self, id: str) -> bool:
        loc = self._index.get(id)
        return loc is not None and not self._segments[loc >> 32].forgotten[loc & _ROW]

    @property
    def _index(self) -> dict[str, int]:
        """The id index, built on first use after an open (segments in order: newest row wins)."""
        if self._index_map is None:
            index: dict[str, int] = {}
            for si, seg in enumerate(self._segments):
                index.update(zip(seg.ids, range(si << 32, (si << 32) + len(seg))))
            self._index_map = index
        return self._index_map

    @_index.setter
    def _index(self, value: dict[str, int]) -> None:
        self._index_map = value

    def _close_versions_at_open(self) -> None:
        """sys_end of every row a later version replaced, without the full id index: only rows of
        ids that have a version > 1 somewhere can be replaced (a first version never follows
        another row of its id: ids are unique at add, and purge removes every row of an id)."""
        replaced: set[str] = set()
        for seg in self._segments:
            later = np.flatnonzero(np.asarray(seg.table.column("version").to_numpy()) > 1)
            replaced.update(seg.ids[int(r)] for r in later)
        if not replaced:
            return
        last: dict[str, int] = {}
        for si, seg in enumerate(self._segments):
            for row, mid in enumerate(seg.ids):
                if mid in replaced:
                    prev = last.get(mid)
                    if prev is not None:
                        self._close_version(prev, int(seg.learned_at[row]))
                    last[mid] = si << 32 | row

    def _attach(self, seg: Segment) -> None:
        self._generation += 1
        if self._opening:
            self._segments.append(seg)
            return
        index = self._index  # built before the new rows join, so they find their earlier versions
        si = len(self._segments)
        self._segments.append(seg)
        self._index_rows(si, index)

    def _index_rows(self, si: int, index: dict[str, int]) -> None:
        """Point the id index at segment si's rows; a row replacing an earlier version closes
        that version's system time (sys_end) where the new one was learned."""
        seg = self._segments[si]
        ids = seg.ids
        uniq = set(ids)
        if len(uniq) == len(ids):  # no id twice in this segment: bulk paths (a 1M reopen)
            # isdisjoint walks this segment's ids only; `index.keys() & ids` would copy the whole
            # index into a set for every segment
            older = [] if index.keys().isdisjoint(uniq) else [mid for mid in uniq if mid in index]
            if older:
                row_of = {mid: r for r, mid in enumerate(ids)}
                for mid in older:
                    self._close_version(index[mid], int(seg.learned_at[row_of[mid]]))
            index.update(zip(ids, range(si << 32, (si << 32) + len(ids))))
            return
        for row, mid in enumerate(ids):
            prev = index.get(mid)
            if prev is not None:
                self._close_version(prev, int(seg.learned_at[row]))
            index[mid] = si << 32 | row

    def _close_version(self, loc: int, at: int) -> None:
        old, row = self._segments[loc >> 32], loc & _ROW
        old.sys_end[row] = min(int(old.sys_end[row]), at)

    def _locations(self) -> Iterator[tuple[str, tuple[int, int]]]:
        """(id, (segment, row)) of every memory's newest version."""
        for mid, loc in self._index.items():
            yield mid, (loc >> 32, loc & _ROW)

    def _reindex_from(self, first: int) -> None:
        """Rebuild index entries pointing at segments >= first (after they were merged)."""
        self._generation += 1
        for mid, loc in list(self._index.items()):
            if loc >> 32 >= first:
                del self._index[mid]
        seg = self._segments[first]
        for row, mid in enumerate(seg.ids):
            self._index[mid] = first << 32 | row

    def _query_vector(self, sp: Space, query: Any) -> Any:
        if isinstance(query, str):
            if not query.strip():
                raise ValueError("query must be a non-empty string or a vector")
            emb = self.embedders.get(sp.name)
            if emb is None:
                raise SpaceError(f"space {sp.name!r} has no embedder: pass the query as a vector")
            return sp.check(emb.embed([query]), 1)
        return sp.check(query, 1)


def _dense_metric(sp: Space) -> kernels.Metric:
    """The kernels' name of a dense space's metric."""
    return "dot" if sp.metric == "dot" else "born" if sp.metric == "born" else "cosine"


def _scan(sp: Space, qv: Any, vecs: Embedding, mask: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(row, score) of the k best allowed rows of one segment, higher score = better."""
    if sp.kind == "dense":
        idx, sc = kernels.topk(np.asarray(qv)[0], np.asarray(vecs), k, _dense_metric(sp), mask=mask, threads=1)
        return list(zip(idx.tolist(), sc.tolist()))
    if sp.kind == "binary":
        idx, dist = kernels.hamming_topk(np.asarray(qv)[0], np.asarray(vecs), k, mask=mask, threads=1)
        return [(r, 1.0 - d / sp.dim) for r, d in zip(idx.tolist(), dist.tolist())]
    if sp.kind == "sparse":
        assert isinstance(qv, SparseBatch) and isinstance(vecs, SparseBatch)
        ids, w = qv.row(0)
        kw = {"weights": vecs.weights, "query_weights": w} if sp.metric == "weighted_jaccard" else {}
        idx, sc = kernels.jaccard_topk(ids, vecs.indptr, vecs.indices, k, mask=mask, threads=1, **kw)
        return list(zip(idx.tolist(), sc.tolist()))
    assert isinstance(qv, TokenBatch) and isinstance(vecs, TokenBatch)
    rows = np.flatnonzero(mask)
    if qv.tokens.shape[0] == 0:
        return []
    # the native call directly: the segment's offsets were checked when it was written, and the
    # public wrapper's O(n) offset check per call cost more than scoring a shortlist
    raw, bad = _core.maxsim(np.ascontiguousarray(qv.tokens, np.float32), vecs.tokens, vecs.offsets,
                            rows.astype(np.int64), 1)
    if bad >= 0:
        raise ValueError(f"token vectors of row {bad} contain NaN or inf")
    scores = raw / qv.tokens.shape[0]
    order = np.lexsort((rows, -scores))[:k]
    return [(int(rows[i]), float(scores[i])) for i in order]


PROGRESS_MIN = 5_000  # texts: below this an embed is quick enough to need no progress bar
EMBED_CHUNK = 2_048


def _embed_in_chunks(emb: Embedder, texts: list[str], space: str) -> Embedding:
    """Embed a long batch in chunks with a progress bar on an interactive terminal (tqdm)."""
    if len(texts) < PROGRESS_MIN:
        return emb.embed(texts)
    import sys

    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm comes with usearch
        return emb.embed(texts)
    parts = []
    with tqdm(total=len(texts), desc=f"embedding {space}", unit="memory", disable=not sys.stderr.isatty()) as bar:
        for a in range(0, len(texts), EMBED_CHUNK):
            chunk = texts[a : a + EMBED_CHUNK]
            parts.append(emb.embed(chunk))
            bar.update(len(chunk))
    return concat(parts)


def _derived_from(emb: Embedder, embedders: Mapping[str, Embedder], done: Mapping[str, Embedding]) -> str | None:
    """The space whose fresh vectors `emb` can project instead of embedding the text again.

    An embedder derived from another (binary HDC codes are sign projections of a dense space)
    exposes `base` and `project`; when that base fills a space already embedded in this batch,
    projecting saves a second pass of the base model.
    """
    base = getattr(emb, "base", None)
    if base is None or not hasattr(emb, "project"):
        return None
    for name, other in embedders.items():
        if other is base and name in done:
            return name
    return None


def _import_record(m: Memory, vectors: dict[str, Any]) -> dict[str, Any]:
    """An add_many record from an exported memory (history fields kept, version restarts)."""
    rec = {f.name: getattr(m, f.name) for f in fields(Memory)}
    for key in ("version", "learned_at", "expired_at"):
        rec.pop(key)
    rec["vectors"] = vectors
    return rec


def open(
    path: str | Path | None = None,
    *,
    schema: Schema | None = None,
    embedders: Mapping[str, Embedder] | None = None,
    read_only: bool = False,
    dedup: str = "skip",
    dedup_threshold: float = 0.90,
    profile: str | None = None,
    index: str = "tree",
) -> Store:
    """Open (or create) the store in folder `path`; None keeps it in memory (tests, scratch).

    One process may write a store at a time (a second writer gets `StoreLocked`); any number
    may open it with `read_only=True`, seeing what was committed or logged at open time.
    `profile` names a built-in schema: "default" (model-free) or "minilm" (all-MiniLM-L6-v2 as the
    dense space; needs `engramdb[minilm]`); a reopened store keeps the schema it was created with
    and gets its embedders back from the names the schema stores. `index` is what searches a
    namespace of 20,000 or more memories in a dense space: "tree" (the centroid hierarchy,
    default), "tree-packed" (the same trees keeping a leaf-ordered half-precision copy of their
    vectors: about the dense space's size again, ~2.5x faster scans on real text), "hnsw" (usearch graphs; slow
    to build) or "none" (always exact). `dedup` ("skip" | "merge" | "off") is what happens to a new memory whose main-space cosine to
    a current memory of its namespace exceeds `dedup_threshold` (see `engramdb.store.dedup`).
    """
    return Store(path, schema=schema, embedders=embedders, read_only=read_only, dedup=dedup,
                 dedup_threshold=dedup_threshold, profile=profile, index=index)

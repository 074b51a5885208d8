"""The store folder and its one writer: open, recover, append, checkpoint, close.

Write path: rows (MEMORY_SCHEMA plus one column per space) -> one fsynced WAL frame (the write is
acknowledged here) -> an in-memory segment -> a new published `View`. When enough rows wait in the
WAL, or on close, they are folded into an Arrow segment file and the manifest is replaced
atomically. Every write holds the engine's lock; reads take `engine.view` and hold nothing.

Rewrites that change files wholesale (compaction, purge, archival) live in storage/rewrites.py;
they run under the same lock and publish a view the same way.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pyarrow as pa

from .._requests_first import requesting
from ..model.edge import Edge
from ..model.errors import CorruptFile, RepairWarning, StoreError
from ..model.tuning import Tuning
from ..spaces.protocol import Embedding
from ..spaces.schema import Schema, SpaceError, default_schema
from . import disk
from .checksum import ALGORITHM, file_digest, parsed, parsed_deferred
from .coalesce import coalesce
from .columns import FORMAT_VERSION, MEMORY_SCHEMA
from .derived_files import DerivedFiles
from .describe import description, seq_of
from .edge_files import edges_to_table, is_edge_table, table_to_edges
from .edge_log import EdgeLog
from .filters import MaskCache
from .folder import (
    MANIFEST,
    MARKER,
    classify,
    folder_inode,
    mark_spaces,
    marker_home,
    update_marker,
    write_marker,
)
from .identity import STORE_FILE, highest_number, marker_id, refusal, stale_manifest, wal_problem
from .ids import IdIndex
from .journal import Journal
from .loading import read_listed
from .lock import WriterLock
from .manifest import Manifest, read_manifest, write_manifest
from .pinning import pinned
from .repair import damaged_manifest, repair_locked
from .segment import Segment, digest_of, mapped, read_segment, segment_of, write_file
from .vectors import column_name, conform, to_arrow, vector_fields
from .versions import close_versions, merged_tail, with_closures
from .view import View
from .wal import WalError, WriteAheadLog, decode_frames, listed_header

log = logging.getLogger("engramdb.storage")


class Engine:
    """One store's files and its writer (a folder, or memory when `path` is None)."""

    def __init__(self, path: str | Path | None, *, schema: Schema | None, read_only: bool, tuning: Tuning,
                 salvage: bool = False, also: Sequence[Schema] = ()) -> None:
        self.path = Path(path) if path is not None else None
        self.read_only = read_only
        if salvage and not read_only:
            raise ValueError("salvage=True needs read_only=True: a damaged store is read, never written")
        self.salvage = salvage
        self.salvaged: dict[str, str] = {}  # file -> why it was left out (salvage only)
        self.tuning = tuning
        self._lock = threading.RLock()
        self._writer_lock: WriterLock | None = None
        self._wal: WriteAheadLog | None = None
        self._edges_pending: list[pa.Table] = []  # edge frames in the WAL, not yet in an edges file
        self._closed = False
        self._pid = os.getpid()  # the writer: a child forked with this object in hand is not one
        self._copied = ""  # why this folder is a copy of another store's (it takes an id of its own)
        self._made: list[str] = []  # files an atomic change made so far (removed if it fails)
        # called with the new view after a checkpoint committed rows (the facade syncs indexes)
        self.on_commit: Callable[[View], None] | None = None
        self.journal: Journal | None = None
        self.store_id = ""
        try:
            manifest = self._open_folder(read_only)
            if manifest is not None and manifest.spaces:
                stored = Schema.from_dict(manifest.spaces)
                if schema is not None and schema != stored and stored not in also:  # also: a profile's earlier schemas
                    raise SpaceError(f"the store at {self.path} has another schema: {stored.differences(schema)}")
                schema = stored
            self.schema = schema or default_schema()
            self._manifest = manifest or Manifest(spaces=self.schema.to_dict(), created_by="engramdb",
                                                  store_id=self.store_id)
            if not read_only and self.path is not None:
                mark_spaces(self.path, self._manifest.spaces)
            self.table_schema = pa.schema(list(MEMORY_SCHEMA) + vector_fields(self.schema),
                                          metadata=MEMORY_SCHEMA.metadata)
            self.files = DerivedFiles(self.path, writable=not read_only)
            segments, edges, archived = self._load(manifest is None)
            self._view = View(generation=0, epoch=self._manifest.row_epoch, schema=self.schema,
                              segments=tuple(segments), ids=IdIndex(), edges=edges, edge_rows=len(edges),
                              archived=MappingProxyType(archived), masks=MaskCache(), folder=self.path)
            if self._copied:
                self._rehome(self._copied)
        except BaseException:
            if self._wal is not None:
                self._wal.close()
            self._release()  # a failed open never keeps the writer's lock
            raise

    def _open_folder(self, read_only: bool) -> Manifest | None:
        """Check the folder, take the writer's lock (writable), repair a lost or damaged manifest
        when nothing would be lost; returns the manifest (None: a new store)."""
        if self.path is None:
            return None
        kind = classify(self.path)
        if read_only and kind == "new":
            raise StoreError(f"no engramdb store at {self.path} to open read-only")
        why = damaged_manifest(self.path) if kind != "new" else None
        if why is not None and read_only:
            raise StoreError(f"{self.path}: {why}. Nothing was changed. The manifest can be rebuilt from the "
                             f"store's own files: run `engramdb repair --path {self.path}` (a writable open "
                             "repairs it by itself when nothing would be lost)")
        if not read_only:
            disk.mkdir(self.path, parents=True)
            self._writer_lock = WriterLock(self.path)
        if why is not None:
            done = repair_locked(self.path, why)
            message = (f"{self.path}: {why}; the manifest was rebuilt from {len(done['segments'])} segment, "
                       f"{len(done['edges'])} edges and {len(done['archives'])} archive files and the WAL "
                       f"{done['wal']} (the damaged one, if any, kept as {MANIFEST}.damaged)")
            warnings.warn(message, RepairWarning, stacklevel=5)
        manifest = read_manifest(self.path)
        if not read_only:
            # a store made before markers (or before ids) keeps the id its manifest has, if any
            self.store_id = write_marker(self.path, manifest.store_id if manifest is not None else None,
                                         manifest.copied_from if manifest is not None else None)
            if manifest is not None and manifest.store_id and self.store_id in manifest.copied_from:
                # a copy that took an id of its own, cut short before its marker said so
                update_marker(self.path, store_id=manifest.store_id, copied_from=manifest.copied_from,
                              home=folder_inode(self.path))
                self.store_id = manifest.store_id
            self.journal = Journal(self.path)
        else:
            self.store_id = marker_id(self.path) or (manifest.store_id if manifest is not None else "")
        return manifest

    def _load(self, new: bool) -> tuple[list[Segment], EdgeLog, dict[str, str]]:
        """Segments, edges and archived ids of the folder, the WAL replayed (nothing when in memory)."""
        if self.path is None:
            return [], EdgeLog(), {}
        if self.read_only:
            return self._load_consistent()
        m = self._manifest
        assert self.journal is not None
        if not new and (why := refusal(self.path, m, self.journal)) is not None:
            raise StoreError(f"{self.path}: {why}. Nothing was changed: opening would hide or lose acknowledged "
                             f"writes. Run `engramdb repair --path {self.path}` to see what the store's own files "
                             "hold and rebuild the manifest from them")
        segments, edges, archived = read_listed(self.path, m)
        if not m.store_id:
            m.store_id = self.store_id  # a store from before ids gets its marker's at this open
        identity = {"store": m.store_id, "seq": seq_of(m.wal), "generation": m.generation + 1}
        if new:  # journaled as every log is before it is made: cut short by a crash, it is debris
            self.journal.note([m.wal], m.generation + 1)
            m.wal_header = 2
        self._wal = WriteAheadLog(self.path / m.wal, identity, create=new)
        frames = self._wal.recover()
        self._replay(frames, segments, edges)
        self._copied = self._copy_of_another(new)
        # numbers never repeat, not even one a rolled-back or set-aside file was given
        m.next_segment = max(m.next_segment, highest_number(self.path, besides=m.wal) + 1)
        if new or m.format_version < FORMAT_VERSION:
            # an older store upgraded before anything newer reaches its WAL: its (read) files get checksums
            for entry in m.segments + m.edges + m.archives:
                if ALGORITHM not in entry:
                    entry.update(file_digest(self.path / entry["file"]))
            for seg, entry in zip(segments, m.segments):
                seg.digest = digest_of(entry)
            m.format_version = FORMAT_VERSION
            write_manifest(self.path, m)
        self._remove_debris()
        close_versions(segments)
        return segments, edges, archived

    def _copy_of_another(self, new: bool) -> str:
        """Why this folder's store is a copy that must take an id of its own before it writes ("" if
        not): the folder is not the one its marker was made in (`cp -r`, a restore by copying), or
        its live log is hard-linked from elsewhere (`cp -al`: appends would land in both stores)."""
        assert self.path is not None and self._wal is not None
        here, home = folder_inode(self.path), marker_home(self.path)
        if home is None and not new:
            update_marker(self.path, home=here)  # a marker from before homes: this is its home from now on
        elif home is not None and home != here:
            return "it was copied from another folder"
        if os.stat(self._wal.path).st_nlink > 1:
            return "its write-ahead log is hard-linked from another folder"
        return ""

    def _rehome(self, why: str) -> None:
        """Give a copied store an id of its own (the old one kept as where it came from) and a new
        write-ahead log named with it, its rows folded into a segment first: from now on a log
        copied over from the original is another store's, and refused (storage/identity.py)."""
        assert self.path is not None
        m = self._manifest
        old = m.store_id
        with self._lock:
            view = self._view
            pending = [i for i, seg in enumerate(view.segments) if seg.file is None]
            with self.atomic():
                m.copied_from = sorted({*m.copied_from, old} - {""})
                m.store_id = uuid.uuid4().hex
                merged = self._fold(view, pending)  # a fresh log (named with the new id) even with no rows
            self._edges_pending = []
            if merged is not None:
                self._view = dataclasses.replace(view, segments=view.segments[:pending[0]] + (merged,))
        update_marker(self.path, store_id=m.store_id, copied_from=m.copied_from, home=folder_inode(self.path))
        self.store_id = m.store_id
        log.warning("%s: %s, so this store took an id of its own (%s, copied from %s)", self.path, why, m.store_id, old)

    def _load_consistent(self) -> tuple[list[Segment], EdgeLog, dict[str, str]]:
        """A reader's load: the files and WAL of one manifest, pinned (storage/pinning.py) while
        a writer may commit; with salvage, damaged files are left out and named."""
        assert self.path is not None
        skipped: dict[str, str] = {}
        with pinned(self.path) as (m, handles):

            def table(e: dict[str, Any]) -> pa.Table | None:
                assert self.path is not None
                try:
                    return parsed(self.path / e["file"], mapped(handles[e["file"]]), e)
                except CorruptFile as exc:
                    if not self.salvage:
                        raise
                    skipped[e["file"]] = str(exc)  # salvage: the intact files only
                    return None

            segments = []
            for e in m.segments:
                if self.salvage:  # every byte checked now: a damaged file is left out at open
                    if (t := table(e)) is not None:
                        segments.append(segment_of(self.path / e["file"], t, e, None))
                    continue
                t, deferred = parsed_deferred(self.path / e["file"], mapped(handles[e["file"]]), e)
                segments.append(segment_of(self.path / e["file"], t, e, deferred))
            edges = EdgeLog()
            archived: dict[str, str] = {}
            for e in m.edges:
                if (t := table(e)) is not None:
                    edges.append(table_to_edges(t))
            for e in m.archives:
                if (t := table(e)) is not None:
                    archived.update(dict.fromkeys(t.column("id").to_pylist(), e["file"]))
            raw = handles[m.wal].read()
        try:
            why = wal_problem(m.wal, listed_header(raw, self.path / m.wal), m)
        except WalError as exc:
            why = str(exc)
        if why is not None:
            raise StoreError(f"{self.path}: {why}. Nothing was read from it; run `engramdb repair --path {self.path}`")
        newer = stale_manifest(self.path, m, Journal(self.path))
        if newer and read_manifest(self.path) == m:  # the same manifest still: not a commit under way
            raise StoreError(f"{self.path}: the manifest is older than files beside it, {'; '.join(newer)} (was an "
                             "older manifest copied over it?). Nothing was read: it would hide acknowledged writes. "
                             f"Run `engramdb repair --path {self.path}`")
        try:
            frames = decode_frames(raw, self.path / m.wal)[0]
        except CorruptFile as exc:
            if not self.salvage:
                raise
            skipped[m.wal] = f"{exc} (its intact frames before the damage were read)"
            frames = decode_frames(raw, self.path / m.wal, strict=False)[0]
        self._manifest = m
        self._edges_pending = []
        self.salvaged = skipped
        self._replay(frames, segments, edges)
        close_versions(segments)
        return segments, edges, archived

    def _replay(self, frames: list[pa.Table], segments: list[Segment], edges: EdgeLog) -> None:
        """WAL frames after the committed files: memory rows as segments, edge rows into the log."""
        for table in frames:
            if is_edge_table(table):
                self._edges_pending.append(table)
                edges.append(table_to_edges(table))
            else:
                segments.append(Segment(table))

    # ------------------------------------------------------------------------------ state
    @property
    def view(self) -> View:
        """The current snapshot (raises once the store is closed)."""
        if self._closed:
            raise StoreError("the store is closed")
        return self._view

    @property
    def closed(self) -> bool:
        return self._closed

    @contextmanager
    def writing(self) -> Iterator[View]:
        """The writer's lock held (a write's critical section, a request a worker's jobs give way to)."""
        with self._lock, requesting():
            self.check_writable()
            yield self._view

    def check_writable(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")
        if self.read_only:
            raise StoreError("the store is open read-only")
        if self.forked:
            raise StoreError(f"this store was opened for writing by process {self._pid}; this process ({os.getpid()}) is a "
                             "child forked from it and cannot write through the same handle (two writers would overwrite "
                             "each other's log): open the store in the child, read_only=True beside a parent that writes")

    @property
    def forked(self) -> bool:
        """True in a process forked from the one that opened the store (its lock is the parent's)."""
        return os.getpid() != self._pid

    def publish(self, **changes: Any) -> View:
        """Make a new view current: the old one with `changes` (the caller holds the lock)."""
        self._view = dataclasses.replace(self._view, generation=self._view.generation + 1, **changes)
        return self._view

    def next_file(self, kind: str) -> str:
        """A fresh file name (`seg-000007.arrow`, `edges-000008.arrow`); numbers never repeat."""
        name = f"{kind}-{self._manifest.next_segment:06d}.arrow"
        self._manifest.next_segment += 1
        if self.journal is not None:  # ours from now on: debris if no commit lists it
            self.journal.note([name], self._manifest.generation + 1)
        self._made.append(name)
        return name

    def new_file(self, kind: str, table: pa.Table, *, name: str | None = None, order: int | None = None,
                 replaces: Sequence[str] = (), requires: Sequence[str] = (), wal_bytes: int | None = None) -> dict[str, Any]:
        """Write a described store file (storage/describe.py) of `kind` ("seg", "edges",
        "archive"), named afresh unless `name` was taken already; returns its manifest entry."""
        assert self.path is not None
        name = name or self.next_file(kind)
        desc = description(kind, name, order=order, replaces=replaces, requires=requires,
                           epoch=self._manifest.row_epoch, wal_bytes=wal_bytes, store=self._manifest.store_id,
                           generation=self._manifest.generation + 1)
        return write_file(self.path / name, table, desc, self._manifest.spaces if kind == "seg" else None)

    def new_segment(self, table: pa.Table, **how: Any) -> Segment:
        """`new_file` of a segment, opened (its checksum and order travel to the manifest)."""
        assert self.path is not None
        entry = self.new_file("seg", table, **how)
        return read_segment(self.path / entry["file"], entry)

    @property
    def manifest(self) -> Manifest:
        """The committed manifest (rewrites edit it under the lock, then `commit`)."""
        return self._manifest

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A change of files that either commits whole or leaves the engine as it was: when it
        raises (a full disk, an I/O error), the manifest in memory and the live WAL go back to
        the committed ones, and the files it made are deleted (journaled, so the next open removes
        any a failing disk kept): no half-made file is left claiming to replace a live one."""
        saved = copy.deepcopy(self._manifest)
        wal = self._wal
        made = len(self._made)
        try:
            yield
        except BaseException:
            if self._wal is not wal and self._wal is not None:
                self._wal.close()
            numbers = self._manifest.next_segment
            self._manifest, self._wal = saved, wal
            self._manifest.next_segment = numbers  # numbers never repeat, not even a failed file's
            if self.path is not None:
                for name in self._made[made:]:
                    for debris in (self.path / name, self.path / (name + ".tmp")):
                        try:
                            disk.unlink(debris)
                        except OSError:
                            pass  # journaled: the next open removes it
            raise
        finally:
            del self._made[made:]

    def commit(self, unlisted: Sequence[str] = ()) -> None:
        """Write the manifest (the commit point), then delete the files it no longer lists (named
        in the journal first, so a crash between the two leaves them to the next open)."""
        assert self.path is not None and self.journal is not None
        # with this commit's, the files an earlier one unlisted but failed to delete (its clear of
        # the journal, below, would otherwise forget them: no open would remove them)
        m = self._manifest
        listed = {e["file"] for e in m.segments + m.edges + m.archives} | {m.wal}
        unlisted = [*unlisted, *sorted(self.journal.names() - listed - set(unlisted))]
        self.journal.note(unlisted, self._manifest.generation + 1)
        write_manifest(self.path, self._manifest)  # the commit point: what follows may fail harmlessly
        try:
            for name in unlisted:
                disk.unlink(self.path / name)
            self.journal.clear()
        except OSError as exc:  # the journal still names them: the next open removes them
            log.warning("after a commit, unlisted files were left for the next open: %s", exc)

    @property
    def edges_pending(self) -> list[pa.Table]:
        """Edge frames in the WAL not yet in an edges file (in memory: every edge row)."""
        return self._edges_pending

    @edges_pending.setter
    def edges_pending(self, tables: list[pa.Table]) -> None:
        self._edges_pending = tables

    def wal_bytes(self) -> int:
        return self._wal.size() if self._wal is not None else 0

    # ------------------------------------------------------------------------------ writes
    def append(self, table: pa.Table, vectors: Mapping[str, Embedding], edges: Sequence[Edge] = ()) -> View:
        """Append memory rows (MEMORY_SCHEMA) with every space's vectors, and `edges` with them in
        the same WAL frame (all durable or none); acknowledged on return."""
        with self._lock:
            self.check_writable()
            cols = {column_name(sp): to_arrow(sp, vectors[sp.name]) for sp in self.schema}
            for name, arr in cols.items():
                table = table.append_column(self.table_schema.field(name), arr)
            table = table.replace_schema_metadata(self.table_schema.metadata)
            if not edges and self._wal is not None and self.path is not None and \
                    table.num_rows >= self.tuning.checkpoint_rows:
                # A batch this large would be checkpointed at once: write it straight to a segment
                # file (data written once, not twice), acknowledged when the manifest lists it.
                self.checkpoint()  # earlier rows first, so file order stays version order
                with self.atomic():
                    seg = self.new_segment(table)
                    self._manifest.segments.append(seg.entry())
                    self.commit()  # acknowledged from here on
                return self.add_segments([seg])
            edge_table = edges_to_table(list(edges)) if edges else None
            if self._wal is not None:
                self._wal.append(table, *([edge_table] if edge_table is not None else []))  # acknowledged
            view = self.add_segments([Segment(table)])
            if edge_table is not None:
                self._edges_pending.append(edge_table)
                view.edges.append(list(edges))
                view = self.publish(edge_rows=len(view.edges))
            if self._wal is not None and sum(len(s) for s in view.segments if s.file is None) >= self.tuning.checkpoint_rows:
                self._checkpoint_after_write()
            return self._view

    def _checkpoint_after_write(self) -> None:
        """The checkpoint a write's size asks for. The write is acknowledged already (in the
        WAL), so a failure here (a full disk) must not fail it: logged, the rows stay in the WAL,
        the next checkpoint tries again."""
        try:
            self.checkpoint()
        except OSError as exc:
            log.warning("checkpoint after a write failed, the rows stay in the WAL: %s", exc)

    def add_segments(self, new: list[Segment]) -> View:
        """Publish a view with segments appended; the versions they replace end where they start."""
        view = self._view
        view.ids.extend(view.segments, view.bases, view.rows)  # index what is there before the new rows
        segments = view.segments + tuple(new)
        bases = np.zeros(len(segments) + 1, np.int64)
        np.cumsum([len(s) for s in segments], out=bases[1:])
        replaced = view.ids.extend(segments, bases, int(bases[-1]))
        if replaced:
            segments = with_closures(segments, bases, replaced)
        return self.publish(segments=merged_tail(segments))

    def append_edges(self, edges: list[Edge]) -> View:
        """Append edge rows: one WAL frame (acknowledged), then the live set."""
        with self._lock:
            self.check_writable()
            table = edges_to_table(edges)
            if self._wal is not None:
                self._wal.append(table)
            self._edges_pending.append(table)
            log = self._view.edges
            log.append(edges)
            return self.publish(edge_rows=len(log))

    def checkpoint(self) -> None:
        """Write the rows waiting in the WAL to one segment file, then empty the WAL."""
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            if self.path is None or self._wal is None:
                return
            self.check_writable()
            view = self._view
            pending = [i for i, s in enumerate(view.segments) if s.file is None]
            if not pending and not self._edges_pending:
                return
            with self.atomic():
                merged = self._fold(view, pending)
            self._edges_pending = []
            if merged is not None:
                # WAL segments always trail the committed ones, so they are replaced as one block;
                # keys stay the same (same rows, same order), so the id index needs nothing
                first = pending[0]
                view = self.publish(segments=view.segments[:first] + (merged,))
                try:  # small files merged as they pile up (storage/coalesce.py): never fails the checkpoint
                    if coalesce(self):
                        view = self._view
                except Exception as exc:  # noqa: BLE001 - a full disk, a damaged file: tried after the next
                    log.warning("small segments of %s were not merged: %s", self.path, exc)
                if self.on_commit is not None:
                    try:
                        self.on_commit(view)
                    except OSError as exc:  # derived indexes: rebuilt by the next search that needs them
                        log.warning("indexes of %s were not saved after a checkpoint: %s", self.path, exc)

    def _fold(self, view: View, pending: list[int]) -> Segment | None:
        """Write the WAL's segments and edge frames to files and commit them with a fresh WAL."""
        assert self.path is not None and self._wal is not None
        merged = None
        old_wal = self._wal
        # the WAL's rows move to a segment and its edge frames to an edges file: each replaces
        # the WAL and needs the other (storage/describe.py), so a repair takes both or neither
        seg_name = self.next_file("seg") if pending else None
        edges_name = self.next_file("edges") if self._edges_pending else None
        wal_only = [old_wal.path.name]
        wal_bytes = old_wal.size()  # a repair takes these files for the WAL only if it has not grown since
        if seg_name is not None:
            table = pa.concat_tables([conform(view.segments[i].table, self.schema) for i in pending])
            merged = self.new_segment(table, name=seg_name, replaces=wal_only, wal_bytes=wal_bytes,
                                      requires=[edges_name] if edges_name else ())
            # carry derived state (replacements by newer versions) over to the merged rows
            merged.sys_end = np.concatenate([view.segments[i].sys_end for i in pending])
            self._manifest.segments.append(merged.entry())
        if edges_name is not None:
            edges = pa.concat_tables(self._edges_pending)
            self._manifest.edges.append(self.new_file("edges", edges, name=edges_name, replaces=wal_only,
                                                      wal_bytes=wal_bytes, requires=[seg_name] if seg_name else ()))
        # The rows move from the WAL to the files in one atomic step: the new manifest names the
        # files and a fresh, empty WAL together. A crash before it leaves the old manifest and
        # the old WAL (the new files are debris); after it, the old WAL is the debris.
        m = self._manifest
        wal_name = f"wal-{m.next_segment:06d}.log"
        m.next_segment += 1
        assert self.journal is not None
        self.journal.note([wal_name], m.generation + 1)
        self._made.append(wal_name)
        self._wal = WriteAheadLog(self.path / wal_name, {"store": m.store_id, "seq": seq_of(wal_name),
                                                         "generation": m.generation + 1}, create=True)
        self._manifest.wal = wal_name
        self._manifest.wal_header = 2
        self.commit([old_wal.path.name])  # committed: the old WAL's rows are in the files now
        old_wal.close()
        return merged

    def close(self, *, checkpoint: bool = True) -> None:
        """Fold the WAL into a segment file (unless `checkpoint=False`: its frames are durable and
        the next writer replays them) and release the files. Idempotent."""
        with self._lock:
            if self._closed:
                return
            try:
                if self._wal is not None:
                    if checkpoint and not self.forked:  # a forked child writes nothing of its parent's
                        self.checkpoint()
                    self._wal.close()
            finally:
                self._release()
                self._closed = True

    def _release(self) -> None:
        if self._writer_lock is not None:
            self._writer_lock.release()
            self._writer_lock = None

    def _remove_debris(self) -> None:
        """Delete what a crash left of the store's own files: the ones the journal names that the
        manifest does not list, their temp files, and the manifest's and marker's temp files.
        Nothing else is touched, whatever its name."""
        assert self.path is not None and self.journal is not None
        m = self._manifest
        listed = {e["file"] for e in m.segments + m.edges + m.archives} | {m.wal}
        for name in self.journal.names() - listed:
            if STORE_FILE.match(name) is None:  # the journal only ever names data files: anything else is not debris
                continue
            for debris in (self.path / name, self.path / (name + ".tmp")):
                if debris.is_file() and not debris.is_symlink():
                    disk.unlink(debris)
        for name in (MANIFEST + ".tmp", MARKER + ".tmp"):
            disk.unlink(self.path / name)
        self.journal.clear()


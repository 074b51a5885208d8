"""A segment: one Arrow table of memory versions plus the per-row arrays the scans filter on.

Committed segments are Arrow IPC files read through a memory map (the vector columns reach the
kernels without a copy). The write-ahead log's frames not yet folded into a file are kept as
in-memory segments of the same shape. Rows never change; what changes is derived state the
store sets: `sys_end` (when a newer version replaced a row, in system time), and only by copy
(`with_closed`): a segment object a snapshot holds never changes under it. A purge rewrites the
segments that hold the memory instead of marking rows.
"""

from __future__ import annotations

import copy
import dataclasses
import mmap
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa

from .._arrow_numpy import arrow_of, is_null_mask, numpy_of, string_offsets, whole
from ..model.errors import CorruptFile, StoreError
from ..model.memory import Memory
from ..spaces.batches import take
from ..spaces.protocol import Embedding
from ..spaces.schema import Schema
from . import disk
from .checksum import ALGORITHM, Deferred, deferred_part, digest, parsed, parsed_deferred
from .columns import MEMORY_SCHEMA, RowReader
from .describe import FILE_KEY, SPACES_KEY, described
from .vectors import column_name, from_arrow

NEVER = np.iinfo(np.int64).max  # an open end in time (microseconds since the epoch)
MEMORY_COLUMNS = frozenset(f.name for f in MEMORY_SCHEMA)  # the rest of a segment's columns are vectors
MEMO_ROWS = 4_096  # materialised memories kept per segment (rows never change, so they never go stale)
# one thread at a time derives a segment's turn columns: the open's warm job and a new process's first
# request walk the same segments in the same order, and both derived the ones they met at once (up
# to 12 of 38 twice at 100,000 memories); the second now waits for the first's (issue 26)
_DERIVING = threading.Lock()


def _fresh_lock_in_child() -> None:
    """A forked child starts with its own lock: a thread of the parent may have held it at the fork."""
    global _DERIVING
    _DERIVING = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock_in_child)


def _micros(col: pa.ChunkedArray, null: int) -> np.ndarray:
    """Timestamp column -> int64 microseconds, nulls replaced by `null`."""
    return np.array(numpy_of(col, fill=null), dtype=np.int64)  # a writable copy: sys_end is updated in place


def _filled(arr: pa.Array, dtype: Any) -> np.ndarray:
    """An integer column as a numpy array, -1 where missing; a column without a missing value is read
    as it is (most are: the fill was a third of `Segment.turns` at 100,000 memories, issue 26)."""
    return np.asarray(numpy_of(arr, fill=-1), dtype)


@dataclass
class Segment:
    """One table of memory versions and its derived per-row arrays."""

    table: pa.Table
    file: str | None = None  # committed file name, None while only in the WAL
    digest: dict[str, Any] | None = None  # the file's size and checksum (storage/checksum.py)
    order: int | None = None  # its place among the store's segments (storage/describe.py)
    deferred: Deferred | None = None  # its vector bytes' check, still running (storage/checksum.py)
    ids: list[str] = field(init=False)
    ns_index: np.ndarray = field(init=False)  # int32 code of each row's namespace
    ns_codes: dict[str, int] = field(init=False)  # namespace -> code in this segment
    ns_names: list[str] = field(init=False)  # code -> namespace
    valid_from: np.ndarray = field(init=False)
    valid_until: np.ndarray = field(init=False)
    learned_at: np.ndarray = field(init=False)
    sys_end: np.ndarray = field(init=False)  # min(expired_at, next version's learned_at)
    forgotten: np.ndarray = field(init=False)
    _vectors: dict[str, Embedding] = field(init=False, default_factory=dict)
    _ns_counts: np.ndarray | None = field(init=False, default=None)
    _ns_newest: np.ndarray | None = field(init=False, default=None)
    _records: pa.Table | None = field(init=False, default=None)
    _types: tuple[np.ndarray, list[str]] | None = field(init=False, default=None)
    _turns: tuple[np.ndarray, list[str], np.ndarray] | None = field(init=False, default=None)
    _seqs: np.ndarray | None = field(init=False, default=None)
    _session_keys: np.ndarray | None = field(init=False, default=None)
    _session_codes: dict[str, int] | None = field(init=False, default=None)
    memo: dict[int, tuple[Any, ...]] = field(init=False, default_factory=dict)  # row -> its Memory's kept() (see remember)
    _reader: RowReader | None = field(init=False, default=None)  # made on the first hit
    # (namespace, types) -> (the clock it was made at, the first time after which it changes, the
    # rows a current-and-valid-now query sees): storage/filters.py's, kept here so that it lives
    # and dies with the segment
    now_masks: dict[tuple[str, frozenset[str] | None], tuple[int, int, np.ndarray | None]] = \
        field(init=False, default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        t = self.table
        self.ids = t.column("id").to_pylist()
        # Namespaces as small integer codes: the scan's partition filter is one integer compare.
        enc = whole(t.column("namespace")).dictionary_encode()
        self.ns_index = np.array(numpy_of(enc.indices), dtype=np.int32)
        self.ns_names: list[str] = enc.dictionary.to_pylist()
        self.ns_codes = {name: code for code, name in enumerate(self.ns_names)}
        self.learned_at = _micros(t.column("learned_at"), 0)
        self.valid_from = _micros(t.column("valid_from"), 0)
        self.valid_from = np.where(is_null_mask(t.column("valid_from")),
                                   self.learned_at, self.valid_from)
        self.valid_until = _micros(t.column("valid_until"), NEVER)
        self.forgotten = ~is_null_mask(t.column("forgotten_at"))
        self.reset_sys_end()

    @classmethod
    def joined(cls, older: Segment, newer: Segment) -> Segment:
        """`older`'s rows then `newer`'s as one segment (the WAL tail's merge: storage/versions.py),
        its per-row arrays joined from theirs rather than derived again from the joined table (each
        is a function of its own row; the namespace codes in order of first appearance, as
        `dictionary_encode` numbers them), `sys_end` as each had it. Its caches start empty."""
        new = cls.__new__(cls)
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                setattr(new, f.name, f.default)
            elif f.default_factory is not dataclasses.MISSING:
                setattr(new, f.name, f.default_factory())
        new.table = pa.concat_tables([older.table, newer.table]).combine_chunks()
        new.ids = older.ids + newer.ids
        names, codes = list(older.ns_names), dict(older.ns_codes)
        remap = np.empty(len(newer.ns_names), np.int32)
        for i, name in enumerate(newer.ns_names):
            code = codes.get(name)
            if code is None:
                code = codes[name] = len(names)
                names.append(name)
            remap[i] = code
        new.ns_names, new.ns_codes = names, codes
        new.ns_index = np.concatenate([older.ns_index, remap[newer.ns_index]]).astype(np.int32, copy=False)
        for name in ("learned_at", "valid_from", "valid_until", "forgotten", "sys_end"):
            setattr(new, name, np.concatenate([getattr(older, name), getattr(newer, name)]))
        return new

    def reset_sys_end(self) -> None:
        """System-time ends as stored (expired_at); the store lowers them as newer versions arrive."""
        self.sys_end = _micros(self.table.column("expired_at"), NEVER)

    def with_closed(self, rows: np.ndarray, at: np.ndarray) -> Segment:
        """This segment with the system time of `rows` ended at `at` (or earlier, as it was).

        A new object sharing the table and every cache: rows never change, only this derived
        array does, so a snapshot still holding the old segment keeps seeing the old versions as
        current (copy on write; see storage/view.py).
        """
        new = copy.copy(self)
        new.sys_end = self.sys_end.copy()
        new.now_masks = {}  # made from sys_end
        np.minimum.at(new.sys_end, np.asarray(rows, np.int64), np.asarray(at, np.int64))
        return new

    def entry(self) -> dict[str, Any]:
        """The manifest's entry for this segment's file: name, rows, size and checksum."""
        entry = {"file": self.file, "rows": len(self), **(self.digest or {})}
        if self.order is not None:
            entry["order"] = self.order
        return entry

    def records(self) -> pa.Table:
        """The table without its vector columns (cached): what materialising memories reads."""
        if self._records is None:
            self._records = self.table.select([f.name for f in MEMORY_SCHEMA])
        return self._records

    def ns_count(self, namespace: str) -> int:
        """Rows of `namespace` in this segment (counted once per segment, then cached)."""
        if self._ns_counts is None:
            self._ns_counts = np.bincount(self.ns_index, minlength=len(self.ns_names))
        code = self.ns_codes.get(namespace)
        return 0 if code is None else int(self._ns_counts[code])

    def ns_newest(self, namespace: str) -> int:
        """The newest learning time (microseconds) among `namespace`'s rows in this segment, 0
        without any: every row's, all versions (rows never change: found once per segment, then
        kept; a store's derived results are stamped with it at each snapshot)."""
        if self._ns_newest is None:
            newest = np.zeros(len(self.ns_names), np.int64)
            if len(self.ns_names) == 1 and len(self.ns_index):  # one namespace (most segments): one max
                newest[0] = max(0, int(self.learned_at.max()))
            elif len(self.ns_index):  # a scatter (numpy's `maximum.at` was ~20 us a segment of 4,000 rows)
                np.maximum.at(newest, self.ns_index, self.learned_at)
            self._ns_newest = newest
        code = self.ns_codes.get(namespace)
        return 0 if code is None else int(self._ns_newest[code])

    def type_mask(self, types: frozenset[str]) -> np.ndarray:
        """Rows whose memory_type is one of `types` (the column is dictionary-encoded once)."""
        if self._types is None:
            enc = whole(self.table.column("memory_type")).dictionary_encode()
            self._types = (_filled(enc.indices, np.int32), enc.dictionary.to_pylist())
        codes, names = self._types
        wanted = [i for i, name in enumerate(names) if name in types]
        return np.isin(codes, wanted)

    def type_names(self) -> list[str]:
        """The distinct memory_type names of this segment's rows."""
        self.type_mask(frozenset())  # encodes the column once
        assert self._types is not None
        return [n for n in self._types[1] if n is not None]

    def turns(self) -> tuple[np.ndarray, list[str], np.ndarray]:
        """(session code per row, -1 when none; session names; seq per row, -1 when none): where
        each row sits in its conversation, for finding a turn's neighbours."""
        found = self._turns
        if found is None:
            seq = self.seqs()  # before the lock: it takes the same one
            with _DERIVING:
                found = self._turns
                if found is None:  # not derived meanwhile by the thread this one waited for
                    enc = whole(self.table.column("session_id")).dictionary_encode()
                    found = self._turns = (_filled(enc.indices, np.int32), enc.dictionary.to_pylist(), seq)
        return found

    def content_bytes(self, lo: int, hi: int) -> int:
        """The UTF-8 bytes of the content of rows [lo, hi) (what indexing their text costs), from
        the column's offsets: nothing is decoded."""
        if hi <= lo:
            return 0
        total = 0
        for chunk in self.table.column("content").slice(lo, hi - lo).chunks:
            if len(chunk):
                offsets = string_offsets(chunk)
                total += int(offsets[-1] - offsets[0])
        return total

    def seqs(self) -> np.ndarray:
        """seq per row, -1 when none (the array `turns()` holds): read alone where the sessions are
        not needed, as encoding them is 4x the time (24 vs 6 ms at 100,000 in a new process)."""
        found = self._seqs
        if found is None:
            with _DERIVING:
                found = self._seqs
                if found is None:
                    found = self._seqs = _filled(whole(self.table.column("seq")), np.int64)
        return found

    def session_code(self, session_id: str) -> int | None:
        """The code `turns()` gives a session's rows in this segment, None when it has none (a
        dict made once: a list lookup per segment was linear in the segment's sessions)."""
        codes = self._session_codes
        if codes is None:
            codes = self._session_codes = {name: i for i, name in enumerate(self.turns()[1])}
        return codes.get(session_id)

    def session_keys(self) -> np.ndarray:
        """One int64 per row: its session's name hashed (Python's str hash: equal names give equal
        keys in every segment of this process, so turns group by session across segments without a
        dictionary of names per search); 0 where the row has no session, and a name whose hash is 0
        takes 1."""
        if self._session_keys is None:
            codes, names, _ = self.turns()
            by_code = np.array([hash(n) or 1 for n in names] + [0], np.int64)
            self._session_keys = by_code[codes]  # code -1 (no session) takes the last: 0
        return self._session_keys

    def memory_at(self, row: int) -> Memory:
        """The Memory of one row, read once and then kept (see remember). Each call returns its
        own copy of the two dict fields: Memory is frozen, its dicts are not, and a caller that
        edits one must not change what the next caller gets."""
        kept = self.memo.get(row)
        if kept is None:
            m = self.row_reader().memory(row)
            self.remember(row, m)
            return m
        return Memory.from_kept(kept)

    def row_reader(self) -> RowReader:
        """What reads this segment's memories one row at a time, made at its first hit (or by a
        writer's warm-up: store/background.py)."""
        reader = self._reader
        if reader is None:
            reader = self._reader = RowReader(self.table)
        return reader

    def remember(self, row: int, memory: Memory) -> None:
        """Keep a materialised row (hits recur: an agent asks about the same things), bounded.
        Kept as `Memory.kept()`'s plain tuple, which the cyclic garbage collector stops tracking:
        a memo of Memory objects left ~100 tracked objects behind each agent-loop round at 100,000
        memories, so a full collection (20-60 ms there) came every ~150 rounds."""
        if len(self.memo) >= MEMO_ROWS:
            self.memo.clear()
        self.memo[row] = memory.kept()

    def namespace(self, row: int) -> str:
        """The namespace of one row."""
        return self.ns_names[int(self.ns_index[row])]

    def __len__(self) -> int:
        return int(self.table.num_rows)

    def checked(self) -> pa.Table:
        """The whole table, vector columns included, once their deferred check passed (what a
        rewrite or an export copies; CorruptFile if they are damaged)."""
        if self.deferred is not None:
            self.deferred.wait()
        return self.table

    def vectors(self, schema: Schema, space: str) -> Embedding:
        """The space's vectors of every row (zero-copy for dense and binary; cached), read only
        after their deferred check passed."""
        if self.deferred is not None:
            self.deferred.wait()
        if space not in self._vectors:
            self._vectors[space] = from_arrow(schema[space], self.table.column(column_name(schema[space])))
        return self._vectors[space]

    def vectors_of(self, schema: Schema, space: str, rows: np.ndarray) -> Embedding:
        """The space's vectors of these rows, in order (a copy). A multivector space not decoded
        yet is decoded for these rows alone when they are under a quarter of the segment: every
        token of every row, dequantised to float32 and kept, is ~30 KB a chat turn (a topics run
        sampling 3,000 of 100,000 memories decoded all of them: 1.7 s and ~700 MB, issue 26)."""
        sp = schema[space]
        if sp.kind == "multivector" and space not in self._vectors and 4 * len(rows) < len(self):
            if self.deferred is not None:
                self.deferred.wait()
            column = self.table.column(column_name(sp))
            return from_arrow(sp, column.take(arrow_of(np.asarray(rows, np.int64))))
        return take(self.vectors(schema, space), rows)


def read_arrow(path: Path, entry: dict[str, Any] | None = None) -> pa.Table:
    """Any of the store's Arrow IPC files (segments, edges, archives) through a memory map, its
    bytes checked against the manifest `entry` before they are parsed (CorruptFile if not)."""
    return parsed(path, map_file(path), entry)


def map_file(path: Path) -> pa.Buffer:
    """A store file memory-mapped (FileNotFoundError as it is; any other failure CorruptFile)."""
    try:
        with open(path, "rb") as handle:
            return mapped(handle)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise CorruptFile(path, f"unreadable ({exc})") from None


def read_segment(path: Path, entry: dict[str, Any] | None = None, *, defer: bool = False) -> Segment:
    """Open a committed segment file through a memory map, checked (see `read_arrow`); with
    `defer`, its vector columns are checked on a background thread (storage/checksum.py)."""
    if not defer:
        return segment_of(path, read_arrow(path, entry), entry, None)
    table, deferred = parsed_deferred(path, map_file(path), entry)
    return segment_of(path, table, entry, deferred)


def segment_of(path: Path, table: pa.Table, entry: dict[str, Any] | None, deferred: Deferred | None) -> Segment:
    """The Segment of a committed file's table and its manifest entry."""
    return Segment(table, file=path.name, digest=digest_of(entry), order=None if entry is None else entry.get("order"),
                   deferred=deferred)


def digest_of(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """The size and checksums of a manifest entry (None for a file written before checksums)."""
    if entry is None or ALGORITHM not in entry:
        return None
    out = {"bytes": entry["bytes"], ALGORITHM: entry[ALGORITHM]}
    if "deferred" in entry:
        out["deferred"] = entry["deferred"]
    return out


def mapped(handle: BinaryIO) -> pa.Buffer:
    """A read-only memory map of an open file, as an Arrow buffer: it stays valid after the file
    is closed, and after it is unlinked (a reader keeps what it opened while a writer moves on)."""
    if os.fstat(handle.fileno()).st_size == 0:
        return pa.py_buffer(b"")
    return pa.py_buffer(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))


def table_of(buffer: pa.Buffer) -> pa.Table:
    """The table of an Arrow IPC file held in a buffer (no copy)."""
    return pa.ipc.open_file(pa.BufferReader(buffer)).read_all()


def write_segment(path: Path, table: pa.Table, desc: dict[str, Any] | None = None,
                  spaces: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write a segment file atomically (temp file, fsync, rename); one record batch. A store file
    gets its description (`desc`, storage/describe.py); a file without one (an export) carries
    none, not even one its rows' table inherited. Returns its size and checksum."""
    if desc is not None and path.exists():  # numbers never repeat (storage/identity.py): an existing file is not ours to replace
        raise StoreError(f"{path} exists already: refusing to write over it (was a file copied into the store?)")
    tmp = path.with_suffix(path.suffix + ".tmp")
    batch = table.combine_chunks().to_batches()
    schema = table.schema
    if desc is not None:
        schema = described(batch, schema, desc, spaces)
    elif schema.metadata and (FILE_KEY in schema.metadata or SPACES_KEY in schema.metadata):
        schema = schema.with_metadata({k: v for k, v in schema.metadata.items() if k not in (FILE_KEY, SPACES_KEY)})
    sink = disk.SeamFile(tmp)  # through the I/O seam: unbuffered, fault-injectable
    try:
        out = pa.PythonFile(sink, mode="w")
        with pa.ipc.new_file(out, schema) as writer:
            for b in batch:
                writer.write_batch(b)
        sink.sync()  # before the Arrow file object closes it
    except BaseException:
        sink.close()
        disk.unlink(tmp)
        raise
    sink.close()
    with open(tmp, "rb") as handle:
        data = mapped(handle)
        sums = digest(data)  # from the page cache: what is on its way to the disk
        vector_columns = [f.name for f in table.schema if f.name not in MEMORY_COLUMNS]
        if desc is not None and desc.get("kind") == "seg" and vector_columns:
            part = deferred_part(data, vector_columns)
            if part is not None:
                sums["deferred"] = part
    disk.replace(tmp, path)
    return sums


def write_file(path: Path, table: pa.Table, desc: dict[str, Any] | None = None,
               spaces: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write a store file (as `write_segment`); returns its manifest entry (with its order)."""
    entry = {"file": path.name, "rows": table.num_rows, **write_segment(path, table, desc, spaces)}
    if desc is not None:
        entry["order"] = desc["order"]
    return entry

"""An append-only log of Arrow rows in a store folder: the access log (E1) and the ELO update log (E5).

Rows are buffered and written in batches: each flush writes one Arrow IPC file,
`<prefix>-<first seq>-<last seq>-<crc32>.arrow`, atomically (a temporary file, fsync, rename,
fsync of the folder), so a crash leaves whole files or none, never a torn one. Every row has a
`seq`, its position in the log, which never repeats: the watermark a reader resumes from.

A file is read only when its bytes match the CRC-32 in its name: a damaged file is reported
(`damaged`) and left out, never served and never deleted. Rotation merges the files into one
(written first, then the merged files removed; a crash between leaves the rows twice, and
reads keep each seq once). `purge` rewrites the files holding rows of given memory ids (or
namespaces, queries, ...) without them. The log deletes only files of its own name pattern.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._arrow_numpy import arrow_of, empty_table, numpy_of, table_of_rows
from .._requests_first import give_way
from ..model.errors import StoreError
from . import disk
from .derived_files import table_bytes, write_atomically

_log = logging.getLogger("engramdb.storage")
LOG_DIR = "access"
HANDED_ROWS = 4  # flush_rows a buffer may hold while its flush waits for `on_due`'s worker
FLUSH_CHUNK = 128  # rows a flush makes into a table at a time (~1.5 ms)
LISTINGS = 20  # a folder listing read again this often while a writer replaces its files
_VANISHED = pa.table({})  # `_load`'s answer for a file a rotation or a purge removed meanwhile


_LOGS: weakref.WeakSet[ArrowLog] = weakref.WeakSet()  # every live log, for the fork hook below


def _new_locks_in_child() -> None:
    """In a forked child: a thread merging a log's files at the fork (the writer's worker, whose
    merge holds `_rewrite` for as long as it reads and writes them) is not in the child, and the
    child's purge of that log waited for it for ever. The merge it left half done leaves at most
    a merged file beside its inputs, whose rows a read keeps once. The same for the buffer's lock,
    which a parent's thread appending at the fork held: the child's first search waited for ever."""
    for log in list(_LOGS):
        log._rewrite = threading.Lock()
        log._lock = threading.RLock()  # an append or a flush of a parent's thread: its rows are the parent's
        log._flushing = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_in_child)


class ArrowLog:
    """One append-only log (see the module docstring). `folder` None keeps it in memory."""

    def __init__(self, folder: Path | None, prefix: str, schema: pa.Schema, *, writable: bool,
                 flush_rows: int = 1024, flush_seconds: float = 2.0, max_files: int = 64) -> None:
        if "seq" not in schema.names:
            raise ValueError("a log's schema needs a 'seq' column")
        self.dir = folder / LOG_DIR if folder is not None else None
        self.prefix, self.schema = prefix, schema
        self.writable = writable
        self.flush_rows, self.flush_seconds, self.max_files = flush_rows, flush_seconds, max_files
        self._pattern = re.compile(rf"^{re.escape(prefix)}-(\d{{12}})-(\d{{12}})-([0-9a-f]{{8}})\.arrow$")
        self._lock = threading.RLock()  # the buffer, the seqs, the writing of a new file
        # a rotation or a purge, which replace files (taken after `_lock` when both are: a purge
        # holds both, a rotation on another thread this one only, so appends go on meanwhile)
        self._rewrite = threading.Lock()
        # one flush at a time, from taking the buffer to its file written: taken before `_lock`
        # (which a flush holds only to take the rows, so appends and reads go on while it writes)
        # and before `_rewrite` (a purge holds all three: no flush writes rows it purged)
        self._flushing = threading.Lock()
        self._pid = os.getpid()  # a forked child never writes this log's files (`_flush`)
        _LOGS.add(self)
        # with it, a flush that leaves too many files hands `rotate` to it (a worker) instead of
        # running it on the caller's thread: a merge of 64 files of an access log grown over a
        # thousand requests took one request 200 ms (issue 26)
        self.on_crowded: Callable[[Callable[[], int]], None] | None = None
        # with it, an append that finds a flush due hands the flush to it (a worker) instead of
        # writing the file on the caller's thread: ~1,000 access rows made a file every dozen
        # contexts of an agent loop, 13-26 ms of one request's CPU and an fsync (issue 26). Up
        # to HANDED_ROWS x flush_rows wait for it; past that the appender flushes (a stopped or
        # failing worker never lets the buffer grow without bound)
        self.on_due: Callable[[Callable[[], None]], None] | None = None
        self._buffer: list[dict[str, Any]] = []
        self._writing: list[dict[str, Any]] = []  # rows a flush is writing: still read from here until written
        self._oldest = 0.0  # monotonic time of the oldest buffered row
        self._memory: list[pa.Table] = []  # flushed tables of a log kept in memory
        self.damaged: dict[str, str] = {}  # file -> why it was left out
        self.next_seq = self._last_seq() + 1

    # ------------------------------------------------------------------------------ writing
    def append(self, rows: Iterable[Mapping[str, Any]]) -> list[int]:
        """Buffer rows (each a column -> value mapping, `seq` assigned here); returns their seqs.
        Written when `flush_rows` are waiting or the oldest has waited `flush_seconds`."""
        if not self.writable:
            raise PermissionError("this log is read-only")
        with self._lock:
            seqs = []
            for row in rows:
                if not self._buffer:
                    self._oldest = time.monotonic()
                self._buffer.append({**row, "seq": self.next_seq})
                seqs.append(self.next_seq)
                self.next_seq += 1
            due = len(self._buffer) >= self.flush_rows or (
                bool(self._buffer) and time.monotonic() - self._oldest >= self.flush_seconds)
            size = len(self._buffer)
            hand = self.on_due if due and size < HANDED_ROWS * self.flush_rows else None
        # outside the lock: the worker's own lock is never taken inside this one, and a flush
        # takes `_flushing` before `_lock`
        if hand is not None:
            hand(self.flush)
        elif due:  # past the bound: written here, unless a flush is under way (the next append sees to
            # it), or past twice the bound: then it waits for that flush (appends faster than files are
            # made would grow the buffer, and the next file, without end)
            self.flush(wait=size >= 2 * HANDED_ROWS * self.flush_rows)
        return seqs

    def flush(self, *, wait: bool = True) -> None:
        """Write the buffered rows (one file) now. The rows are taken under the buffer's lock and
        written outside it: appends and reads go on meanwhile (a read finds them in `_writing`
        until their file is there; a worker's flush of ~1,000 access rows held the lock 13-40 ms,
        and the request appending beside it waited as long: issue 26). On an error the rows go
        back to the buffer, before any appended meanwhile. `wait` False: nothing when another
        flush is under way (a worker's gives way to requests: the appender must not wait for it)."""
        if not self._flushing.acquire(blocking=wait):
            return
        try:
            self._flush()
        finally:
            self._flushing.release()

    def _flush(self) -> None:
        """`flush` under `_flushing`. In a process forked from the one that made the log, the rows
        are dropped: its files are that process's, whose seqs the child's would repeat (a read
        keeps one row per seq: one of each pair lost)."""
        with self._lock:
            if not self._buffer:
                return
            if os.getpid() != self._pid:
                _log.debug("engramdb: %d %s log rows of a forked child dropped", len(self._buffer), self.prefix)
                self._buffer = []
                return
            rows, self._writing, self._buffer = self._buffer, self._buffer, []
            oldest = self._oldest
        try:
            self._write(self._table(rows))
        except BaseException:
            with self._lock:
                self._buffer, self._writing, self._oldest = rows + self._buffer, [], oldest
            raise
        with self._lock:
            self._writing = []
        crowd = len(self._files()) if self.dir is not None else 0
        if crowd > self.max_files:
            # twice as many: the worker it was handed to did not merge them (a store's close
            # stops its worker and drops what waits, then flushes: a writer opened, used once
            # and closed, as a CLI call is, added a file each time and none was ever merged)
            if self.on_crowded is not None and crowd <= 2 * self.max_files:
                self.on_crowded(self.rotate)
                return
            try:
                self.rotate()
            except OSError as exc:  # the rows are written: the merge is upkeep, tried at the next flush
                _log.warning("engramdb: the %s log's %d files in %s were not merged: %s",
                             self.prefix, crowd, self.dir, exc)

    def _table(self, rows: list[dict[str, Any]]) -> pa.Table:
        """The rows as a table, made a chunk at a time: between two a worker's flush gives way to
        the requests and writes beside it (~1,000 rows are ~12 ms of Python)."""
        parts = []
        for at in range(0, len(rows), FLUSH_CHUNK):
            parts.append(table_of_rows(rows[at:at + FLUSH_CHUNK], self.schema))
            give_way()
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

    def _write(self, table: pa.Table) -> str | None:
        if self.dir is None:
            self._memory.append(table)
            return None
        raw = table_bytes(table)
        seqs = table.column("seq")
        name = (f"{self.prefix}-{pc.min(seqs).as_py():012d}-{pc.max(seqs).as_py():012d}-"
                f"{zlib.crc32(raw):08x}.arrow")
        disk.mkdir(self.dir)
        write_atomically(self.dir / name, raw)  # the name made durable too (the folder fsynced)
        return name

    # ------------------------------------------------------------------------------ reading
    def _files(self) -> list[tuple[int, int, str, str]]:
        """(first seq, last seq, crc, name) of every file of this log, oldest first."""
        if self.dir is None or not self.dir.is_dir():
            return []
        out = []
        for p in self.dir.iterdir():
            m = self._pattern.match(p.name)
            if m:
                out.append((int(m.group(1)), int(m.group(2)), m.group(3), p.name))
        return sorted(out)

    def _last_seq(self) -> int:
        files = self._files()
        return max((last for _, last, _, _ in files), default=0)

    def _load(self, name: str, crc: str, *, vanished_ok: bool = False) -> pa.Table | None:
        """The file's table; None if it is damaged (recorded in `damaged`); with `vanished_ok`,
        `_VANISHED` if it is no longer there (a rotation or a purge replaced it)."""
        assert self.dir is not None
        try:
            raw = (self.dir / name).read_bytes()
        except OSError as exc:
            if vanished_ok and isinstance(exc, FileNotFoundError):
                return _VANISHED
            self.damaged[name] = f"unreadable ({exc})"
            return None
        if f"{zlib.crc32(raw):08x}" != crc:
            self.damaged[name] = "corrupt (CRC-32 mismatch)"
            return None
        try:
            table = pa.ipc.open_file(pa.py_buffer(raw)).read_all()
            if not table.schema.equals(self.schema):
                self.damaged[name] = "unexpected columns"
                return None
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors: a file is never trusted
            self.damaged[name] = f"unreadable ({type(exc).__name__})"
            return None
        return table

    def _read_files(self, since: int) -> list[pa.Table]:
        """The tables of the files holding a seq >= `since`. A rotation on the worker (or in the
        writer, for a reader in another process) may replace the files listed before they are
        read: a file that vanished is not damaged, the folder is listed again for the merged file
        that replaced it (read beside files already read: `read` keeps each seq once)."""
        got: dict[str, pa.Table] = {}
        for _ in range(LISTINGS):
            vanished = False
            for first, last, crc, name in self._files():
                if last < since or name in got:
                    continue
                t = self._load(name, crc, vanished_ok=True)
                if t is _VANISHED:
                    vanished = True
                elif t is not None:
                    got[name] = t
            if not vanished:  # every file listed was read: what replaced a vanished one is among them
                return list(got.values())
        raise StoreError(f"{self.dir}: the log's files kept changing while they were read ({LISTINGS} times); "
                         "try again")

    def read(self, since: int = 0) -> pa.Table:
        """Every row with seq >= `since` (buffered ones too), in seq order, each seq once."""
        with self._lock:
            parts = [t for t in self._memory] if self.dir is None else self._read_files(since)
            pending = self._writing + self._buffer  # a row both written and in `_writing` is kept once
            if pending:
                parts.append(table_of_rows(pending, self.schema))
        if not parts:
            return empty_table(self.schema)
        table = pa.concat_tables(parts)
        if since > 0:  # the rows at or after it, by position (a compare with a Python int would import pandas)
            table = table.take(arrow_of(np.flatnonzero(numpy_of(table.column("seq")) >= since)))
        return _each_seq_once(table)

    # ------------------------------------------------------------------------------ upkeep
    def rotate(self) -> int:
        """Merge every readable file into one; returns how many files were merged. Appends and
        reads go on meanwhile (it holds the rewrite lock only): the merged file is written before
        its inputs go, so a reader sees every row once or, for that moment, twice (`read` keeps
        each seq once, as after a rotation cut short by a crash); a purge waits for it."""
        with self._rewrite:
            files = [f for f in self._files() if f[3] not in self.damaged]
            if self.dir is None or len(files) < 2:
                return 0
            tables = [(f, self._load(f[3], f[2])) for f in files]
            good = [(f, t) for f, t in tables if t is not None]
            if len(good) < 2:
                return 0
            # a rotation cut short left its merged file beside its inputs: merged once, not twice over
            merged = _each_seq_once(pa.concat_tables([t for _, t in good]))
            name = self._write(merged)
            for f, _ in good:
                if f[3] != name:  # the merged rows may be one input's own bytes (its name too)
                    disk.unlink(self.dir / f[3])
            _fsync_dir(self.dir)
            return len(good)

    def purge(self, column: str, values: set[str]) -> int:
        """Rewrite the log without the rows whose `column` holds one of `values`; returns how
        many rows went. Files that hold none are left as they are."""
        return self.purge_any({column: values})

    def purge_any(self, match: Mapping[str, Iterable[str]]) -> int:
        """Rewrite the log without the rows where any column of `match` holds one of its values
        (one pass over the files, whatever the columns); returns how many rows went. Files that
        hold none are left as they are; buffered rows are dropped too."""
        wanted = {col: pa.array(sorted(set(vals)), pa.string()) for col, vals in match.items() if vals}
        if not wanted:
            return 0
        for col in wanted:
            if col not in self.schema.names:
                raise ValueError(f"the {self.prefix} log has no column {col!r}")

        def hit(t: pa.Table) -> pa.ChunkedArray:
            found = None
            for col, values in wanted.items():
                h = pc.fill_null(pc.is_in(t.column(col), value_set=values), False)
                found = h if found is None else pc.or_(found, h)
            return found

        with self._flushing, self._lock, self._rewrite:
            sets = {col: set(vals) for col, vals in match.items() if vals}
            before = len(self._buffer)
            self._buffer = [r for r in self._buffer if not any(r.get(c) in v for c, v in sets.items())]
            removed = before - len(self._buffer)
            if self.dir is None:
                kept = []
                for t in self._memory:
                    h = hit(t)
                    removed += int(pc.sum(h).as_py() or 0)
                    kept.append(t.filter(pc.invert(h)))
                self._memory = kept
                return removed
            for first, last, crc, name in self._files():
                t = self._load(name, crc)
                if t is None:
                    continue
                h = hit(t)
                n = int(pc.sum(h).as_py() or 0)
                if n == 0:
                    continue
                rest = t.filter(pc.invert(h))
                if rest.num_rows:
                    self._write(rest)
                disk.unlink(self.dir / name, missing_ok=False)
                removed += n
            # a flush killed before its rename left its rows in `<file>.tmp`, purged rows among them:
            # the log's own temporary files go too (no flush of this log is under way: `_flushing`),
            # but not in a forked child, whose parent's threads may be writing one now (its rename
            # then failed: the parent's merge raised in its thread)
            for p in self.dir.glob(f"{self.prefix}-*.arrow.tmp") if os.getpid() == self._pid else ():
                if self._pattern.match(p.name[:-len(".tmp")]):
                    disk.unlink(p, missing_ok=True)
            _fsync_dir(self.dir)
            return removed

    def waiting(self) -> int:
        """Rows not in a file yet: buffered, or being written by a flush now."""
        with self._lock:
            return len(self._buffer) + len(self._writing)

    def describe(self) -> dict[str, Any]:
        """Files, rows waiting in the buffer, the next seq, damaged files."""
        return {"files": len(self._files()) if self.dir is not None else len(self._memory),
                "buffered": self.waiting(), "next_seq": self.next_seq,
                "damaged": dict(self.damaged)}


LOG_FILE = re.compile(r"^[a-z]+-\d{12}-\d{12}-([0-9a-f]{8})\.arrow$")


def intact_logs(folder: Path) -> tuple[list[tuple[str, bytes]], list[str]]:
    """The log files of a store folder whose bytes match the CRC-32 in their name, as (name,
    bytes), and the names of those that do not (what a backup copies, and leaves out). A file a
    rotation or a purge removes while they are read is passed over and the folder listed again
    for what replaced it, until a listing holds nothing that vanished: the files read may overlap
    (a merged file beside some it merged), and a log reads each seq once."""
    d = folder / LOG_DIR
    got: dict[str, bytes] = {}
    bad: set[str] = set()
    if not d.is_dir():
        return [], []
    for _ in range(LISTINGS):
        vanished = False
        for p in sorted(d.iterdir()):
            m = LOG_FILE.match(p.name)
            if not m or p.name in got or p.name in bad:
                continue
            try:
                raw = p.read_bytes()
            except FileNotFoundError:
                vanished = True  # a rotation or a purge replaced it: its replacement is listed next time
                continue
            if f"{zlib.crc32(raw):08x}" == m.group(1):
                got[p.name] = raw
            else:
                bad.add(p.name)
        if not vanished:  # every file listed was read: what replaced a vanished one is among them
            return sorted(got.items()), sorted(bad)
    raise StoreError(f"{d}: the log's files kept changing while they were read ({LISTINGS} times); try again")


def _each_seq_once(table: pa.Table) -> pa.Table:
    """The rows in seq order, each seq once (a rotation cut short, or one a read overlapped, left
    a merged file beside the files it merged)."""
    table = table.take(pc.sort_indices(table, [("seq", "ascending")]))
    seqs = numpy_of(table.column("seq"))
    if len(seqs) > 1 and (seqs[1:] == seqs[:-1]).any():
        table = table.take(arrow_of(np.flatnonzero(np.concatenate([[True], seqs[1:] != seqs[:-1]]))))
    return table


def _fsync_dir(folder: Path) -> None:
    """Make the folder's removals durable (best effort: a failure leaves at worst a file a later
    read keeps each seq of once)."""
    try:
        disk.fsync_dir(folder)
    except OSError:
        pass


__all__ = ["LOG_DIR", "ArrowLog", "intact_logs"]

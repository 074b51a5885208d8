"""File checksums: every Arrow file the store writes is listed in the manifest with its size and
XXH3-64 (about 30 GB/s here: a 1M-memory store's 1.5 GB of vectors hash in ~0.05 s from the page
cache), checked before a single byte of it is parsed, so a damaged file is an error naming it,
never rows served as sound and never a crash inside a parser. Files written before checksums
(format 2 stores) are checked structurally instead (`Table.validate(full=True)`: offsets, UTF-8)
and get their checksums at the next writable open.

A segment's vector columns are most of its bytes, and a store opened cold would read all of them
from disk just to check them. So a segment's entry also splits its checksum in two (`deferred`):
the vector buffers' byte ranges with their own XXH3, and the rest. Opening checks the rest (ids,
text, times, the footer: everything a `get` reads) before parsing; the vector part is checked on
a background thread (XXH3 releases the GIL), and the first read of any vector waits for that
check (`Deferred.wait`): damaged vectors are an error naming the file, never scores.
"""

from __future__ import annotations

import logging
import mmap
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import xxhash

from ..model.errors import CorruptFile

ALGORITHM = "xxh3"


def digest(data: Any) -> dict[str, Any]:
    """Size and XXH3-64 (hex) of bytes, a memoryview or an Arrow buffer."""
    with memoryview(data) as view:  # released at once: an mmap cannot close while it is exported
        return {"bytes": view.nbytes, ALGORITHM: xxhash.xxh3_64_hexdigest(view)}


def file_digest(path: Path) -> dict[str, Any]:
    """`digest` of a whole file (memory-mapped)."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return digest(b"")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return digest(view)


def check(path: Path, data: Any, entry: dict[str, Any]) -> None:
    """Raise CorruptFile unless `data` (the bytes of `path`) match the manifest `entry`; an entry
    without a checksum (an older store's) passes: its table is validated when parsed instead."""
    if ALGORITHM in entry:
        _agrees(path, digest(data), entry)


def check_file(path: Path, entry: dict[str, Any]) -> None:
    """`check` of the file's bytes on disk now (memory-mapped), not of bytes read earlier."""
    if ALGORITHM in entry:
        _agrees(path, file_digest(path), entry)


def _agrees(path: Path, got: dict[str, Any], entry: dict[str, Any]) -> None:
    if got["bytes"] != entry.get("bytes"):
        raise CorruptFile(path, f"{got['bytes']:,} bytes where the manifest recorded {entry.get('bytes')!r}")
    if got[ALGORITHM] != entry[ALGORITHM]:
        raise CorruptFile(path, f"its XXH3 checksum is {got[ALGORITHM]}, the manifest recorded {entry[ALGORITHM]}")


def parsed(path: Path, data: pa.Buffer, entry: dict[str, Any] | None) -> pa.Table:
    """The table of an Arrow IPC file's bytes, checked first (see the module docstring)."""
    if entry is not None:
        check(path, data, entry)
    try:
        table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
        if entry is None or ALGORITHM not in entry:
            table.validate(full=True)  # no checksum to trust: the structure, before any column is read
    except (pa.ArrowException, OSError, ValueError, UnicodeDecodeError) as exc:
        raise CorruptFile(path, f"not a readable Arrow file ({type(exc).__name__}: {exc})") from None
    return table


log = logging.getLogger("engramdb.storage")
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
DEFER_MIN_BYTES = 1 << 20  # vector parts smaller than this are checked at open with the rest


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engramdb-verify")
        return _POOL


def _forget_pool() -> None:
    """In a forked child: the parent's pool came without its thread (a check submitted to it
    would never run, and the lock may have been held at the fork): a new one when first needed."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _merged(ranges: list[tuple[int, int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for start, size in sorted(ranges):
        if out and start <= out[-1][0] + out[-1][1]:
            out[-1][1] = max(out[-1][1], start + size - out[-1][0])
        else:
            out.append([start, size])
    return out


def _hash(view: memoryview, ranges: list[list[int]]) -> str:
    h = xxhash.xxh3_64()
    for start, size in ranges:
        h.update(view[start:start + size])
    return h.hexdigest()


def _complement(ranges: list[list[int]], size: int) -> list[list[int]]:
    out, at = [], 0
    for start, length in ranges:
        if start > at:
            out.append([at, start - at])
        at = start + length
    if at < size:
        out.append([at, size - at])
    return out


def deferred_part(data: pa.Buffer, columns: list[str]) -> dict[str, Any] | None:
    """The split checksum of a just-written Arrow file (see the module docstring): the byte
    ranges of `columns`' buffers, their XXH3, and the XXH3 of every other byte; None when the
    columns are too small to be worth deferring."""
    table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    base = data.address
    ranges = [(b.address - base, b.size) for name in columns if name in table.column_names
              for chunk in table.column(name).chunks for b in chunk.buffers() if b is not None and b.size]
    merged = _merged(ranges)
    if sum(size for _, size in merged) < DEFER_MIN_BYTES:
        return None
    with memoryview(data) as view:
        return {"ranges": merged, ALGORITHM: _hash(view, merged), "rest": _hash(view, _complement(merged, len(view)))}


class Deferred:
    """The deferred part of one file's check: started on a background thread at open, waited for
    before the first read of those bytes; `wait` raises CorruptFile when they do not match."""

    def __init__(self, path: Path, data: pa.Buffer, part: dict[str, Any]) -> None:
        self.path, self._data, self._part = path, data, part
        self._future: Future[str] | None = None
        self._pid = os.getpid()  # the process whose pool runs `_future`
        self._lock = threading.Lock()
        self._passed = False  # set once the check passed: every vector read asks (~400 a context)

    def _check(self) -> str:
        with memoryview(self._data) as view:
            got = _hash(view, self._part["ranges"])
        if got != self._part[ALGORITHM]:
            problem = f"its vector columns' XXH3 is {got}, the manifest recorded {self._part[ALGORITHM]}"
            log.error("%s is damaged: %s; its vectors will not be read", self.path, problem)
            return problem
        return ""

    def start(self) -> None:
        """Begin the check on the background thread (idempotent)."""
        with self._lock:
            if self._future is None:
                self._future, self._pid = _pool().submit(self._check), os.getpid()

    def wait(self) -> None:
        """Block until the check is done; CorruptFile if the bytes do not match."""
        if self._passed:
            return
        self.start()
        assert self._future is not None
        if self._pid != os.getpid() and not self._future.done():
            problem = self._check()  # a forked child: the parent's thread that would run it is not here
        else:
            problem = self._future.result()
        if problem:
            raise CorruptFile(self.path, problem)
        self._passed = True


def parsed_deferred(path: Path, data: pa.Buffer, entry: dict[str, Any] | None) -> tuple[pa.Table, Deferred | None]:
    """`parsed`, but for an entry with a deferred part: the size and every byte but the vector
    ranges are checked now, the vector ranges on a background thread (started here)."""
    part = (entry or {}).get("deferred")
    if not part:
        return parsed(path, data, entry), None
    assert entry is not None
    with memoryview(data) as view:
        if view.nbytes != entry.get("bytes"):
            raise CorruptFile(path, f"{view.nbytes:,} bytes where the manifest recorded {entry.get('bytes')!r}")
        try:
            rest = _hash(view, _complement(part["ranges"], view.nbytes))
        except (TypeError, ValueError, KeyError) as exc:
            raise CorruptFile(path, f"its manifest entry is malformed ({exc})") from None
    if rest != part["rest"]:
        raise CorruptFile(path, f"its XXH3 (all but the vector columns) is {rest}, the manifest recorded {part['rest']}")
    try:
        table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    except (pa.ArrowException, OSError, ValueError, UnicodeDecodeError) as exc:
        raise CorruptFile(path, f"not a readable Arrow file ({type(exc).__name__}: {exc})") from None
    deferred = Deferred(path, data, part)
    deferred.start()
    return table, deferred

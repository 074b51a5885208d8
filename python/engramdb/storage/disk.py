"""The I/O seam: every file operation the storage layer uses to change a store folder (open for
writing, write, fsync, rename, link, unlink, truncate, mkdir) goes through this module.

It exists for two reasons. Its functions do the careful part once: unbuffered writes that loop
until every byte is written (no user-space buffer can flush a failed write's bytes later), the
fsync of a folder after a rename, a temporary file that never outlives a failed atomic write.
And it is where faults are injected: `inject(hook)` installs a callable that sees every
operation (`op`, `path`) before it runs and may raise (ENOSPC, EIO) or end the process (a crash),
so tests and bench/fault_matrix.py can fail each public operation at each of its I/O calls in turn
(the way SQLite tests its I/O error and crash paths). Reads are not routed here: a failed read
changes nothing durable.

`OPS` lists the operation names a hook sees.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger("engramdb.storage")
OPS = ("open", "write", "fsync", "rename", "link", "unlink", "truncate", "mkdir", "rmdir")
Hook = Callable[[str, str, Any], None]  # (op, path, detail) -> None, or raise

_hook: Hook | None = None
_hook_lock = threading.Lock()


@contextmanager
def inject(hook: Hook) -> Iterator[None]:
    """Call `hook(op, path, detail)` before every storage I/O operation while the block runs
    (one hook at a time, process-wide). `detail` is, for "write", (the bytes about to be
    written, the offset or None for the file's end): a hook may write a prefix of them itself
    before raising or ending the process, as a torn write would; for "rename" and "link", the
    source path; else None."""
    global _hook
    with _hook_lock:
        if _hook is not None:
            raise RuntimeError("a fault hook is installed already")
        _hook = hook
    try:
        yield
    finally:
        _hook = None


def _before(op: str, path: str | os.PathLike[str], detail: Any = None) -> None:
    hook = _hook
    if hook is not None:
        hook(op, os.fspath(path), detail)


@contextmanager
def _named(path: str | os.PathLike[str]) -> Iterator[None]:
    """An OSError that names no file (a full disk at a write) raised again naming `path`."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno), os.fspath(path)) from None
        raise


# ------------------------------------------------------------------------------ descriptors
def open_fd(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """`os.open` for a file the store writes."""
    _before("open", path)
    # never through a symbolic link: a store's files are plain files it made, and a link planted
    # under one of their names must not make a write land (or a truncation bite) outside the store
    return os.open(path, flags | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0), mode)


def write_at(fd: int, data: bytes | bytearray | memoryview, offset: int, path: str | os.PathLike[str]) -> None:
    """Write all of `data` at `offset` (`os.pwrite` until done: a short write is resumed, never
    left for a buffer to finish later)."""
    view = memoryview(data).cast("B")
    _before("write", path, (view, offset))
    done = 0
    with _named(path):
        while done < len(view):
            n = os.pwrite(fd, view[done:], offset + done)
            if n <= 0:  # pragma: no cover - pwrite reports errors by raising
                raise OSError(errno.EIO, f"short write to {path}")
            done += n


def append(fd: int, data: bytes | bytearray | memoryview, path: str | os.PathLike[str]) -> None:
    """Write all of `data` at the descriptor's position (a sequentially written file)."""
    view = memoryview(data).cast("B")
    _before("write", path, (view, None))
    done = 0
    with _named(path):
        while done < len(view):
            done += os.write(fd, view[done:])


def fsync(fd: int, path: str | os.PathLike[str]) -> None:
    """Make a file's data durable."""
    _before("fsync", path)
    with _named(path):
        os.fsync(fd)


def truncate(fd: int, size: int, path: str | os.PathLike[str]) -> None:
    """Cut a file back to `size` bytes."""
    _before("truncate", path)
    with _named(path):
        os.ftruncate(fd, size)


def close(fd: int) -> None:
    """Close a descriptor (not a fault point: closing loses nothing that fsync did not keep)."""
    os.close(fd)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a folder's entries (files created, renamed or removed in it) durable."""
    _before("fsync", path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------ names
def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Rename `src` over `dst` (atomic on POSIX)."""
    _before("rename", dst, os.fspath(src))
    os.replace(src, dst)


def link(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Hard-link `src` as `dst` (FileExistsError when `dst` exists: never overwrites)."""
    _before("link", dst, os.fspath(src))
    os.link(src, dst)


def unlink(path: str | os.PathLike[str], *, missing_ok: bool = True) -> None:
    """Remove a file."""
    _before("unlink", path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        if not missing_ok:
            raise


def mkdir(path: str | os.PathLike[str], *, parents: bool = False, exist_ok: bool = True) -> None:
    """Make a folder."""
    _before("mkdir", path)
    Path(path).mkdir(parents=parents, exist_ok=exist_ok)


def rmdir(path: str | os.PathLike[str]) -> None:
    """Remove an empty folder."""
    _before("rmdir", path)
    os.rmdir(path)


# ------------------------------------------------------------------------------ whole files
def write_file(path: Path, data: bytes | bytearray | memoryview, *, exclusive: bool = False) -> None:
    """Write `path` whole with `data`, fsynced (with `exclusive`, FileExistsError when it exists:
    never overwrites). A failure removes the half-written file and raises."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = open_fd(path, flags)
    try:
        write_at(fd, data, 0, path)
        fsync(fd, path)
    except BaseException:
        os.close(fd)
        _discard(path)
        raise
    os.close(fd)


def write_atomically(path: Path, data: bytes | bytearray | memoryview, *, tmp: Path | None = None,
                     durable_name: bool = True) -> None:
    """Replace `path` with `data` whole or not at all: a temporary file beside it (`tmp`, by
    default `<name>.tmp`), fsynced, renamed over it, then the folder fsynced (unless
    `durable_name` is False: the caller makes the name durable). A failure before the rename
    leaves `path` as it was, removes the temporary file and raises; once the rename is done the
    new file is what readers get, so a failing fsync of the folder after it is logged, not raised
    (raising would have the caller write again what is already there)."""
    tmp = tmp or path.with_name(path.name + ".tmp")
    write_file(tmp, data)
    try:
        replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise
    if durable_name:
        try:
            fsync_dir(path.parent)
        except OSError as exc:
            log.warning("fsync of %s after writing %s failed: %s", path.parent, path.name, exc)


def _discard(path: Path) -> None:
    """Best-effort removal of a temporary file a failed write made (a failing disk may refuse:
    it is then debris under a name nothing reads)."""
    try:
        unlink(path)
    except OSError:
        pass


class SeamFile:
    """A write-only file object over `write_at`/`fsync` (what pyarrow's IPC writer is given, as
    `pa.PythonFile(SeamFile(...))`, so a segment's bytes go through the seam too)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        self._pos = 0
        self.closed = False

    def write(self, data: Any) -> int:
        assert self._fd is not None
        view = memoryview(data).cast("B")
        write_at(self._fd, view, self._pos, self.path)
        self._pos += len(view)
        return len(view)

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        pass  # nothing is buffered here

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def sync(self) -> None:
        """fsync the file (before it is renamed into place)."""
        assert self._fd is not None
        fsync(self._fd, self.path)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.closed = True


def torn_write(path: str, detail: Any) -> None:
    """Write the first half of a "write" operation's bytes where it would have written them (what
    a hook does to leave the torn write a crash or a full disk leaves)."""
    data, offset = detail
    if len(data) < 2:
        return
    fd = os.open(path, os.O_WRONLY | (os.O_APPEND if offset is None else 0))
    try:
        half = bytes(data[: len(data) // 2])
        os.write(fd, half) if offset is None else os.pwrite(fd, half, offset)
    finally:
        os.close(fd)

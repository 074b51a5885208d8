"""One writer, many readers, across processes (S9): an advisory lock on the store folder.

A writer holds an exclusive `flock` for as long as the store is open; a second writer gets a clear
error at once instead of waiting or corrupting the WAL. Readers (`read_only=True`) take no lock:
they read the committed manifest and the WAL as they are at open time. The kernel releases the
lock when the process dies, so a crashed writer never leaves the store locked.

Two locks are taken, both held until release: one on the folder itself and one on `<store>/LOCK`
(the file names the holder, and is what engramdb before format 6 locked). The folder's lock is
what makes the claim hold: a `LOCK` file deleted (or replaced) while a writer runs would let a
second writer lock a new file of the same name, but it cannot lock the folder the first one holds.
After locking `LOCK`, the writer checks that the file it locked is still the one at that path.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from ..model.errors import StoreError, StoreLocked

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock; single-process use only
    fcntl = None  # type: ignore[assignment]

ATTEMPTS = 5  # LOCK replaced between open and flock this often in a row: give up


class WriterLock:
    """The exclusive writer lock of one store folder."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "LOCK"
        self._dir: int | None = None
        self._fd: int | None = None
        if fcntl is None:
            return
        try:
            self._dir = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
            if not _claim(self._dir):
                raise StoreLocked(f"{folder} is open for writing by {self.holder()}; open it with read_only=True, "
                                  "or close the other writer")
            self._fd = self._lock_file(folder)
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, f"pid {os.getpid()}".encode(), 0)
        except BaseException:
            self.release()
            raise

    def _lock_file(self, folder: Path) -> int:
        for _ in range(ATTEMPTS):
            try:  # never through a link: the writer would truncate whatever it points to
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0),
                             0o644)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise StoreError(f"{self.path} is a symbolic link: a store's LOCK file is a plain file it made; "
                                     "remove the link") from None
                raise
            if not _claim(fd):
                holder = self.holder()
                os.close(fd)
                raise StoreLocked(f"{folder} is open for writing by {holder}; open it with read_only=True, or close "
                                  "the other writer")
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)  # LOCK was replaced between the open and the lock: lock the file there now
        raise StoreLocked(f"{folder}: its LOCK file kept changing while this writer locked it; is another program "
                          "removing it?")

    def holder(self) -> str:
        """Who holds the lock, as its LOCK file says ("another process" when it does not say)."""
        try:
            with open(self.path, "rb") as fh:
                return fh.read(64).decode(errors="replace").strip() or "another process"
        except OSError:
            return "another process"

    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._dir is not None or fcntl is None

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        for fd in (self._fd, self._dir):
            if fd is not None:
                os.close(fd)  # closing the descriptor releases its flock
        self._fd = self._dir = None


def _try_lock(fd: int) -> bool:
    """Take an exclusive flock on `fd` without waiting; False when another holder has it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


PROBE_WAIT_S = 0.025  # how long a writer retries a lock held for an instant (a probe's, below)


def _claim(fd: int) -> bool:
    """A writer's `_try_lock`, retried for PROBE_WAIT_S: `writer_active` (a capture hook's question,
    and `verify`'s) takes the lock for microseconds to see whether it is free, and a writer opening
    in that instant was refused (StoreLocked, with no writer anywhere: 18 of 346 opens beside a
    process probing without pause). A writer that holds the lock holds it far longer."""
    end = time.monotonic() + PROBE_WAIT_S
    while not _try_lock(fd):
        if time.monotonic() >= end:
            return False
        time.sleep(0.001)
    return True


def writer_active(folder: Path) -> bool:
    """True when a writer holds the folder's lock now (probed without taking it for long, and
    without writing anything: what `verify` asks before it judges unlisted files)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        if not _try_lock(fd):
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        lock = folder / "LOCK"  # an older engramdb locks only this file
        try:
            lfd = os.open(lock, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return False
        try:
            return not _try_lock(lfd)
        finally:
            os.close(lfd)  # releases the probe's lock too
    finally:
        os.close(fd)

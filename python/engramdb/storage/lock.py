"""One writer, many readers, across processes (S9): an advisory lock on `<store>/LOCK`.

A writer holds an exclusive `flock` for as long as the store is open; a second writer gets a clear
error at once instead of waiting or corrupting the WAL. Readers (`read_only=True`) take no lock:
they read the committed manifest and the WAL as they are at open time. The kernel releases the
lock when the process dies, so a crashed writer never leaves the store locked.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..model.errors import StoreLocked

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock; single-process use only
    fcntl = None  # type: ignore[assignment]


class WriterLock:
    """The exclusive writer lock of one store folder."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "LOCK"
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is None:
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._fd, 64, 0).decode(errors="replace").strip() or "another process"
            os.close(self._fd)
            self._fd = None
            raise StoreLocked(
                f"{folder} is open for writing by {holder}; open it with read_only=True, or close the other writer"
            ) from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"pid {os.getpid()}".encode(), 0)

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

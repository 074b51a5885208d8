"""`engramdb mcp --path PATH`: serve a store to agents over MCP on stdio (SPEC C8; the tools: mcp_tools.py).

The store is opened as the writer, and takes in before each call what other processes (hooks) captured
meanwhile through `engramdb.capture`. When another process holds the writer's lock (`StoreLocked`: an
agent's own process, another server), it is opened read-only instead: each later call first tries
to become the writer (the other may have closed; opening as the writer also ingests the spool), a
reader older than `READER_REFRESH_S`, or opened before a purge, is reopened to see the other writer's commits, and
store_memory goes through `engramdb.capture` (written at once when the lock is free, else spooled to
`<store>/spool/` for the next writer to ingest exactly once). The store is closed, its WAL
checkpointed, when the client disconnects (stdin closes) or on SIGTERM / SIGINT.

Nothing but protocol reaches stdout: the store is opened and closed with `sys.stdout` sent to
stderr; while serving, the SDK's transport writes on its own copy of fd 1 and points fd 1 itself at
stderr, and the server's lifespan sends `sys.stdout` to stderr as well.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import FrameType
from typing import Any

import engramdb

from ..model import FormatError, StoreError, StoreLocked
from ..storage.folder import row_epoch
from ..store import Store

READER_REFRESH_S = 5.0  # a read-only handle older than this is reopened before the next call


class ServedStore:
    """The handle an MCP server serves: the writer when the lock is free, else a reader (see the
    module docstring). Not thread-safe: the tools call it under their one lock."""

    def __init__(self, path: str, profile: str | None) -> None:
        self.path, self.profile = path, profile
        self._opened = time.monotonic()
        self._epoch = row_epoch(Path(path))  # before the open: a purge during it makes the next reopen
        try:
            self._db = engramdb.open(path, profile=profile)
        except StoreLocked as exc:
            _say(f"{exc}; serving it read-only, store_memory captures new memories for the writer")
            self._db = engramdb.open(path, read_only=True, access_log="spool")

    @property
    def read_only(self) -> bool:
        """True while another process holds the writer's lock."""
        return self._db.read_only

    def store(self) -> Store:
        """The handle for this call: the writer if it is (or has just become) ours, having taken in
        what other processes captured meanwhile (hooks: `db.admin.ingest_spool`), else a
        fresh enough reader."""
        if not self._db.read_only:
            self._db.admin.ingest_spool()
            return self._db
        try:
            writer = engramdb.open(self.path, profile=self.profile)
        except StoreLocked:
            # a purge since the reader was opened: what it removed is never answered once purge() returned
            epoch = row_epoch(Path(self.path))
            if time.monotonic() - self._opened >= READER_REFRESH_S or (epoch is not None and epoch != self._epoch):
                reader = engramdb.open(self.path, read_only=True, access_log="spool")
                self._db.close()
                self._db, self._opened, self._epoch = reader, time.monotonic(), epoch
        else:
            self._db.close()
            self._db = writer
            _say(f"the writer's lock on {self.path} came free: serving it as the writer")
        return self._db

    def remember(self, record: dict[str, Any]) -> dict[str, Any]:
        """Store one new memory; says how ("written", or "captured" beside another writer)."""
        db = self.store()
        if not db.read_only:
            return {"id": db.add_many([record])[0], "stored": "written"}
        got = engramdb.capture(self.path, [record])
        return {"id": got["ids"][0], "stored": "captured", "capture": got,
                "note": "another process holds this store's writer lock: the memory was captured (written if "
                        "the lock came free, else spooled for the next writer to ingest); it is searchable "
                        "once a writer has ingested it"}

    def close(self) -> None:
        """Close the handle (the writer folds its WAL into a segment and saves its indexes)."""
        self._db.close()


def _say(message: str) -> None:
    print(f"engramdb mcp: {message}", file=sys.stderr, flush=True)


@contextlib.asynccontextmanager
async def _stdout_to_stderr(_server: object) -> AsyncIterator[None]:
    """The server's lifespan: entered once the transport holds its own copy of fd 1, so any print
    while serving goes to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def _closer(served: ServedStore, lock: threading.Lock) -> Callable[[int, FrameType | None], None]:
    """The SIGTERM / SIGINT handler: close the store once no tool is using it, then exit at once.
    (Unwinding the event loop instead would wait for the transport's thread blocked reading stdin.)"""
    def close(signum: int, _frame: FrameType | None) -> None:
        with lock, contextlib.redirect_stdout(sys.stderr):
            served.close()
        _say(f"signal {signum}: {served.path} closed")
        os._exit(0)
    return close


def main(path: str, *, namespace: str, profile: str | None) -> int:
    """Serve the store at `path` over MCP on stdio until the client disconnects; tool calls without
    a namespace use `namespace`; `profile` is the schema of a new store. Returns the exit code: 0,
    1 when the store cannot be opened, 2 when the MCP SDK is missing."""
    try:
        import anyio

        from .mcp_tools import MemoryTools, build_server
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types", "pydantic", "anyio"):
            raise
        print(f"engramdb mcp needs the MCP SDK 2.x ({exc}): pip install 'engramdb[mcp]'", file=sys.stderr)
        return 2
    with contextlib.redirect_stdout(sys.stderr):
        try:
            served = ServedStore(path, profile)
        except (StoreError, FormatError, ValueError, OSError) as exc:
            _say(f"cannot open {path}: {type(exc).__name__}: {exc}")
            return 1
    lock = threading.Lock()  # one tool call at a time; the signal handler's close waits for it
    server = build_server(MemoryTools(served.store, served.remember, namespace), lock=lock,
                          lifespan=_stdout_to_stderr)
    stops = (signal.SIGTERM, signal.SIGINT) if threading.current_thread() is threading.main_thread() else ()
    previous = {s: signal.signal(s, _closer(served, lock)) for s in stops}
    try:
        anyio.run(server.run_stdio_async)
    finally:
        for s in stops:  # a signal now (the client's grace ran out) must not cut the close short
            signal.signal(s, signal.SIG_IGN)
        with contextlib.redirect_stdout(sys.stderr):
            served.close()
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
    return 0


__all__ = ["READER_REFRESH_S", "ServedStore", "main"]

"""An asyncio facade: the store's verbs as coroutines that never block the event loop.

    db = await engramdb.aio.open("./memory")
    await db.add_messages([{"role": "user", "content": "I moved to Lisbon"}], namespace="u1")
    ctx = await db.context("where do I live?", namespace="u1", max_tokens=500)
    await db.close()

Every call runs the synchronous `Store` verb on a small thread pool of the store's own: the
kernels and Arrow release the GIL, so searches run side by side, and the loop keeps serving other
requests meanwhile. Writes still go one at a time through the store's writer lock. Any `Store`
method not spelled out below is reachable too (`await db.lifecycle.dream(namespace="u1")`); properties such
as `db.path` and `db.schema` are plain attributes.

Closing: `close()` refuses new calls at once (they raise `StoreError("the store is closed")`),
lets the calls already made finish, then closes the store, all off the loop: awaiting it never
stalls other tasks. Calls after close raise the same `StoreError`.

Cancellation (`asyncio.wait_for` timing out, a client going away): a call still waiting for a
thread is dropped and never runs. A call already running cannot be stopped halfway (a store write
is one atomic batch): it finishes, and a write that finishes after its caller was cancelled is
reported, never silent: logged as a warning on the "engramdb" logger and kept in
`AsyncStore.cancelled_writes` with what it returned (`add_many`: the ids it stored). So after a
timeout a write either did not happen or is listed there. To retry safely, give ids: a retry of
records that did land is refused whole (`StoreError`: "id ... already exists"), never stored twice.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import concurrent.futures
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model.errors import StoreError
from .store import Added, Store
from .store import open as open_store

_log = logging.getLogger("engramdb")
# verbs that change nothing: one cancelled while it ran is simply dropped, not reported
_READS = frozenset({
    "search", "context", "get", "list", "history", "edges", "stats", "explain", "get_all", "verify",
    "topics", "topics.get", "topics.divergence", "topics.spaces",
    "importance", "importance.of", "importance.log", "importance.tiers", "importance.pack",
    "lifecycle.is_archived", "lifecycle.forget_proposals", "curiosity",
    "admin.snapshot", "admin.dashboard", "admin.tree_recall", "admin.type_clusters", "admin.settle",
    # the old names of those, for one release
    "snapshot", "is_archived", "topic", "divergence", "voting_spaces", "importance_log", "tiers", "pack",
    "forget_proposals", "dashboard", "tree_recall", "type_clusters", "settle"})
KEPT = 1_000  # cancelled writes remembered (the oldest go first)
_FACETS = frozenset({"topics", "importance", "lifecycle", "curiosity", "admin"})


@dataclass(frozen=True)
class CancelledWrite:
    """A write whose caller was cancelled while it ran; it finished anyway (see the module
    docstring). `result` is what it returned (`add_many`: the ids stored), `error` what it raised
    (then nothing was written: a store write is all or nothing)."""

    verb: str
    result: Any
    error: BaseException | None


class _AsyncFacet:
    """A facet of the store (`topics`, `lifecycle`, ...) whose verbs are coroutines; a callable
    facet (`await adb.topics(ns)`) is awaited as a call."""

    def __init__(self, owner: AsyncStore, name: str, facet: Any) -> None:
        self._owner, self._name, self._facet = owner, name, facet

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._facet, name)
        if not callable(attr):
            return attr
        verb = f"{self._name}.{name}"

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._owner._run(verb, attr, *args, **kwargs)

        call.__doc__ = attr.__doc__
        return call

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return await self._owner._run(self._name, self._facet, *args, **kwargs)


class AsyncStore:
    """A `Store` whose verbs are coroutines (see the module docstring)."""

    def __init__(self, store: Store, workers: int | None = None) -> None:
        self.store = store
        self._pool = ThreadPoolExecutor(max_workers=workers or min(4, os.cpu_count() or 1),
                                        thread_name_prefix="engramdb-aio")
        self._closing: asyncio.Future[None] | None = None
        self.cancelled_writes: collections.deque[CancelledWrite] = collections.deque(maxlen=KEPT)

    @property
    def closed(self) -> bool:
        """True once `close()` was called (new calls are refused from then on)."""
        return self._closing is not None

    async def _run(self, verb: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._closing is not None:
            raise StoreError("the store is closed")
        try:
            job = self._pool.submit(fn, *args, **kwargs)
        except RuntimeError:  # the pool shut down from another thread or loop
            raise StoreError("the store is closed") from None
        try:
            return await asyncio.wrap_future(job)
        except asyncio.CancelledError:
            if not job.cancel() and verb not in _READS:  # running (or done): it finishes, and says so
                job.add_done_callback(functools.partial(self._finished_after_cancel, verb))
            raise

    def _finished_after_cancel(self, verb: str, job: concurrent.futures.Future[Any]) -> None:
        """Record a write that completed after its caller was cancelled (runs on the worker)."""
        error = job.exception()
        done = CancelledWrite(verb, None if error is not None else job.result(), error)
        self.cancelled_writes.append(done)
        if error is None:
            _log.warning("engramdb.aio: %s was cancelled while it ran; it finished and was stored (%s): see "
                         "AsyncStore.cancelled_writes", verb, f"{done.result!r:.200}")

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if name in _FACETS:  # db.lifecycle.dream(...) -> await adb.lifecycle.dream(...)
            return _AsyncFacet(self, name, attr)
        if not callable(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._run(name, attr, *args, **kwargs)

        call.__doc__ = attr.__doc__
        return call

    # the verbs a service calls most, spelled out for editors and type checkers
    async def add(self, content: str, **fields: Any) -> Any:
        """`Store.add` off the loop."""
        return await self._run("add", self.store.add, content, **fields)

    async def add_many(self, records: Iterable[Mapping[str, Any]]) -> Added:
        """`Store.add_many` off the loop (see the module docstring on cancellation and retries)."""
        return await self._run("add_many", self.store.add_many, builtins.list(records))  # type: ignore[no-any-return]

    async def add_messages(self, messages: Iterable[Mapping[str, Any]], **kwargs: Any) -> Added:
        """`Store.add_messages` off the loop."""
        return await self._run("add_messages", self.store.add_messages,  # type: ignore[no-any-return]
                               builtins.list(messages), **kwargs)

    async def search(self, query: Any, **kwargs: Any) -> Any:
        """`Store.search` off the loop."""
        return await self._run("search", self.store.search, query, **kwargs)

    async def context(self, query: str, **kwargs: Any) -> Any:
        """`Store.context` off the loop."""
        return await self._run("context", self.store.context, query, **kwargs)

    async def get(self, id: str, **kwargs: Any) -> Any:
        """`Store.get` off the loop."""
        return await self._run("get", self.store.get, id, **kwargs)

    async def list(self, namespace: str, **kwargs: Any) -> Any:
        """`Store.list` off the loop."""
        return await self._run("list", self.store.list, namespace, **kwargs)

    async def close(self) -> None:
        """Refuse new calls, let the calls already made finish, then close the store (checkpoint,
        save indexes), all off the loop. Idempotent: a second call waits for the first."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._shut_down())
        await asyncio.shield(self._closing)  # a cancelled caller does not leave the store half closed

    async def _shut_down(self) -> None:
        loop = asyncio.get_running_loop()
        # waiting for the pool's threads would stall the loop: a thread of the loop's own waits instead
        await loop.run_in_executor(None, functools.partial(self._pool.shutdown, wait=True))
        await loop.run_in_executor(None, self.store.close)

    async def __aenter__(self) -> AsyncStore:  # noqa: PYI034 - not meant to be subclassed
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def open(path: str | Path | None = None, *, workers: int | None = None, **kwargs: Any) -> Awaitable[AsyncStore]:
    """Open a store (`engramdb.open`'s arguments) off the loop; await it for an `AsyncStore`."""

    async def opened() -> AsyncStore:
        store = await asyncio.get_running_loop().run_in_executor(None, functools.partial(open_store, path, **kwargs))
        return AsyncStore(store, workers)

    return opened()


__all__ = ["AsyncStore", "CancelledWrite", "open"]

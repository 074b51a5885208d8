"""An asyncio facade: the store's verbs as coroutines that never block the event loop.

    db = await engramdb.aio.open("./memory")
    await db.add_messages([{"role": "user", "content": "I moved to Lisbon"}], namespace="u1")
    ctx = await db.context("where do I live?", namespace="u1", max_tokens=500)
    await db.close()

Every call runs the synchronous `Store` verb on a small thread pool of the store's own: the
kernels and Arrow release the GIL, so searches run side by side, and the loop keeps serving other
requests meanwhile. Writes still go one at a time through the store's writer lock. Any `Store`
method not spelled out below is reachable too (`await db.dream(namespace="u1")`); properties such
as `db.path` and `db.schema` are plain attributes.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .store import Store
from .store import open as open_store


class AsyncStore:
    """A `Store` whose verbs are coroutines (see the module docstring)."""

    def __init__(self, store: Store, workers: int | None = None) -> None:
        self.store = store
        self._pool = ThreadPoolExecutor(max_workers=workers or min(4, os.cpu_count() or 1),
                                        thread_name_prefix="engramdb-aio")

    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if not callable(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._run(attr, *args, **kwargs)

        call.__doc__ = attr.__doc__
        return call

    # the verbs a service calls most, spelled out for editors and type checkers
    async def add(self, content: str, **fields: Any) -> Any:
        """`Store.add` off the loop."""
        return await self._run(self.store.add, content, **fields)

    async def add_many(self, records: Iterable[Mapping[str, Any]]) -> builtins.list[str]:
        """`Store.add_many` off the loop."""
        return await self._run(self.store.add_many, builtins.list(records))  # type: ignore[no-any-return]

    async def add_messages(self, messages: Iterable[Mapping[str, Any]], **kwargs: Any) -> builtins.list[str]:
        """`Store.add_messages` off the loop."""
        return await self._run(self.store.add_messages, builtins.list(messages), **kwargs)  # type: ignore[no-any-return]

    async def search(self, query: Any, **kwargs: Any) -> Any:
        """`Store.search` off the loop."""
        return await self._run(self.store.search, query, **kwargs)

    async def context(self, query: str, **kwargs: Any) -> Any:
        """`Store.context` off the loop."""
        return await self._run(self.store.context, query, **kwargs)

    async def get(self, id: str, **kwargs: Any) -> Any:
        """`Store.get` off the loop."""
        return await self._run(self.store.get, id, **kwargs)

    async def list(self, namespace: str, **kwargs: Any) -> Any:
        """`Store.list` off the loop."""
        return await self._run(self.store.list, namespace, **kwargs)

    async def close(self) -> None:
        """Close the store (checkpoint, save indexes) off the loop, then the thread pool."""
        await self._run(self.store.close)
        self._pool.shutdown(wait=True)

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


__all__ = ["AsyncStore", "open"]

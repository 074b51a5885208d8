"""A read replica of a shard: the shard's folder opened read-only in another actor.

A read-only store sees what was committed or logged when it opened, so a replica reopens (cheap:
a read-only open maps the files, ~30 ms on a small shard) when it learns the writer is at a newer
version: from the client, which passes the latest version its own writes were acknowledged at
(a client reads its own writes), and from the writer itself, asked at most every
`refresh_seconds` (writes by other clients show within that time). A replica never writes: no
access log, no second writer.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Mapping
from typing import Any

import ray

from ..context.result import Context
from ..model.hit import Hits
from ..model.memory import Memory
from ..store import Page, Store
from ..store import open as open_store
from .portable import portably
from .shard import Version


@portably
class Replica:
    """One read-only copy of a shard's folder, refreshed from the shard's writer."""

    def __init__(self, name: str, path: str, open_kwargs: Mapping[str, Any] | None, writer: str,
                 refresh_seconds: float) -> None:
        self.name = name
        self.path = path
        self._kwargs = {k: v for k, v in dict(open_kwargs or {}).items() if k not in ("read_only", "access_log")}
        self._writer = ray.get_actor(writer)  # by name: a handle passed in would pin an object Ray restarts from
        self._refresh = float(refresh_seconds)
        self._version: Version = (0, 0)
        self.db: Store | None = None
        self._checked = 0.0
        try:
            self._reopen()
        except Exception:  # noqa: BLE001 - not raised here, where it would end the actor with only
            self.db = None  # its text (see Shard.__init__): each call tries again and raises it

    def _reopen(self) -> None:
        try:  # the version first: the store opened after it holds at least its writes
            version: Version = tuple(ray.get(self._writer.version.remote(), timeout=10))
        except ray.exceptions.RayError:  # the writer is restarting: read what is on disk, ask again next time
            version = self._version
        old, self.db = self.db, open_store(self.path, read_only=True, access_log=False, **self._kwargs)
        self._version, self._checked = version, time.monotonic()
        if old is not None:
            old.close()

    def _store(self, want: Version | None) -> Store:
        """The store, reopened first when the writer is known to be ahead of it (or when it
        could not open before)."""
        if self.db is None or (want is not None and tuple(want) > self._version):
            self._reopen()
        elif time.monotonic() - self._checked >= self._refresh:
            try:
                latest = tuple(ray.get(self._writer.version.remote(), timeout=10))
            except ray.exceptions.RayError:
                latest = self._version
            self._checked = time.monotonic()
            if latest != self._version:
                self._reopen()
        assert self.db is not None
        return self.db

    def version(self) -> Version:
        """The writer's version this replica's store holds; raises what keeps the folder from opening."""
        self._store(None)
        return self._version

    def get(self, id: str, namespace: str, include_forgotten: bool, want: Version | None) -> Memory | None:
        m = self._store(want).get(id, include_forgotten=include_forgotten)
        return m if m is not None and m.namespace == namespace else None

    def history(self, id: str, namespace: str, want: Version | None) -> builtins.list[Memory]:
        versions = self._store(want).history(id)
        return versions if versions and versions[0].namespace == namespace else []

    def search(self, query: Any, namespace: str, kwargs: Mapping[str, Any], want: Version | None) -> Hits:
        return self._store(want).search(query, namespace=namespace, **kwargs)

    def context(self, query: str, namespace: str, kwargs: Mapping[str, Any], want: Version | None) -> Context:
        return self._store(want).context(query, namespace=namespace, **kwargs)

    def list(self, namespace: str, kwargs: Mapping[str, Any], want: Version | None) -> Page:
        return self._store(want).list(namespace, **kwargs)


__all__ = ["Replica"]

"""What runs inside a shard's actor: one store folder, opened by path in the actor's own process
(native handles never cross processes), with the verbs a cluster client sends it.

The class is plain Python (Ray makes it an actor in `remote.py`), so it is tested and typed like
any other. Every write is idempotent under Ray's retries: records carry ids given by the client,
and a record whose id the shard already holds with the same first version (content and
namespace) is the same write arriving again (its reply was lost, or the actor restarted after
the write reached the WAL): it succeeds with what is stored. The same id with other content is
an error naming the id. Each write also moves the shard's version, `(started_ns, writes)`, which
read replicas compare with their own to know when to reopen.
"""

from __future__ import annotations

import builtins
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..context.result import Context
from ..ingest.embedding import check_vector_names
from ..ingest.intake import build_intake
from ..model.errors import StoreError
from ..model.hit import Hits
from ..model.memory import Memory, utc_now
from ..store import Page, Store
from ..store import open as open_store
from ..store import verify as verify_folder
from .portable import portable, portably

Version = tuple[int, int]  # (when this incarnation of the actor started, in ns; writes since)


@portably
class Shard:
    """One shard's writer: the only process that writes its folder."""

    def __init__(self, name: str, path: str, open_kwargs: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.path = path
        self._lock = threading.Lock()  # the version counter (the actor may serve calls on threads)
        self._deleting = threading.Lock()  # forget and purge: each one's check and write, together
        self._version: Version = (time.time_ns(), 0)
        self._db: Store | None = None
        self._broken: Exception | None = None
        try:
            self._db = open_store(path, **dict(open_kwargs or {}))
        except Exception as exc:  # noqa: BLE001 - kept and raised by every call: an error raised
            # here ends the actor, and Ray's ActorDiedError carries only text, so the client could
            # not tell a folder another writer holds (StoreLocked) or a damaged one from a crash
            self._broken = portable(exc)

    @property
    def db(self) -> Store:
        """The shard's store; the error that kept it from opening, when it did not."""
        if self._db is None:
            assert self._broken is not None
            raise self._broken
        return self._db

    # ----------------------------------------------------------------------------- versions
    def version(self) -> Version:
        """The shard's version: a replica that opened at an older one reopens. Raises what kept
        the folder from opening, if anything did."""
        _ = self.db
        return self._version

    def _wrote(self) -> Version:
        with self._lock:
            self._version = (self._version[0], self._version[1] + 1)
            return self._version

    # ----------------------------------------------------------------------------- writes
    def _fresh(self, records: Sequence[Mapping[str, Any]], what: str) -> builtins.list[int]:
        """The places of the records not stored yet; a record stored already (same id, same first
        version's content and namespace) is left out, one whose id holds another memory raises."""
        out = []
        for i, r in enumerate(records):
            versions = self.db.history(r["id"])
            if not versions:
                out.append(i)
            elif (versions[0].content, versions[0].namespace) != (r.get("content"), r.get("namespace")):
                raise StoreError(f"{what}[{i}]: id {r['id']!r} already exists in shard {self.name!r} with other "
                                 "content or namespace; use a new id (update() changes a memory)")
        return out

    def check(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Refuse the records as `add_many` would (a field, a space, an id holding another
        memory), writing nothing: a batch over several shards is checked on each before any writes."""
        batch = build_intake(records, utc_now(), self.db.tuning.max_content_bytes)
        check_vector_names(self.db.schema, batch.vectors)
        self._fresh(records, "records")

    def spaces(self) -> builtins.list[str]:
        """The names of the shard's spaces."""
        return builtins.list(self.db.schema.spaces)

    def add_many(self, records: Sequence[Mapping[str, Any]]) -> tuple[builtins.list[str], Version]:
        """Store records (each with its "id"); a record already stored is acknowledged as it is."""
        for _ in range(3):  # a racing copy of the same call may store between the check and the write
            fresh = self._fresh(records, "records")
            try:
                added = self.db.add_many([records[i] for i in fresh]) if fresh else []
            except StoreError:
                if len(self._fresh(records, "records")) == len(fresh):
                    raise  # not a race: the store's own refusal
                continue
            ids = [str(r["id"]) for r in records]
            for i, got in zip(fresh, added):
                ids[i] = got  # a duplicate's id is the memory it duplicates (dedup= on)
            return ids, self._wrote()
        raise StoreError(f"shard {self.name!r}: the same records kept arriving concurrently; retry the call")

    def add(self, record: Mapping[str, Any]) -> tuple[Memory, Version]:
        """One record stored (or found stored), returned as stored."""
        ids, version = self.add_many([record])
        got = self.db.get(ids[0], include_forgotten=True)
        assert got is not None
        return got, version

    def add_messages(self, messages: Sequence[Mapping[str, Any]], namespace: str, session_id: str | None,
                     memory_type: str) -> tuple[builtins.list[str], Version]:
        """Chat messages (each with its "id") as turns of one session; messages stored already are
        acknowledged as they are."""
        as_records = [{"id": m.get("id"), "content": m.get("content"), "namespace": namespace} for m in messages]
        for _ in range(3):  # a racing copy of the same call (a caller resending it) may store between the two
            fresh = self._fresh(as_records, "messages")
            try:
                if fresh:
                    self.db.add_messages([messages[i] for i in fresh], namespace=namespace, session_id=session_id,
                                         memory_type=memory_type)
            except StoreError:
                if len(self._fresh(as_records, "messages")) == len(fresh):
                    raise  # not a race: the store's own refusal
                continue
            return [str(m["id"]) for m in messages], self._wrote()
        raise StoreError(f"shard {self.name!r}: the same messages kept arriving concurrently; retry the call")

    def forget(self, id: str, namespace: str) -> tuple[Memory, Version]:
        """Soft delete (idempotent: forgetting a forgotten memory returns it, as a retried or
        resent call must; the store's own `forget` refuses a forgotten memory)."""
        with self._deleting:
            m = self._owned(id, namespace)
            if m.forgotten_at is not None:
                return m, self._version
            return self.db.forget(id), self._wrote()

    def feedback(self, query_id: str, used: Sequence[str], session_id: str | None) -> tuple[int, Version]:
        """The store's `feedback` (a repeat of it is late and changes nothing)."""
        return self.db.feedback(query_id, used, session_id=session_id), self._wrote()

    def purge(self, ids: Sequence[str], namespace: str) -> tuple[int, Version]:
        """Hard delete of these memories of `namespace`. An id the shard no longer holds counts as
        purged (a retried purge is not an error); an id of another namespace is refused."""
        with self._deleting:  # a copy of this call running beside it (a resend) finds the ids gone, not missing
            held = []
            for mid in ids:
                versions = self.db.history(mid)
                if versions and versions[0].namespace != namespace:
                    raise StoreError(f"memory {mid!r} is not a memory of namespace {namespace!r}: nothing was purged")
                if versions:
                    held.append(mid)
            return (self.db.purge(held) if held else 0), self._wrote()

    def purge_namespace(self, namespace: str) -> tuple[int, Version]:
        """Every memory of `namespace` hard-deleted (0 when the shard holds none)."""
        if namespace not in self.db.stats()["namespaces"]:
            return 0, self._version
        return self.db.purge(namespace=namespace), self._wrote()

    def set_vectors(self, space: str, ids: Sequence[str], vectors: Sequence[Any]) -> tuple[int, Version]:
        """A space's vectors replaced (re-embedding): one new version per memory, its other
        vectors kept. Ids no longer current (forgotten or purged since the job read them) are skipped."""
        done = 0
        for mid, vec in zip(ids, vectors):
            if self.db.get(mid) is not None:
                self.db.update(mid, vectors={space: vec})
                done += 1
        return done, self._wrote()

    # ----------------------------------------------------------------------------- reads
    def _owned(self, id: str, namespace: str) -> Memory:
        m = self.db.get(id, include_forgotten=True)
        if m is None or m.namespace != namespace:
            raise StoreError(f"no memory with id {id!r} in namespace {namespace!r}")
        return m

    def get(self, id: str, namespace: str, include_forgotten: bool) -> Memory | None:
        m = self.db.get(id, include_forgotten=include_forgotten)
        return m if m is not None and m.namespace == namespace else None

    def history(self, id: str, namespace: str) -> builtins.list[Memory]:
        versions = self.db.history(id)
        return versions if versions and versions[0].namespace == namespace else []

    def search(self, query: Any, namespace: str, kwargs: Mapping[str, Any]) -> Hits:
        return self.db.search(query, namespace=namespace, **kwargs)

    def context(self, query: str, namespace: str, kwargs: Mapping[str, Any]) -> Context:
        return self.db.context(query, namespace=namespace, **kwargs)

    def list(self, namespace: str, kwargs: Mapping[str, Any]) -> Page:
        return self.db.list(namespace, **kwargs)

    def namespaces(self) -> dict[str, int]:
        """Memories (forgotten ones included) per namespace held here."""
        return dict(self.db.stats()["namespaces"])

    # ----------------------------------------------------------------------------- admin
    def stats(self) -> dict[str, Any]:
        return self.db.stats()

    def verify(self) -> dict[str, Any]:
        return verify_folder(self.path)

    def backup(self, dest: str) -> dict[str, Any]:
        """A copy of the shard in folder `dest` (its parent made here: it is on the actor's machine)."""
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        return self.db.admin.backup(dest)

    def consolidate(self, kwargs: Mapping[str, Any]) -> Any:
        report = self.db.lifecycle.consolidate(**kwargs)
        self._wrote()
        return report

    def refresh_topics(self) -> dict[str, int]:
        """Every namespace's topics computed again; namespace -> topics."""
        return {ns: len(self.db.topics(ns, refresh=True)) for ns in self.namespaces()}

    # ----------------------------------------------------------------------------- moves
    def export_namespace(self, namespace: str) -> bytes:
        """The namespace as an `.arrow` export (every version, vectors, edges), as bytes."""
        where = tempfile.mkdtemp(prefix="engramdb-move-")
        try:
            file = Path(where) / "namespace.arrow"
            self.db.admin.export(file, namespace=namespace)
            return file.read_bytes()
        finally:
            shutil.rmtree(where, ignore_errors=True)

    def import_namespace(self, data: bytes) -> tuple[int, Version]:
        """An `export_namespace` file taken in, ids and versions as they were."""
        where = tempfile.mkdtemp(prefix="engramdb-move-")
        try:
            file = Path(where) / "namespace.arrow"
            file.write_bytes(data)
            return len(self.db.admin.import_(file)), self._wrote()
        finally:
            shutil.rmtree(where, ignore_errors=True)

    def fingerprint(self, namespace: str) -> dict[str, str]:
        """id -> the memory's JSONL export line (every version, edges, times): equal on two shards
        when a move copied the namespace whole."""
        where = tempfile.mkdtemp(prefix="engramdb-move-")
        try:
            file = Path(where) / "namespace.jsonl"
            if namespace not in self.namespaces():
                return {}
            self.db.admin.export(file, namespace=namespace)
            out = {}
            for line in file.read_text(encoding="utf-8").splitlines():
                row = json.loads(line) if line.strip() else None
                if isinstance(row, dict) and "id" in row:  # not the file's header and end lines
                    out[str(row["id"])] = line
            return out
        finally:
            shutil.rmtree(where, ignore_errors=True)

    def close(self) -> None:
        if self._db is not None:  # a shard that never opened has nothing to close
            self._db.close()

    def pid(self) -> int:
        return os.getpid()


__all__ = ["Shard", "Version"]

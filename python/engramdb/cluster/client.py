"""`Cluster`: the verbs an agent service uses, each routed by namespace to the shard that holds it.

A shard is an ordinary store folder with one writer, a Ray actor (`remote.py`); its read replicas,
when asked for, are read-only actors on the same folder. The client gives every new memory its id
(uuid4 hex, as the store does), so a call Ray retries after an actor restart never stores twice;
a caller sending a write again after `ShardUnavailable` sends it with the ids that error names
(`ShardUnavailable.ids`), or the memories get new ids and a write that did land is stored twice. Verbs that name a memory by id alone
(`get`, `history`, `forget`, `purge`) take the namespace as well: it routes the call, and a memory
of another namespace is not found (namespaces never see each other, across shards as within one).
Results are the store's own values (Memory, Hits, Context, Page), pickled across.
"""

from __future__ import annotations

import builtins
import itertools
import logging
import re
import threading
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..context.result import Context
from ..model import checks
from ..model.errors import StoreError
from ..model.hit import Hits
from ..model.memory import Memory
from ..store import Page
from . import moves, remote
from .rendezvous import Router, check_namespace, check_shard_name
from .shard import Version
from .unavailable import ShardUnavailable

_log = logging.getLogger("engramdb")
DEFAULT_TIMEOUT = 60.0  # seconds a call waits for its shard (a restart replays the WAL first)


def _folder(shard: str, path: object) -> str:
    """A shard's folder: a path (str or PathLike) that is not a file, made absolute (the actor may
    run with another working directory)."""
    try:
        checks.path(f"shard {shard!r} folder", path)
    except (TypeError, ValueError) as exc:
        raise type(exc)(str(exc)) from None
    p = Path(path).expanduser().absolute()  # type: ignore[arg-type]
    if p.exists() and not p.is_dir():
        raise ValueError(f"shard {shard!r}: folder {str(p)!r} is a file, not a store folder")
    return str(p)


def _renumbered(message: str, places: builtins.list[int]) -> str:
    """A shard's error about `records[j]` of the part of a batch it was sent, about the caller's
    `records[places[j]]`."""
    return re.sub(r"records\[(\d+)\]", lambda m: f"records[{places[int(m.group(1))]}]"
                  if int(m.group(1)) < len(places) else m.group(0), message)


class Cluster:
    """Namespaces sharded over store folders, each served by one Ray actor.

        cluster = engramdb.cluster.Cluster({"s0": "/data/s0", "s1": "/data/s1"})
        cluster.add("Alice moved to Lisbon", namespace="alice")
        hits = cluster.search("where does Alice live?", namespace="alice")

    `shards`: shard name -> folder (every machine running the shard's actor must see the folder:
    a local disk with the actor pinned to its node, or shared storage; see docs/guides/scaling.md).
    `replicas`: read-only actors per shard serving get, list, history, and search/context with
    `log=False` (a logged search goes to the writer, which keeps the access log its feedback
    needs). `open_kwargs`: what each shard's `engramdb.open` gets (profile=, tuning=, ...).
    `actor_options`: Ray options for the actors (num_cpus=, scheduling_strategy=, per shard as
    {"s0": {...}} under "per_shard", ...). `pins`: namespace -> shard, placing a namespace
    whatever hashing says (what `move_namespace(ns, to=...)` adds). `timeout`: the seconds a call
    waits before `ShardUnavailable`. Ray must be initialised (`ray.init(...)`) or it starts a local one.
    """

    def __init__(self, shards: Mapping[str, str | Path], *, replicas: int = 0,
                 open_kwargs: Mapping[str, Any] | None = None, actor_options: Mapping[str, Any] | None = None,
                 pins: Mapping[str, str] | None = None, timeout: float | None = DEFAULT_TIMEOUT,
                 refresh_seconds: float = 1.0) -> None:
        if not isinstance(shards, Mapping) or not shards:
            raise TypeError(f"shards must be a non-empty dict of shard name -> folder, got {shards!r:.80}")
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
            raise ValueError(f"replicas must be an int >= 0, got {replicas!r}")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not 0 < timeout < 10**9):  # NaN and inf fail this too
            raise ValueError(f"timeout must be a number of seconds > 0 (or None), got {timeout!r}")
        if isinstance(refresh_seconds, bool) or not isinstance(refresh_seconds, (int, float)) \
                or not 0 <= refresh_seconds < 10**9:
            raise ValueError(f"refresh_seconds must be a number of seconds >= 0, got {refresh_seconds!r:.80}")
        self.folders = {check_shard_name(name): _folder(name, path) for name, path in shards.items()}
        if len(set(self.folders.values())) != len(self.folders):
            raise ValueError(f"two shards name the same folder: {self.folders}")
        self.router = Router(self.folders, pins)
        self.timeout = timeout
        kwargs = dict(open_kwargs or {})
        if kwargs.get("read_only"):
            raise ValueError("open_kwargs: read_only=True cannot be a shard's writer (use replicas= for readers)")
        options = dict(actor_options or {})
        per_shard = options.pop("per_shard", {})
        if not isinstance(per_shard, Mapping) or any(not isinstance(v, Mapping) for v in per_shard.values()):
            raise TypeError(f"actor_options['per_shard'] must be a dict of shard name -> Ray options, got {per_shard!r:.80}")
        unknown = sorted(set(per_shard) - set(self.folders))
        if unknown:  # a misspelt shard would run without its placement, unnoticed
            raise ValueError(f"actor_options['per_shard'] names unknown shard(s) {unknown}; the shards are "
                             f"{sorted(self.folders)}")
        self._writers: dict[str, Any] = {}
        self._replicas: dict[str, builtins.list[Any]] = {}
        for name, path in self.folders.items():
            opts = {"max_concurrency": 8, **options, **per_shard.get(name, {})}
            self._writers[name] = remote.start_writer(name, path, kwargs, opts)
            self._replicas[name] = [remote.start_replica(name, path, i, kwargs, refresh_seconds, opts) for i in range(replicas)]
        self._turn = {name: itertools.count() for name in self.folders}
        self._seen: dict[str, Version] = {}  # per shard, the latest version this client's writes reached
        self._seen_lock = threading.Lock()
        self._moving: dict[str, threading.Lock] = {}  # a namespace being moved: its writes wait
        for name in self.folders:  # an actor that cannot open its folder says so now, not at the first verb
            self._opened(name)

    def _opened(self, shard: str) -> None:
        """The shard's writer and replicas have their folder open; else the error that keeps them
        from it (StoreLocked, CorruptFile as StoreError, ...), raised as itself after ending those
        actors, so that a client started again (the cause fixed) starts them afresh."""
        try:
            for handle in [self._writers[shard], *self._replicas[shard]]:
                remote.call(shard, handle, "version", timeout=self.timeout)
        except ShardUnavailable:
            raise
        except Exception:
            for handle in [self._writers[shard], *self._replicas[shard]]:
                remote.kill(handle)
            raise

    # ----------------------------------------------------------------------------- plumbing
    @property
    def shards(self) -> tuple[str, ...]:
        """The shard names, sorted."""
        return self.router.shards

    def shard_of(self, namespace: str) -> str:
        """The shard that holds `namespace`."""
        return self.router.route(namespace)

    def writer(self, shard: str) -> Any:
        """The Ray actor handle of a shard's writer (for jobs that must change a live shard)."""
        return self._writers[self.router.check_shard(shard)]

    def _call(self, shard: str, method: str, *args: Any) -> Any:
        return remote.call(shard, self._writers[shard], method, *args, timeout=self.timeout)

    def _write(self, namespace: str, method: str, *args: Any, ids: builtins.list[str] | None = None) -> Any:
        """A write to a namespace's shard; returns the verb's result, noting the shard's version.
        `ids`: the ids this client gave the write's memories, named by `ShardUnavailable` (the
        caller sends the write again with them, else a write that did land is stored twice)."""
        lock = self._moving.get(namespace)
        if lock is not None:
            with lock:  # a move of this namespace finishes first; then it routes to its new shard
                pass
        shard = self.shard_of(namespace)
        try:
            result, version = self._call(shard, method, *args)
        except ShardUnavailable as exc:
            if not ids:
                raise
            raise ShardUnavailable(exc.shard, exc.why, ids) from None
        self._note(shard, version)
        return result

    def _note(self, shard: str, version: Version) -> None:
        with self._seen_lock:
            if tuple(version) > self._seen.get(shard, (0, 0)):
                self._seen[shard] = tuple(version)  # type: ignore[assignment]

    def _read(self, namespace: str, method: str, *args: Any, replica: bool = True) -> Any:
        """A read from a namespace's shard: a replica's (round-robin) when it has any, else the writer's."""
        shard = self.shard_of(namespace)
        pool = self._replicas[shard] if replica else []
        if not pool:
            return self._call(shard, method, *args)
        handle = pool[next(self._turn[shard]) % len(pool)]
        return remote.call(shard, handle, method, *args, self._seen.get(shard), timeout=self.timeout)

    # ----------------------------------------------------------------------------- writes
    def add(self, content: str, *, namespace: str, id: str | None = None, **fields: Any) -> Memory:
        """Store one memory (the store's `add` fields); returns it as stored. Without `id` the
        client gives it one, so a retried call stores it once."""
        check_namespace(namespace)
        record = {"content": content, "namespace": namespace, "id": id if id is not None else uuid.uuid4().hex, **fields}
        got: Memory = self._write(namespace, "add", record, ids=[record["id"]])
        return got

    def add_many(self, records: Iterable[Mapping[str, Any]]) -> builtins.list[str]:
        """Store records (dicts as `Store.add_many` takes, each with its "namespace"), sent to each
        namespace's shard (one batch per namespace); returns the ids in order."""
        if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
            raise TypeError(f"records must be a list of dicts (one per memory), got {records!r:.80}")
        recs = []
        for i, r in enumerate(records):
            if not isinstance(r, Mapping):
                raise TypeError(f"records[{i}] must be a dict (one memory), got {type(r).__name__} {r!r:.80}")
            try:
                check_namespace(r.get("namespace"))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"records[{i}]: {exc}") from None
            recs.append({**r, "id": r["id"] if r.get("id") is not None else uuid.uuid4().hex})
        ids = [str(r["id"]) for r in recs]
        first: dict[str, int] = {}
        for i, mid in enumerate(ids):  # one shard refuses a repeated id; two shards would each store it
            if first.setdefault(mid, i) != i:
                raise StoreError(f"records[{i}]: id {mid!r} repeats records[{first[mid]}]'s; nothing was written")
        by_ns: dict[str, builtins.list[int]] = {}
        for i, r in enumerate(recs):
            by_ns.setdefault(r["namespace"], []).append(i)
        if len(by_ns) > 1:  # one batch per namespace: each checked before any is written
            for ns, places in by_ns.items():
                try:
                    self._call(self.shard_of(ns), "check", [recs[i] for i in places])
                except (TypeError, ValueError, StoreError) as exc:
                    raise type(exc)(_renumbered(str(exc), places)) from None
        for ns, places in by_ns.items():
            stored = self._write(ns, "add_many", [recs[i] for i in places], ids=[str(r["id"]) for r in recs])
            for i, got in zip(places, stored):
                ids[i] = got
        return ids

    def add_messages(self, messages: Iterable[Mapping[str, Any]], *, namespace: str, session_id: str | None = None,
                     memory_type: str = "turn") -> builtins.list[str]:
        """Chat messages as turns of one session (the store's `add_messages`); each message without
        an "id" gets one here. Returns the ids in order."""
        check_namespace(namespace)
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
            raise TypeError(f"messages must be a list of dicts with role and content, got {messages!r:.80}")
        msgs = []
        for i, m in enumerate(messages):
            if not isinstance(m, Mapping):
                raise TypeError(f"messages[{i}] must be a dict with role and content, got {type(m).__name__}")
            msgs.append({**m, "id": m["id"] if m.get("id") is not None else uuid.uuid4().hex})
        stored: builtins.list[str] = self._write(namespace, "add_messages", msgs, namespace, session_id, memory_type,
                                                 ids=[str(m["id"]) for m in msgs])
        return stored

    def forget(self, id: str, *, namespace: str) -> Memory:
        """Soft delete a memory of `namespace` (restorable on its shard)."""
        checks.name("id", id)
        got: Memory = self._write(namespace, "forget", id, check_namespace(namespace))
        return got

    def feedback(self, query_id: str, used: Iterable[str], *, namespace: str, session_id: str | None = None) -> int:
        """Which hits of a logged search (`Hits.query_id`, of a search of `namespace`) were used."""
        checks.name("query_id", query_id)
        if isinstance(used, (str, bytes)) or not isinstance(used, Iterable):
            raise TypeError(f"used must be a list of memory ids, got {used!r:.80}")
        got: int = self._write(namespace, "feedback", query_id, builtins.list(used), session_id)
        return got

    def purge(self, ids: str | Iterable[str], *, namespace: str) -> int:
        """Hard delete these memories of `namespace` (privacy requests). An id already gone counts
        as purged, so a retried purge is safe; an id of another namespace refuses the call.
        Returns the versions removed."""
        check_namespace(namespace)
        id_list = checks.id_list("ids", [ids] if isinstance(ids, str) else ids)
        got: int = self._write(namespace, "purge", id_list, namespace)
        return got

    def purge_namespace(self, namespace: str) -> int:
        """Hard delete every memory of `namespace` (a user leaving). Returns the versions removed."""
        got: int = self._write(namespace, "purge_namespace", check_namespace(namespace))
        return got

    # ----------------------------------------------------------------------------- reads
    def get(self, id: str, *, namespace: str, include_forgotten: bool = False) -> Memory | None:
        """The current version of a memory of `namespace`, or None."""
        checks.name("id", id)
        got: Memory | None = self._read(namespace, "get", id, check_namespace(namespace), bool(include_forgotten))
        return got

    def history(self, id: str, *, namespace: str) -> builtins.list[Memory]:
        """Every version of a memory of `namespace`, oldest first (empty when unknown there)."""
        checks.name("id", id)
        got: builtins.list[Memory] = self._read(namespace, "history", id, check_namespace(namespace))
        return got

    def search(self, query: Any, *, namespace: str, **kwargs: Any) -> Hits:
        """The store's `search` on the namespace's shard (a replica when `log=False` and there are any)."""
        got: Hits = self._read(namespace, "search", query, check_namespace(namespace), kwargs,
                               replica=kwargs.get("log", True) is False)
        return got

    def context(self, query: str, *, namespace: str, **kwargs: Any) -> Context:
        """The store's `context` on the namespace's shard (a replica when `log=False` and there are any)."""
        got: Context = self._read(namespace, "context", query, check_namespace(namespace), kwargs,
                                  replica=kwargs.get("log", True) is False)
        return got

    def list(self, namespace: str, **kwargs: Any) -> Page:
        """The store's `list`: a page of the namespace's memories; `cursor=` pages on."""
        got: Page = self._read(namespace, "list", check_namespace(namespace), kwargs)
        return got

    # ----------------------------------------------------------------------------- fan-out admin
    def _each(self, method: str, *args: Any) -> dict[str, Any]:
        """`method` on every shard's writer, side by side; shard -> result."""
        refs = {name: remote.send(name, h, method, *args) for name, h in self._writers.items()}
        # one wait per shard: each failure named by its own shard
        return {name: remote.wait(name, ref, timeout=self.timeout) for name, ref in refs.items()}

    def stats(self) -> dict[str, dict[str, Any]]:
        """Each shard's `stats()`."""
        return self._each("stats")

    def namespaces(self) -> dict[str, dict[str, int]]:
        """Each shard's namespaces and their memory counts."""
        return self._each("namespaces")

    def verify(self) -> dict[str, dict[str, Any]]:
        """Each shard's folder checked file by file (`engramdb.verify`)."""
        return self._each("verify")

    def backup(self, dest: str | Path) -> dict[str, dict[str, Any]]:
        """Each shard copied to `dest/<shard>` (folders the actors can reach: shared storage, or
        each node's own disk); what each copied."""
        base = Path(_folder("backup", dest))
        for name, folder in self.folders.items():  # each shard's store checks its own; not the others'
            if base == Path(folder) or Path(folder) in base.parents or base in Path(folder).parents:
                raise ValueError(f"backup destination {str(base)!r} is inside shard {name!r}'s folder {folder!r} "
                                 "(or holds it): give a folder outside every shard")
        refs = {name: remote.send(name, h, "backup", str(base / name)) for name, h in self._writers.items()}
        return {name: remote.wait(name, ref, timeout=self.timeout) for name, ref in refs.items()}

    def consolidate(self, **kwargs: Any) -> dict[str, Any]:
        """Each shard's `db.lifecycle.consolidate(**kwargs)` (dry_run=True by default, as the store's)."""
        return self._each("consolidate", kwargs)

    def refresh_topics(self) -> dict[str, dict[str, int]]:
        """Every namespace's topics computed again on its shard; shard -> namespace -> topics."""
        return self._each("refresh_topics")

    # ----------------------------------------------------------------------------- moves
    def move_namespace(self, namespace: str, to: str | None = None) -> dict[str, Any]:
        """Move a namespace to shard `to` (default: the shard hashing gives it), keeping every id,
        version, vector and edge (see `cluster/moves.py`). A `to` other than the hashed shard pins
        the namespace there in this client (give other clients the same `pins=`). Safe to run
        again after an interruption. Returns what was done."""
        return moves.move_namespace(self, namespace, to)

    def rebalance(self) -> dict[str, Any]:
        """Move every namespace held by a shard other than its routed one (after adding or removing
        a shard); namespace -> what `move_namespace` did. Safe to run again."""
        return moves.rebalance(self)

    # ----------------------------------------------------------------------------- lifecycle
    def close(self, *, kill: bool = True) -> None:
        """Close every shard (its WAL folded) and end the actors (`kill=False` leaves them running
        for other clients)."""
        if not kill:
            return
        for name, handle in self._writers.items():
            for rep in self._replicas[name]:
                remote.kill(rep)
            try:
                self._call(name, "close")
            except Exception as exc:  # noqa: BLE001 - best effort: the WAL holds every acknowledged write
                _log.warning("shard %r did not close cleanly (its WAL is replayed at the next open): %s", name, exc)
            remote.kill(handle)

    def __enter__(self) -> Cluster:  # noqa: PYI034 - Cluster is not meant to be subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["DEFAULT_TIMEOUT", "Cluster"]

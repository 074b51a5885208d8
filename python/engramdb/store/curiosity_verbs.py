"""`db.curiosity` (K7): `db.curiosity(namespace)` lists what surprised the navigator, `.consume(ids)`
takes items off the queue once explored.

`Store.context` queues the hops whose expected and actual scores differed by more than a threshold
(context/curiosity.py); the queue is kept in the store folder (storage/curiosity_log.py; in memory
for a store kept in memory) and outlives the process, so a background explorer may list it, follow
each item (link the memories, re-rate them, ask the user) and consume it. Listing never changes
the queue; consuming is separate, so an item a crashed explorer listed is still there.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ..context.curiosity import CuriosityItem, Key, ranked
from ..model import checks
from ..model.memory import utc_now
from ..storage.curiosity_log import CuriosityLog

if TYPE_CHECKING:
    from .facade import Store

_logger = logging.getLogger("engramdb")
# items naming what a purge took, made up to this long after it began, are dropped (a context under
# way as it ran queues after it: store/usage.py's tombstones keep its access rows out alike)
PURGE_GRACE = timedelta(seconds=60)
WRITE_DELAY = 0.25  # seconds queued items wait for the worker (a burst of contexts writes one file)
_lock = threading.RLock()  # guards each queue (one lock for all stores; re-entrant: the verbs holding it open the log)


def _new_lock_in_child() -> None:
    """In a forked child: the lock may have been held at the fork by a thread the child does not
    have (the worker's warm job reads the queue at open, a context queues): a child's own store
    would wait for it for ever. Its parent's stores' queues are never written from the child."""
    global _lock
    _lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


class CuriosityVerbs:
    """The curiosity queue (K7), as `db.curiosity`."""

    def __init__(self, db: Store) -> None:
        self._db = db
        self._pending = []
        self._tombs = {}

    _curiosity_queue: CuriosityLog | None = None
    _curiosity_waiting: dict[Key, str] | None = None  # waiting link -> item id, while this store writes
    _pending: list[dict[str, Any]]  # items queued, not written yet (see `_queue`)
    _unwritten = False  # the log holds items whose write failed (see `_write_pending`)
    _tombs: dict[str, datetime]  # purged id or namespace (hashed) -> until when items naming it are dropped

    def __call__(self, namespace: str, *, limit: int | None = 20) -> list[CuriosityItem]:
        """The waiting curiosity items of a namespace, the largest surprise first (then the oldest),
        at most `limit` (None: all). Each names the memory that surprised the navigator (`memory_id`),
        the memory it was reached from (`parent_id`), the seed hit of the walk, the link's kind
        (`via`), the query, the `expected` and `actual` scores (`error`, `surprise`: "stronger" or
        "weaker" than its link predicted) and when. Items about memories forgotten since are left
        out. A read-only store lists what was queued before."""
        checks.name("namespace", namespace)
        if not isinstance(namespace, str) or not namespace:
            raise ValueError(f"namespace must be a non-empty string, got {namespace!r}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit must be an int >= 0 or None, got {limit!r}")
        if not self._db.read_only:
            try:
                self._write_pending()
            except OSError as exc:  # the log keeps them (and lists them): listing never failed on a full disk
                _logger.warning("%s: curiosity items were not written: %s", self._db.path, exc)
        view = self._db._view()
        written = self._log().rows(namespace)
        # and those not written yet; an item is listed once: a forked child keeps its parent's
        # waiting items, which the parent may have written to the file since
        ids = {r["item_id"] for r in written}
        rows = written + [r for r in self._pending if r["namespace"] == namespace and r["item_id"] not in ids]
        items = [i for i in (_item(r) for r in rows) if view.is_live(i.memory_id)]
        out = ranked(items)
        return out if limit is None else out[:limit]

    def consume(self, ids: str | Iterable[str]) -> int:
        """Take items off the queue (by `CuriosityItem.id`) once explored; returns how many were
        waiting (an id consumed before, or unknown, counts 0: each item is consumed once). A later
        context that is surprised by the same link queues it again, as a new item.
        PermissionError on a read-only store."""
        wanted = [ids] if isinstance(ids, str) else list(ids)
        bad = [i for i in wanted if not isinstance(i, str) or not i or not checks.encodes(i)]
        if bad:
            raise ValueError(f"ids must be curiosity item ids (non-empty strings UTF-8 can encode), got {bad[0]!r}")
        log = self._log()
        if self._db.read_only:
            raise PermissionError("this store is read-only: its curiosity queue can be listed, not consumed")
        with _lock:
            self._write_pending()
            gone = log.remove(set(wanted))
            if self._curiosity_waiting is not None:
                self._curiosity_waiting = {k: v for k, v in self._curiosity_waiting.items() if v not in set(wanted)}
        return gone

    # ------------------------------------------------------------------------------ helpers
    def _log(self) -> CuriosityLog:
        log = self._curiosity_queue
        if log is None:
            with _lock:
                log = self._curiosity_queue
                if log is None:
                    log = self._curiosity_queue = CuriosityLog(self._db.path, writable=not self._db.read_only)
                    log.on_crowded(self._db._background.rotating("curiosity"))  # by the worker, not a context
        return log

    def _keys(self) -> dict[Key, str]:
        """The links with an item waiting (read once from the queue, then kept up to date here)."""
        waiting = self._curiosity_waiting
        if waiting is None:
            with _lock:  # read and kept together: an item queued meanwhile (another thread) is not lost
                waiting = self._curiosity_waiting
                if waiting is None:
                    # the written rows' links from their columns, then the items the worker has not
                    # written yet (a later one of a link wins, as it did row by row)
                    found = {(ns, parent, mid, via): item for ns, parent, mid, via, item in self._log().links()}
                    found.update((_item(r).key, r["item_id"]) for r in self._pending)
                    waiting = self._curiosity_waiting = found
        return waiting

    def _queue(self, items: list[CuriosityItem]) -> int:
        """Queue items; returns how many (0 on a read-only store, which never writes). A store with
        a worker writes them on it, a moment later (WRITE_DELAY: the items of a burst of contexts
        as one file); listing, consuming, a purge and close write or drop what waits first. Why:
        the file and its folder are fsynced, 2-12 ms that a context paid whenever its walk was
        surprised (issue 26); the items are the navigator's notes, not the caller's writes."""
        if not items or self._db.read_only or self._db._engine.forked:  # a child never writes its parent's queue
            return 0
        with _lock:
            if self._tombs:
                items = self._unpurged(items)
            waiting = self._keys()
            fresh = [i for i in items if i.key not in waiting]
            rows = [_row(i) for i in fresh]
            upkeep = self._db._upkeep
            if upkeep is None or not rows:
                self._log().append(rows)
            else:
                self._pending.extend(rows)
                upkeep.ask("curiosity:write", self._write_pending, delay=WRITE_DELAY)
            waiting.update({i.key: i.id for i in fresh})
        return len(fresh)

    def _write_pending(self) -> None:
        """Write the items queued on the worker's side (see `_queue`): the worker's job, and the
        first step of whatever reads or changes the queue. Once handed to the log the items are
        its own: a write that fails leaves them in its buffer, which `rows()` lists, a purge
        filters and the next write (a retry, a later item, close) writes; handing them over again
        would queue each twice. Nothing in a forked child: the items waiting are its parent's."""
        if self._db._engine.forked:
            return
        with _lock:
            if not self._pending and not self._unwritten:
                return
            log = self._log()
            rows, self._pending = self._pending, []
            self._unwritten = True
            log.append(rows, write=False)
        # the file and its fsyncs outside the lock: a context queueing items waited 16-22 ms for them
        try:
            log.flush()
        finally:
            with _lock:
                self._unwritten = log.unwritten()

    def _forget(self, memory_ids: Iterable[str], namespaces: Iterable[str] = ()) -> int:
        """Remove every item naming one of these memories, and every item of these namespaces
        (what a purge must leave no trace of), waiting ones included."""
        if self._db.read_only:
            return 0
        ids, spaces = set(memory_ids), set(namespaces)
        end = utc_now() + PURGE_GRACE
        with _lock:
            self._tombs.update(dict.fromkeys(map(_tomb, ids | spaces), end))
            kept = [r for r in self._pending if r["namespace"] not in spaces
                    and not ({r["memory_id"], r["parent_id"], r["seed_id"]} & ids)]
            gone = len(self._pending) - len(kept)
            self._pending = kept
            gone += self._log().forget_memories(ids, spaces)
            self._curiosity_waiting = None  # read again when next needed
        return gone

    def _unpurged(self, items: list[CuriosityItem]) -> list[CuriosityItem]:
        """`items` without those naming a memory or namespace a purge took, made before the purge
        ended (give or take PURGE_GRACE): a context whose walk read the store before a purge
        queues its items after the purge emptied the queue of them (under `_lock`). A memory made
        again under the same id later queues as usual; tombstones past their end go."""
        now = utc_now()
        self._tombs = {k: end for k, end in self._tombs.items() if end >= now}

        def dead(value: str | None, at: datetime) -> bool:
            end = self._tombs.get(_tomb(value)) if value is not None else None
            return end is not None and at <= end

        return [i for i in items if not any(dead(v, i.at) for v in (i.memory_id, i.parent_id, i.seed_id, i.namespace))]


def _tomb(value: str) -> str:
    """What a tombstone keeps of a purged id or namespace: a hash, not the name."""
    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _row(i: CuriosityItem) -> dict[str, Any]:
    return {"item_id": i.id, "namespace": i.namespace, "memory_id": i.memory_id, "parent_id": i.parent_id,
            "seed_id": i.seed_id, "via": i.via, "query": i.query, "expected": i.expected, "actual": i.actual,
            "at": i.at}


def _item(r: dict[str, Any]) -> CuriosityItem:
    at = r["at"]
    return CuriosityItem(r["item_id"], r["namespace"], r["memory_id"], r["parent_id"], r["seed_id"], r["via"],
                         r["query"], float(r["expected"]), float(r["actual"]),
                         at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc))


__all__ = ["CuriosityVerbs"]

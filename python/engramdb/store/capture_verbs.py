"""Capture (C7) and the conversation API for services: what agents and the services around them
call without knowing the store's own vocabulary.

- the spool: what `engramdb.capture` (folder_ops.py) spooled while another process held the
  writer's lock is ingested here, exactly once, when a writer opens and before each `add_many`.
- `add_file`: a markdown or text file as chunks of ~200 words overlapping by ~50, cut at sentence
  ends (the passage rule of spaces/passages.py); a changed file supersedes its old chunks (the old
  text stays true until the change, for `as_of`), an unchanged one is skipped.
- `add_messages`, `list` (paged), `history`, and the names mem0 users look for (`get_all`, `delete`).
"""

from __future__ import annotations

import base64
import bisect
import builtins
import hashlib
import json
import logging
import threading
import weakref
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..model import checks
from ..model.errors import InvalidMemory
from ..model.memory import Memory, as_utc, check_namespace, micros, utc_now
from ..spaces.passages import passages
from ..storage import spool
from ..storage.engine import Engine
from ..storage.view import Loc, View
from .reads import Reads
from .usage import Usage

_log = logging.getLogger("engramdb")
_drainer = threading.local()  # .store: the store this thread is taking the spool in for
_LIST_FIELDS = ("memory_type", "session_id", "role", "source")
LIST_ORDERS_KEPT = 8  # namespaces whose list order is kept between pages
# (sort keys (learned_at, seq, place), locations, valid_until, id -> position) of one namespace
_ListOrder = tuple[builtins.list[tuple[int, int, int]], builtins.list[Loc], np.ndarray, dict[str, int]]


class Page(builtins.list):  # type: ignore[type-arg]
    """One page of `Store.list`: the memories (a list) and `next_cursor` (None on the last page)."""

    next_cursor: str | None = None


class CaptureVerbs(Reads):
    """Mixed into `Store`."""

    _usage: Usage
    _engine: Engine
    _list_orders: dict[str, tuple[weakref.ref[View], _ListOrder]] | None = None
    last_spool: dict[str, int] | None = None  # what the last spool ingestion did (files, records, damaged, rejected)

    # the writes, in store.py
    def add_many(self, records: Iterable[Mapping[str, Any] | Memory]) -> builtins.list[str]:
        raise NotImplementedError

    def supersede(self, old_id: str, new_id: str) -> tuple[Memory, Memory]:
        raise NotImplementedError

    def update(self, id: str, **changes: Any) -> Memory:
        raise NotImplementedError

    def forget(self, id: str) -> Memory:
        raise NotImplementedError

    @property
    def path(self) -> Path | None:
        raise NotImplementedError

    @property
    def read_only(self) -> bool:
        raise NotImplementedError

    def ingest_spool(self) -> dict[str, int] | None:
        """Take in now what other processes captured (`engramdb.capture`) while this writer held
        the lock; a writer does it by itself when it opens and before each `add_many`. Returns
        counts (files, records, damaged, rejected), or None when nothing waited."""
        return self._drain_spool()

    def _drain_spool(self) -> dict[str, int] | None:
        """Ingest what other processes spooled while this store's writer held the lock: captures,
        and readers' access rows (to the access log). Under the writer's lock, by one thread at a
        time: a thread that finds another draining waits for it, then finds the files gone (each is
        taken in once; before, two threads could take in the same files)."""
        if self.read_only or self.path is None or getattr(_drainer, "store", None) is self:
            return None  # read-only, in memory, or this thread is draining already (add_many within apply)
        if not spool.pending(self.path) and not spool.access_pending(self.path) and not spool.torn(self.path):
            return None
        with self._engine.writing():
            _drainer.store = self
            try:
                self._usage.ingest_spooled()
                if not spool.pending(self.path) and not spool.torn(self.path):
                    return None

                def apply(records: builtins.list[dict[str, Any]]) -> None:
                    view = self._view()
                    fresh: dict[str, dict[str, Any]] = {}
                    for r in records:  # ingested before a crash: skipped; spooled twice (a hook's late
                        held = fresh.get(r["id"]) or (view.get(r["id"], include_forgotten=True)  # capture and
                                                       if r["id"] in view else None)  # its rescue): taken once
                        if held is None:
                            fresh[r["id"]] = r
                        elif _content(held) != (r.get("content"), r.get("namespace")):
                            # another record under one id: never dropped in silence, its file set aside
                            raise ValueError(f"spooled record {r['id']!r} differs from the one this store holds "
                                             "under that id")
                    if fresh:
                        self.add_many(list(fresh.values()))

                done = spool.drain(self.path, apply)
            finally:
                _drainer.store = None
        if done["damaged"] or done["rejected"]:
            _log.warning("engramdb: spool in %s: %s", self.path, done)
        return done

    # ------------------------------------------------------------------------------ files (C7)
    def add_file(self, path: str | Path, *, namespace: str, encoding: str = "utf-8") -> dict[str, Any]:
        """Capture a markdown or text file as chunks (memory_type "chunk", source "file"; metadata
        file, chunk, chunks, sha256). Re-ingesting a changed file supersedes its old chunks; an
        unchanged file is skipped. Returns what was done: file, chunks, added, superseded, skipped."""
        check_namespace(namespace)  # both go into ids and metadata: checked before the file is read
        checks.utf8("add_file path", str(path))
        p = Path(path).resolve()
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise ValueError(f"add_file: cannot read {str(path)!r}: {exc.strerror}") from None
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            raise ValueError(f"add_file: {str(path)!r} is not {encoding} text") from None
        digest = hashlib.sha256(raw).hexdigest()
        # a file's chunks have ids of their own, one generation per distinct content ingested
        stem = hashlib.sha1(f"{namespace}\0{p}".encode()).hexdigest()[:20]
        gen = 0
        while f"file-{stem}-{gen}-0" in self._view():
            gen += 1
        old: builtins.list[Memory] = []
        while gen and (m := self.get(f"file-{stem}-{gen - 1}-{len(old)}", include_forgotten=True)) is not None:
            old.append(m)
        report: dict[str, Any] = {"file": str(p), "chunks": 0, "added": 0, "superseded": 0, "skipped": False}
        if old and old[0].metadata.get("sha256") == digest:
            report.update(chunks=len(old), skipped=True)
            return report
        spans = [s for s in passages(text) if text[s[0]:s[1]].strip()]
        now = utc_now()
        records = [{"id": f"file-{stem}-{gen}-{i}", "content": text[a:b].strip(), "namespace": namespace,
                    "memory_type": "chunk", "source": "file", "valid_from": now,
                    "metadata": {"file": str(p), "chunk": i, "chunks": len(spans), "sha256": digest},
                    "provenance": {"uri": p.as_uri(), "extractor": "add_file"}}
                   for i, (a, b) in enumerate(spans)]
        ids = self.add_many(records)
        for i, m in enumerate(old):
            if m.is_current():
                if i < len(ids):
                    self.supersede(m.id, ids[i])
                else:  # the file shrank: its tail stops being true now
                    self.update(m.id, valid_until=now)
                report["superseded"] += 1
        report.update(chunks=len(ids), added=len(ids))
        return report

    # ------------------------------------------------------------------------------ conversations
    def add_messages(self, messages: Iterable[Mapping[str, Any]], *, namespace: str,
                     session_id: str | None = None, memory_type: str = "turn") -> builtins.list[str]:
        """Store chat messages ({"role": ..., "content": ...}, as chat APIs give them) as turns of
        one session, in order (seq assigned); returns their ids. A message's "id", when given, is
        its memory's id (a retried request then fails on the id instead of storing twice); its
        "valid_from", when given, is when it was said (an aware datetime, or an ISO-8601 string
        with its UTC offset, e.g. "2024-05-07T13:56:00+02:00" or "...Z"), else it is valid from
        when the store learns it; other keys go to metadata. One bad message refuses all, before
        anything is written."""
        records = []
        for i, msg in enumerate(messages):
            if not isinstance(msg, Mapping):
                raise InvalidMemory(f"message {i}: must be a dict with role and content, got {type(msg).__name__}")
            role, content = msg.get("role"), msg.get("content")
            if not isinstance(role, str) or not role:
                raise InvalidMemory(f"message {i}: role must be a non-empty string, got {role!r}")
            if not isinstance(content, str):
                raise InvalidMemory(f"message {i}: content must be a string, got {type(content).__name__}")
            said = msg.get("valid_from")
            extra = {k: v for k, v in msg.items() if k not in ("role", "content", "id", "valid_from")}
            records.append({"content": content, "role": role, "namespace": namespace, "session_id": session_id,
                            "memory_type": memory_type, **({"metadata": extra} if extra else {}),
                            **({"id": msg["id"]} if "id" in msg else {}),
                            **({"valid_from": _message_time(i, said)} if said is not None else {})})
        return self.add_many(records)

    def list(self, namespace: str, *, filters: Mapping[str, Any] | None = None, limit: int = 100,
             cursor: str | None = None, include_ended: bool = False, newest_first: bool = False) -> Page:
        """A namespace's current memories in the order they were learned (a batch in its order), a
        page at a time: a `Page` (a list of Memory) whose `next_cursor` gives the next page (None
        at the end). `filters`: equality on memory_type, session_id, role, source, or on metadata
        keys as "metadata.KEY". Memories whose valid time has ended (superseded, a file's old
        chunks) are left out unless `include_ended`. `newest_first` pages from the latest. A
        cursor outlives writes: after a memory that changed or was forgotten since, the next page
        starts again at that memory's batch (it may repeat, it never skips)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an int >= 1, got {limit!r}")
        checks = dict(filters or {})
        for k in checks:
            if k not in _LIST_FIELDS and not k.startswith("metadata."):
                raise ValueError(f"filters: unknown field {k!r}; use one of {', '.join(_LIST_FIELDS)} or metadata.KEY")
        after = _decode_cursor(cursor)
        view = self._view()
        now = micros(utc_now())
        keys, locs, until, where = self._list_order(view, namespace)
        start = len(keys) if newest_first else 0
        if after is not None:
            at = where.get(after[2])
            if at is not None and keys[at][:2] == after[:2]:
                start = at if newest_first else at + 1
            else:  # the cursor's memory changed or left since: resume at its batch's start (repeat, never skip)
                group = (after[0], after[1])
                start = bisect.bisect_right(keys, (*group, len(keys))) if newest_first else \
                    bisect.bisect_left(keys, (*group, -1))
        steps = range(start - 1, -1, -1) if newest_first else range(start, len(keys))
        page = Page()
        last: tuple[int, int, str] | None = None
        for i in steps:
            if not include_ended and until[i] <= now:
                continue
            m = view.memory_at(*locs[i])
            if all(_field(m, k) == v for k, v in checks.items()):
                if len(page) == limit and last is not None:
                    page.next_cursor = _encode_cursor(last)
                    break
                page.append(m)
                last = (keys[i][0], keys[i][1], m.id)
        return page

    def _list_order(self, view: View, namespace: str) -> _ListOrder:
        """A namespace's current memories sorted by (learned_at, seq, place in the store), with
        their locations, valid_until and each id's position, built once per snapshot: a page is a
        lookup and `limit` reads, so walking 100,000 memories a page at a time costs one sort."""
        cache = self._list_orders if self._list_orders is not None else {}
        self._list_orders = cache
        hit = cache.get(namespace)
        if hit is not None and hit[0]() is view:
            return hit[1]
        rows = []
        for place, (si, r) in enumerate(view.current_locs(namespace)):  # in the store's order: a batch's own
            seg = view.segments[si]
            rows.append(((int(seg.learned_at[r]), int(seg.turns()[2][r]), place), (si, r),
                         int(seg.valid_until[r]), seg.ids[r]))
        rows.sort(key=lambda row: row[0])
        order = ([k for k, _, _, _ in rows], [loc for _, loc, _, _ in rows],
                 np.fromiter((u for _, _, u, _ in rows), np.int64, len(rows)),
                 {mid: i for i, (_, _, _, mid) in enumerate(rows)})
        cache.pop(namespace, None)
        for old in builtins.list(cache)[: max(0, len(cache) - LIST_ORDERS_KEPT + 1)]:  # keep the latest few
            cache.pop(old, None)  # (a service pages many users' namespaces; threads may race here)
        cache[namespace] = (weakref.ref(view), order)  # not pinning an old snapshot (its files)
        return order

    def get_all(self, namespace: str, *, filters: Mapping[str, Any] | None = None,
                limit: int = 100) -> builtins.list[Memory]:
        """mem0's name: the first `limit` of `list(namespace, filters=...)`."""
        return builtins.list(self.list(namespace, filters=filters, limit=limit))

    def delete(self, id: str) -> Memory:
        """mem0's name for `forget` (soft: restorable; `purge` deletes for privacy requests)."""
        return self.forget(id)

    def history(self, id: str) -> builtins.list[Memory]:
        """Every stored version of a memory, oldest first, each with its system time (learned_at,
        expired_at) and valid time (valid_from, valid_until). Empty for an unknown id."""
        return self._view().versions(id)


def _message_time(i: int, value: Any) -> datetime:
    """A message's "valid_from": an aware datetime, or an ISO-8601 string with its UTC offset (a
    chat API's JSON carries times as strings); as UTC. Refused naming the message and the value."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidMemory(f"message {i}: valid_from {value!r:.80} is not an ISO-8601 time (e.g. "
                                "2024-05-07T13:56:00+02:00)") from None
        if parsed.tzinfo is None:
            raise InvalidMemory(f"message {i}: valid_from {value!r:.80} has no UTC offset: add one (+00:00, Z, "
                                "+02:00); the store never guesses a zone")
        value = parsed
    elif not isinstance(value, datetime):
        raise InvalidMemory(f"message {i}: valid_from must be an aware datetime or an ISO-8601 string with a UTC "
                            f"offset, got {type(value).__name__} {value!r:.80}")
    try:
        t = as_utc("valid_from", value)
    except InvalidMemory as exc:
        raise InvalidMemory(f"message {i}: {exc}") from None
    assert t is not None
    return t


def _content(held: Memory | dict[str, Any]) -> tuple[Any, Any]:
    """(content, namespace) of a stored memory or a spooled record."""
    if isinstance(held, Memory):
        return held.content, held.namespace
    return held.get("content"), held.get("namespace")


def _field(m: Memory, key: str) -> Any:
    if key.startswith("metadata."):
        return m.metadata.get(key[len("metadata."):])
    return getattr(m, key)


def _encode_cursor(at: tuple[int, int, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(at).encode()).decode()


def _decode_cursor(cursor: str | None) -> tuple[int, int, str] | None:
    if cursor is None:
        return None
    try:
        when, seq, mid = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return int(when), int(seq), str(mid)
    except (ValueError, TypeError):
        raise ValueError(f"cursor {cursor!r} is not one list() returned") from None


__all__ = ["CaptureVerbs", "Page"]

"""What a store learns from use (E1-E6, C5): the access log, the ratings, feedback and the batch update.

Every search of a writable store is logged (`Hits.query_id` names it); `feedback(query_id,
used=[...])` says which hits the caller used, and the ratings follow at once: the batch update
(importance/batch.py) runs over the log past the ratings' watermark there and then, from the
rows this process logged (kept in memory, `MIRROR_ROWS`) or, when they do not reach back to the
watermark, from the log's files; every change is logged; hits carry their memory's ELO and tier.
The ratings are saved when the log's rows they cover are (close, checkpoint, `update_importance`),
so a reopen reads the same ratings and a later update never counts a row twice. Ratings that
could not be adopted (missing, damaged, an older format) are replayed from the log when first
read. A read-only store annotates from the saved ratings and logs nothing; opened with `access_log="spool"`, its
searches, feedback and context injections go to the spool (`*.access` files, written at close,
every `SPOOL_ROWS` rows, or when rows have waited `SPOOL_SECONDS`) for the writer to add to its log: a hook beside an MCP server still
teaches the ratings what it injected.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from .._arrow_numpy import empty_table, numpy_of, table_of_rows
from ..importance import annotate, batch
from ..importance.batch import OUTCOME_KINDS
from ..importance.elo import RELEVANCE_THRESHOLD
from ..importance.ratings import DATA as RATINGS_FILE
from ..importance.ratings import Importance, Ratings
from ..model import checks
from ..model.hit import Hit, Hits
from ..model.memory import micros, utc_now
from ..storage import spool
from ..storage.access_log import ACCESS_SCHEMA, access_log, elo_log
from ..storage.derived_files import DerivedFiles

TOMBS_FILE = "purged-tombstones.json"  # index/: XXH3 of purged ids and namespaces, when each purge ended
PURGE_GRACE_S = 60  # rows stamped up to this long after a purge ended, naming what it purged, are dropped too
SPOOL_ROWS = 512  # a reader's access rows kept in memory before they are spooled
SPOOL_SECONDS = 30.0  # ... or the age of the oldest of them when the next rows arrive
_log = logging.getLogger("engramdb")
RECENT_QUERIES = 4096  # query ids remembered in memory for feedback (older ones are looked up in the log)
DEEPER = 3  # elo_weight / explore: candidates searched per place kept
# the latest rows this process logged, kept in memory: feedback on a recent search settles from
# them (its search rows and everything past the watermark) without reading the log's files
MIRROR_ROWS = 8192


def _tomb(value: str) -> str:
    return xxhash.xxh3_64_hexdigest(value.encode("utf-8", "surrogatepass"))


def _load_tombs(files: DerivedFiles) -> dict[str, int | None]:
    meta = files.read_sidecar(TOMBS_FILE)
    tombs = meta.get("tombs") if isinstance(meta, dict) else None
    if not isinstance(tombs, dict):
        return {}
    return {k: v for k, v in tombs.items() if isinstance(k, str) and isinstance(v, int)}


_USAGES: weakref.WeakSet[Usage] = weakref.WeakSet()  # every live one, for the fork hook below


def _new_locks_in_child() -> None:
    """In a forked child: a parent's thread logging a search at the fork held `_gate` (and maybe
    `_lock`), and the child's first search waited for it for ever (an adversary: 22 children of 30
    forked beside two searching threads). Its half-logged rows are the parent's."""
    for usage in list(_USAGES):
        usage._lock, usage._gate = threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_in_child)


class Usage:
    """The importance layer's state in one open store (see the module docstring)."""

    def __init__(self, path: Path | None, files: DerivedFiles, *, writable: bool,
                 log: bool | Literal["spool"] = True) -> None:
        self.files = files
        self.logging = writable and bool(log)
        self._writable = writable
        # a reader touches the folder only when asked: its rows then go to the spool
        self.spooling = not writable and log == "spool" and path is not None
        self._path = path
        self._spooled: list[dict[str, Any]] = []
        self._spool_since = 0.0
        self.log = access_log(path, writable=self.logging)
        self.elo_log = elo_log(path, writable=writable)
        self._ratings: Ratings | None = None
        self.ratings_state: str | None = None  # "adopted", or why the saved ratings were not (then replayed)
        self._dirty = False  # the ratings changed since they were saved
        self._mirror: list[dict[str, Any]] = []  # rows this process logged: consecutive seqs up to the log's last
        self._lock = threading.Lock()
        self._gate = threading.Lock()  # held while rows are logged and while a purge cleans the logs
        _USAGES.add(self)
        # tombstones (see `_unpurged`): XXH3 of a purged id or namespace -> when its purge ended (None:
        # under way); hashes, so that no byte of what was purged stays in the file that keeps them
        self._tombs: dict[str, int | None] = _load_tombs(files)
        self._recent: OrderedDict[str, str] = OrderedDict()  # query id -> namespace
        self.rng = random.Random()

    @property
    def ratings(self) -> Ratings:
        """The ratings: the saved ones, or (missing, damaged, of an older format) the log replayed
        from its start, in memory (a writer saves them with its next rows)."""
        if self._ratings is None:
            with self._lock:
                if self._ratings is None:
                    ratings, state = Ratings.load(self.files)
                    if state != "adopted" and self.log.next_seq > 1:  # derived data: made again
                        batch.apply(ratings, self.log.read())
                        self._dirty = True
                    self._ratings, self.ratings_state = ratings, state
        return self._ratings

    # ------------------------------------------------------------------------------ searches
    def finish(self, hits: Hits, *, query: object, namespace: str, session_id: str | None, k: int,
               elo_weight: float, explore: float, log: bool = True) -> Hits:
        """Annotate, re-rank or explore when asked, cut to k, and log the search."""
        now_us = time.time_ns() // 1_000
        ratings = self.ratings
        out: list[Hit] = annotate.annotated(list(hits), ratings, now_us)
        if elo_weight > 0:
            out = annotate.by_elo(out, elo_weight)
        out = annotate.explored(out, k, explore, ratings, self.rng) if explore > 0 else out[:k]
        query_id = self._record(out, query, namespace, session_id, hits.stats.strategy,
                                hits.stats.seconds * 1e3) if (self.logging or self.spooling) and log else None
        return Hits(out, hits.stats, query_id)

    def _record(self, hits: list[Hit], query: object, namespace: str, session_id: str | None, strategy: str,
                latency_ms: float) -> str:
        qid = uuid.uuid4().hex
        at = utc_now()
        text = query if isinstance(query, str) else None
        base = {"kind": "search", "query_id": qid, "namespace": namespace, "session_id": session_id, "at": at,
                "query": text, "strategy": strategy, "used": False}
        rows = [{**base, "memory_id": h.id, "rank": i + 1, "score": h.score} for i, h in enumerate(hits)] or \
            [{**base, "memory_id": None, "rank": None, "score": None}]
        rows[0]["latency_ms"] = latency_ms
        self._append(rows)
        with self._lock:
            self._recent[qid] = namespace
            if len(self._recent) > RECENT_QUERIES:
                self._recent.popitem(last=False)
        return qid

    # ------------------------------------------------------------------------------ feedback
    def feedback(self, query_id: str, used: Iterable[str], *, kind: str = "feedback",
                 session_id: str | None = None, owner: Callable[[str], str | None] | None = None) -> int:
        """Record which memories of a logged search the caller used (none: every hit lost); returns
        how many. `owner(memory id) -> its namespace or None` (the store's view): each used id must
        be a memory of the namespace searched, checked before anything is logged."""
        if not (self.logging or self.spooling):
            raise PermissionError("this store logs no searches (opened with access_log=False, or in memory "
                                  "read-only)")
        if not isinstance(query_id, str) or not query_id:
            raise ValueError(f"query_id must be the non-empty id a search returned (Hits.query_id), got {query_id!r}")
        checks.utf8("query_id", query_id, ValueError)
        if session_id is not None:  # before the row reaches the log's buffer, which every later write shares
            checks.short_text("session_id", session_id, 256)
        ids = used_ids(used)
        namespace = self._namespace_of(query_id)
        if namespace is None:
            raise ValueError(f"no logged search with query_id {query_id!r}: feedback names a search this store "
                             "logged (Hits.query_id)")
        if owner is not None:
            for mid in ids:
                if owner(mid) != namespace:  # the same words for another namespace's id and an unknown one
                    raise ValueError(f"used: no memory with id {mid!r} in namespace {namespace!r}, the namespace "
                                     f"query {query_id!r} searched (feedback names memories of that namespace)")
        at = utc_now()
        # no id: one row saying none of the hits was used (each loses, as shown and not used)
        self._append([{"kind": kind, "query_id": query_id, "namespace": namespace, "session_id": session_id,
                       "at": at, "query": None, "strategy": None, "memory_id": mid, "rank": None, "score": None,
                       "used": mid is not None} for mid in (list[str | None](ids) or [None])])
        if kind == "feedback" and self.logging:
            # the ratings follow at once (E2): the same update the batch makes, for what is logged so
            # far. A context's injections ("inject") wait for the agent's own feedback on that search
            # (then one match holds both) or the next update: settling them alone would make the
            # agent's feedback late.
            self._settle(RELEVANCE_THRESHOLD)
        return len(ids)

    def _append(self, rows: list[dict[str, Any]]) -> None:
        with self._gate:  # a purge in progress decides first what may be logged (see `purge`)
            rows = self._unpurged(rows)
            if not rows:
                return
            if self.logging:
                self._mirrored(rows, self.log.append(rows))
                return
        with self._lock:
            if not self._spooled:
                self._spool_since = time.monotonic()
            self._spooled.extend(rows)
            due = len(self._spooled) >= SPOOL_ROWS or time.monotonic() - self._spool_since >= SPOOL_SECONDS
        if due:  # a long-lived reader (an MCP server beside a writer) spools as it goes, not only at close
            self._spool()

    def _spool(self) -> None:
        """A reader's waiting access rows, to the spool for the writer (lost, with a warning, when
        the folder cannot be written: they are signals for the ratings, not memories)."""
        with self._lock:
            rows, self._spooled = self._spooled, []
        if rows and self._path is not None:
            try:
                spool.put_access(self._path, rows)
            except OSError as exc:
                _log.warning("engramdb: %d access rows not spooled to %s: %s", len(rows), self._path, exc)

    def ingest_spooled(self) -> dict[str, int] | None:
        """Add the access rows readers spooled to this writer's log, each once (a file cut short by
        a crash is replayed against the log: rows whose query and kind it holds are skipped),
        durable before the files go. None when nothing waited or this store keeps no log."""
        if not self.logging or self._path is None or not spool.access_pending(self._path):
            return None
        return spool.drain_access(self._path, self._take)

    def _unpurged(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`rows` without those a purge of this store removed or would have: a search that showed a
        purged memory (all its rows: its text may say what the memory said), a row naming one, a
        row of a purged namespace, made before its purge ended. A search that began before the
        purge and logs after it, or a reader's rows taken in later, even by another process after
        a restart, never bring them back (the tombstones are kept in the index folder); a memory or
        namespace made again under the same name after the purge is logged as usual."""
        if not self._tombs:
            return rows

        def dead(value: object, at: object) -> bool:
            if not isinstance(value, str):
                return False
            end = self._tombs.get(_tomb(value), -1)
            if end == -1:
                return False
            return end is None or not isinstance(at, datetime) or micros(at) <= end

        shown = {r["query_id"] for r in rows if dead(r.get("memory_id"), r.get("at"))}
        return [r for r in rows if r["query_id"] not in shown and not dead(r.get("memory_id"), r.get("at"))
                and not dead(r.get("namespace"), r.get("at"))]

    def _take(self, rows: list[dict[str, Any]], replay: bool) -> None:
        rows = self._unpurged(rows)
        fresh = rows
        if replay:  # only then is the whole log read
            self.log.flush()
            table = self.log.read()
            asked = pa.array(sorted({r["query_id"] for r in rows}), pa.string())
            seen = table.filter(pc.fill_null(pc.is_in(table.column("query_id"), value_set=asked), False))
            have = set(zip(seen.column("query_id").to_pylist(), seen.column("kind").to_pylist()))
            fresh = [r for r in rows if (r["query_id"], r["kind"]) not in have]
        if fresh:
            with self._gate:
                self._mirrored(fresh, self.log.append(fresh))
            self.log.flush()

    def _namespace_of(self, query_id: str) -> str | None:
        with self._lock:
            ns = self._recent.get(query_id)
        if ns is not None:
            return ns
        table = self.log.read()
        hit = table.filter(pc.equal(table.column("query_id"), query_id))
        return hit.column("namespace")[0].as_py() if hit.num_rows else None

    # ------------------------------------------------------------------------------ the batch update
    def update(self, threshold: float = RELEVANCE_THRESHOLD) -> batch.UpdateReport:
        """Apply the access log past the ratings' watermark (E5), log the changes, save the ratings."""
        if not self.logging:
            raise PermissionError("this store is read-only: the ratings cannot be updated here")
        self.ingest_spooled()
        report = self._settle(threshold)
        self._save(force=self.ratings_state != "adopted")  # a file that could not be read is written again
        return report

    def _mirrored(self, rows: list[dict[str, Any]], seqs: list[int]) -> None:
        """Keep the rows just logged (with their seqs) in the mirror (the caller holds `_gate`)."""
        if not seqs:
            return
        if self._mirror and self._mirror[-1]["seq"] + 1 != seqs[0]:
            self._mirror = []  # a gap: the mirror holds consecutive rows only
        self._mirror.extend({**r, "seq": q} for r, q in zip(rows, seqs))
        if len(self._mirror) > MIRROR_ROWS:
            del self._mirror[: len(self._mirror) - MIRROR_ROWS]

    def _tail(self, mark: int, *, full: bool = True) -> pa.Table | None:
        """The rows the update needs to go past `mark`: every row after it, and every row of the
        searches those rows give an outcome for (their shown memories, earlier outcomes). From the
        mirror when it holds them all; else the whole log (None when not `full`)."""
        last = self.log.next_seq - 1
        if last <= mark:
            return empty_table(ACCESS_SCHEMA)
        rows = self._mirror
        if rows and rows[0]["seq"] <= mark + 1 and rows[-1]["seq"] == last:
            start = mark + 1 - rows[0]["seq"]  # consecutive seqs: the index of the first row past mark
            wanted = {r["query_id"] for r in rows[start:] if r["kind"] in OUTCOME_KINDS}
            # a search's first row carries its latency: with it, every later row of the search is here
            heads = {r["query_id"] for r in rows if r["kind"] == "search" and r.get("latency_ms") is not None
                     and r["query_id"] in wanted}
            if wanted <= heads:
                picked = [r for r in rows[:start] if r["query_id"] in wanted] + rows[start:]
                return table_of_rows(picked, ACCESS_SCHEMA)
        return self.log.read() if full else None

    def _settle(self, threshold: float, *, full: bool = True) -> batch.UpdateReport:
        """Apply every logged row past the ratings' watermark now (E5), and log the changes; the
        ratings are saved with the rows they cover (`_save`). Not `full`: only when the mirror
        holds what it needs."""
        ratings = self.ratings
        with self._gate, self._lock:  # _gate: no row is logged (nor purged) while the update reads
            table = self._tail(ratings.watermark, full=full)
            if table is None:
                return batch.UpdateReport(watermark=ratings.watermark)
            report = batch.apply(ratings, table, threshold)
            if report.changes:
                self.elo_log.append(report.changes)
            if report.entries:
                self._dirty = True
        return report

    def _save(self, *, force: bool = False) -> None:
        """Save the ratings when they changed (or were replayed), after the log's rows they cover:
        a crash in between leaves ratings older than the log, never newer (a row they count that
        the log lost would take a seq the ratings cover, and be skipped)."""
        with self._gate, self._lock:  # no row logged or settled between the flush and the save
            self.log.flush()
            self.elo_log.flush()
            if self._ratings is not None and (self._dirty or force):
                self._ratings.save(self.files)
                self.ratings_state = "adopted" if self.files.writable else self.ratings_state
                self._dirty = False

    def importance(self, memory_id: str) -> Importance:
        return self.ratings.describe(memory_id, time.time_ns() // 1_000)

    def updates(self, memory_id: str | None = None) -> pa.Table:
        """The ELO update log (of one memory)."""
        if self.logging:
            self.log.flush()  # the rows the changes came from first: the ELO log never runs ahead of them
        self.elo_log.flush()
        t = self.elo_log.read()
        return t if memory_id is None else t.filter(pc.equal(t.column("memory_id"), memory_id))

    # ------------------------------------------------------------------------------ upkeep
    def flush(self) -> None:
        """Write what waits: the rows logged, and (a writer) the ratings, settled first when the
        rows in memory suffice (a reopen then reads them as they are now)."""
        if self.logging:
            if self._ratings is not None:
                self._settle(RELEVANCE_THRESHOLD, full=False)
            self.log.flush()
            self.elo_log.flush()
            try:
                self._save()
            except OSError as exc:  # derived data: replayed from the log when read next; the rows are safe
                _log.warning("engramdb: the ELO ratings were not saved in %s: %s", self._path, exc)
        elif self.spooling:
            self._spool()

    def purge(self, ids: set[str], namespaces: set[str] | frozenset[str] = frozenset()) -> int:
        """Remove purged memories and namespaces from the logs and the ratings: every row naming
        one of the memories, every row of a search that showed one (its query text may say what the
        memory said), and every row of the namespaces (searches that found nothing too: their text
        is the namespace's). A store opened with access_log=False still purges the log its earlier
        sessions wrote. Writes nothing when none of them was ever logged or rated."""
        if not ids and not namespaces:
            return 0
        with self._gate:  # no row naming them is logged from now on, while the files are cleaned or after
            for value in (*ids, *namespaces):
                self._tombs[_tomb(value)] = None  # under way: every row naming them is dropped
            return self._purge_logged(ids, namespaces)

    def purged(self, *, save: bool = True) -> None:
        """The purge `purge` began is over: rows naming what it purged are dropped when stamped
        before now plus PURGE_GRACE_S (a search under way as it ended logs after it; a memory or
        namespace made again later is logged), and the tombstones are kept."""
        end_us = micros(utc_now()) + PURGE_GRACE_S * 1_000_000  # searches under way when it ended log after it
        with self._gate:
            for key, end in self._tombs.items():
                if end is None:
                    self._tombs[key] = end_us
            if save and self.files.writable:
                try:
                    self.files.write_sidecar(TOMBS_FILE, {"format": 1, "tombs": self._tombs})
                except OSError as exc:  # the purge is committed; this process keeps them all the same
                    _log.warning("engramdb: the purge's tombstones were not saved in %s: %s", self._path, exc)

    def _purge_logged(self, ids: set[str], namespaces: set[str] | frozenset[str]) -> int:
        removed = 0
        queries: set[str] = set()
        log = self.log if self.logging else \
            access_log(self._path, writable=True) if self._writable and self._path is not None else None
        if log is not None:
            log.flush()
            table = log.read()
            hit = pc.is_in(table.column("memory_id"), value_set=pa.array(sorted(ids), pa.string()))
            queries = {q for q in table.filter(pc.fill_null(hit, False)).column("query_id").to_pylist() if q}
            removed = log.purge_any({"query_id": queries, "memory_id": ids, "namespace": namespaces})
        if self.elo_log.writable:
            removed += self.elo_log.purge_any({"memory_id": ids, "namespace": namespaces})
        if self.files.writable:
            # a ratings file that could not be read may hold them too: it is written again (the
            # ratings it held are replayed from the log either way)
            unread = self.ratings_state not in ("adopted", "missing") and self.files.exists(RATINGS_FILE)
            if self.ratings.forget(ids, namespaces) or unread:
                self.ratings.save(self.files)
                self.ratings_state = "adopted"
        self._mirror = []  # rows the log no longer holds are never replayed from memory (purge holds _gate)
        with self._lock:  # what feedback would still find in memory
            self._recent = OrderedDict((q, ns) for q, ns in self._recent.items()
                                       if q not in queries and ns not in namespaces)
            self._spooled = [r for r in self._spooled if r.get("memory_id") not in ids
                             and r.get("query_id") not in queries and r.get("namespace") not in namespaces]
        return removed

    def recent_queries(self, since_us: int, namespace: str | None, limit: int) -> list[tuple[str, str]]:
        """The distinct (namespace, query text) of the searches logged since `since_us`, newest
        first, at most `limit`."""
        self.log.flush()
        t = self.log.read()
        if t.num_rows == 0:
            return []
        at = pc.cast(t.column("at"), pa.int64()).to_pylist()
        out: dict[tuple[str, str], None] = {}
        for i in range(t.num_rows - 1, -1, -1):
            if at[i] < since_us:
                continue
            ns, q = t.column("namespace")[i].as_py(), t.column("query")[i].as_py()
            if q and (namespace is None or ns == namespace) and t.column("kind")[i].as_py() == "search":
                out[(ns, q)] = None
                if len(out) >= limit:
                    break
        return list(out)

    def activity(self, now_us: int, recent: int = 5) -> dict[str, Any]:
        """Searches and feedback in the last day, week and in all, the latest queries, and the
        search latency (p50 / p95 ms over the last 1,000 logged searches)."""
        self.log.flush()
        t = self.log.read()
        at = numpy_of(t.column("at")) if t.num_rows else np.empty(0)
        kind = np.asarray(t.column("kind").to_pylist(), dtype=object)
        first = np.asarray([r is not None for r in t.column("latency_ms").to_pylist()], bool)
        searches = (kind == "search") & first  # one row per search carries its latency
        outcomes = np.isin(kind, ["feedback", "inject"])
        out: dict[str, Any] = {}
        for name, days in (("day", 1), ("week", 7)):
            since = at >= now_us - days * 86_400_000_000
            out[f"searches_{name}"] = int((searches & since).sum())
            out[f"feedback_{name}"] = int((outcomes & since).sum())
        out["searches"], out["feedback"] = int(searches.sum()), int(outcomes.sum())
        lat = np.asarray([v for v in t.column("latency_ms").to_pylist() if v is not None][-1000:], np.float64)
        out["latency_ms"] = {"p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95))} \
            if len(lat) else None
        idx = np.flatnonzero(searches)[-recent:][::-1]
        out["recent"] = [{"at_us": int(at[i]), "namespace": t.column("namespace")[int(i)].as_py(),
                          "query": t.column("query")[int(i)].as_py()} for i in idx]
        return out

    def describe(self) -> dict[str, Any]:
        r = self.ratings
        return {"log": self.log.describe(), "ratings": len(r), "watermark": r.watermark,
                "ratings_file": self.ratings_state}


def used_ids(used: object) -> list[str]:
    """`feedback`'s `used`: a list (any iterable but a string) of memory ids, each once, in order."""
    if isinstance(used, (str, bytes)) or not isinstance(used, Iterable):
        raise TypeError(f"used must be a list of memory ids, got {type(used).__name__} {used!r}"
                        + (f" (for one id write used=[{used!r}])" if isinstance(used, str) else ""))
    items = list(used)
    bad = [i for i in items if not isinstance(i, str) or not i]
    if bad:
        raise ValueError(f"used must hold memory ids (non-empty strings), got {bad[0]!r}")
    return list(dict.fromkeys(items))


__all__ = ["Usage"]

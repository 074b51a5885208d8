"""`Store.context` and `Store.pack`: the verbs; the block itself is assembled in context/assemble.py.

`context` checks its arguments, runs the default search for the candidates, reads what the
assembly needs of the store (the snapshot, its indexes, the ratings, the topics last computed,
the session's divergence and latest turns, the budgets' duals: one set per open store), then logs
the injected memories to the access log (kind "inject") under the search's query id, which is what
ELO learns from when the agent gives no feedback of its own, and queues the hops that surprised
the navigator for background exploration (K7, store/curiosity_verbs.py).
"""

from __future__ import annotations

import heapq
import threading
import time
from bisect import bisect_right
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from .._requests_first import request
from ..context import assemble as asm
from ..context.curiosity import surprises
from ..context.handoff import EDGE_BUDGET, LATENCY_MS, STEP_BUDGET, Duals
from ..context.result import Context, ContextItem
from ..context.tokens import Counter, counter, preload
from ..importance.elo import INITIAL_ELO, tier
from ..importance.ratings import Ratings
from ..lifecycle.consolidation import leading_sentences
from ..model import checks
from ..model.hit import Hits
from ..model.memory import Memory, micros, utc_now
from ..storage.view import Loc, View

if TYPE_CHECKING:
    from .facade import Store

_duals_lock = threading.Lock()
MAPS_KEPT = 64  # namespaces whose topic map a store keeps


class ContextAssembly:
    """`Store.context` and the lite pack (`db.importance.pack`): the store's side of context assembly."""

    def __init__(self, db: Store) -> None:
        self._db = db
        self._maps: dict[str, tuple[object, asm.TopicMap]] = {}  # namespace -> (topics run, its map)
        self._maps_lock = threading.Lock()
        self._purges = 0  # purges that dropped the maps: a map made from topics read before one is not kept

    _duals: Duals | None = None

    def _forget_maps(self) -> None:
        """Drop the topic maps kept (a purge: they hold members' ids and labels)."""
        with self._maps_lock:
            self._purges += 1
            self._maps = {}

    @request
    def context(self, query: str, *, namespace: str, max_tokens: int = 2000, session_id: str | None = None,
                as_of: datetime | None = None, tokenizer: str | Counter | None = None, log: bool = True,
                navigate: bool = True, edge_budget: int = EDGE_BUDGET, step_budget: int = STEP_BUDGET,
                latency_ms: float = LATENCY_MS, now: datetime | None = None) -> Context:
        """`Store.context`."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 50:
            raise ValueError(f"max_tokens must be an int >= 50, got {max_tokens!r}")
        for name, v in (("edge_budget", edge_budget), ("step_budget", step_budget)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be an int >= 0, got {v!r}")
        if isinstance(latency_ms, bool) or not isinstance(latency_ms, (int, float)) or not latency_ms > 0:
            raise ValueError(f"latency_ms must be a number > 0, got {latency_ms!r}")
        preload(tokenizer)  # checked here; a BPE loads on its own thread while the search runs
        began = time.perf_counter()
        divergence = None
        if session_id is not None:
            d = self._db.topics.divergence(query, namespace=namespace, session_id=session_id)
            divergence = asm.Divergence(bool(d["divergent"]), d["similarity"])
        t0 = time.perf_counter()
        before = self._db._view()  # the search's snapshot is this one or a later one
        hits = self._db.search(query, namespace=namespace, k=asm.candidates(max_tokens), as_of=as_of,
                               session_id=session_id, log=log, now=now)
        t1 = time.perf_counter()
        count, tok_name = counter(tokenizer)
        req = asm.Request(query, namespace, max_tokens, count, tok_name, session_id, as_of, navigate, edge_budget,
                          step_budget, float(latency_ms))
        view = self._db._view()
        # purged between the search and this snapshot: only a purge starts a new row epoch, and
        # within one every row stays (so the check costs nothing, and no id index, in the loop)
        if view.epoch != before.epoch and any(view.key_of(h.id) is None for h in hits):
            hits = Hits([h for h in hits if view.key_of(h.id) is not None], hits.stats, hits.query_id)
        snap = asm.Snapshot(view, self._db._indexes, self._db.embedders, self._db.schema, self._db._usage.ratings)
        recent = self._recent_turns(namespace, session_id) if session_id is not None else []
        done = asm.assemble(req, snap, hits, topics=self._context_topics(namespace), duals=self._context_duals(),
                            divergence=divergence, recent=recent,
                            laps={"divergence": round((t0 - began) * 1e3, 3), "search": round((t1 - t0) * 1e3, 3)})
        ctx = done.context
        t2 = time.perf_counter()
        if log and hits.query_id is not None and done.injected:
            try:
                self._db._usage.feedback(hits.query_id, done.injected, kind="inject", session_id=session_id)
            except ValueError:  # a purge took the search's log rows meanwhile: nothing to learn from
                pass
        found = surprises(done.hops, namespace=namespace, query=query,
                          waiting=self._db.curiosity._keys() if log and not self._db.read_only else ())
        queued = self._db.curiosity._queue(found) if log else 0
        ctx.stats["ms"]["curiosity"] = round((time.perf_counter() - t2) * 1e3, 3)
        ctx.stats["query_id"] = hits.query_id
        ctx.stats["curiosity"] = {"found": len(found), "queued": queued}
        return ctx

    def pack(self, namespace: str, *, max_tokens: int = 2000, tokenizer: str | Counter | None = None) -> Context:
        """`ImportanceVerbs.pack`."""
        checks.name("namespace", namespace)  # None would read as every namespace: another user's memories
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 50:
            raise ValueError(f"max_tokens must be an int >= 50, got {max_tokens!r}")
        count, tok_name = counter(tokenizer)
        now = utc_now()
        now_us = micros(now)
        ratings = self._db._usage.ratings
        view = self._db._view()
        keys, place, newest = view.list_order(namespace)
        current = len(keys)
        items: list[ContextItem] = []
        used = full = 0
        for elo, (si, row) in _by_elo(view, (keys, place, newest), namespace, ratings, now_us):
            t = tier(elo)
            if t == "VERY_LOW":
                continue
            m = view.memory_at(si, row)  # only the memories read: 100,000 of them cost seconds
            if m.valid_until is not None and m.valid_until <= now:
                continue  # no longer true (superseded, a file's old chunk): a context leaves it out too
            body = m.content if t == "HIGH" else leading_sentences(m.content, 1, 25) if t == "MEDIUM" else \
                " ".join(m.content.split()[:8]) + " ..."
            text = f"- [{m.id}] {' '.join(body.split())}"
            n = count(text)
            if used + n > max_tokens:
                break
            full += count(f"- [{m.id}] {' '.join(m.content.split())}")
            used += n
            form = {"HIGH": "full", "MEDIUM": "summary", "LOW": "pointer"}[t]
            items.append(ContextItem(m.id, "pack", text, round(elo, 1), n, f"{t}: {form}",
                                     {"elo": round(elo, 1), "tier": t, "form": form}))
        text = "\n".join(i.text for i in items)
        return Context(text, items, {"tokens": count(text), "budget": max_tokens, "tokenizer": tok_name,
                                     "memories": len(items), "left_out": current - len(items),
                                     "tokens_in_full": full, "tokens_saved": max(0, full - used)})

    # ------------------------------------------------------------------------------ helpers
    def _context_duals(self) -> Duals:
        """The open store's dual variables (K6), made on first use."""
        duals = self._duals
        if duals is None:
            with _duals_lock:
                duals = self._duals
                if duals is None:
                    duals = self._duals = Duals()
        return duals

    def _context_topics(self, namespace: str) -> asm.TopicMap:
        """The namespace's topics as last computed (labels, centroids, memory -> topic), for the
        context's topic heading; none when none were computed."""
        purges = self._purges  # read first: topics read before a purge may hold what it took out
        found = self._db.topics._topics_to_use(namespace)  # one run's labels and centroids, though a new run lands
        if not found:
            return asm.TopicMap()
        # one map per topics run (it keeps the member sets a context asked for: a topic of thousands
        # of members at 100,000 memories made again at each context)
        kept = self._maps.get(namespace)
        if kept is not None and kept[0] is found:
            return kept[1]
        centroids = found.centroids
        if centroids is None or len(centroids) != len(found):  # topics stored before their centroids were
            _, centroids = self._db.topics._topic_map(namespace, found)
        made = asm.TopicMap([t.label for t in found], np.asarray(centroids, np.float64), [t.members for t in found])
        with self._maps_lock:
            if purges != self._purges:
                return made  # a purge ran since the topics were read: this context's alone, never kept
            if len(self._maps) >= MAPS_KEPT:
                self._maps.clear()
            self._maps[namespace] = (found, made)
        return made

    def _recent_turns(self, namespace: str, session_id: str) -> list[Memory]:
        """The session's newest turns, newest first."""
        view = self._db._view()
        return view.memories_at(view.session_locs(namespace, session_id)[::-1][:asm.RECENT_TURNS])


def _by_elo(view: View, order: tuple[np.ndarray, np.ndarray, np.ndarray], namespace: str, ratings: Ratings,
            now_us: int) -> Iterator[tuple[float, Loc]]:
    """(elo now, (segment, row)) of the namespace's current memories (`order`, as View.list_order
    gives them), highest elo first, then newest first: the rated ones sorted, merged with the
    unrated ones (all at INITIAL_ELO) read from the newest back as the pack takes them. The pack
    stops at its budget, a few dozen in, so nothing is made for each of a large namespace's
    memories (a tuple and an id for each of 100,000 was ~0.4 s of a SessionStart hook).
    Newest first among equals (the elo as shown, to one decimal): what a session starting needs
    is more likely what was learned last than what an id's first hex digits pick; newest as
    `Store.list` says it (learned_at, seq), not where a row sits (an import appends memories
    learned long ago)."""
    keys, place, newest = order
    starts = view.bases.tolist()

    def loc(key: int) -> Loc:
        si = bisect_right(starts, key) - 1
        return si, key - starts[si]

    # ordered by the elo as shown (one decimal): equal histories differ by decay's float noise
    # (1e-8), which is no reason to put an older memory first
    rated: list[tuple[float, int, float, Loc]] = []
    rated_ids: set[str] = set()
    # a copy (one C call: no other thread runs during it): feedback in another thread adds
    # ratings while this loop runs, and a dict iterated as it grows raises
    for mid, r in ratings.by_id.copy().items():
        if r.namespace != namespace:
            continue
        key = view.key_of(mid)
        if key is None:
            continue
        at = int(np.searchsorted(keys, key))
        if at < len(keys) and int(keys[at]) == key:
            elo = r.elo_at(now_us)  # current, in the namespace, not forgotten
            rated.append((-round(elo, 1), -int(place[at]), elo, loc(key)))
            rated_ids.add(mid)
    rated.sort()

    def unrated() -> Iterator[tuple[float, int, float, Loc]]:
        for at in range(len(newest) - 1, -1, -1):
            where = loc(int(newest[at]))
            if view.id_at(where) not in rated_ids:
                yield -INITIAL_ELO, -at, INITIAL_ELO, where

    for _, _, elo, where in heapq.merge(rated, unrated()):  # places are unique: the rest is never compared
        yield elo, where


__all__ = ["ContextAssembly"]

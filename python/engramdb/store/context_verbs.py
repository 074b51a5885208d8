"""`Store.context` and `Store.pack`: the verbs; the block itself is assembled in context/assemble.py.

`context` checks its arguments, runs the default search for the candidates, reads what the
assembly needs of the store (the snapshot, its indexes, the ratings, the topics last computed,
the session's divergence and latest turns, the budgets' duals: one set per open store), then logs
the injected memories to the access log (kind "inject") under the search's query id, which is what
ELO learns from when the agent gives no feedback of its own, and queues the hops that surprised
the navigator for background exploration (K7, store/curiosity_verbs.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from datetime import datetime

import numpy as np

from ..context import assemble as asm
from ..context.curiosity import surprises
from ..context.handoff import EDGE_BUDGET, LATENCY_MS, STEP_BUDGET, Duals
from ..context.model import Context, ContextItem
from ..context.tokens import Counter, counter
from ..importance.elo import tier
from ..lifecycle.consolidation import leading_sentences
from ..model import checks
from ..model.errors import StoreError
from ..model.hit import Hits
from ..model.memory import Memory
from ..spaces.query import forget_queries
from ..storage import set_aside
from ..storage.view import View
from .curiosity_verbs import CuriosityVerbs

_duals_lock = threading.Lock()


class ContextVerbs(CuriosityVerbs):
    """Mixed into `Store`."""

    _duals: Duals | None = None

    def context(self, query: str, *, namespace: str, max_tokens: int = 2000, session_id: str | None = None,
                as_of: datetime | None = None, tokenizer: str | Counter | None = None, log: bool = True,
                navigate: bool = True, edge_budget: int = EDGE_BUDGET, step_budget: int = STEP_BUDGET,
                latency_ms: float = LATENCY_MS) -> Context:
        """The best memories for a prompt under `max_tokens` (C6): a `Context` with `.text` (the
        block a person would paste: sections in priority order, one line a memory with who said
        it, a session's turns under one line with its date, a fact that no longer holds marked
        with when it ended; no line twice, no internal id; never more than `max_tokens` by the
        tokenizer in use; the layout is in context/assemble.py), `.items` (id, section, score,
        tokens, why, K3 provenance, badge: the date line it sits under and its mark) and `.stats`
        (tokens used, budget, tokenizer, milliseconds per stage, and the handoff: `stages` with
        each stage's spend, budget and what it wanted, `prices` and `duals` (the budgets' dual
        variables before and after this call), `utility`, and `curiosity`: the surprising hops
        found and queued).
        `tokenizer`: "cl100k_base" (the default when bpe-openai is installed:
        `engramdb[tokens]`), "o200k_base", "estimate", or any callable text -> token count.
        `as_of`: the facts true then (those that ended since marked as such). `navigate`: walk the
        links from the hits (typed edges, neighbouring turns: K1) within `edge_budget` links read
        and `step_budget` hops; `latency_ms`: the time a context should take (a soft budget: its
        dual shrinks the walk's budgets when calls overrun it). The topics are the ones last
        computed (`topics()`), never computed here. `log=False` neither logs the search nor the
        injection, nor queues curiosity items."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 50:
            raise ValueError(f"max_tokens must be an int >= 50, got {max_tokens!r}")
        for name, v in (("edge_budget", edge_budget), ("step_budget", step_budget)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be an int >= 0, got {v!r}")
        if isinstance(latency_ms, bool) or not isinstance(latency_ms, (int, float)) or not latency_ms > 0:
            raise ValueError(f"latency_ms must be a number > 0, got {latency_ms!r}")
        count, tok_name = counter(tokenizer)
        began = time.perf_counter()
        divergence = None
        if session_id is not None:
            d = self.divergence(query, namespace=namespace, session_id=session_id)
            divergence = asm.Divergence(bool(d["divergent"]), d["similarity"])
        t0 = time.perf_counter()
        hits = self.search(query, namespace=namespace, k=asm.candidates(max_tokens), as_of=as_of,
                           session_id=session_id, log=log)
        t1 = time.perf_counter()
        req = asm.Request(query, namespace, max_tokens, count, tok_name, session_id, as_of, navigate, edge_budget,
                          step_budget, float(latency_ms))
        view = self._view()
        if any(view.key_of(h.id) is None for h in hits):  # purged between the search and this snapshot
            hits = Hits([h for h in hits if view.key_of(h.id) is not None], hits.stats, hits.query_id)
        snap = asm.Snapshot(view, self._indexes, self.embedders, self.schema, self._usage.ratings)
        recent = self._recent_turns(namespace, session_id) if session_id is not None else []
        done = asm.assemble(req, snap, hits, topics=self._context_topics(namespace), duals=self._context_duals(),
                            divergence=divergence, recent=recent,
                            laps={"divergence": round((t0 - began) * 1e3, 3), "search": round((t1 - t0) * 1e3, 3)})
        ctx = done.context
        t2 = time.perf_counter()
        if log and hits.query_id is not None and done.injected:
            try:
                self._usage.feedback(hits.query_id, done.injected, kind="inject", session_id=session_id)
            except ValueError:  # a purge took the search's log rows meanwhile: nothing to learn from
                pass
        found = surprises(done.hops, namespace=namespace, query=query,
                          waiting=self._curiosity_keys() if log and not self.read_only else ())
        queued = self._queue_curiosity(found) if log else 0
        ctx.stats["ms"]["curiosity"] = round((time.perf_counter() - t2) * 1e3, 3)
        ctx.stats["query_id"] = hits.query_id
        ctx.stats["curiosity"] = {"found": len(found), "queued": queued}
        return ctx

    def pack(self, namespace: str, *, max_tokens: int = 2000, tokenizer: str | Counter | None = None) -> Context:
        """The lite pack of a namespace (E8): its memories by ELO, highest first, HIGH in full,
        MEDIUM as a summary (the leading sentences), LOW as a pointer (its id and first words),
        VERY_LOW left out, while they fit `max_tokens`. `.items` is the manifest (id, elo and tier
        in the provenance, the form in `why`); `.stats` has the tokens saved against the same
        memories in full."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 50:
            raise ValueError(f"max_tokens must be an int >= 50, got {max_tokens!r}")
        count, tok_name = counter(tokenizer)
        now_us = time.time_ns() // 1_000
        ratings = self._usage.ratings
        view = self._view()
        mems = view.memories_at(view.current_locs(namespace))
        ranked = sorted(((ratings.elo_now(m.id, now_us), m) for m in mems), key=lambda x: (-x[0], x[1].id))
        items: list[ContextItem] = []
        used = full = 0
        for elo, m in ranked:
            t = tier(elo)
            if t == "VERY_LOW":
                continue
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
                                     "memories": len(items), "left_out": len(mems) - len(items),
                                     "tokens_in_full": full, "tokens_saved": max(0, full - used)})

    # ------------------------------------------------------------------------------ purge
    def _drain_spool(self) -> dict[str, int] | None:  # CaptureVerbs' (before this class in Store's bases)
        raise NotImplementedError

    def _purge_request(self, ids: str | Iterable[str], namespace: str | None) -> list[str]:
        """`purge`'s arguments checked (before anything is written), then everything waiting in the
        spool for this writer taken in (captures, readers' access rows), so the purge covers it."""
        if namespace is not None:
            checks.name("namespace", namespace)
        out = checks.id_list("ids", [ids] if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable) else ids)
        while (drained := self._drain_spool()) is not None and drained["files"]:
            pass
        return out

    def _purge_derived(self, view: View, ids: list[str], namespace: str | None) -> None:
        """What `Store.purge` does before the segments are rewritten, with the writer's lock and
        the topics' lock held: refuse an unknown id, then take the purged memories (`ids`, and
        every memory of `namespace`) out of everything derived from them: the access and ELO logs
        and the ratings (E1-E5; the searches that found nothing of a namespace purged whole, or
        whose every memory is purged, too), the curiosity queue (K7), topics, themes and their
        history (C4, H8), the tier state (H7), and the caches that held their text, ids or vectors
        (searches, type names, query vectors, list orders), and any damaged file the store set
        aside that holds them (storage/set_aside.py). A failure here raises with every memory as
        it was."""
        for mid in sorted(set(ids)):
            if view.key_of(mid) is None:
                raise StoreError(f"no memory with id {mid!r} to purge")
        gone = set(ids)
        if namespace is not None:
            gone |= {view.segments[si].ids[r] for si, r in view.current_locs(namespace, include_forgotten=True)}
        whole = {namespace} if namespace is not None else set()
        touched = set(whole)
        for mid in gone:
            loc = view.loc_of(mid)
            if loc is not None:
                touched.add(view.segments[loc[0]].namespace(loc[1]))
        # ids that are all a namespace holds purge it whole: its searches that found nothing name no
        # memory, and are its text all the same
        whole |= {ns for ns in touched - whole
                  if all(view.segments[si].ids[r] in gone for si, r in view.current_locs(ns, include_forgotten=True))}
        self._usage.purge(gone, whole)
        self._forget_curiosity(gone, whole)
        self._forget_topics(touched, gone, whole)
        self._forget_tiers(gone)
        if self.path is not None and not self.read_only:  # damaged files set aside may hold them too
            set_aside.scrub(self.path, gone, whole)
        self._search_cache = None
        self._types_cache = None
        vars(self).pop("_list_orders", None)  # CaptureVerbs' page orders (ids and locations)
        forget_queries()  # the query vectors embedded for searches (keyed by their text)

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
        found = self._topics_to_use(namespace)  # one run's labels and centroids, though a new run lands
        topic_of, centroids = self._topic_map(namespace, found)
        if not len(centroids):
            return asm.TopicMap()
        return asm.TopicMap([t.label for t in found], np.asarray(centroids, np.float64), topic_of)

    def _recent_turns(self, namespace: str, session_id: str) -> list[Memory]:
        """The session's newest turns, newest first."""
        view = self._view()
        return view.memories_at(view.session_locs(namespace, session_id)[::-1][:asm.RECENT_TURNS])


__all__ = ["ContextVerbs"]

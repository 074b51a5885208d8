"""`Store.context`: the context block an agent puts in its prompt before a turn (C6, K1-K3, K6, K7).

1. divergence: with a session, a note when the query is far from the session's recent work;
2. topic matches: the hits that sit in the query's nearest topic, under the topic's label;
3. related memories: the other hits, and what the navigator found from them;
4. recent context: the session's last turns not already in;
5. temporal badges: what time the facts are true at, and how many are past.
The handoff (K6): the default search's hits seed the subgraph (the links around them, within an
edge budget) -> the navigator (a walk over it within a step budget, context/navigator.py, whose
hops join the related memories) -> the curator (context/curator.py, sections 2 and 3 filled
together within their budgets plus what the sections before them left, context/sections.py).
Each stage's time and spend against its budget is in `stats["stages"]`; the dual variables that
price the budgets adapt over calls (context/handoff.py), one set per open store. Hops that
surprised the navigator are queued for background exploration (K7, store/curiosity_verbs.py).
Every fact carries its validity. The injected memories are logged to the access log (kind
"inject") under the search's query id, which is what ELO learns from when the agent gives no
feedback of its own.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import numpy as np

from ..context import navigator as nav
from ..context import sections as sec
from ..context.curator import Candidate, curate
from ..context.curiosity import surprises
from ..context.handoff import EDGE_BUDGET, LATENCY_MS, STEP_BUDGET, Duals, Spend, shrunk, token_bar, utility
from ..context.model import Context, ContextItem
from ..context.tokens import Counter, counter
from ..importance.elo import tier
from ..lifecycle.consolidation import leading_sentences
from ..model import checks
from ..model.errors import StoreError
from ..model.hit import Hit
from ..model.memory import Memory
from ..spaces.query import embed_query, forget_queries
from ..storage import set_aside
from ..storage.view import View
from .curiosity_verbs import CuriosityVerbs
from .navigation import importance_reader, links_reader, mass_reader, relevance_scorer, visibility

CANDIDATES = 50  # hits the curator chooses from (and the navigator walks from)
RECENT_TURNS = 20
TOPIC_SHARE = 0.5  # of the best hit's score a hit needs to be shown as a topic match
_duals_lock = threading.Lock()


class ContextVerbs(CuriosityVerbs):
    """Mixed into `Store`."""

    _duals: Duals | None = None

    def context(self, query: str, *, namespace: str, max_tokens: int = 2000, session_id: str | None = None,
                as_of: datetime | None = None, tokenizer: str | Counter | None = None, log: bool = True,
                navigate: bool = True, edge_budget: int = EDGE_BUDGET, step_budget: int = STEP_BUDGET,
                latency_ms: float = LATENCY_MS) -> Context:
        """The best memories for a prompt under `max_tokens` (C6): a `Context` with `.text` (the
        block, sections in priority order, each fact with its validity dates; never more than
        `max_tokens` by the tokenizer in use), `.items` (id, section, score, tokens, why, K3
        provenance, badge) and `.stats` (tokens used, budget, tokenizer, milliseconds per stage,
        and the handoff: `stages` with each stage's spend, budget and what it wanted, `prices`
        and `duals` (the budgets' dual variables before and after this call), `utility`, and
        `curiosity`: the surprising hops found and queued).
        `tokenizer`: "cl100k_base" (the default when bpe-openai is installed:
        `engramdb[tokens]`), "o200k_base", "estimate", or any callable text -> token count.
        `as_of`: the facts true then (superseded ones shown as such). `navigate`: walk the links
        from the hits (typed edges, neighbouring turns: K1) within `edge_budget` links read and
        `step_budget` hops; `latency_ms`: the time a context should take (a soft budget: its
        dual shrinks the walk's budgets when calls overrun it). `log=False` neither logs the
        search nor the injection, nor queues curiosity items."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 50:
            raise ValueError(f"max_tokens must be an int >= 50, got {max_tokens!r}")
        for name, v in (("edge_budget", edge_budget), ("step_budget", step_budget)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be an int >= 0, got {v!r}")
        if isinstance(latency_ms, bool) or not isinstance(latency_ms, (int, float)) or not latency_ms > 0:
            raise ValueError(f"latency_ms must be a number > 0, got {latency_ms!r}")
        count, tok_name = counter(tokenizer)
        began = t0 = time.perf_counter()
        laps: dict[str, float] = {}

        def lap(name: str) -> None:
            nonlocal t0
            now = time.perf_counter()
            laps[name] = round((now - t0) * 1e3, 3)
            t0 = now

        duals = self._context_duals()
        prices = duals.prices()
        budget = sec.budgets(max_tokens)
        usable = max_tokens - math.ceil(max_tokens * sec.MARGIN)
        items: list[ContextItem] = []

        def head(section: str, label: str = "") -> int:  # a section's heading line
            return count(sec.HEADINGS[section].format(label=label)) + 1

        # 1. divergence
        if session_id is not None:
            d = self.divergence(query, namespace=namespace, session_id=session_id)
            if d["divergent"]:
                note = (f"- This question is far from what this session has been about (nearest memory "
                        f"{d['nearest']}, similarity {d['similarity']:.2f}).")
                items.append(ContextItem(None, "divergence", note, 1.0, count(note) + 1, "divergence alert (C6)"))
        spent = sum(i.tokens for i in items) + (head("divergence") if items else 0)
        lap("divergence")
        # the candidates: the default search
        hits = self.search(query, namespace=namespace, k=CANDIDATES, as_of=as_of, session_id=session_id, log=log)
        lap("search")
        view = self._view()
        cands: dict[str, tuple[Memory, Candidate]] = {}
        badge_tokens: dict[str, int] = {}
        for h in hits:
            cands[h.id] = (h.memory, self._candidate(h.memory, _quote(h), h.score, as_of, count, badge_tokens))
        by_hit = {h.id: h for h in hits}
        lap("candidates")
        # the subgraph and the navigator (K1, K6)
        walk = nav.Walk([], 0, 0, "off", 0)
        stages: dict[str, dict[str, Any]] = {}
        spends: dict[str, Spend] = {}
        seeds = {h.id: h.score for h in hits if h.score > 0}  # a hit that matches nothing leads nowhere
        if navigate and seeds and edge_budget > 0 and step_budget > 0:
            # a hop must also be worth the tokens a line takes at the token budget's price
            bar = token_bar(prices["tokens"], float(np.mean([c.tokens for _, c in cands.values()])), max_tokens)
            walk = self._walk(query, namespace, as_of, seeds, shrunk(edge_budget, prices["latency"]),
                              shrunk(step_budget, prices["latency"]), prices, bar, lap, stages, spends)
            for hop in walk.hops:
                m = view.get(hop.id)
                if m is not None:
                    cands[hop.id] = (m, self._candidate(m, m.content, hop.match, as_of, count, badge_tokens))
        hops = {h.id: h for h in walk.hops}
        # 2-3. topic matches and related memories, curated together, in what the sections after
        # them leave: their shares, but only as much as they can fill
        label, in_topic = self._nearest_topic(namespace, query, {i: by_hit[i].score for i in by_hit})
        lap("topics")
        recent = [(m, sec.line(m, m.content, as_of)) for m in self._recent_turns(namespace, session_id)] \
            if session_id is not None else []
        recent_lines = [(m, text, count(text) + 1) for m, text in recent]
        need_recent = min(budget["recent"], head("recent") + sum(n for _, _, n in recent_lines)) if recent else 0
        need_badges = head("badges") + count(_badge_note(as_of, 0)) + 1
        room = curator_room = max(0, usable - spent - need_recent - need_badges - head("topics", label)
                                  - head("related"))
        pool = [Candidate(c.id, c.score, c.tokens, c.vector, c.group, c.bare_tokens,
                          "topics" if i in in_topic else "related") for i, (_, c) in cands.items()]
        picks = curate(pool, room, rooms={"topics": budget["topics"] + budget["divergence"] - spent},
                       floor=float(self.schema[self.schema.main].high))
        section_of = {c.id: c.section for c in pool}
        ratings = self._usage.ratings
        now_us = time.time_ns() // 1_000
        for p in picks:
            m = cands[p.id][0]
            s = section_of[p.id]
            hit, reached = by_hit.get(p.id), hops.get(p.id)
            why = _hop_why(reached) if reached is not None else f"in the topic '{label}'" if s == "topics" else "search"
            why += f": score {p.score:.2f}" + (f", redundancy {p.redundancy:.2f}" if p.redundancy > 0 else "")
            elo = hit.elo if hit is not None else ratings.elo_now(p.id, now_us)
            items.append(ContextItem(p.id, s, sec.line(m, _quote(hit) if hit is not None else m.content, as_of),
                                     round(p.score, 4), p.tokens, why, _provenance(m, elo), sec.badge(m, as_of)))
        curated = sum(p.tokens for p in picks)
        left = room - curated
        lap("related")
        # 4. recent context: its share (what it can fill) and what the curator left
        if recent_lines:
            room = need_recent - head("recent") + left
            taken = {i.id for i in items}
            for m, text, n in recent_lines:
                if m.id in taken:
                    continue
                if n > room:
                    break
                items.append(ContextItem(m.id, "recent", text, 0.0, n, "the session's latest turns",
                                         _provenance(m, None), sec.badge(m, as_of)))
                room -= n
            left = room
        lap("recent")
        # 5. temporal badges
        past = sum(1 for i in items if i.id is not None and ("superseded)" in i.badge or "ended)" in i.badge))
        note = _badge_note(as_of, past)
        if count(note) + 1 + head("badges") <= need_badges + left:
            items.append(ContextItem(None, "badges", note, 0.0, count(note) + 1, "temporal badges (C6)"))
        text, items = sec.fit(items, {"topics": label}, count, max_tokens)
        lap("render")
        injected = [i.id for i in items if i.id is not None and i.section != "recent"]
        if log and hits.query_id is not None and injected:
            self._usage.feedback(hits.query_id, injected, kind="inject", session_id=session_id)
        found = surprises(walk.hops, namespace=namespace, query=query,
                          waiting=self._curiosity_keys() if log and not self.read_only else ())
        queued = self._queue_curiosity(found) if log else 0
        lap("curiosity")
        # the handoff's account: each budget's spend, the utility at this call's prices, the new prices
        tokens = count(text)
        took = round((time.perf_counter() - began) * 1e3, 3)
        wanted = sum(c.tokens for c in pool if c.score > token_bar(prices["tokens"], c.tokens, max_tokens))
        stages = {name: {"ms": laps[name], **stage} for name, stage in stages.items()}
        stages["curator"] = {"ms": laps["related"], "tokens": curated, "budget": curator_room, "wanted": wanted,
                             "picked": len(picks)}
        spends["tokens"] = Spend(tokens, tokens - curated + wanted, max_tokens)
        spends["latency"] = Spend(took, took, float(latency_ms))
        reward = sum(i.score for i in items if i.id is not None and i.section != "recent")
        stats = {"tokens": tokens, "budget": max_tokens, "tokenizer": tok_name, "items": len(items),
                 "candidates": len(hits), "ms": laps, "query_id": hits.query_id,
                 "sections": {s: sum(1 for i in items if i.section == s) for s in sec.SECTIONS},
                 "stages": stages, "latency": {"ms": took, "budget": float(latency_ms)},
                 "prices": prices, "utility": utility(reward, spends, prices), "duals": duals.update(spends),
                 "curiosity": {"found": len(found), "queued": queued}}
        return Context(text, items, stats)

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

    def _walk(self, query: str, namespace: str, as_of: datetime | None, seeds: dict[str, float], edge_budget: int,
              step_budget: int, prices: dict[str, float], bar: float, lap: Callable[[str], None],
              stages: dict[str, dict[str, Any]], spends: dict[str, Spend]) -> nav.Walk:
        """The subgraph around the seeds, then the navigator's walk over it (K1, K6's first two
        stages), each stage's spend added to `stages` and `spends`."""
        view = self._view()
        links_of = links_reader(view, self._indexes, namespace, as_of, visibility(view, namespace, as_of))
        graph = nav.subgraph(seeds, links_of, edge_budget, price=prices["edges"])
        lap("subgraph")
        walk = nav.navigate(seeds, graph, step_budget, price=prices["steps"], raise_bar=bar,
                            relevance=relevance_scorer(view, self._indexes, self.embedders, self.schema, namespace,
                                                       query),
                            importance=importance_reader(self._usage.ratings),
                            mass=mass_reader(view, self._indexes, self.embedders, self.schema, namespace))
        lap("navigator")
        stages["subgraph"] = {"edges": graph.edges, "budget": edge_budget, "wanted": graph.wanted,
                              "nodes": len(graph.links)}
        stages["navigator"] = {"steps": walk.steps, "budget": step_budget, "wanted": walk.wanted,
                               "hops": len(walk.hops), "scored": walk.scored, "stopped": walk.stopped}
        spends["edges"] = Spend(graph.edges, graph.wanted, edge_budget)
        spends["steps"] = Spend(walk.steps, walk.wanted, step_budget)
        return walk

    def _candidate(self, m: Memory, text: str, score: float, as_of: datetime | None, count: Counter,
                   badge_tokens: dict[str, int]) -> Candidate:
        """A memory as the curator weighs it: its line's tokens with its badge and without (a badge's
        tokens counted once a call: a tokenizer that splits at spaces counts the two parts apart), its
        unit main-space vector."""
        view = self._view()
        loc = view.loc_of(m.id)
        raw = view.segments[loc[0]].vectors(self.schema, self.schema.main) if loc is not None else None
        v = np.asarray(np.asarray(raw)[loc[1]] if loc is not None else view.row_vector(m.id, self.schema.main),
                       np.float64).reshape(-1)
        v = v / max(float(np.linalg.norm(v)), 1e-12)
        b = sec.badge(m, as_of)
        if b not in badge_tokens:
            badge_tokens[b] = count(" " + b)
        bare = count(sec.body(text))
        return Candidate(m.id, score, bare + badge_tokens[b] + 1, v, b, bare + 1)  # + its line break

    def _nearest_topic(self, namespace: str, query: str, scores: dict[str, float]) -> tuple[str, set[str]]:
        """The label of the query's nearest topic and the hits (id -> score) in it (none without topics)."""
        topic_of, centroids = self._topic_map(namespace)
        if not len(centroids) or not scores:
            return "", set()
        main = self.schema[self.schema.main]
        if main.name not in self.embedders:
            return "", set()
        q = np.asarray(embed_query(main, self.embedders, query), np.float64).reshape(-1)  # cached (K5)
        best = int(np.argmax(np.asarray(centroids) @ q))
        label = self._topics_to_use(namespace)[best].label
        top = max(scores.values())
        # a topic match is a hit of the nearest topic that is also a good hit (half the best at least)
        return label, {i for i, s in scores.items() if topic_of.get(i) == best and s >= TOPIC_SHARE * top}

    def _recent_turns(self, namespace: str, session_id: str) -> list[Memory]:
        """The session's newest turns, newest first."""
        view = self._view()
        mine = view.memories_at(view.current_locs(namespace, session_id=session_id))  # the session's rows only
        mine.sort(key=lambda m: (m.seq if m.seq is not None else -1, m.learned_at or 0), reverse=True)
        return mine[:RECENT_TURNS]


def _quote(h: Hit) -> str:
    """A hit's text in a context: the passage that matched for a long memory (C7), else all of it."""
    if h.passage is not None:
        a, b = h.passage
        return "..." + h.memory.content[a:b] + "..."
    return h.memory.content


def _badge_note(as_of: datetime | None, past: int) -> str:
    """C6's temporal badges: what time the facts hold at, and how many of them no longer do."""
    when = as_of.date().isoformat() if as_of is not None else "now"
    return f"- Facts as of {when}; {past} of them no longer hold (marked ended or superseded)."


def _hop_why(hop: nav.Hop) -> str:
    """Why a hop is in: the link it came over, from where, and its two scores."""
    walk = f" (a walk from {hop.seed})" if hop.parent != hop.seed else ""
    return (f"navigator: via {hop.via} from {hop.parent}{walk}, relevance {hop.relevance:.2f}, "
            f"expected {hop.expected:.2f}")


def _provenance(m: Memory, elo: float | None) -> dict[str, Any]:
    """K3: where a memory came from and how far to trust it."""
    p = dict(m.provenance)
    return {"source": m.source, "uri": p.get("uri") or m.metadata.get("uri"),
            "extracted_at": m.learned_at.isoformat() if m.learned_at else None,
            "extractor": p.get("extractor", "add"), "snippet": m.content[:200],
            "verified": bool(p.get("verified", False)), "corroboration": int(p.get("corroboration", 0)),
            "trust": {"confidence": m.confidence, "elo": round(elo, 1) if elo is not None else None,
                      "tier": tier(elo) if elo is not None else None, "version": m.version}}


__all__ = ["ContextVerbs"]

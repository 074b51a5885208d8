"""The 14 MCP tools of SPEC C8, and restore_memories (forget_concept's undo), over one served store, and the MCP server that carries them.

`MemoryTools` holds the tools: each is a typed method whose parameters (names as in the design note's
table, seed 003 section 8: `topK`, `causalDirection`, `blendWithSemantic`, `dryRun`, ...) carry
their descriptions, and whose result is a JSON-able dict. `build_server` registers them on an
`mcp.server.MCPServer` (SDK 2.x): every call runs under one lock (a tool may swap the store's handle,
see mcp_server.py, and the topic caches belong to the handle), and the errors engramdb raises on
purpose (bad arguments, unknown ids or topics, a read-only store, a missing extra) come back as tool
results with `isError` carrying engramdb's message. Arguments are checked before a tool runs: one
the tool does not take (`top_k` for `topK`) is refused by name with the tool's own list, and a
wrong type or range is pydantic's error naming the parameter (strict: "2" is not an integer).
Anything else is a crash the SDK logs to stderr; the server goes on serving.

Importing this module needs the MCP SDK (`engramdb[mcp]`); mcp_server.py checks that first.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from .._version import __version__
from ..model import Edge, FormatError, Hit, Memory, StoreError, StoreLocked, checks, from_micros
from ..store import Store

MAX_TOP_K = 1000  # a tool result goes into an agent's context window: more is never what it wants
SAMPLE_MEMBERS = 3  # memories shown per topic in the portfolio
MAX_DECISIONS = 100  # consolidation decisions listed (every one is counted)
SNIPPET = 200  # characters of a linked memory shown beside an edge
SOURCE, EXTRACTOR = "mcp", "engramdb-mcp:store_memory"  # what store_memory writes into source / provenance
# Causal edge types (UPPER_SNAKE_CASE, free-form: these are the names the built-in inferrer and the
# usual LLM prompts use). "X -[CAUSED_BY]-> Y": Y is a cause of X; "X -[CAUSES]-> Y": Y is an effect of X.
CAUSED_BY_TYPES = frozenset({"CAUSED_BY", "DUE_TO", "RESULT_OF", "BECAUSE_OF", "TRIGGERED_BY"})
CAUSES_TYPES = frozenset({"CAUSES", "LEADS_TO", "LED_TO", "RESULTS_IN", "TRIGGERS", "ENABLES", "PREVENTS"})

def Arg(**kwargs: Any) -> Any:
    """A tool parameter: pydantic's `Field`, strict (a JSON number is not text, "2" or 2.0 is not an
    integer, 1 is not a boolean): a wrong type is the client's mistake to see, not to have guessed.
    (A Literal's choices are matched exactly as they are: those use `Field`.)"""
    return Field(strict=True, **kwargs)


Query = Annotated[str, Arg(min_length=1, description="What to look for, in natural language.")]
TopK = Annotated[int, Arg(ge=1, le=MAX_TOP_K, description=f"How many memories to return (1-{MAX_TOP_K}).")]
Namespace = Annotated[str | None, Arg(description="The namespace (a hard partition: tenant, user or agent) to "
                                                    "use; default: the server's --namespace.")]
DryRun = Annotated[bool, Arg(description="Only report what would change, with why (the default); false to "
                                          "do it.")]
TopicId = Annotated[str, Arg(min_length=1, description="A topic id from get_topic_portfolio, e.g. 'default/t3' "
                                                         "(or 't3' in the namespace).")]
Now = Annotated[str | None, Arg(description=(
    "When the question is asked (ISO-8601 with its UTC offset): the dates it names relative to its asking "
    "('yesterday', 'last week', 'in June') are read against it; default: asOf, else the clock."))]
AsOf = Annotated[str | None, Arg(description=(
    "Answer as the memories stood then (ISO-8601 with its UTC offset): facts valid at that time; default: now."))]
Strategy = Literal["hybrid", "dense_only", "exact", "tree", "hnsw", "bm25", "rrf", "multi_space", "pipeline"]
Result = dict[str, Any]


def jsonable(x: Any) -> Any:
    """`x` with datetimes as ISO strings, tuples as lists and numpy scalars as Python numbers."""
    if x is None or isinstance(x, (str, bool, int, float)):
        return x
    if isinstance(x, datetime):
        return x.isoformat()
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in x]
    item = getattr(x, "item", None)  # numpy scalars
    return jsonable(item()) if callable(item) else str(x)


def parse_time(name: str, value: str | None) -> datetime | None:
    """A tool's time argument: an ISO-8601 string with its UTC offset ("Z" or "+02:00"), or None."""
    return None if value is None else checks.iso_time(name, value)


def memory_json(m: Memory) -> Result:
    """The fields of a memory an agent reads (vectors and bookkeeping left out)."""
    out = {"id": m.id, "content": m.content, "memory_type": m.memory_type, "session_id": m.session_id,
           "seq": m.seq, "role": m.role, "source": m.source, "confidence": m.confidence, "metadata": m.metadata,
           "valid_from": m.valid_from, "valid_until": m.valid_until, "learned_at": m.learned_at,
           "version": m.version}
    if m.superseded_by is not None:
        out["superseded_by"] = m.superseded_by
    return out


def hit_json(h: Hit) -> Result:
    """A search hit: its memory's fields, its own [0, 1] score, ELO importance, tier, matching
    passage, and `via`: the id of the hit it is context of (a neighbouring turn, an edge hop), or None."""
    return {**memory_json(h.memory), "score": round(float(h.score), 4), "elo": h.elo, "tier": h.tier,
            "archived": h.archived, "passage": h.passage, "via": h.via}


class MemoryTools:
    """The tools over the store `store()` returns now; `remember(record)` stores one new memory
    (through the writer, or `engramdb.capture` when another process holds the writer's lock) and
    says how; `namespace` is the default of every tool's `namespace`."""

    def __init__(self, store: Callable[[], Store], remember: Callable[[Result], Result], namespace: str) -> None:
        self._store, self._remember, self.namespace = store, remember, namespace

    def _ns(self, namespace: str | None) -> str:
        return self.namespace if namespace is None else namespace

    def _topic_id(self, topic: str, ns: str) -> str:
        """'t3' -> '<ns>/t3'; a full id stays as it is, and must be one of `ns`'s topics (a tool
        called for one namespace never reaches another's)."""
        if topic[:1] == "t" and topic[1:].isdigit():
            return f"{ns}/{topic}"
        owner, sep, number = topic.rpartition("/t")
        if sep and number.isdigit() and owner != ns:
            raise ValueError(f"topic {topic!r} is a topic of namespace {owner!r}, not of {ns!r}: a tool called for "
                             f"one namespace never reaches another's")
        return topic

    def _linked(self, db: Store, e: Edge, other: str, way: str) -> Result:
        m = db.get(other)
        return {"id": other, "type": e.type, "direction": way, "confidence": e.confidence, "reason": e.reason,
                "valid_from": e.valid_from, "valid_until": e.valid_until,
                "content": m.content[:SNIPPET] if m is not None else None}

    @staticmethod
    def _route(hits: list[Hit]) -> Result:
        """What the intent routing did (C2), from the first hit's explain."""
        ex = hits[0].explain if hits and hits[0].explain else {}
        return {"rules": ex.get("rules", []), "weights": ex.get("weights", {}), "enhancer_mode": ex.get("enhancer_mode")}

    # ------------------------------------------------------------------------------------- search
    def search_graph(self, query: Query, strategy: Annotated[Strategy, Field(description=(
            "hybrid (default): BM25 and the main dense space on one [0, 1] scale, then neighbouring turns and "
            "typed-edge hops; dense_only/exact/tree/hnsw: the dense space alone; bm25; rrf: rank fusion; "
            "multi_space: rrf plus intent-routed enhancer spaces; pipeline: sparse -> dense -> RRF -> MaxSim"))]
            = "hybrid", topK: TopK = 10, namespace: Namespace = None, now: Now = None, asOf: AsOf = None) -> Result:
        """Search the memories of a namespace (multi-space graph search). Returns the best `topK`
        memories, best first, each with its own score in [0, 1] (about 0.2 a weak match, 0.5 a good
        one), `via` (the id of the hit a neighbouring turn or linked memory came with, else null),
        validity times, ELO importance and tier; `query_id` names the logged search. A question that
        names a date ("what did I do last week?") ranks what was said then first: give `now`."""
        ns = self._ns(namespace)
        hits = self._store().search(query, namespace=ns, k=topK, strategy=strategy, now=parse_time("now", now),
                                    as_of=parse_time("asOf", asOf))
        return {"namespace": ns, "strategy": hits.stats.strategy, "query_id": hits.query_id,
                "hits": [hit_json(h) for h in hits], "failed_methods": hits.stats.failed,
                "ms": round(hits.stats.seconds * 1e3, 3)}

    def search_causes(self, query: Query, causalDirection: Annotated[Literal["both", "causes", "effects"], Field(
            description="causes: what led to the memories found; effects: what they led to; both.")] = "both",
            topK: TopK = 10, namespace: Namespace = None) -> Result:
        """Causal questions ("why did X happen?", "what did X lead to?"). The causal route: the
        intent-routed multi_space search (a causal question weighs the typed-edge graph up), then,
        for each hit, its causal edges in the direction asked: a cause is the far end of a
        CAUSED_BY-like edge from the hit or of a CAUSES-like edge into it, an effect the reverse
        (types: CAUSED_BY, DUE_TO, RESULT_OF, BECAUSE_OF, TRIGGERED_BY; CAUSES, LEADS_TO, LED_TO,
        RESULTS_IN, TRIGGERS, ENABLES, PREVENTS). `route` shows the routing rules that fired."""
        ns = self._ns(namespace)
        db = self._store()
        hits = db.search(query, namespace=ns, k=topK, strategy="multi_space", explain=True)
        out, found = [], 0
        for h in hits:
            causes: list[Result] = []
            effects: list[Result] = []
            for e in db.edges(h.id, direction="both"):
                outgoing = e.src == h.id
                other = e.dst if outgoing else e.src
                if e.type in CAUSED_BY_TYPES:
                    (causes if outgoing else effects).append(self._linked(db, e, other, "out" if outgoing else "in"))
                elif e.type in CAUSES_TYPES:
                    (effects if outgoing else causes).append(self._linked(db, e, other, "out" if outgoing else "in"))
            row = hit_json(h)
            if causalDirection in ("both", "causes"):
                row["causes"] = causes
                found += len(causes)
            if causalDirection in ("both", "effects"):
                row["effects"] = effects
                found += len(effects)
            out.append(row)
        return {"namespace": ns, "causalDirection": causalDirection, "route": self._route(hits),
                "causal_edges": found, "hits": out, "query_id": hits.query_id}

    def search_connections(self, query: Query, direction: Annotated[Literal["out", "in", "both"], Field(
            description="out: edges from each hit; in: edges into it; both.")] = "both",
            topK: TopK = 10, namespace: Namespace = None) -> Result:
        """Graph questions: the memories that match a query (default search) with their typed edges
        (SUPERSEDES, CAUSED_BY, RELATED_TO, ...) in the direction asked, each edge with its type,
        confidence, reason, validity and the linked memory's text."""
        ns = self._ns(namespace)
        db = self._store()
        hits = db.search(query, namespace=ns, k=topK)
        out = []
        for h in hits:
            edges = db.edges(h.id, direction=direction)
            out.append({**hit_json(h), "edges": [self._linked(db, e, e.dst if e.src == h.id else e.src,
                                                              "out" if e.src == h.id else "in") for e in edges]})
        return {"namespace": ns, "direction": direction, "hits": out, "edges": sum(len(r["edges"]) for r in out),
                "query_id": hits.query_id}

    def search_by_intent(self, query: Query, blendWithSemantic: Annotated[float, Arg(
            ge=0.0, le=1.0, description="Weight of plain semantic similarity in the blend (0: intent-routed "
                                        "only, 1: semantic only).")] = 0.5,
            topK: TopK = 10, namespace: Namespace = None) -> Result:
        """Intent queries. Two searches of 2 x topK each: the intent-routed one ("multi_space": quoted
        or code-like words and names weigh BM25 up, "why" questions the graph, enhancer spaces rerank
        or add candidates by the main space's match) and the plain dense one ("dense_only"). Each
        memory scores (1 - blendWithSemantic) x its intent score + blendWithSemantic x its semantic
        score (both on the [0, 1] scale; 0 where a search missed it); the best topK are returned with
        both parts and the routing rules that fired."""
        ns = self._ns(namespace)
        db = self._store()
        w = float(blendWithSemantic)
        intent = db.search(query, namespace=ns, k=2 * topK, strategy="multi_space", explain=True)
        dense = db.search(query, namespace=ns, k=2 * topK, strategy="dense_only", log=False)
        parts: dict[str, tuple[Hit, float, float]] = {h.id: (h, float(h.score), 0.0) for h in intent}
        for h in dense:
            first, s_intent, _ = parts.get(h.id, (h, 0.0, 0.0))
            parts[h.id] = (first, s_intent, float(h.score))
        ranked = sorted(parts.values(), key=lambda p: (-((1 - w) * p[1] + w * p[2]), p[0].id))[:topK]
        return {"namespace": ns, "blendWithSemantic": w, "route": self._route(intent), "query_id": intent.query_id,
                "hits": [{**hit_json(h), "score": round((1 - w) * a + w * b, 4), "intent_score": round(a, 4),
                          "semantic_score": round(b, 4)} for h, a, b in ranked]}

    # ------------------------------------------------------------------------------------- writes
    def store_memory(self, content: Annotated[str, Arg(min_length=1, description="The text to remember.")],
                     importance: Annotated[float | None, Arg(ge=0.0, le=1.0, description=(
                         "How much it matters (0-1): stored as the memory's confidence, which consolidation "
                         "weighs (a higher one is kept longer), and in metadata.importance."))] = None,
                     rationale: Annotated[str | None, Arg(description=(
                         "Why it is worth remembering; kept in the memory's provenance."))] = None,
                     memoryType: Annotated[str | None, Arg(min_length=1, max_length=100, description=(
                         "Free-form type, e.g. fact, preference, decision."))] = None,
                     sessionId: Annotated[str | None, Arg(description="The conversation or session it belongs "
                                                                        "to.")] = None,
                     role: Annotated[str | None, Arg(min_length=1, max_length=100, description=(
                         "Who said it in the conversation: user, assistant, tool, ..."))] = None,
                     validFrom: Annotated[str | None, Arg(description=(
                         "Since when it holds (ISO-8601 with its UTC offset), e.g. the day it was said; "
                         "default: now."))] = None,
                     namespace: Namespace = None) -> Result:
        """Store one memory (embedded in every space of the store's schema and indexed). Returns its
        id and how it was stored: "written" by this server, or "captured" when another process holds
        the store's writer lock (then it is spooled, or written if the lock came free, and the next
        writer to open the store ingests the spool exactly once)."""
        ns = self._ns(namespace)
        record: Result = {"content": content, "namespace": ns, "session_id": sessionId, "memory_type": memoryType,
                          "source": SOURCE, "provenance": {"extractor": EXTRACTOR}}
        if rationale is not None:
            record["provenance"]["rationale"] = rationale
        if role is not None:
            record["role"] = role
        if validFrom is not None:
            record["valid_from"] = parse_time("validFrom", validFrom)
        if importance is not None:
            record["confidence"] = float(importance)
            record["metadata"] = {"importance": float(importance)}
        return {"namespace": ns, **self._remember(record)}

    def inject_context(self, query: Query, max_tokens: Annotated[int, Arg(
            ge=50, description="Token budget of the context block (at least 50).")] = 2000,
            sessionId: Annotated[str | None, Arg(description=(
                "The current session: adds a divergence alert and its latest turns."))] = None,
            namespace: Namespace = None, now: Now = None, asOf: AsOf = None) -> Result:
        """The context block to put before the agent's next turn: the best memories for the query
        under a token budget, in sections (divergence alert, topic matches, related memories, the
        session's recent turns, temporal badges), each fact with its validity dates. Returns `text`,
        `items` (id, section, tokens, why, score) and `stats` (tokens, budget, tokenizer, ms per
        stage). The injected memories count as used for ELO importance."""
        ns = self._ns(namespace)
        ctx = self._store().context(query, namespace=ns, max_tokens=max_tokens, session_id=sessionId,
                                    now=parse_time("now", now), as_of=parse_time("asOf", asOf))
        return {"namespace": ns, "text": ctx.text, "stats": ctx.stats,
                "items": [{"id": i.id, "section": i.section, "tokens": i.tokens, "why": i.why, "score": i.score}
                          for i in ctx.items]}

    # ------------------------------------------------------------------------------------- topics
    def _topics(self, ns: str, *, refresh: bool = False) -> Result:
        db = self._store()
        t0 = time.perf_counter()
        found = db.topics(ns, refresh=refresh)
        seconds = time.perf_counter() - t0
        topics = []
        for t in found:
            sample = [m for m in (db.get(i) for i in t.members[:SAMPLE_MEMBERS]) if m is not None]
            topics.append({"id": t.id, "label": t.label, "members": t.size, "confidence": t.confidence,
                           "phase": t.phase, "stability": t.stability, "centroid_stability": t.centroid_stability,
                           "runs": t.runs, "since": from_micros(int(t.created_us)),
                           "sample": [{"id": m.id, "content": m.content[:SNIPPET]} for m in sample]})
        return {"namespace": ns, "topics": topics, "churn": found.churn, "entropy": found.entropy,
                "consolidation_due": found.consolidation_due, "sampled": found.sampled,
                "seconds": round(seconds, 3)}

    def get_topic_portfolio(self, namespace: Namespace = None) -> Result:
        """The emergent topics of a namespace (C4: groups of memories that at least two of the
        store's spaces cluster together), biggest first: id, label (its most distinctive terms),
        member count, confidence (agreement over the most possible), phase (emerging, stable,
        declining, merging), stability and a few sample memories. Computed when the namespace
        changed."""
        return self._topics(self._ns(namespace))

    def get_topic_stability(self, namespace: Namespace = None) -> Result:
        """How settled a namespace's topics are since the previous run: churn (share of members that
        left their topic), entropy (evenness of topic sizes, 0-1), whether consolidation is due
        (SPEC C4: entropy > 0.7 and churn > 0.5), topics per phase, and each topic's membership and
        centroid stability."""
        found = self._topics(self._ns(namespace))
        phases: dict[str, int] = {}
        for t in found["topics"]:
            phases[t["phase"]] = phases.get(t["phase"], 0) + 1
        return {k: found[k] for k in ("namespace", "churn", "entropy", "consolidation_due", "sampled")} | {
            "topics": len(found["topics"]), "phases": phases,
            "per_topic": [{k: t[k] for k in ("id", "label", "phase", "stability", "centroid_stability", "runs")}
                          for t in found["topics"]]}

    def detect_topics(self, namespace: Namespace = None) -> Result:
        """Force a fresh clustering of a namespace's topics now (per-space HDBSCAN and their
        agreement), rather than the incremental update; returns the new portfolio and its seconds."""
        return self._topics(self._ns(namespace), refresh=True)

    def get_divergence_alerts(self, query: Query, sessionId: Annotated[str, Arg(
            min_length=1, description="The session whose recent memories the query is compared with.")],
            namespace: Namespace = None) -> Result:
        """Whether a query has drifted from what a session has been about: its similarity to the
        session's 20 newest memories in the main space, and an alert when even the nearest is under
        the space's low threshold."""
        ns = self._ns(namespace)
        db = self._store()
        d = db.topics.divergence(query, namespace=ns, session_id=sessionId)
        near = db.get(d["nearest"]) if d["nearest"] is not None else None
        alert = (f"The query is far from this session's recent work (nearest memory {d['nearest']}, similarity "
                 f"{d['similarity']:.2f} under {d['low']:.2f}).") if d["divergent"] else None
        return {"namespace": ns, "session_id": sessionId, **d, "alert": alert,
                "nearest_content": near.content[:SNIPPET] if near is not None else None}

    # ------------------------------------------------------------------------------------- upkeep
    def trigger_consolidation(self, dryRun: DryRun = True, namespace: Namespace = None) -> Result:
        """Consolidate a namespace (H7, E7): apply the access log to the ELO ratings, then promote
        short-term memories to long-term, compress LOW ones unused for 14 days to a summary and
        archive VERY_LOW ones unused for 30 days or of low priority; no current memory is deleted, a
        memory a recent question still reaches is kept, and memories a person forgot more than 30
        days ago are purged for good (listed in `purged`; those the engine forgot on its own and no
        one confirmed are kept, listed in `held`). A dry run unless dryRun is false. Returns the
        counts, what was applied and the decisions other than keep, each with its reason."""
        ns = self._ns(namespace)
        r = self._store().lifecycle.consolidate(namespace=ns, dry_run=dryRun)
        changes = [d for d in r.decisions if d.action != "keep"]
        return {"namespace": ns, "dry_run": r.dry_run, "summary": r.summary(), "counts": r.counts(),
                "applied": r.applied, "topics_due": r.topics_due, "seconds": round(r.seconds, 3),
                "purged": r.purged, "held": r.held,
                "decisions": [{"id": d.id, "action": d.action, "reason": d.reason, "priority": d.priority,
                               "elo": d.elo, "tier_before": d.tier_before, "tier_after": d.tier_after}
                              for d in changes[:MAX_DECISIONS]], "decisions_listed": min(len(changes), MAX_DECISIONS)}

    def trigger_dream(self, dryRun: DryRun = True, namespace: Namespace = None) -> Result:
        """An offline pass over a namespace (C9). Replay: re-cluster its topics, consolidate it, and
        forget the newer of two memories that are exact copies (their own text word for word, both
        still in force, the newer stored in the last 7 days outside any session). Exploration: link
        similar memories of different topics with RELATED_TO edges of confidence 0.3 (hypotheses
        that searches walk only when asked). A dry run unless dryRun is false: `forgotten` lists
        each copy with its reason. Applied, the dream's forgets are restorable with
        restore_memories and are never purged until a person confirms them. Returns what it did."""
        return self._store().lifecycle.dream(self._ns(namespace), dry_run=dryRun)

    def merge_concepts(self, keep: TopicId, merge: Annotated[str, Arg(
            min_length=1, description="The topic to fold into `keep` (same namespace).")],
            namespace: Namespace = None) -> Result:
        """Merge two topics of a namespace: `merge`'s members join `keep` now, and later runs keep
        folding the topic that takes `merge`'s id into `keep`. Returns the merged topic."""
        ns = self._ns(namespace)
        keep_id, merge_id = self._topic_id(keep, ns), self._topic_id(merge, ns)
        t = self._store().topics.merge(keep_id, merge_id)
        return {"namespace": ns, "merged": merge_id, "topic": {
            "id": t.id, "label": t.label, "members": t.size, "confidence": t.confidence, "phase": t.phase,
            "member_ids": list(t.members)}}

    def forget_concept(self, concept: Annotated[str, Arg(min_length=1, description=(
            "A topic id ('default/t3' or 't3') to forget all its members, or text: the memories whose "
            "own text a search for it matches well (score >= 0.5; a turn that is only next to a match "
            "is not taken)."))], dryRun: DryRun = True,
            namespace: Namespace = None) -> Result:
        """Forget every memory of a concept: soft, nothing is deleted, the memories are hidden from
        search and context and restore_memories brings them back for 30 days (then consolidation
        purges them). A dry run unless dryRun is false: look at what it would forget first.
        Returns the ids forgotten (or that would be), each with the reason it was chosen."""
        ns = self._ns(namespace)
        got = self._store().lifecycle.forget_concept(self._topic_id(concept, ns), namespace=ns, dry_run=dryRun)
        return {"namespace": ns, "dry_run": dryRun, "forgotten": list(got), "count": len(got),
                "reasons": got.reasons}

    def restore_memories(self, ids: Annotated[list[str], Arg(min_length=1, max_length=1000, description=(
            "Ids of forgotten memories (forget_concept's `forgotten`) to bring back."))],
            namespace: Namespace = None) -> Result:
        """Undo forget_concept or a dream's forget for these memories (a person's forget can be
        undone within 30 days of it, the dream's until someone confirms it): each is searchable
        and in context again. A memory of another namespace or unknown id is refused
        by name, and nothing is restored. Returns the ids restored."""
        ns = self._ns(namespace)
        db = self._store()
        _held_in(db, ids, ns, why=" (purged, or never stored)")
        restored = [db.restore(mid).id for mid in ids]
        return {"namespace": ns, "restored": restored, "count": len(restored)}

    def give_feedback(self, queryId: Annotated[str, Arg(min_length=1, description=(
            "The query_id a search_* tool or inject_context (stats.query_id) returned."))],
            usedIds: Annotated[list[str], Arg(max_length=1000, description=(
                "Ids of the memories the answer used; [] says none was."))],
            sessionId: Annotated[str | None, Arg(description="The session the answer belongs to.")] = None,
            namespace: Namespace = None) -> Result:
        """Say which memories of a search or context the answer used: the used ones win, the ones
        shown and not used lose, and their importance (ELO) follows at once. Without feedback an
        injected context counts as used whole. Ids must be memories of the namespace searched.
        Returns how many ids were recorded."""
        ns = self._ns(namespace)
        db = self._store()
        _held_in(db, usedIds, ns)
        recorded = db.feedback(queryId, usedIds, session_id=sessionId)
        return {"namespace": ns, "query_id": queryId, "recorded": recorded}

    def forget_memories(self, ids: Annotated[list[str], Arg(min_length=1, max_length=1000, description=(
            "Ids of memories to forget (hidden from search and context, restorable for 30 days)."))],
            namespace: Namespace = None) -> Result:
        """Forget these memories (a soft delete: hidden from every search and context,
        restore_memories brings them back within 30 days; a purge for privacy requests is an
        operator's verb, `Store.purge`). A memory of another
        namespace or an unknown id is refused by name, and nothing is forgotten. Returns the ids."""
        ns = self._ns(namespace)
        db = self._store()
        _held_in(db, ids, ns, current=True)
        forgotten = [db.forget(mid).id for mid in ids]
        return {"namespace": ns, "forgotten": forgotten, "count": len(forgotten)}

    TOOLS = ("search_graph", "search_causes", "search_connections", "search_by_intent", "store_memory",
             "inject_context", "get_topic_portfolio", "get_topic_stability", "detect_topics",
             "get_divergence_alerts", "trigger_consolidation", "trigger_dream", "merge_concepts", "forget_concept",
             "restore_memories", "give_feedback", "forget_memories")
    READ_ONLY = frozenset({"search_graph", "search_causes", "search_connections", "search_by_intent",
                           "inject_context", "get_topic_portfolio", "get_topic_stability", "get_divergence_alerts"})
    DESTRUCTIVE = frozenset({"trigger_consolidation", "trigger_dream", "merge_concepts", "forget_concept"})


def _held_in(db: Store, ids: list[str], ns: str, *, current: bool = False, why: str = "") -> None:
    """Refuse, before anything is written, an id that is not a memory of namespace `ns` (with
    `current`, not a current one: a forgotten memory is refused too), naming it."""
    for mid in ids:
        m = db.get(mid, include_forgotten=not current)
        if m is None or m.namespace != ns:
            raise LookupError(f"no {'current ' if current else ''}memory with id {mid!r} in namespace {ns!r}{why}")


# engramdb's errors on purpose: their messages name the argument, id or file at fault
EXPECTED = (ValueError, LookupError, TypeError, StoreError, StoreLocked, FormatError, PermissionError, ImportError,
            OSError)


def _guarded(fn: Callable[..., Result], lock: threading.Lock) -> Callable[..., Result]:
    """`fn` run under `lock`, its result made JSON-able, engramdb's errors turned into tool errors."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Result:
        with lock:
            try:
                out: Result = jsonable(fn(*args, **kwargs))
                return out
            except KeyError as exc:  # str() of a KeyError is its repr: quote the message itself
                raise ToolError(f"KeyError: {exc.args[0] if exc.args else exc}") from exc
            except EXPECTED as exc:
                raise ToolError(f"{type(exc).__name__}: {exc}") from exc
    return call


class _Server(MCPServer[Any]):
    """The SDK's server, refusing a call that names an argument its tool does not take (the SDK
    would drop it unseen: `top_k` for `topK` would search with the default)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parameters: dict[str, tuple[str, ...]] = {}  # tool -> the arguments it takes

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        known = self.parameters.get(name)
        if known is not None:
            unknown = [k for k in arguments if k not in known]
            if unknown:
                near = {k: difflib.get_close_matches(k, known, n=1, cutoff=0.6) for k in unknown}
                hints = "".join(f" ({k!r}: did you mean {m[0]!r}?)" for k, m in near.items() if m)
                raise ToolError(f"{name} takes no argument {', '.join(map(repr, unknown))}{hints}; its arguments "
                                f"are {', '.join(known)}")
        return await super().call_tool(name, arguments, context)


def build_server(tools: MemoryTools, *, lock: threading.Lock | None = None, lifespan: Any = None) -> MCPServer[Any]:
    """An MCP server with the tools of `tools` (MemoryTools.TOOLS) (stdio: `server.run_stdio_async()`); each call holds
    `lock` (a new one by default) while it runs; `lifespan` is the server's (see MCPServer)."""
    server = _Server(
        "engramdb", version=__version__, lifespan=lifespan, log_level="WARNING",
        instructions=("Long-term memory: store_memory to remember, search_* to recall, inject_context for a "
                      f"prompt-ready block; every tool takes an optional namespace (default {tools.namespace!r})."))
    lock = lock if lock is not None else threading.Lock()
    for name in MemoryTools.TOOLS:
        fn = getattr(tools, name)
        server.parameters[name] = tuple(inspect.signature(fn).parameters)
        server.add_tool(_guarded(fn, lock), name=name, description=inspect.cleandoc(fn.__doc__ or ""),
                        annotations=ToolAnnotations(read_only_hint=name in MemoryTools.READ_ONLY,
                                                    destructive_hint=name in MemoryTools.DESTRUCTIVE,
                                                    open_world_hint=False))
    return server


__all__ = ["MemoryTools", "build_server", "jsonable"]

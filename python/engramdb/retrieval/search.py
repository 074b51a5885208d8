"""The executor: runs a `SearchPlan` against one snapshot and returns its hits with their stats.

Query embeddings are made first (a model call can take milliseconds), then the plan's strategy
runs: the dense path (one space, through its index or exactly) or a fused strategy's stages,
then recency (C3) and the cut to k. Nothing here takes the writer's lock: the snapshot is
immutable and every cache it fills is keyed by what it was built from.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..index.registry import Indexes
from ..model.errors import StoreError
from ..model.hit import Hit, Hits, SearchStats
from ..model.tuning import Tuning
from ..spaces.passages import MIN_CHARS, passages
from ..spaces.protocol import Embedder, Embedding
from ..spaces.query import embed_query, lexical_space, query_terms
from ..storage.view import Loc, View
from .dates import periods, relative_windows, windows, within, without_relative
from .dense_method import dense_found
from .fusion import RRF_K, Fused
from .plan import SearchPlan
from .query_context import IN_FLIGHT, QueryContext
from .recency import TOP as RECENCY_TOP
from .recency import recency_factor
from .run import Run
from .scales import semantic_scaled
from .strategies import STRATEGIES

# How much higher a candidate ranks when it started to hold in a period the query names ("in June",
# "last week": retrieval/dates.py): its own match times this, for the order only. 1.25, 1.5 and 2
# were measured on the LoCoMo turns view and the long-history view (bench/RESULTS.md "Dates a
# query names"): both gain most of what they gain by 1.5; at 2 the turns view starts to lose.
DATE_BOOST = 1.5
# What a memory said in a period the question names matches of it at least ("What did I do
# yesterday?": the date is all the question asks). A weak match's score, so a memory that shares
# the question's words still ranks first, and a context block takes what was said then.
SAID_THEN = 0.1


def run_search(plan: SearchPlan, view: View, indexes: Indexes, embedders: Mapping[str, Embedder], tuning: Tuning,
               query: str | np.ndarray | Embedding, query_vector: np.ndarray | None = None) -> Hits:
    """The hits of `plan` for `query` in `view`, best first, with the search's statistics.

    Sizes (k and the pipeline's stages) are capped at the namespace's row count: no method can
    find more, so the answer is the same and memory follows the store, never the caller's k.
    A search whose methods raised and that found nothing raises (an error is never an empty
    answer); one that still found hits names the failures in `stats.failed` and explain.
    """
    cap = max(1, view.namespace_rows(plan.namespace))
    if plan.k > cap or any(v > cap for v in plan.stages.values()):
        plan = dataclasses.replace(plan, k=min(plan.k, cap), stages={n: min(v, cap) for n, v in plan.stages.items()})
    with IN_FLIGHT:
        hits = _run(plan, view, indexes, embedders, tuning, query, query_vector)
    if not hits and hits.stats.failed:
        raise StoreError(f"the search failed: {'; '.join(f'{m}: {e}' for m, e in hits.stats.failed.items())}")
    if plan.min_score > 0:
        hits = Hits([h for h in hits if h.score >= plan.min_score], hits.stats)
    return hits


def _run(plan: SearchPlan, view: View, indexes: Indexes, embedders: Mapping[str, Embedder], tuning: Tuning,
         query: str | np.ndarray | Embedding, query_vector: np.ndarray | None) -> Hits:
    t0 = time.perf_counter()
    if plan.fused:
        run = _prepare(plan, view, indexes, embedders, tuning, query, query_vector)
        for stage in STRATEGIES[str(plan.strategy)]:
            stage(run)
        try:
            hits = _fused_hits(run)
        finally:
            run.release()
        ctx, stages, stage_ms = run.ctx, dict(run.sizes), dict(run.stage_ms)
        name = str(plan.strategy)
    else:
        sp = view.schema[plan.space]
        qv = sp.check(query_vector, 1) if query_vector is not None else embed_query(sp, embedders, query)
        ctx = QueryContext(view, indexes, embedders, tuning, plan)
        hits = _dense_hits(ctx, qv)
        stages, stage_ms = {}, {}
        name = ctx.index_stats.get("index", "exact") if ctx.index_stats else "exact"
    stats = SearchStats(strategy=name, generation=view.generation, namespace=plan.namespace,
                        index=dict(ctx.index_stats), stages=stages, stage_ms=stage_ms, failed=dict(ctx.failed),
                        seconds=time.perf_counter() - t0)
    return Hits(hits, stats)


def _dense_hits(ctx: QueryContext, qv: Any) -> list[Hit]:
    plan, view = ctx.plan, ctx.view
    sp = view.schema[plan.space]
    found, info = dense_found(ctx, sp, qv, plan.k, plan.strategy)
    memories = view.memories_at([(si, row) for _, si, row in found])
    hits = []
    raw = np.array([score for score, _, _ in found], np.float64)
    top = float(raw.max()) if len(raw) else None  # the scale tops out at the best hit above `high`
    scaled = semantic_scaled(raw, sp, top=top).tolist()
    for (score, si, row), m, sc in zip(found, memories, scaled):
        why = None
        if plan.explain:
            why = {"space": sp.name, "metric": sp.metric, "segment": si, "row": row, "raw": float(score),
                   "score": sc, "scales": {"semantic": {"space": sp.name, "low": sp.low, "high": sp.high, "top": top}},
                   "strategy": info["index"] if info is not None else "exact"}
            if info is not None:
                why["tree"] = info
        hits.append(Hit(m.id, float(sc), m, why, m.id in view.archived))
    return hits


def _prepare(plan: SearchPlan, view: View, indexes: Indexes, embedders: Mapping[str, Embedder], tuning: Tuning,
             query: Any, query_vector: np.ndarray | None) -> Run:
    """The query's embeddings in every space its strategy reads, and the run they start."""
    strategy = plan.strategy
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"strategy {strategy!r} needs the query as text (BM25 reads its words); give the "
                         f"main space's vector as query_vector= when you have it, got {type(query).__name__}")
    schema = view.schema
    main = schema[plan.space]
    lex = lexical_space(schema, embedders)
    if lex is None and strategy in ("bm25", "pipeline"):
        raise ValueError(f"strategy {strategy!r} needs a sparse lexical space (embedder 'lexical'); this store's "
                         f"spaces are {[s.name for s in schema]}")
    ctx = QueryContext(view, indexes, embedders, tuning, plan)
    said = _placed_in_time(ctx, query)
    blank = not said.strip()  # a date is all it asks: no space has words to match, the dates stage answers
    terms = query_terms(lex, embedders, said) if lex is not None else None
    qv = None
    if strategy != "bm25" and query_vector is not None:
        qv = main.check(query_vector, 1)
    elif strategy != "bm25" and not (blank and strategy == "hybrid"):  # the others' stages need a vector
        qv = embed_query(main, embedders, query if blank else said)
    enh: dict[str, Any] = {}
    if strategy in ("multi_space", "pipeline"):
        for sp in schema:
            # the main space runs as "vector"; the space BM25 indexes is already the "bm25" method;
            # a space projected from the main one (HDC codes of its vectors) repeats the vector's
            # evidence, so it would only weigh the vector twice
            if sp.name == main.name or (lex is not None and sp.name == lex.name) or sp.category == "temporal":
                continue
            base = getattr(embedders.get(sp.name), "base", None)
            if base is not None and base is embedders.get(main.name):
                continue
            if strategy == "pipeline" and sp.kind != "multivector":
                continue
            if sp.name in embedders:
                enh[sp.name] = embed_query(sp, embedders, query if blank else said)
    return Run(ctx=ctx, query=query, main=main, qv=qv, terms=terms, enh=enh, w=dict(plan.weights),
               vector_given=query_vector is not None)


def _fused_hits(run: Run) -> list[Hit]:
    """Recency (C3), the cut to k, and the hits with their explanations."""
    ctx, plan, view = run.ctx, run.ctx.plan, run.ctx.view
    rrf_max = run.info.get("rrf_max")  # a rank-fused score is scaled by the best it could be
    fused = [Fused(f.key, min(1.0, f.score / rrf_max), f.methods, {**f.detail, "fused": f.score}, f.via, f.own)
             for f in run.fused] if rrf_max else run.fused
    factors: dict[tuple[int, int], float] = {}
    dated: dict[tuple[int, int], float] = {}  # a date the query names: ranks only (the score is the match's)
    # when the question is asked: the caller's `now`, else the time the store is seen as of, else
    # the clock; dates the query names and recency ages are both read at it
    t_ref = _asked_at(ctx)
    spans = windows(run.query, t_ref) if isinstance(run.query, str) else []
    days = periods(run.query, t_ref) if spans else []  # the periods themselves, their grace left out
    # what was said then is an answer even when it shares no word with the question (not where the
    # caller asked the pipeline to keep the query's topics only: those it left out stay out)
    if spans and plan.topic_of is None:
        fused = fused + _said_then(ctx, spans, {f.key for f in fused}, plan.k, days=days)
    order: dict[tuple[int, int], tuple[bool, int]] = {}  # a dated memory: (in the grace only, said at)
    if plan.recency or spans:
        valid_from = view.column_at("valid_from", [f.key for f in fused])
        named = within(valid_from, spans)
        core = within(valid_from, days) if spans else named
        for f, since, then, day in zip(fused, valid_from.tolist(), named.tolist(), core.tolist()):
            if plan.recency:
                factors[f.key] = recency_factor(t_ref - since) / RECENCY_TOP
            if then:
                dated[f.key] = DATE_BOOST
                order[f.key] = (not day, since)
        # a dated memory matches the question's date at least (SAID_THEN); among equals, the dated
        # first, those of the period itself before its grace's, in the order they were said
        fused = sorted(fused, key=lambda f: (-_dated_score(f.score, f.key in dated) * factors.get(f.key, 1.0)
                                             * dated.get(f.key, 1.0), f.key not in dated,
                                             order.get(f.key, (False, 0))))
    fused = fused[: plan.k]
    memories = view.memories_at([f.key for f in fused])
    via_keys = [f.via for f in fused if f.via is not None]
    via_ids = dict(zip(via_keys, view.ids_at(view.locs(np.array(via_keys, np.int64))))) if via_keys else {}
    weights = run.info.get("weights", run.w)
    hits = []
    for f, m in zip(fused, memories):
        factor = factors.get(f.key, 1.0)
        ranked = _dated_score(f.score, f.key in dated) * factor
        # placed by a share of another hit's score (it names that hit) or by its session's support:
        # it reports its own match
        via = via_ids[f.via] if f.via is not None else None
        score = _dated_score(f.own if f.own is not None else f.score, f.key in dated) * factor
        why = None
        if plan.explain:
            why = {"strategy": plan.strategy, "fused": f.score, "recency": factor, "score": score,
                   "ranked": ranked * dated.get(f.key, 1.0), "dated": f.key in dated,
                   "via": via, "methods": {name: {"rank": r, "score": s} for name, (r, s) in f.methods.items()},
                   "weights": weights, **({"rrf_k": RRF_K} if rrf_max else {}), "segment": f.key[0], "row": f.key[1],
                   "plan": [stage.__name__ for stage in STRATEGIES[str(plan.strategy)]],
                   **{key: v for key, v in run.info.items() if key != "weights"}, **f.detail, "failed": ctx.failed}
        detail = f.detail if f.detail or run.detail_of is None else run.detail_of(f.key)
        hits.append(Hit(m.id, float(score), m, why, m.id in view.archived,
                        _passage_span(m.content, detail.get("passage")), via=via))
    return hits


def _asked_at(ctx: QueryContext) -> int:
    """When the question is asked: the caller's `now`, else the time the store is seen as of, else
    the clock. Dates the query names and recency ages are both read at it."""
    plan = ctx.plan
    return plan.now_us if plan.now_us is not None else plan.as_of_us if plan.as_of_us is not None else ctx.now_us


def _placed_in_time(ctx: QueryContext, query: str) -> str:
    """The query as its spaces read it. A date it names relative to its asking ("yesterday", "last
    week") places it in time, which the dates stage reads: matched as words, it would find what was
    said "last week" of other weeks. So those words are left out when the period they name holds
    memories the query may see; when it holds none, the date cannot be the asker's (a history
    asked about in its own words, with no `now`), and the words stay words."""
    said = without_relative(query)
    if said == query or not _said_then(ctx, relative_windows(query, _asked_at(ctx)), set(), 1):
        return query
    return said  # blank when the date is all it asks ("yesterday"): what was said then answers it


def _dated_score(score: float, dated: bool) -> float:
    """A memory said in a period the question names matches it at least by that date."""
    return max(score, SAID_THEN) if dated else score


def _said_then(ctx: QueryContext, spans: list[tuple[int, int]], found: set[Loc], n: int, *,
               days: list[tuple[int, int]] | None = None) -> list[Fused[Loc]]:
    """Up to `n` memories the query may see that started to hold in one of `spans` and that no
    method found (match 0: `_dated_score` gives them the date's). With `days` (the periods without
    their grace): those of the periods themselves first, each in the order they were said; else any."""
    view = ctx.view
    if not spans or not view.segments:  # a new store: no row said anything yet
        return []
    # every row's valid_from by key, tested against the spans' outer bounds first (one comparison
    # a row), the spans themselves only for the rows inside them
    since = np.concatenate([view.row_array(seg, "valid_from") for seg in range(len(view.segments))])
    inside = np.flatnonzero((since >= spans[0][0]) & (since < spans[-1][1]))
    inside = inside[within(since[inside], spans)]
    inside = inside[ctx.view.key_mask(ctx.namespace, ctx.known_us, ctx.t, ctx.at_now, ctx.types)[inside]]
    if found and len(inside):
        inside = inside[~np.isin(inside, view.keys(list(found)))]
    if days is None or not len(inside):
        keys = inside[:n]
    else:
        grace = ~within(since[inside], days)
        keys = inside[np.lexsort((inside, since[inside], grace))[:n]]
    return [Fused(loc, 0.0, {}, {"said_then": True}, None, None) for loc in view.locs(keys)]


def _passage_span(content: str, part: Any) -> tuple[int, int] | None:
    """The offsets of passage `part` of a memory's content (None: one passage, or none named)."""
    if part is None or len(content) < MIN_CHARS:
        return None
    spans = passages(content)
    return spans[int(part)] if len(spans) > 1 and 0 <= int(part) < len(spans) else None

"""Fused strategies (H3, C1-C3) as lists of stages over one query's `Run`.

Methods each return their best (segment, row) locations (or key arrays) with scores, filtered
inside by namespace, time and type (H4): "vector" (the main dense space, through its index),
"bm25" (H1), "graph" (2-hop expansion over typed edges from the best hits of the others, H2),
"neighbours" (the turns next to those hits), and, for multi_space, every enhancer space.
Independent methods overlap on a small thread pool (the kernels release the GIL); one that raises
is logged, named in explain and the search statistics, and skipped.

- bm25: BM25 alone.
- hybrid: vector + bm25 -> the vector's say scaled by its match strength (C2) -> graph and
  neighbour expansion from the best fused hits -> weighted RRF.
- multi_space: hybrid with the weights routed by the query's intent (C2 rules) and the enhancer
  spaces added (the strong/weak rule on the main space's best score decides whether they add
  candidates or only rerank).
- pipeline: sparse recall (BM25, `sparse` candidates, the query expanded by RM3 from its own
  `feedback` best hits when that stage is set, joined by the vector index's `fused` best so a
  query sharing no word still finds its matches) -> exact dense scores of every candidate, best
  `dense` kept -> expansion -> RRF of dense, BM25 and graph, best `fused` kept -> topic filter
  (none until topics exist: the `topics` best pass) -> MaxSim rerank on the token space, fused
  with the RRF rank.
Recency (C3) and the cut to k follow every strategy (retrieval/search.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..spaces.schema import Space
from ..storage.view import Loc
from .dense_method import dense_found, rescore_keys
from .fusion import RRF_K, Fused, exact_depth, rrf, rrf_arrays
from .graph_method import GRAPH_SEEDS, graph_found
from .lexical_method import bm25_feedback, bm25_found, bm25_keys, namespace_index
from .neighbours import neighbours_found
from .query_context import Found, QueryContext, Ranked
from .rerank import scan_locations
from .routing import enhancer_mode, match_strength, route
from .run import Run, Stage
from .scales import lexical_ideal, lexical_scaled, stretched_ideal
from .scored import expand_scored, finish_scored, scored_recall

log = logging.getLogger("engramdb.search")

MAXSIM_WEIGHT = 0.5  # the token space's say against the RRF rank in the pipeline's last stage




# ---------------------------------------------------------------------------------------- bm25
def bm25_only(run: Run) -> None:
    """BM25's k best, ranked by their BM25 scores."""
    terms = run.terms
    assert terms is not None
    got = run.ctx.run({"bm25": lambda: bm25_found(run.ctx, terms, run.k)})
    found = got.get("bm25", [])
    raw = np.array([s for _, s in found], np.float64)
    ideal = stretched_ideal(lexical_ideal(namespace_index(run.ctx), *terms), raw)
    scaled = lexical_scaled(raw, ideal).tolist()
    run.fused = [Fused(loc, c, {"bm25": (i + 1, s)}) for i, ((loc, s), c) in enumerate(zip(found, scaled))]
    run.w = {"bm25": 1.0}
    run.info["scales"] = {"lexical_ideal": round(ideal, 4)}


# ---------------------------------------------------------------------------------------- hybrid
def route_query(run: Run) -> None:
    """C2: weights by the query's intent (temporal words, causal words, ...)."""
    r = route(run.query, run.w)
    run.w = r.weights
    run.info["rules"] = r.rules


def recall(run: Run) -> None:
    """The vector and BM25 methods, 2 x k each (H3), side by side."""
    ctx, n = run.ctx, 2 * run.k
    methods: dict[str, Callable[[], Ranked]] = {"vector": lambda: _dense(ctx, run.main, run.qv, n)}
    if run.terms is not None:
        terms = run.terms
        methods["bm25"] = lambda: bm25_found(ctx, terms, n)
    run.got = dict(ctx.run(methods))


def vector_strength(run: Run) -> None:
    """Scale the vector method's weight by the main space's best score (C2)."""
    vector = run.got.get("vector")
    best = vector[0][1] if isinstance(vector, list) and vector else None
    run.w = _main_say(run.w, best, run.main, run.info)


def enhancer_spaces(run: Run) -> None:
    """multi_space: every enhancer space adds candidates, or only reranks the pool (C2)."""
    if not run.enh:
        return
    ctx, n = run.ctx, 2 * run.k
    best = run.got.get("vector", [])
    mode = enhancer_mode(best[0][1] if isinstance(best, list) and best else None, run.main.high, run.main.low)
    run.info["enhancer_mode"] = mode
    pool = {loc for ranked in run.got.values() if isinstance(ranked, list) for loc, _ in ranked}
    extra: dict[str, Callable[[], Ranked]] = {}
    for name, eqv in run.enh.items():
        sp = ctx.view.schema[name]
        only = pool if (mode == "rerank" or sp.role == "rerank-only") else None
        if only is not None and not only:
            continue
        extra[name] = _bind(ctx, sp, eqv, n, only)
        run.w.setdefault(name, 0.5 * (0.5 if mode == "add-half" and only is None else 1.0))
    run.got.update(ctx.run(extra))


def expand(run: Run) -> None:
    """Graph and conversation-neighbour expansion from the best fused hits so far."""
    first = rrf(_lists(run.got), run.w)
    seeds = [f.key for f in first[:GRAPH_SEEDS]]
    extra = _expansions(run, seeds, 2 * run.k)
    run.got.update(extra)
    if not any(extra.values()):  # nothing added (no edges, no turns): the fusion is already done
        run.fused = first
    run.info["weights"] = run.w


def fuse(run: Run) -> None:
    """Weighted RRF of every method's list (unless expansion found nothing to add to it)."""
    if not run.fused:
        run.fused = rrf(_lists(run.got), run.w)
    run.info["rrf_max"] = _rrf_max(run.w, _lists(run.got))


# ---------------------------------------------------------------------------------------- pipeline
def sparse_recall(run: Run) -> None:
    """BM25 (with RM3 feedback when that stage is set) joined by the vector index's best."""
    ctx, st, terms = run.ctx, run.st, run.terms
    assert terms is not None
    read = read_depth(run.w, st)

    def sparse() -> Found:
        if st["feedback"] > 0:
            return bm25_feedback(ctx, terms, st["sparse"], read, st["feedback"])
        return bm25_keys(ctx, terms, st["sparse"], read)

    recall_methods: dict[str, Callable[[], Found]] = {
        "bm25": sparse, "vector": lambda: _dense(ctx, run.main, run.qv, st["fused"])}
    run.got = dict(ctx.run(recall_methods))
    run.sizes.update({"sparse": len(_arrays(run, run.got.get("bm25", []))[0]), "feedback": st["feedback"]})
    run.lap("recall")


def dense_rescore(run: Run) -> None:
    """Exact dense scores of every candidate; the best `dense` kept (and the vector's say set)."""
    st, read = run.st, read_depth(run.w, run.st)
    bm_keys, bm_scores = _arrays(run, run.got.get("bm25", []))
    vec_keys, _ = _arrays(run, run.got.get("vector", []))
    candidates = np.concatenate([bm_keys, vec_keys])  # the dense kernel scores a repeated key once
    if len(candidates):
        dense = rescore_keys(run.ctx, run.main, run.qv, candidates, st["dense"])
    else:
        dense = (bm_keys[:0], bm_scores[:0])
    run.ranked = {"vector": (dense[0][:read], dense[1][:read]), "bm25": (bm_keys[:read], bm_scores[:read])}
    run.sizes["dense"] = len(dense[0])
    run.w = _main_say(run.w, float(dense[1][0]) if len(dense[1]) else None, run.main, run.info)
    run.lap("dense")


def expand_keys(run: Run) -> None:
    """Graph and neighbour expansion from the best fused keys: lists read to `exact_depth`
    give exactly those, without fusing all ~10,000 candidates twice."""
    w = run.w
    if w.get("graph", 0) <= 0 and w.get("neighbours", 0) <= 0:
        return
    depth = exact_depth([w.get(m, 1.0) for m in run.ranked], GRAPH_SEEDS)
    top = rrf_arrays({m: (a[:depth], b[:depth]) for m, (a, b) in run.ranked.items()}, w, top=GRAPH_SEEDS)
    seeds = run.ctx.view.locs(np.array([f.key for f in top], np.int64))
    for name, found in _expansions(run, seeds, 2 * run.k).items():
        run.ranked[name] = _arrays(run, found)


def fuse_keys(run: Run) -> None:
    """RRF over the key arrays; the best `fused` kept as locations."""
    st = run.st
    first = rrf_arrays(run.ranked, run.w, top=st["fused"])
    locs = run.ctx.view.locs(np.array([f.key for f in first], np.int64))
    run.fused = [Fused(loc, f.score, f.methods) for loc, f in zip(locs, first)][: st["fused"]]
    run.sizes["fused"] = len(run.fused)
    run.info["rrf_max"] = _rrf_max(run.w, run.ranked)


TOPIC_MATCH = 3  # the query's nearest topics (by centroid) whose memories the topic stage keeps


def topic_filter(run: Run) -> None:
    """C4's place in the pipeline. With the namespace's topics (`search(..., topics=True)`): the
    query's `TOPIC_MATCH` nearest topics by main-space centroid, and a candidate passes when it
    is in one of them or in no topic; the `topics` best pass. Without: the `topics` best pass."""
    plan = run.ctx.plan
    note = "off (search(..., topics=True) turns it on)"
    if plan.topic_of is not None and plan.topic_centroids is not None and len(plan.topic_centroids) \
            and run.qv is not None:
        q = np.asarray(run.qv, np.float64).reshape(-1)
        sims = np.asarray(plan.topic_centroids, np.float64) @ q / max(float(np.linalg.norm(q)), 1e-12)
        near = set(np.argsort(-sims)[:TOPIC_MATCH].tolist())
        view = run.ctx.view
        before = len(run.fused)
        run.fused = [f for f in run.fused
                     if plan.topic_of.get(view.id_at(f.key), -1) in near or view.id_at(f.key) not in plan.topic_of]
        note = f"kept {len(run.fused)} of {before} (topics {sorted(near)})"
    run.fused = run.fused[: run.st["topics"]]
    run.sizes["topics"] = len(run.fused)
    run.lap("fuse")
    run.info.update({"stages": run.sizes, "topic_filter": note, "stage_ms": run.stage_ms})


def maxsim_rerank(run: Run) -> None:
    """MaxSim on the token space over the survivors, fused with their RRF rank."""
    tokens = next(iter(run.enh.items()), None)
    if tokens is not None and run.fused:
        sp = run.ctx.view.schema[tokens[0]]
        try:
            ms = scan_locations(run.ctx, sp, tokens[1], [f.key for f in run.fused], len(run.fused))
        except Exception as exc:  # noqa: BLE001 - the rerank is an enhancement; keep the fused order
            log.warning("MaxSim rerank failed and was skipped: %s", exc)
            run.ctx.failed["maxsim"] = f"{type(exc).__name__}: {exc}"
            ms = []
        if ms:
            prev = {f.key: f for f in run.fused}
            rer = rrf({"fused": [(f.key, f.score) for f in run.fused], "maxsim": ms},
                      {"fused": 1.0, "maxsim": MAXSIM_WEIGHT})
            out = []
            for r in rer:
                f = prev[r.key]
                f.methods.update({m: v for m, v in r.methods.items() if m == "maxsim"})
                out.append(Fused(r.key, r.score, f.methods))
            run.fused = out
            run.info["rerank"] = {"space": sp.name, "weight": MAXSIM_WEIGHT}
            run.info["rrf_max"] = (1.0 + MAXSIM_WEIGHT) / (RRF_K + 1)
    run.lap("rerank")
    run.info["weights"] = run.w


STRATEGIES: dict[str, tuple[Stage, ...]] = {
    "bm25": (bm25_only,),
    "hybrid": (scored_recall, expand_scored, finish_scored),
    "rrf": (recall, vector_strength, expand, fuse),
    "multi_space": (route_query, recall, vector_strength, enhancer_spaces, expand, fuse),
    "pipeline": (sparse_recall, dense_rescore, expand_keys, fuse_keys, topic_filter, maxsim_rerank),
}


# ---------------------------------------------------------------------------------------- helpers
def _dense(ctx: QueryContext, sp: Space, qv: Any, n: int) -> Ranked:
    found, _ = dense_found(ctx, sp, qv, n)
    return [((si, row), score) for score, si, row in found]


def _bind(ctx: QueryContext, sp: Space, qv: Any, n: int, only: set[Loc] | None) -> Callable[[], Ranked]:
    """One enhancer space's method (a closure over its own arguments, not the loop's): exact,
    over the pool only when it reranks."""

    def method() -> Ranked:
        if only is not None:
            return scan_locations(ctx, sp, qv, sorted(only), n)
        found, _ = dense_found(ctx, sp, qv, n, "exact")
        return [((si, row), score) for score, si, row in found]

    return method


def _expansions(run: Run, seeds: list[Loc], n: int) -> dict[str, Ranked]:
    """The graph and neighbour methods from these seeds, those with a weight (short Python
    loops: run in turn, a thread hop would cost more)."""
    ctx, w = run.ctx, run.w
    methods: dict[str, Callable[[], Ranked]] = {}
    if seeds and w.get("graph", 0) > 0:
        methods["graph"] = lambda: graph_found(ctx, seeds, n)
    if seeds and w.get("neighbours", 0) > 0:
        methods["neighbours"] = lambda: neighbours_found(ctx, seeds, n)
    return ctx.run(methods, parallel=False)


def _rrf_max(w: dict[str, float], lists: Mapping[str, Any]) -> float:
    """The RRF score of a key every weighted method ranked first: what scales a rank-fused
    score to [0, 1]."""
    total = sum(float(w.get(m, 1.0)) for m, found in lists.items() if len(found))
    return total / (RRF_K + 1) if total > 0 else 1.0


def _lists(got: dict[str, Found]) -> dict[str, Ranked]:
    return {name: found for name, found in got.items() if isinstance(found, list)}


def read_depth(w: dict[str, float], st: dict[str, int]) -> int:
    """How deep the pipeline's RRF reads its vector and BM25 lists: past exact_depth no key can
    reach the fused stage's `fused` best, so the lists need no order there. The vector weight
    may still shrink with its match strength, so the bound takes it at full weight in the sum
    and at zero for the heaviest list."""
    others = [w.get(m, 1.0) for m in ("bm25", "graph", "neighbours")]
    depth = exact_depth([*others, w.get("vector", 1.0)], st["fused"], w_max=max(others))
    return min(st["dense"], depth)


def _arrays(run: Run, found: Found) -> tuple[np.ndarray, np.ndarray]:
    """(keys, scores) arrays of a ranked location list (a key array passes through)."""
    if isinstance(found, tuple):
        return found
    return run.ctx.view.keys([loc for loc, _ in found]), np.array([s for _, s in found], np.float64)


def _main_say(w: dict[str, float], best: float | None, main: Space, info: dict[str, Any]) -> dict[str, float]:
    """Scale the vector method's weight by its match strength (C2: 0 at the main space's `low`
    threshold, full at `high`; `best` is the main space's best score); the strength is reported
    in explain."""
    strength = match_strength(best, main.high, main.low)
    info["vector_strength"] = strength
    return {**w, "vector": w.get("vector", 1.0) * strength}

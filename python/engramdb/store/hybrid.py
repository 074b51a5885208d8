"""Fused search strategies (H3, C1-C3): the methods a query runs, how they are fused, explained.

Methods each return their best (segment, row) locations with scores, filtered inside by namespace,
time and type (H4): "vector" (the main dense space, through its index), "bm25" (H1), "graph"
(2-hop expansion over typed edges from the best hits of the others, H2) and, for multi_space,
every enhancer space by exact scan. Independent methods run in parallel on a small thread pool
(the kernels release the GIL); one that raises is logged, named in `explain`, and skipped.

Strategies:
- bm25: BM25 alone.
- hybrid: vector + bm25 + graph, weighted RRF (1.0 / 0.8 / 0.6 by default).
- multi_space: hybrid + enhancer spaces. Weights are routed by the query's intent (C2 rules); the
  strong/weak rule on the main space's best score decides whether enhancers add candidates or
  only rerank; recency factors (C3) scale the fused scores.
- pipeline: sparse recall (BM25, `sparse` candidates, the query expanded by RM3 from its own
  `feedback` best hits when that stage is set, joined by the vector index's `fused` best so
  a query sharing no word still finds its matches: a key only the index finds needs a dense rank
  that good to reach the fused stage) -> exact dense scores of every candidate,
  best `dense` kept -> RRF of dense, BM25 and graph, best `fused` kept -> topic filter (none
  until topics exist: the `topics` best pass) -> MaxSim rerank on the token space, fused with
  the RRF rank -> recency.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..retrieval.feedback import rm3_query
from ..retrieval.fusion import DEFAULT_WEIGHTS, RRF_K, Fused, exact_depth, rrf, rrf_arrays
from ..retrieval.recency import recency_factor
from ..retrieval.routing import enhancer_mode, match_strength, route
from ..spaces.protocol import SparseBatch
from ..spaces.schema import Space

if TYPE_CHECKING:
    from .store import Hit, Store

log = logging.getLogger("engramdb.search")

DENSE_STRATEGIES = frozenset({None, "exact", "dense_only", "tree", "hnsw"})
FUSED_STRATEGIES = frozenset({"bm25", "hybrid", "multi_space", "pipeline"})
# "feedback": how many of a first BM25 pass's best hits expand the sparse recall's query (RM3,
# retrieval/feedback.py; FB_DOCS = 10 is the usual setting); off by default: at 100,000 memories
# it adds ~1-2 ms (the expanded query's postings, a fuller candidate set) to a ~7 ms pipeline,
# for +1-2 points of LoCoMo recall@10 (bench/RESULTS.md)
DEFAULT_STAGES = {"sparse": 10_000, "dense": 1_000, "fused": 100, "topics": 50, "feedback": 0}
GRAPH_SEEDS = 5  # best fused hits the graph expands from
HOP_DECAY = 0.5  # a 2-hop neighbour scores half the product of its edges' confidences
MAXSIM_WEIGHT = 0.5  # the token space's say against the RRF rank in the pipeline's last stage
POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="engramdb-search")

Loc = tuple[int, int]
Ranked = list[tuple[Loc, float]]
Found = Ranked | tuple[np.ndarray, np.ndarray]  # a ranked list, or (keys, scores) arrays
T = TypeVar("T")


def run_fused(store: Store, strategy: str, query: Any, *, namespace: str, k: int, main: Space,
              as_of_us: int | None, known_us: int | None, types: frozenset[str] | None, explain: bool,
              weights: Mapping[str, float] | None, query_vector: np.ndarray | None, recency: bool | None,
              stages: Mapping[str, int] | None) -> list[Hit]:
    """Run a fused strategy (see the module docstring) and return its hits, best first."""
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"strategy {strategy!r} needs the query as text (BM25 reads its words); give the "
                         f"main space's vector as query_vector= when you have it, got {type(query).__name__}")
    w = _weights(weights)
    st = {**DEFAULT_STAGES, **_stages(stages)}
    lex = store._lexical_space()
    if lex is None and strategy in ("bm25", "pipeline"):
        raise ValueError(f"strategy {strategy!r} needs a sparse lexical space (embedder 'lexical'); this store's "
                         f"spaces are {[s.name for s in store.schema]}")
    # query embeddings first, outside the store's lock (a model call can take milliseconds)
    terms = store._query_terms(lex, query) if lex is not None else None
    qv = None
    if strategy != "bm25":
        qv = main.check(query_vector, 1) if query_vector is not None else store._query_vector(main, query)
    enh: dict[str, Any] = {}
    if strategy in ("multi_space", "pipeline"):
        for sp in store.schema:
            # the main space runs as "vector"; the space BM25 indexes is already the "bm25" method;
            # a space projected from the main one (HDC codes of its vectors) repeats the vector's
            # evidence, so it would only weigh the vector twice
            if sp.name == main.name or (lex is not None and sp.name == lex.name) or sp.category == "temporal":
                continue
            base = getattr(store.embedders.get(sp.name), "base", None)
            if base is not None and base is store.embedders.get(main.name):
                continue
            if strategy == "pipeline" and sp.kind != "multivector":
                continue
            if sp.name in store.embedders:
                enh[sp.name] = store._query_vector(sp, query)
    with store._lock:
        store._check_open()
        ctx = _Context(store, namespace, known_us, as_of_us, types)
        if strategy == "bm25":
            assert terms is not None
            got = ctx.run({"bm25": lambda: ctx.bm25(terms, k)})
            fused = [Fused(loc, s, {"bm25": (i + 1, s)}) for i, (loc, s) in enumerate(got.get("bm25", []))]
            info: dict[str, Any] = {}
        elif strategy in ("hybrid", "multi_space"):
            fused, info = _hybrid(ctx, strategy, query, main, qv, terms, enh, w, k)
        else:
            fused, info = _pipeline(ctx, main, qv, terms, enh, w, st, k)
        use_recency = recency if recency is not None else strategy in ("multi_space", "pipeline")
        factors: dict[Loc, float] = {}
        if use_recency:
            t_ref = as_of_us if as_of_us is not None else ctx.now_us
            for f in fused:
                si, row = f.key
                factors[f.key] = recency_factor(t_ref - int(store._segments[si].valid_from[row]))
            fused = sorted(fused, key=lambda f: -f.score * factors[f.key])
        fused = fused[:k]
        memories = store._memories_at([f.key for f in fused])
        from .store import Hit

        hits = []
        for f, m in zip(fused, memories):
            factor = factors.get(f.key, 1.0)
            why = None
            if explain:
                why = {"strategy": strategy, "fused": f.score, "recency": factor, "score": f.score * factor,
                       "methods": {name: {"rank": r, "score": s} for name, (r, s) in f.methods.items()},
                       "weights": info.get("weights", {"bm25": 1.0} if strategy == "bm25" else w),
                       "rrf_k": RRF_K, "segment": f.key[0], "row": f.key[1],
                       **{key: v for key, v in info.items() if key != "weights"}, "failed": ctx.failed}
            hits.append(Hit(m.id, float(f.score * factor), m, why, m.id in store._archived))
        return hits


class _Context:
    """One query's filters and the store it runs against (the caller holds the store's lock)."""

    def __init__(self, store: Store, namespace: str, known_us: int | None, as_of_us: int | None,
                 types: frozenset[str] | None) -> None:
        self.store, self.namespace, self.known_us, self.as_of_us, self.types = store, namespace, known_us, as_of_us, types
        self.t, self.at_now = store._when(known_us, as_of_us)
        self.now_us = time.time_ns() // 1_000  # the clock recency factors measure ages against
        self.failed: dict[str, str] = {}

    def run(self, methods: Mapping[str, Callable[[], T]], *, parallel: bool = True) -> dict[str, T]:
        """Run methods (in parallel unless told not to: methods that are short Python loops gain
        nothing from a thread hop but GIL hand-offs); a failing one is logged, recorded and left out."""
        out: dict[str, T] = {}
        if len(methods) == 1 or not parallel:  # nothing to overlap with: no thread hop
            for name, fn in methods.items():
                try:
                    out[name] = fn()
                except Exception as exc:  # noqa: BLE001 - one method failing must not fail the search
                    self._fail(name, exc)
            return out
        futures = {name: POOL.submit(fn) for name, fn in methods.items()}
        for name, fut in futures.items():
            try:
                out[name] = fut.result()
            except Exception as exc:  # noqa: BLE001 - one method failing must not fail the search
                self._fail(name, exc)
        return out

    def _fail(self, name: str, exc: Exception) -> None:
        log.warning("search method %r failed and was skipped: %s", name, exc)
        self.failed[name] = f"{type(exc).__name__}: {exc}"

    def dense(self, sp: Space, qv: Any, n: int, *, exact: bool = False, only: set[Loc] | None = None) -> Ranked:
        if only is not None:
            return self.store._scan_locations(sp, qv, sorted(only), n)
        found, _ = self.store._dense_found(sp, qv, self.namespace, n, self.known_us, self.as_of_us,
                                           "exact" if exact else None, self.types)
        return [((si, row), score) for score, si, row in found]

    def bm25_keys(self, terms: tuple[np.ndarray, np.ndarray], n: int,
                  sorted_k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        return self.store._bm25_keys(terms, self.namespace, n, self.known_us, self.t, self.at_now, self.types,
                                     sorted_k)

    def bm25_feedback(self, terms: tuple[np.ndarray, np.ndarray], n: int, sorted_k: int,
                      docs: int) -> tuple[np.ndarray, np.ndarray]:
        """BM25 of the query expanded by RM3 from its own `docs` best hits (pseudo-relevance
        feedback), filtered like every method; the plain query when nothing matches it."""
        keys, scores = self.bm25_keys(terms, docs)
        if len(keys) == 0:
            return keys, scores
        ix = self.store._bm25_namespace(self.namespace)
        assert ix is not None  # it just found keys
        expanded = rm3_query(terms[0], terms[1], self.store._sparse_rows(keys), scores, df=ix.df, n_docs=len(ix))
        return self.bm25_keys(expanded, n, sorted_k)

    def bm25(self, terms: tuple[np.ndarray, np.ndarray], n: int) -> Ranked:
        return self.store._bm25_found(terms, self.namespace, n, self.known_us, self.t, self.at_now, self.types)

    def graph(self, seeds: list[Loc], n: int) -> Ranked:
        return self.store._graph_found(seeds, self.namespace, n, self.known_us, self.t, self.types)

    def neighbours(self, seeds: list[Loc], n: int) -> Ranked:
        return self.store._neighbours_found(seeds, self.namespace, n, self.known_us, self.t, self.types)


def _hybrid(ctx: _Context, strategy: str, query: str, main: Space, qv: Any,
            terms: tuple[np.ndarray, np.ndarray] | None, enh: dict[str, Any], w: dict[str, float],
            k: int) -> tuple[list[Fused[Loc]], dict[str, Any]]:
    n = 2 * k  # each method asks for 2 x top_k (H3)
    info: dict[str, Any] = {}
    if strategy == "multi_space":
        r = route(query, w)
        w = r.weights
        info["rules"] = r.rules
    methods: dict[str, Callable[[], Ranked]] = {"vector": lambda: ctx.dense(main, qv, n)}
    if terms is not None:
        methods["bm25"] = lambda: ctx.bm25(terms, n)
    got = ctx.run(methods)
    vector = got.get("vector")
    w = _main_say(w, vector[0][1] if vector else None, main, info)
    if strategy == "multi_space" and enh:
        best = got.get("vector", [])
        mode = enhancer_mode(best[0][1] if best else None, main.high, main.low)
        info["enhancer_mode"] = mode
        pool = {loc for ranked in got.values() for loc, _ in ranked}
        extra: dict[str, Callable[[], Ranked]] = {}
        for name, eqv in enh.items():
            sp = ctx.store.schema[name]
            only = pool if (mode == "rerank" or sp.role == "rerank-only") else None
            if only is not None and not only:
                continue
            extra[name] = _bind(ctx, sp, eqv, n, only)
            w.setdefault(name, 0.5 * (0.5 if mode == "add-half" and only is None else 1.0))
        got.update(ctx.run(extra))
    first = rrf(got, w)
    seeds = [f.key for f in first[:GRAPH_SEEDS]]
    expand: dict[str, Callable[[], Ranked]] = {}
    if seeds and w.get("graph", 0) > 0:
        expand["graph"] = lambda: ctx.graph(seeds, n)
    if seeds and w.get("neighbours", 0) > 0:
        expand["neighbours"] = lambda: ctx.neighbours(seeds, n)
    got.update(ctx.run(expand, parallel=False))
    info["weights"] = w
    return rrf(got, w), info


def _pipeline(ctx: _Context, main: Space, qv: Any, terms: tuple[np.ndarray, np.ndarray] | None,
              enh: dict[str, Any], w: dict[str, float], st: dict[str, int],
              k: int) -> tuple[list[Fused[Loc]], dict[str, Any]]:
    """Stages on int64 key arrays (thousands of candidates), objects only for the last few."""
    assert terms is not None
    store = ctx.store
    clock = [time.perf_counter()]

    def lap() -> float:
        clock.append(time.perf_counter())
        return round((clock[-1] - clock[-2]) * 1e3, 3)

    ms_: dict[str, float] = {}
    read = _read_depth(w, st)
    def sparse() -> Found:
        if st["feedback"] > 0:
            return ctx.bm25_feedback(terms, st["sparse"], read, st["feedback"])
        return ctx.bm25_keys(terms, st["sparse"], read)

    recall: dict[str, Callable[[], Found]] = {"bm25": sparse,
                                              "vector": lambda: ctx.dense(main, qv, st["fused"])}
    got = ctx.run(recall)
    bm_keys, bm_scores = _arrays(store, got.get("bm25", []))
    vec_keys, _ = _arrays(store, got.get("vector", []))
    candidates = np.concatenate([bm_keys, vec_keys])  # the dense kernel scores a repeated key once
    sizes = {"sparse": len(bm_keys), "feedback": st["feedback"]}
    ms_["recall"] = lap()
    dense = store._dense_keys(main, qv, candidates, st["dense"]) if len(candidates) else (bm_keys[:0], bm_scores[:0])
    ranked = {"vector": (dense[0][:read], dense[1][:read]), "bm25": (bm_keys[:read], bm_scores[:read])}
    sizes["dense"] = len(dense[0])
    info: dict[str, Any] = {}
    w = _main_say(w, float(dense[1][0]) if len(dense[1]) else None, main, info)
    ms_["dense"] = lap()
    if w.get("graph", 0) > 0 or w.get("neighbours", 0) > 0:
        # the expansions start from the best few fused keys: lists read to `exact_depth` give
        # exactly those, without fusing all ~10,000 candidates twice
        depth = exact_depth([w.get(m, 1.0) for m in ranked], GRAPH_SEEDS)
        top = rrf_arrays({m: (a[:depth], b[:depth]) for m, (a, b) in ranked.items()}, w, top=GRAPH_SEEDS)
        seeds = store._locs(np.array([f.key for f in top], np.int64))
        expand: dict[str, Callable[[], Ranked]] = {}
        if seeds and w.get("graph", 0) > 0:
            expand["graph"] = lambda: ctx.graph(seeds, 2 * k)
        if seeds and w.get("neighbours", 0) > 0:
            expand["neighbours"] = lambda: ctx.neighbours(seeds, 2 * k)
        for name, found in ctx.run(expand, parallel=False).items():
            ranked[name] = _arrays(store, found)
    first = rrf_arrays(ranked, w, top=st["fused"])
    locs = store._locs(np.array([f.key for f in first], np.int64))
    fused = [Fused(loc, f.score, f.methods) for loc, f in zip(locs, first)][: st["fused"]]
    sizes["fused"] = len(fused)
    fused = fused[: st["topics"]]  # topic filter: no topics are stored yet, the best pass through
    sizes["topics"] = len(fused)
    ms_["fuse"] = lap()
    info.update({"stages": sizes, "topic_filter": "no topics yet", "stage_ms": ms_})
    tokens = next(iter(enh.items()), None)
    if tokens is not None and fused:
        sp = store.schema[tokens[0]]
        try:
            ms = store._scan_locations(sp, tokens[1], [f.key for f in fused], len(fused))
        except Exception as exc:  # noqa: BLE001 - the rerank is an enhancement; keep the fused order
            log.warning("MaxSim rerank failed and was skipped: %s", exc)
            ctx.failed["maxsim"] = f"{type(exc).__name__}: {exc}"
            ms = []
        if ms:
            prev = {f.key: f for f in fused}
            rer = rrf({"fused": [(f.key, f.score) for f in fused], "maxsim": ms}, {"fused": 1.0, "maxsim": MAXSIM_WEIGHT})
            out = []
            for r in rer:
                f = prev[r.key]
                f.methods.update({m: v for m, v in r.methods.items() if m == "maxsim"})
                out.append(Fused(r.key, r.score, f.methods))
            fused = out
            info["rerank"] = {"space": sp.name, "weight": MAXSIM_WEIGHT}
    ms_["rerank"] = lap()
    info["weights"] = w
    return fused, info


def _read_depth(w: dict[str, float], st: dict[str, int]) -> int:
    """How deep the pipeline's RRF reads its vector and BM25 lists: past exact_depth no key can
    reach the fused stage's `fused` best, so the lists need no order there. The vector weight
    may still shrink with its match strength, so the bound takes it at full weight in the sum
    and at zero for the heaviest list."""
    others = [w.get(m, 1.0) for m in ("bm25", "graph", "neighbours")]
    depth = exact_depth([*others, w.get("vector", 1.0)], st["fused"], w_max=max(others))
    return min(st["dense"], depth)


def _arrays(store: Store, found: Found) -> tuple[np.ndarray, np.ndarray]:
    """(keys, scores) arrays of a ranked location list (a key array passes through)."""
    if isinstance(found, tuple):
        return found
    return store._keys([loc for loc, _ in found]), np.array([s for _, s in found], np.float64)


def _main_say(w: dict[str, float], best: float | None, main: Space, info: dict[str, Any]) -> dict[str, float]:
    """Scale the vector method's weight by its match strength (C2: 0 at the main space's `low`
    threshold, full at `high`; `best` is the main space's best score); the strength is reported
    in explain."""
    strength = match_strength(best, main.high, main.low)
    info["vector_strength"] = strength
    return {**w, "vector": w.get("vector", 1.0) * strength}


def _bind(ctx: _Context, sp: Space, qv: Any, n: int, only: set[Loc] | None) -> Callable[[], Ranked]:
    """One enhancer space's method (a closure over its own arguments, not the loop's)."""

    def method() -> Ranked:
        return ctx.dense(sp, qv, n, exact=True, only=only)

    return method


def _weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    w = dict(DEFAULT_WEIGHTS)
    for name, value in (weights or {}).items():
        v = float(value)
        if not (v >= 0 and np.isfinite(v)):
            raise ValueError(f"weights[{name!r}] must be finite and >= 0, got {value!r}")
        w[name] = v
    return w


def _stages(stages: Mapping[str, int] | None) -> dict[str, int]:
    out = {}
    for name, value in (stages or {}).items():
        if name not in DEFAULT_STAGES:
            raise ValueError(f"stages has no stage {name!r}; stages are {list(DEFAULT_STAGES)}")
        least = 0 if name == "feedback" else 1
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"stages[{name!r}] must be an int >= {least}, got {value!r}")
        out[name] = int(value)
    return out


def query_terms(sb: SparseBatch) -> tuple[np.ndarray, np.ndarray]:
    """(term ids, counts) of the one query text of a lexical embedding."""
    ids, counts = sb.row(0)
    return np.asarray(ids, np.int32), np.asarray(counts, np.float32)

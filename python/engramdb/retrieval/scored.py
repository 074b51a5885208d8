"""The hybrid strategy (H3, C1-C3) on one scale (retrieval/scales.py): the default search.

1. recall: BM25's `LEX_DEPTH` best and the main space's index's `VEC_DEPTH` best (BM25's alone when
   the main space is made of the text's words, as the default profile's hashing space is: what
   its index finds shares the query's words, and BM25 recalls those deeper; not when the caller
   gave the query's vector, which is not made of its words);
2. score every candidate by both methods exactly (the main space's similarity of the BM25 hits,
   the BM25 score of the vector hits) and take the weighted mean of the scaled scores;
3. expand from the `GRAPH_SEEDS` best: the turns next to a seed in its session and the memories
   up to two typed edges away. An expanded memory's score is the larger of its own match and a
   share of its seed's: NEIGHBOUR_SHARE x the seed's score x how much the turn says next to the
   seed (its idf mass over the seed's, at most 1), or GRAPH_SHARE x the seed's score x the edge
   confidences. So a neighbour or hop never outranks the hit it came from unless it matches the
   query on its own, and a filler turn ("Nice to meet you!") carries little. The share only
   RANKS it: a memory placed by its share (above its own match) reports its own score and the
   hit it came with (`Hit.via`), so a turn that shares nothing with the query never reads as a
   match; the order is the shares'.
A memory longer than a passage (C7) scores in each method as its best passage: BM25 indexes its
passages, and the main space's similarity is the best of its own vector's and its passages'
(index/passage_vectors.py), whose best also join the vector recall. The hit says which passage.
Every stage works on key arrays; only the `fused` best become locations.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..index.passage_vectors import PassageVersion
from ..kernels.sets import unique
from ..storage.view import Loc
from .dense_method import dense_found, rescore_keys
from .fusion import Fused
from .graph_method import GRAPH_SEEDS, graph_found
from .lexical_method import bm25_of_keys, bm25_parts, namespace_index, sparse_rows
from .neighbours import neighbour_pairs
from .query_context import QueryContext
from .run import Run
from .scales import combine, lexical_ideal, lexical_scaled, semantic_scaled, stretched_ideal
from .session_support import SESSION_SHARE, session_support

LEX_DEPTH = 1_000  # BM25 candidates scored by both methods
VEC_DEPTH = 100  # the vector index's candidates scored by both methods
# The main space's say in the weighted mean, against BM25's 1 (times the caller's "vector" weight).
# A similarity's scale is the space's generic thresholds, and the memories of one conversation sit
# high on it for any question about it (MiniLM on LoCoMo: the median question-turn cosine is 0.26,
# the top decile 0.43, an evidence turn's median 0.45, against low 0.3 / high 0.6), while BM25's
# scale is anchored on the query's own words. At an equal say MiniLM lowered recall on every view
# (bench/RESULTS.md); at a quarter it adds what BM25 misses without reordering BM25's good hits.
SEMANTIC_SAY = 0.25
NEIGHBOUR_SHARE = 0.7  # of its seed's score a neighbouring turn carries (at most)
GRAPH_SHARE = 0.5  # of its seed's score a memory an edge away carries (x the edge confidence)


def scored_recall(run: Run) -> None:
    """Both methods' candidates, each scored by both, combined on one scale."""
    ctx, terms, w = run.ctx, run.terms, run.w
    methods: dict[str, Callable[[], tuple[np.ndarray, ...]]] = {}
    if terms is not None and w.get("bm25", 1.0) > 0:
        methods["bm25"] = lambda: bm25_parts(ctx, terms, max(LEX_DEPTH, run.k), sorted_k=0)
    vector = run.qv is not None and w.get("vector", 1.0) > 0
    deferred = vector and bool(methods) and _words_only(ctx, run)
    if vector and not deferred:
        methods["vector"] = lambda: _vector_keys(ctx, run)
    got = ctx.run(methods)
    if deferred and len(got.get("bm25", ((),))[0]) < run.k:  # BM25 failed or found fewer than asked: the index fills
        methods["vector"] = lambda: _vector_keys(ctx, run)
        got.update(ctx.run({"vector": methods["vector"]}))
    bm_keys, bm_raw, bm_parts = got.get("bm25", (np.empty(0, np.int64), np.empty(0), np.empty(0, np.int32)))
    vec_keys = got.get("vector", (np.empty(0, np.int64), np.empty(0)))[0]
    keys = unique(np.concatenate([np.asarray(bm_keys, np.int64), np.asarray(vec_keys, np.int64)]))
    s = _Scorer(run, failed=set(methods) - set(got))
    scored = s.score(keys, known_bm25=(np.asarray(bm_keys, np.int64), np.asarray(bm_raw, np.float64),
                                       np.asarray(bm_parts, np.int64)))
    share = SESSION_SHARE * float(run.w.get("sessions", 1.0))
    if share > 0:
        scored.support(share * session_support(ctx.view, scored.keys, scored.own))
    run.scored = scored
    # the says that ranked: the two methods' in the weighted mean, the expansions' on/off
    run.info["scales"] = s.scales()
    run.info["weights"] = {**s.weights, **{m: float(run.w.get(m, 1.0)) for m in ("neighbours", "graph", "sessions")}}
    run.sizes.update({"bm25": len(bm_keys), "vector": len(vec_keys), "candidates": len(keys)})
    run.lap("recall")


def expand_scored(run: Run) -> None:
    """Neighbouring turns and typed-edge hops from the best candidates (see the module docstring)."""
    scored: _Scored = run.scored
    ctx, w = run.ctx, run.w
    seeds = scored.best(GRAPH_SEEDS)
    extra: dict[int, tuple[float, str, int, float]] = {}  # key -> (inherited score, method, seed key, share)
    view = ctx.view
    if seeds and w.get("neighbours", 1.0) > 0:
        pairs = neighbour_pairs(ctx, view.locs(np.array(seeds, np.int64)))
        if pairs:
            near = view.keys([loc for _, loc in pairs])
            mass = _idf_mass(ctx, np.concatenate([np.array(seeds, np.int64), near]))
            seed_mass, said = mass[: len(seeds)], mass[len(seeds):]
            for (i, _), key, m in zip(pairs, near.tolist(), said.tolist()):
                share = min(1.0, m / seed_mass[i]) if seed_mass[i] > 0 else 0.0
                _offer(extra, key, NEIGHBOUR_SHARE * share * scored.score_of(seeds[i]), "neighbours", seeds[i], share)
    if seeds and w.get("graph", 1.0) > 0 and view.edge_rows:
        for seed in seeds:
            loc = view.locs(np.array([seed], np.int64))[0]
            for (hop_loc, conf) in graph_found(ctx, [loc], 2 * run.k):
                key = int(view.keys([hop_loc])[0])
                _offer(extra, key, GRAPH_SHARE * conf * scored.score_of(seed), "graph", seed, conf)
    if extra:
        scored.add_expanded(extra)
    run.lap("expand")


def finish_scored(run: Run) -> None:
    """The `fused` best as located, explained hits (the score is the calibrated one)."""
    scored: _Scored = run.scored
    top = scored.order(max(run.k, run.st["fused"]))
    locs = run.ctx.view.locs(scored.keys[top])
    if run.ctx.plan.explain:
        run.fused = [Fused(loc, float(scored.final[i]), scored.methods(i), scored.detail(i), *scored.placed_by(i))
                     for loc, i in zip(locs, top.tolist())]
    else:  # the hits' details (their passages) are made for the k hits only, by _fused_hits
        at = dict(zip(locs, top.tolist()))
        run.fused = [Fused(loc, float(scored.final[i]), {}, {}, *scored.placed_by(i)) for loc, i in at.items()]
        # only the passage is read of a hit that is not explained (search.py's _fused_hits)
        run.detail_of = lambda loc: {"passage": scored.passage(at[loc])} if loc in at else {}
    run.sizes["fused"] = len(run.fused)
    run.info.update({"stages": run.sizes, "stage_ms": run.stage_ms})
    run.lap("fuse")


# ---------------------------------------------------------------------------------------- helpers
def _vector_keys(ctx: QueryContext, run: Run) -> tuple[np.ndarray, np.ndarray]:
    """The main space's best memories by their own vectors, and by their passages' (C7)."""
    n = max(VEC_DEPTH, run.k)
    found, _ = dense_found(ctx, run.main, run.qv, n)
    locs: list[Loc] = [(si, row) for _, si, row in found]
    keys, scores = ctx.view.keys(locs), np.array([s for s, _, _ in found], np.float64)
    pv = _passage_version(ctx, run)
    if pv is not None and pv.size:
        mask = ctx.view.key_mask(ctx.namespace, ctx.known_us, ctx.t, ctx.at_now, ctx.types)
        pk, ps = pv.topk(np.asarray(run.qv)[0], mask, n)
        keys, scores = np.concatenate([keys, pk]), np.concatenate([scores, ps])
    return keys, scores


def _words_only(ctx: QueryContext, run: Run) -> bool:
    """Whether the main space's embedder makes its vectors of the text's words alone (the default
    profile's hashing space: `words_only`): what its index would recall shares the query's words,
    and BM25 recalls those deeper, so its index is not searched when BM25 recalls (step 1 of the
    module docstring), unless BM25 failed or found fewer memories than the search asks for (a query
    of words no memory holds: a misspelt word still shares character n-grams); its similarity still
    scores every candidate. A space the caller fills, or a model's (MiniLM, the static table),
    recalls by meaning: its index is searched. So is any space's when the caller gave the query's
    vector (query_vector=: their own model's, or another memory's): it is not made of the query's
    words, BM25 cannot recall what it is near, and only the index can (before this check the
    hybrid dropped a memory the dense-only search ranked first, when BM25 found k others by a word)."""
    if run.vector_given:
        return False
    return bool(getattr(ctx.embedders.get(run.main.name), "words_only", False))


def _passage_version(ctx: QueryContext, run: Run) -> PassageVersion | None:
    """The main space's passage vectors as of the snapshot (None when it has none: a space the
    caller embeds, or not dense)."""
    if run.main.kind != "dense" or run.main.metric != "cosine":
        return None
    ix = ctx.indexes.passages(run.main, ctx.view)
    return ix.sync(ctx.view) if ix is not None else None


def _values_at(src_keys: np.ndarray, src_values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The value `src_keys` give each of `keys` (NaN where a key is not among them)."""
    out = np.full(len(keys), np.nan)
    if len(src_keys):
        order = np.argsort(src_keys)
        pos = np.minimum(np.searchsorted(src_keys, keys, sorter=order), len(order) - 1)
        hit = src_keys[order[pos]] == keys
        out[hit] = np.asarray(src_values, np.float64)[order[pos[hit]]]
    return out


def _offer(extra: dict[int, tuple[float, str, int, float]], key: int, score: float, method: str, seed: int,
           share: float) -> None:
    if score > extra.get(key, (-1.0,))[0]:
        extra[key] = (score, method, seed, share)


def _idf_mass(ctx: QueryContext, keys: np.ndarray) -> np.ndarray:
    """The summed idf of each memory's distinct terms: how much it says (0 without a lexical space)."""
    ix = namespace_index(ctx)
    out = np.zeros(len(keys))
    if ix is None or ctx.lexical is None:
        return out
    rows = [terms for terms, _ in sparse_rows(ctx, keys)]
    if not rows:
        return out
    # one idf lookup for every row's terms (a lookup per row, a seed or a turn next to one, walked
    # the index's chunks ~15 times a search); each row's sum is over its own slice, as it was
    idf = ix.idf(np.concatenate(rows).astype(np.int32))
    start = 0
    for i, terms in enumerate(rows):
        end = start + len(terms)
        if end > start:
            out[i] = float(idf[start:end].sum())
        start = end
    return out


class _Scorer:
    """Scores keys by both methods on the one scale."""

    def __init__(self, run: Run, failed: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.run = run
        ctx = run.ctx
        self.ideal = lexical_ideal(namespace_index(ctx), *run.terms) if run.terms is not None else 0.0
        self.top: float | None = None  # the semantic scale's top: the space's high, or the best above it
        says = {"bm25": float(run.w.get("bm25", 1.0)) if run.terms is not None else 0.0,
                "vector": SEMANTIC_SAY * float(run.w.get("vector", 1.0)) if run.qv is not None else 0.0}
        self.weights = {m: v for m, v in says.items() if v > 0 and m not in failed}

    def scales(self) -> dict[str, object]:
        """The scales as they ended (the lexical and semantic tops set by the candidates)."""
        sp = self.run.main
        return {"lexical_ideal": round(self.ideal, 4),
                "semantic": {"space": sp.name, "low": sp.low, "high": sp.high, "top": self.top}}

    def score(self, keys: np.ndarray,
              known_bm25: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> _Scored:
        run, ctx = self.run, self.run.ctx
        raw: dict[str, np.ndarray] = {}
        parts: dict[str, np.ndarray] = {}  # per method the passage each key scored by (-1: its own vector)
        if "bm25" in self.weights and run.terms is not None:
            bm = _values_at(*known_bm25[:2], keys) if known_bm25 is not None else np.full(len(keys), np.nan)
            part = _values_at(known_bm25[0], known_bm25[2], keys) if known_bm25 is not None else bm.copy()
            missing = np.isnan(bm)
            if missing.any():
                bm[missing], part[missing] = bm25_of_keys(ctx, run.terms, keys[missing])
            raw["bm25"], parts["bm25"] = bm, part.astype(np.int64)
            if len(bm) and known_bm25 is not None:  # the recall's own candidates set the scale's top
                self.ideal = stretched_ideal(self.ideal, bm)
        if "vector" in self.weights and len(keys):
            vec = _values_at(*rescore_keys(ctx, run.main, run.qv, keys, len(keys)), keys)
            part = np.full(len(keys), -1, np.int64)
            pv = _passage_version(ctx, run)
            if pv is not None and pv.size:
                best, best_part = pv.best(np.asarray(run.qv)[0], keys)
                better = best > vec  # NaN (no passages) is never better
                vec[better], part[better] = best[better], best_part[better]
            raw["vector"], parts["vector"] = vec, part
        return _Scored(keys, raw, parts, self)

    def scaled(self, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = {}
        if "bm25" in raw:
            out["bm25"] = lexical_scaled(raw["bm25"], self.ideal)
        if "vector" in raw:
            if self.top is None and len(raw["vector"]):  # the recall's own candidates set the scale's top
                self.top = max(float(self.run.main.high), float(np.max(raw["vector"])))
            out["vector"] = semantic_scaled(raw["vector"], self.run.main, top=self.top)
        return out


class _Scored:
    """Candidates with their raw and scaled method scores, own score and final score."""

    def __init__(self, keys: np.ndarray, raw: dict[str, np.ndarray], parts: dict[str, np.ndarray],
                 scorer: _Scorer) -> None:
        self.scorer = scorer
        self.keys = np.asarray(keys, np.int64)
        self.raw = raw
        self.parts = parts
        self.scaled = scorer.scaled(raw)
        self.own = combine(self.scaled, scorer.weights) if self.scaled else np.zeros(len(keys))
        self.final = self.own.copy()
        self.supported = np.zeros(len(keys))  # what the candidate's session adds to its rank (session_support)
        self.expanded: dict[int, tuple[float, str, int, float]] = {}  # index -> (inherited, method, seed, share)
        self._pos = dict(zip(self.keys.tolist(), range(len(self.keys))))  # key -> index (~1,000 keys a search)
        self._ranks: dict[str, np.ndarray] | None = None

    def order(self, n: int | None = None) -> np.ndarray:
        """Indices best first: final score, then the raw BM25 score, the raw similarity, the key
        (so the order is total and deterministic); the first `n` only when given."""
        at = np.arange(len(self.keys))
        if n is not None and 0 < n < len(at) and not np.isnan(self.final).any():
            # the n best are among those scoring at least the n-th best final score: only they are
            # sorted (a search asks for its 100 best and 5 seeds of ~1,000 candidates)
            at = np.flatnonzero(self.final >= np.partition(self.final, len(at) - n)[len(at) - n])
        zero = np.zeros(len(self.keys))
        keys = (self.keys, -self.raw.get("vector", zero), -self.raw.get("bm25", zero), -self.final)
        ranked = at[np.lexsort(tuple(k[at] for k in keys))]
        return ranked if n is None else ranked[:n]

    def best(self, n: int) -> list[int]:
        """The keys of the n best that match at all."""
        return [int(self.keys[i]) for i in self.order(n) if self.final[i] > 0]

    def support(self, extra: np.ndarray) -> None:
        """Rank each candidate by its own score plus what its session adds (`extra`, one per key)."""
        self.supported = np.asarray(extra, np.float64)
        self.final = self.own + self.supported

    def score_of(self, key: int) -> float:
        return float(self.final[self._pos[key]])

    def add_expanded(self, extra: dict[int, tuple[float, str, int, float]]) -> None:
        new = np.array([k for k in extra if k not in self._pos], np.int64)
        if len(new):
            more = self.scorer.score(new)
            self.keys = np.concatenate([self.keys, more.keys])
            self.raw = {m: np.concatenate([self.raw[m], more.raw[m]]) for m in self.raw}
            self.parts = {m: np.concatenate([self.parts[m], more.parts[m]]) for m in self.parts}
            self.scaled = {m: np.concatenate([self.scaled[m], more.scaled[m]]) for m in self.scaled}
            self.own = np.concatenate([self.own, more.own])
            self.final = np.concatenate([self.final, more.own])
            self.supported = np.concatenate([self.supported, np.zeros(len(more.own))])
            first = len(self.keys) - len(more.keys)  # the new keys follow: the map is extended, not made again
            self._pos.update(zip(more.keys.tolist(), range(first, len(self.keys))))
            self._ranks = None  # ranks are among every candidate
        for key, (inherited, method, seed, share) in extra.items():
            i = self._pos[key]
            self.final[i] = max(self.final[i], inherited)
            self.expanded[i] = (inherited, method, seed, share)

    def placed_by(self, i: int) -> tuple[int | None, float | None]:
        """(the seed's key, its own score) when candidate i ranks by its share of a seed's score
        rather than by its own match; (None, its own score) when its session's support raised its
        rank; (None, None) when its own match alone ranks it."""
        if self.final[i] > self.own[i]:
            if i in self.expanded and self.expanded[i][0] >= self.final[i]:
                return self.expanded[i][2], float(self.own[i])
            return None, float(self.own[i])
        return None, None

    def methods(self, i: int) -> dict[str, tuple[int, float]]:
        """Per method its (rank among the candidates, raw score): every candidate is scored by
        both methods; an expansion as (1, the score it inherited)."""
        if self._ranks is None:
            self._ranks = {}
            for m, raw in self.raw.items():
                r = np.empty(len(raw), np.int64)
                r[np.argsort(-raw, kind="stable")] = np.arange(1, len(raw) + 1)
                self._ranks[m] = r
        out: dict[str, tuple[int, float]] = {}
        for m, raw in self.raw.items():
            out[m] = (int(self._ranks[m][i]), float(raw[i]))
        if i in self.expanded:
            inherited, method, _, _ = self.expanded[i]
            out[method] = (1, float(inherited))
        return out

    def passage(self, i: int) -> int | None:
        """The passage of the method that gave candidate i most of its own score (C7), None when
        no method scored a passage of it."""
        w = self.scorer.weights
        said = {m: (w.get(m, 1.0) * float(v[i]), float(self.raw[m][i])) for m, v in self.scaled.items()
                if int(self.parts[m][i]) >= 0 and self.raw[m][i] > 0}
        return int(self.parts[max(said, key=lambda m: said[m])][i]) if said else None

    def detail(self, i: int) -> dict[str, object]:
        """What explain shows of one hit's score: each method's scaled score, its own score, and
        the expansion it inherited from."""
        out: dict[str, object] = {"scaled": {m: round(float(v[i]), 4) for m, v in self.scaled.items()},
                                  "own": round(float(self.own[i]), 4), "session": round(float(self.supported[i]), 4)}
        passage = self.passage(i)
        if passage is not None:
            out["passage"] = passage
        if i in self.expanded:
            inherited, method, seed, share = self.expanded[i]
            out["expanded"] = {"method": method, "from_key": int(seed), "share": round(float(share), 4),
                               "inherited": round(float(inherited), 4)}
        return out


__all__ = ["expand_scored", "finish_scored", "scored_recall"]

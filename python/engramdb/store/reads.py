"""The read verbs (`get`, `edges`, `len`, `search`), shared by a store and its snapshots.

A `Store` reads the snapshot current at each call; a `Snapshot` (`Store.admin.snapshot()`) reads the one
it was taken from, whatever is written after: several reads that must agree with each other (a
search, then `get` of its hits, then their edges) take one snapshot and read it.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from .._requests_first import request
from ..graph import links
from ..index.registry import Indexes
from ..model.edge import Edge
from ..model.hit import Hit, Hits, SearchStats
from ..model.memory import Memory, micros
from ..model.tuning import Tuning
from ..retrieval.plan import SearchPlan, check_request
from ..retrieval.search import run_search
from ..retrieval.types import TypeClusters, cluster_types, namespace_type_names
from ..spaces.protocol import Embedder, Embedding
from ..spaces.schema import Schema
from ..storage.view import View
from .usage import DEEPER, Usage


class Reads(ABC):
    """The read verbs over `_view()`, the snapshot a read uses (see the module docstring)."""

    schema: Schema
    embedders: dict[str, Embedder]
    tuning: Tuning
    _indexes: Indexes
    _usage: Usage | None = None  # the access log and ratings (E1-E6)
    _types_cache: tuple[frozenset[str], TypeClusters] | None = None  # the type clusters of these names (H6)
    # repeated searches on one snapshot (K5): (id, score, archived, passage, via, Memory.kept()) per hit
    _search_cache: OrderedDict[Any, tuple[tuple[tuple[Any, ...], SearchStats], int, int, bool]] | None = None
    _search_snapshot: tuple[int, int] | None = None  # (serial, generation) of the searches kept

    @abstractmethod
    def _view(self) -> View:
        """The snapshot this read uses: the store's current one, or a snapshot's own."""

    def get(self, id: str, *, include_forgotten: bool = False) -> Memory | None:
        """The current version of a memory, or None (unknown, or forgotten unless asked). An id
        that is not a str raises TypeError naming it."""
        if not isinstance(id, str):
            raise TypeError(f"id must be a str, got {type(id).__name__} {id!r:.80}")
        return self._view().get(id, include_forgotten=include_forgotten)

    def edges(self, id: str, *, direction: str = "out", type: str | None = None, as_of: datetime | None = None,
              include_forgotten: bool = False) -> list[Edge]:
        """The live edges of a memory: `direction` "out" (id is src), "in" (id is dst) or "both".

        Edges to a forgotten memory are hidden unless asked; `as_of` keeps edges valid then.
        """
        return links.edges_of(self._view(), id, direction=direction, type=type, as_of=as_of,
                              include_forgotten=include_forgotten)

    def __len__(self) -> int:
        """Memories with a current version that is not forgotten."""
        return self._view().live_count()

    @request
    def search(
        self,
        query: str | np.ndarray | Embedding,
        *,
        namespace: str,
        k: int = 10,
        space: str | None = None,
        strategy: str | None = None,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        now: datetime | None = None,
        types: str | Iterable[str] | None = None,
        explain: bool = False,
        weights: Mapping[str, float] | None = None,
        query_vector: np.ndarray | None = None,
        recency: bool | None = None,
        stages: Mapping[str, int] | None = None,
        min_score: float = 0.0,
        session_id: str | None = None,
        elo_weight: float = 0.0,
        explore: float = 0.0,
        expand_types: bool = True,
        log: bool = True,
        topics: bool = False,
        hypotheses: bool = False,
    ) -> Hits:
        """The k memories of a namespace that best match a query, filtered inside every method by
        time and type (H4). Returns `Hits`: a list of `Hit`, best first, with the search's `stats`.

        Scores: every hit's `score` is in [0, 1] on one absolute scale (retrieval/scales.py):
        each method's evidence is mapped to [0, 1] (lexical: the share of the query's term weight
        the memory holds, 1 = every query term once in a memory of average length; semantic: the
        space's similarity, 0 at its `low` threshold, 1 at its `high`) and a hit scores the
        weighted mean over the methods its strategy runs. An expanded memory (the turn next to a
        hit, a memory an edge away) RANKS by the larger of its own match and a share of its seed's,
        but its score is always its own match: when the share placed it, `hit.via` names the hit it
        came with (a turn that shares nothing with the query scores about 0, not like a match).
        A candidate that matches on its own also ranks by a third of the best match among the other
        candidates of its session (what a session tells is spread over its turns): for the order
        only, its score stays its own match (explain: "session"). About 0.2 is a weak match, 0.5 a good one. `min_score` leaves out hits whose score is under
        it. The raw scores (BM25, cosine, the rank-fused score) are in `explain` ("ranked": the
        score the order used).

        Strategies:
        - None (the default): "hybrid", the best measured across conversation sets ("dense_only"
          for a query given as a vector).
        - "hybrid" (H3): BM25 and the main space's index recall candidates, each scored by both
          methods on the one scale; then the neighbouring turns and typed-edge hops of the best.
        - "dense_only" (C1): the main dense space alone, through its index (tree or HNSW) when the
          namespace has one, else an exact scan; "exact", "tree", "hnsw" force one.
        - "bm25": BM25 over the content alone (H1).
        - "rrf": dense + BM25 + graph and neighbour expansion fused by weighted reciprocal rank
          (the hybrid of 0.1; its score is the fused score over the best it could be).
        - "multi_space" (C1): rrf plus the enhancer spaces, routed by the query's intent and the
          strong/weak main-match rule (C2).
        - "pipeline" (C1): sparse recall -> dense -> RRF -> topic filter (when topics exist) ->
          MaxSim rerank; stage sizes in `stages` ("sparse", "dense", "fused", "topics", "feedback").

        `as_of` (valid time): memories true at that time. `known_at` (system time): what the store
        believed then, older versions included. Neither: current memories only.

        Dates the query names ("on May 3, 2023", "in June", "last week", "two days ago":
        retrieval/dates.py) rank the memories that started to hold then (`valid_from`) a little
        higher, for the order only: each hit's score stays its own match, and nothing is left out.
        `now` (an aware datetime): when the question is asked, the clock "last week", "yesterday"
        and a date without a year are read against, and recency ages (default: `as_of` when given,
        else the clock). It is not a filter: to see the store as it was then, pass `as_of` too. `types`: only
        memories of these memory_type values (a str is one name), and of up to 5 neighbour types of each (H6: names at
        cosine >= 0.80 in the main space, in the same DBSCAN cluster; `expand_types=False` keeps
        exactly the names given; explain shows the expansion under "types"). `weights`: per method ("vector", "bm25", "graph",
        "neighbours", "sessions": the hybrid's session support, the store's space names; 0 turns one off; any other name is
        refused). `query_vector`: the main space's
        query vector when the caller already has it (the text still feeds BM25 and the other
        spaces). `recency`: apply the C3 recency factors (default on for multi_space and
        pipeline). `explain`: each hit carries why it ranked (methods, raw and scaled scores).

        Importance (E6): each hit carries its memory's `elo` and `tier`, learned from use (each
        `feedback` moves them at once); the order stays by relevance unless `elo_weight` (in
        [0, 1]) blends the ELO in. `explore` (in [0, 1), e.g. 0.15) gives that share of the k places
        to memories below the cut, by Thompson sampling over their feedback (`hit.explored`). A
        writable store logs the search (E1): `Hits.query_id` names it for `feedback`;
        `session_id` is logged with it; `log=False` leaves it out of the log (a tool's own
        searches that no user asked).

        `topics=True` (strategy "pipeline"): its topic stage keeps the candidates in the query's
        3 nearest topics of the namespace (C4, `topics(namespace)`) or in none; off by default
        (bench/RESULTS.md: it did not raise recall). `hypotheses=True` lets graph expansion walk
        the edges `dream` proposed (reason "dream: ..."), which it otherwise leaves alone.
        """
        types = check_request(query, namespace=namespace, session_id=session_id, types=types,
                              query_vector=query_vector)
        for name, v, hi in (("elo_weight", elo_weight, 1.0), ("explore", explore, 0.99)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= hi:
                raise ValueError(f"{name} must be a number in [0, {hi:g}], got {v!r}")
        deeper = k * DEEPER if (elo_weight > 0 or explore > 0) and isinstance(k, int) and k > 0 else k
        expansion: dict[str, list[str]] = {}
        if types is not None and expand_types:
            expansion = self._type_clusters(namespace).expand(types, self._embed_names)
            types = list(dict.fromkeys([*types, *(n for near in expansion.values() for n in near)]))
        plan = SearchPlan.build(self.schema, namespace=namespace, k=deeper, space=space, strategy=strategy,
                                as_of=as_of, known_at=known_at, types=types, explain=explain, weights=weights,
                                recency=recency, stages=stages, min_score=min_score, text=isinstance(query, str),
                                now=now)
        if hypotheses:
            plan = dataclasses.replace(plan, hypotheses=True)
        if topics:
            if plan.strategy != "pipeline":
                raise ValueError(f"topics=True is the pipeline's topic stage: pass strategy='pipeline', "
                                 f"got strategy={plan.strategy!r}")
            topic_of, centroids = self._topic_map(namespace)
            plan = dataclasses.replace(plan, topic_of=topic_of, topic_centroids=centroids)
        view = self._view()
        key = None if explain or topics or not self.tuning.search_cache else _cache_key(view, plan, query, query_vector)
        cache = self._search_cache
        if cache is None:  # never put back: a search on another thread may have replaced it meanwhile
            cache = self._search_cache = OrderedDict()
        now_us = time.time_ns() // 1_000
        entry = cache.get(key) if key is not None else None
        # a kept search holds for a clock in [made at, until): a clock stepped back (NTP, a restored
        # VM) before it ran must not see what was true later (the key masks' rule, storage/filters.py);
        # one about "now" also ends when the clock passes the namespace's next validity boundary
        # after it ran: found here, on reuse (an agent's loop writes between searches, so most
        # searches never meet their snapshot again: finding it at each cost 1-2 ms at 100K)
        hit = entry[0] if entry is not None and entry[2] <= now_us < entry[1] and (
            not entry[3] or now_us < _next_boundary(view, namespace, entry[2])) else None
        if hit is not None:
            # each caller gets its own copies of the memories' dicts (Memory is frozen, its dicts are not)
            kept, kept_stats = hit
            hits = Hits([Hit(i, score, Memory.from_kept(m), None, archived, passage, via=via)
                         for i, score, archived, passage, via, m in kept],
                        dataclasses.replace(kept_stats, cached=True, seconds=0.0))
        else:
            hits = run_search(plan, view, self._indexes, self.embedders, self.tuning, query, query_vector)
            if key is not None:  # kept as copies (the caller may edit what it was given) until "now" moves
                # past the namespace's next validity boundary (a memory that starts or stops holding)
                until = now_us + CACHE_SECONDS * 1_000_000  # recency factors age with the clock
                if plan.now_us is None:  # "yesterday", "in June" were read on the clock's day (UTC)
                    until = min(until, (now_us // _DAY_US + 1) * _DAY_US)
                # as plain tuples, which the garbage collector stops tracking: 256 searches'
                # Hit and Memory objects made its full collections tens of ms (a search's p95 x 1.3)
                kept = tuple((h.id, h.score, h.archived, h.passage, h.via, h.memory.kept()) for h in hits)
                kept_for = self._search_snapshot
                if key[:2] != kept_for and kept_for is not None and key[1] < kept_for[1]:
                    pass  # a slow search of an older snapshot, ended after a newer one's were kept: not kept
                else:
                    if key[:2] != kept_for:
                        # the entries of an earlier snapshot (serial, generation) dropped: a store's reads
                        # only move on to later ones, so none can be met again; kept to the cap, an agent's
                        # loop (a write each turn) held 256 dead searches, which the garbage collector
                        # promoted to its oldest generation (~7 objects a turn). A new dict, not clear():
                        # a search on another thread may still be trimming the old one
                        self._search_snapshot = key[:2]
                        self._search_cache = cache = OrderedDict()
                    cache[key] = ((kept, hits.stats), until, now_us, plan.as_of_us is None)
                    if len(cache) > self.tuning.search_cache:
                        cache.popitem(last=False)
        if explain and expansion:
            for h in hits:
                if h.explain is not None:
                    h.explain["types"] = {"asked": list(expansion), "expanded": expansion}
        if self._usage is None:
            return hits if deeper == k else Hits(hits[:k], hits.stats)
        return self._usage.finish(hits, query=query, namespace=namespace, session_id=session_id, k=k,
                                  elo_weight=float(elo_weight), explore=float(explore), log=log)


    def _topic_map(self, namespace: str) -> tuple[dict[str, int], np.ndarray]:
        raise ValueError("topics=True needs a store (a snapshot has no topics)")

    def _type_clusters(self, namespace: str | None = None) -> TypeClusters:
        view = self._view()
        names = frozenset(n for seg in view.segments for n in seg.type_names()) if namespace is None \
            else namespace_type_names(view, namespace)  # a search's: its namespace's names only
        cached = self._types_cache
        if cached is None or cached[0] != names:
            cached = self._types_cache = (names, cluster_types(sorted(names), self._embed_names))
        return cached[1]

    def _embed_names(self, names: Sequence[str]) -> np.ndarray:
        emb = self.embedders.get(self.schema.main)
        if emb is None:
            return np.zeros((len(names), 1))
        return np.asarray(emb.embed(list(names)), np.float64)


CACHE_SECONDS = 60  # the longest a cached answer is reused
_DAY_US = 86_400 * 1_000_000
_VIEW_SERIALS = itertools.count()  # a number per snapshot a search cache has seen (thread-safe in CPython)


def _cache_key(view: View, plan: SearchPlan, query: Any, query_vector: np.ndarray | None) -> Any:
    """What makes two searches the same: the snapshot (a write makes the next generation, so a write
    invalidates every entry), the plan and the query."""
    def frozen(x: Any) -> Any:
        return tuple(sorted(x.items())) if isinstance(x, Mapping) else tuple(sorted(x)) if isinstance(
            x, (set, frozenset)) else x

    q = query if isinstance(query, str) else np.asarray(query).tobytes()
    qv = None if query_vector is None else np.asarray(query_vector).tobytes()
    fields = tuple(frozen(getattr(plan, f.name)) for f in dataclasses.fields(plan))
    # the snapshot by a serial number of its own, not id(view): a view freed as soon as the next
    # write replaces it can leave its address to a later view (a purge's, a compaction's) whose
    # generation need not differ
    serial = view.derived.get("search_cache_serial")
    if serial is None:
        serial = view.derived.setdefault("search_cache_serial", next(_VIEW_SERIALS))
    return (serial, view.generation, fields, q, qv)


def _next_boundary(view: View, namespace: str, now_us: int) -> int:
    """The first moment after `now_us` at which a memory or an edge of the namespace starts or stops
    being valid (what a search about "now" depends on: its filters, and the graph stage's walk
    over edges valid then). The moments are gathered once per snapshot and the least one past
    `now_us` taken per call: sorting them (np.unique) cost 5 ms at 100,000 memories, and an agent's
    loop makes a new snapshot at every turn."""
    key = f"bounds:{namespace}"
    bounds = view.derived.get(key)
    if bounds is None:
        parts = []
        for si in range(len(view.segments)):
            mine = view.namespace_mask(si, namespace)
            if mine is not None:
                parts += [view.row_array(si, "valid_from")[mine], view.row_array(si, "valid_until")[mine]]
        edge_times = [micros(t) for e in view.live_edges() if e.namespace == namespace
                      for t in (e.valid_from, e.valid_until) if t is not None]
        parts.append(np.asarray(edge_times, np.int64))
        bounds = view.derived[key] = np.concatenate(parts)
    later = bounds[bounds > now_us]
    return int(later.min()) if len(later) else int(np.iinfo(np.int64).max)


class Snapshot(Reads):
    """The store as it was at one moment: reads from it agree with each other, whatever is
    written meanwhile. Cheap to take (nothing is copied); it keeps the files it reads mapped, so
    drop it when done."""

    def __init__(self, view: View, schema: Schema, embedders: dict[str, Embedder], tuning: Tuning,
                 indexes: Indexes, usage: Usage | None = None) -> None:
        self._snapshot = view
        self.schema, self.embedders, self.tuning, self._indexes = schema, embedders, tuning, indexes
        self._usage = usage

    def _view(self) -> View:
        return self._snapshot

    @property
    def generation(self) -> int:
        """Which write this snapshot follows (each write makes the next generation)."""
        return self._snapshot.generation

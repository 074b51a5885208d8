"""A search plan: `Store.search`'s arguments checked once and held as plain data.

The plan says what a search will do (its strategy's stages, filters, sizes and weights) before
anything runs; the executor (retrieval/search.py) runs it against one snapshot, and explain and
the search statistics report from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..model import checks
from ..model.memory import as_utc, micros
from ..spaces.protocol import SparseBatch, TokenBatch
from ..spaces.schema import Schema
from .fusion import DEFAULT_WEIGHTS

DENSE_STRATEGIES = frozenset({"exact", "dense_only", "tree", "hnsw"})
FUSED_STRATEGIES = frozenset({"bm25", "hybrid", "rrf", "multi_space", "pipeline"})
# what search() runs when no strategy is named: the best measured across conversation sets
# (bench/RESULTS.md "Retrieval that generalises")
DEFAULT_STRATEGY = "hybrid"
# "feedback": how many of a first BM25 pass's best hits expand the sparse recall's query (RM3,
# retrieval/feedback.py; FB_DOCS = 10 is the usual setting); off by default: at 100,000 memories
# it adds ~1-2 ms (the expanded query's postings, a fuller candidate set) to a ~7 ms pipeline,
# for +1-2 points of LoCoMo recall@10 (bench/RESULTS.md)
DEFAULT_STAGES = {"sparse": 10_000, "dense": 1_000, "fused": 100, "topics": 50, "feedback": 0}


def check_request(query: Any, *, namespace: Any, session_id: Any, types: Any,
                  query_vector: Any = None) -> list[str] | None:
    """Check what a search takes from its caller before anything uses it (the query, namespace,
    session and type names reach the access log's buffer, which every later search, checkpoint and
    close writes): returns `types` as a list (a str is one type name), or None.

    `query` must be text or a vector (TypeError otherwise); text must not be empty (unless
    `query_vector` gives the vector) and, like every name, must encode as UTF-8 (ValueError)."""
    if isinstance(query, str):
        checks.utf8("query", query, ValueError)
        if not query.strip() and query_vector is None:
            raise ValueError(f"query is empty ({query!r}): give the text to search for, or a vector")
    elif not isinstance(query, (np.ndarray, SparseBatch, TokenBatch, list, tuple)):
        raise TypeError(f"query must be text (a str) or a vector (a numpy array, or a SparseBatch / TokenBatch "
                        f"for such a space), got {type(query).__name__} {query!r:.80}")
    if isinstance(namespace, str):
        checks.utf8("namespace", namespace, ValueError)
    if session_id is not None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a string or None, got {type(session_id).__name__} {session_id!r:.80}")
        checks.utf8("session_id", session_id, ValueError)
    if types is None:
        return None
    names = [types] if isinstance(types, str) else list(types) if isinstance(types, (list, tuple, set, frozenset)) \
        else None
    if not names or not all(isinstance(t, str) and t for t in names):
        raise ValueError(f"types must be a memory_type name or a non-empty list of them, got {types!r:.200}")
    for t in names:
        checks.utf8("types", t, ValueError)
    return names


@dataclass(frozen=True)
class SearchPlan:
    """What one search will do (see the module docstring)."""

    strategy: str
    namespace: str
    k: int
    space: str  # the main space of the search (the searched space for dense strategies)
    as_of_us: int | None = None  # valid time
    known_us: int | None = None  # system time
    now_us: int | None = None  # the caller's clock: ages (recency) and the dates a query names; None: the clock's
    types: frozenset[str] | None = None
    weights: Mapping[str, float] = field(default_factory=dict)  # RRF weights (fused strategies)
    stages: Mapping[str, int] = field(default_factory=dict)  # pipeline stage sizes
    recency: bool = False
    explain: bool = False
    min_score: float = 0.0  # hits scoring under it are left out (scores are in [0, 1])
    # the pipeline's topic stage (C4): memory id -> topic number, and each topic's main-space centroid
    topic_of: Mapping[str, int] | None = None
    topic_centroids: Any = None  # np.ndarray (topics, dim), unit rows
    hypotheses: bool = False  # walk the dream's hypothesis edges too (C9)

    @property
    def fused(self) -> bool:
        """True for the strategies that fuse several methods (bm25 included: it shares their path)."""
        return self.strategy in FUSED_STRATEGIES

    @staticmethod
    def build(schema: Schema, *, namespace: str, k: int, space: str | None, strategy: str | None,
              as_of: datetime | None, known_at: datetime | None, types: Iterable[str] | None, explain: bool,
              weights: Mapping[str, float] | None, recency: bool | None,
              stages: Mapping[str, int] | None, min_score: float = 0.0, text: bool = True,
              now: datetime | None = None) -> SearchPlan:
        """Check `Store.search`'s arguments; each bad one raises a ValueError naming it and its value.
        No strategy: DEFAULT_STRATEGY, or "dense_only" when `space` is named or the query is not
        `text` (a vector)."""
        if strategy is None:  # a vector query (no words for BM25), or one space named: that space alone
            strategy = DEFAULT_STRATEGY if text and space is None else "dense_only"
        if strategy not in DENSE_STRATEGIES and strategy not in FUSED_STRATEGIES:
            raise ValueError(f"strategy must be one of {sorted(DENSE_STRATEGIES)} or "
                             f"{sorted(FUSED_STRATEGIES)} (or None: {DEFAULT_STRATEGY!r}), got {strategy!r}")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        k = int(k)
        if not isinstance(namespace, str) or not namespace:
            raise ValueError(f"namespace must be a non-empty string, got {namespace!r}")
        type_set = None
        if types is not None:
            if isinstance(types, str):
                types = [types]
            type_set = frozenset(types)
            if not type_set or not all(isinstance(x, str) and x for x in type_set):
                raise ValueError(f"types must be a non-empty list of memory_type names, got {types!r}")
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float, np.integer, np.floating)) \
                or not 0.0 <= float(min_score) <= 1.0:
            raise ValueError(f"min_score must be a number in [0, 1], got {min_score!r}")
        sp = schema[space or schema.main]
        as_of_t, known_t, now_t = as_utc("as_of", as_of), as_utc("known_at", known_at), as_utc("now", now)
        fused = strategy in FUSED_STRATEGIES
        rrf_weights = _weights(weights, schema)  # checked whatever the strategy: a wrong name is a mistake anywhere
        return SearchPlan(
            strategy=strategy, namespace=namespace, k=k, space=sp.name,
            as_of_us=micros(as_of_t) if as_of_t is not None else None,
            known_us=micros(known_t) if known_t is not None else None,
            now_us=micros(now_t) if now_t is not None else None,
            types=type_set,
            weights=rrf_weights if fused else {},
            stages={**DEFAULT_STAGES, **_stages(stages)} if fused else {},
            recency=recency if recency is not None else strategy in ("multi_space", "pipeline"),
            explain=bool(explain),
            min_score=float(min_score),
        )


def _weights(weights: Mapping[str, float] | None, schema: Schema) -> dict[str, float]:
    """The RRF weights: the defaults, with the caller's for the methods it names (the built-in
    methods and the store's spaces, which multi_space runs as enhancers); any other name is refused."""
    w = dict(DEFAULT_WEIGHTS)
    if weights is not None and not isinstance(weights, Mapping):
        raise TypeError(f"weights must be a dict of method name -> weight, got {type(weights).__name__}")
    known = [*DEFAULT_WEIGHTS, *(sp.name for sp in schema if sp.name not in DEFAULT_WEIGHTS)]
    unknown = [name for name in (weights or {}) if name not in known]
    if unknown:
        raise ValueError(f"weights has no method {unknown[0]!r}; the methods are {known}")
    for name, value in (weights or {}).items():
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"weights[{name!r}] must be a finite number >= 0, got {value!r}") from None
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

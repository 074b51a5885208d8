"""Edge inference runs (H2): an inferrer over memories, the sure and valid edges stored.

For each memory: its `candidates` nearest memories of the same namespace in the main space (found
with its own stored vector, so no model runs), the inferrer's proposals, then checks. A proposal
that names no live memory of the namespace, a malformed type or a confidence outside [0, 1] is
rejected with its reason; one below the run's minimum confidence (>= 0.7, H2) is counted, not
stored. An inferrer that raises for one memory is recorded and the run goes on: edges already
stored stay stored (each memory's edges are checked and written together, one WAL frame).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from ..index.registry import Indexes
from ..model.edge import Edge, is_confidence
from ..model.errors import InvalidMemory, StoreError
from ..model.hit import Hit
from ..model.memory import micros, utc_now
from ..spaces.analyzer import term_id
from ..spaces.protocol import Embedder, Embedding
from ..spaces.query import lexical_space
from ..spaces.schema import match_strength
from ..storage.engine import Engine
from ..storage.view import View
from .heuristic import MIN_CONFIDENCE, Candidate, EdgeProposal, HeuristicInferrer, InferenceReport, Inferrer
from .links import edge_for

# (a memory's stored main-space vector, its namespace, how many) -> the nearest memories
Nearest = Callable[[Embedding, str, int], Sequence[Hit]]


def infer_edges(engine: Engine, indexes: Indexes, embedders: Mapping[str, Embedder], nearest: Nearest,
                ids: Iterable[str] | None, namespace: str | None, inferrer: Inferrer | None,
                candidates: int, min_confidence: float) -> InferenceReport:
    """See `Store.infer_edges`."""
    if (ids is None) == (namespace is None):
        raise ValueError("infer_edges needs ids= or namespace= (exactly one of them)")
    if isinstance(candidates, bool) or not isinstance(candidates, int) or not 1 <= candidates <= 1_000:
        raise ValueError(f"candidates must be an int in [1, 1000], got {candidates!r}")
    if not is_confidence(min_confidence) or min_confidence < MIN_CONFIDENCE:
        raise ValueError(f"min_confidence must be in [{MIN_CONFIDENCE}, 1] (inference never stores less sure "
                         f"edges), got {min_confidence!r}")
    if inferrer is not None and not callable(inferrer):
        raise TypeError(f"inferrer must be a callable (memory, candidates) -> proposals, got {type(inferrer).__name__}")
    if isinstance(ids, str):
        ids = [ids]
    view = engine.view
    targets = list(ids) if ids is not None else live_ids(view, str(namespace))
    heuristics: dict[str, HeuristicInferrer] = {}  # one per namespace: its own idf
    main = view.schema[view.schema.main]
    report = InferenceReport()
    for mid in targets:
        view = engine.view
        memory = view.get(mid)
        if memory is None:
            report.failed[mid] = "no such memory (or it is forgotten)"
            continue
        report.memories += 1
        hits = nearest(view.row_vector(memory.id, main.name), memory.namespace, candidates + 1)
        # the main space's raw similarity (a hit's score is on the [0, 1] search scale)
        sims = [float(h.explain["raw"]) if h.explain and "raw" in h.explain else float(h.score) for h in hits]
        cands = [Candidate(h.memory, sim, match_strength(sim, main.high, main.low))
                 for h, sim in zip(hits, sims) if h.id != memory.id][:candidates]
        infer = inferrer
        if infer is None:
            infer = heuristics.get(memory.namespace)
            if infer is None:
                lex = lexical_space(view.schema, embedders)  # the analyzer BM25 indexes with: idf lookups match
                analyzer = getattr(embedders.get(lex.name), "analyzer", None) if lex is not None else None
                infer = heuristics[memory.namespace] = HeuristicInferrer(
                    idf=_idf(view, indexes, embedders, memory.namespace), analyzer=analyzer)
        try:
            proposals = list(infer(memory, cands))
        except Exception as exc:  # noqa: BLE001 - a hook failing on one memory must not end the run
            report.failed[memory.id] = f"{type(exc).__name__}: {exc}"
            continue
        edges: list[Edge] = []
        with engine.writing() as now:  # one memory's edges are checked together and written as one WAL frame
            for p in proposals:
                why = _malformed(p)
                if why is not None:
                    report.rejected.append((memory.id, p, why))
                    continue
                if p.confidence < min_confidence:
                    report.below_threshold.append((memory.id, p))
                    continue
                try:
                    edges.append(edge_for(now, memory.id, p.dst, p.type, float(p.confidence), p.reason, None, None))
                except (InvalidMemory, StoreError) as exc:  # unknown dst, other namespace, bad type, itself
                    report.rejected.append((memory.id, p, str(exc)))
            if edges:
                engine.append_edges(edges)
        report.stored.extend(edges)
    return report


def live_ids(view: View, namespace: str) -> list[str]:
    """Ids of the current memories of a namespace (valid now, not forgotten), in key order."""
    mask = view.key_mask(namespace, None, micros(utc_now()), True)
    return view.ids_at(view.locs(np.flatnonzero(mask)))


def _idf(view: View, indexes: Indexes, embedders: Mapping[str, Embedder],
         namespace: str) -> Callable[[Sequence[str]], Sequence[float]] | None:
    """BM25 idf of analysed terms within a namespace (None without a lexical space)."""
    lex = lexical_space(view.schema, embedders)
    if lex is None:
        return None
    ix = indexes.bm25(lex, view).sync(view).namespace(namespace, view.rows)
    if ix is None:
        return None

    def idf(terms: Sequence[str]) -> Sequence[float]:
        got = np.array([term_id(t) for t in terms], np.int64)
        return ix.idf(got).tolist()  # type: ignore[no-any-return]

    return idf


def _malformed(p: object) -> str | None:
    """Why a proposal cannot even be checked by the store, or None."""
    if not isinstance(p, EdgeProposal):
        return f"a proposal must be an EdgeProposal, got {type(p).__name__}"
    if not isinstance(p.dst, str) or not p.dst:
        return f"dst must be a memory id, got {p.dst!r}"
    if not is_confidence(p.confidence):
        return f"confidence must be a number in [0, 1], got {p.confidence!r}"
    return None

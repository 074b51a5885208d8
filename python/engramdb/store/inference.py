"""`Store.infer_edges` (H2): run an inferrer over memories and store the sure, valid edges.

For each memory: its `candidates` nearest memories of the same namespace in the main space (found
with its own stored vector, so no model runs), the inferrer's proposals, then checks. A proposal
that names no live memory of the namespace, a malformed type or a confidence outside [0, 1] is
rejected with its reason; one below the run's minimum confidence (>= 0.7, H2) is counted, not
stored. An inferrer that raises for one memory is recorded and the run goes on: edges already
stored stay stored (each memory's edges are checked and written together, one WAL frame).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..retrieval.edge_inference import (
    MIN_CONFIDENCE,
    Candidate,
    EdgeProposal,
    HeuristicInferrer,
    InferenceReport,
    Inferrer,
)
from ..retrieval.routing import match_strength
from .edges import is_confidence
from .record import InvalidMemory

if TYPE_CHECKING:
    from .store import Store


def infer_edges(store: Store, ids: Iterable[str] | None, namespace: str | None, inferrer: Inferrer | None,
                candidates: int, min_confidence: float) -> InferenceReport:
    """See `Store.infer_edges`."""
    from .store import StoreError
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
    targets = list(ids) if ids is not None else store._live_ids(namespace)  # type: ignore[arg-type]
    heuristics: dict[str, HeuristicInferrer] = {}  # one per namespace: its own idf
    main = store.schema[store.schema.main]
    report = InferenceReport()
    for mid in targets:
        memory = store.get(mid)
        if memory is None:
            report.failed[mid] = "no such memory (or it is forgotten)"
            continue
        report.memories += 1
        vector = store._row_vector(memory.id, main.name)
        hits = store.search(vector, namespace=memory.namespace, k=candidates + 1)
        cands = [Candidate(h.memory, float(h.score), match_strength(float(h.score), main.high, main.low))
                 for h in hits if h.id != memory.id][:candidates]
        infer = inferrer
        if infer is None:
            infer = heuristics.get(memory.namespace)
            if infer is None:
                lex = store._lexical_space()  # the analyzer BM25 indexes with, so idf lookups match
                analyzer = getattr(store.embedders.get(lex.name), "analyzer", None) if lex is not None else None
                infer = heuristics[memory.namespace] = HeuristicInferrer(idf=store._idf(memory.namespace),
                                                                         analyzer=analyzer)
        try:
            proposals = list(infer(memory, cands))
        except Exception as exc:  # noqa: BLE001 - a hook failing on one memory must not end the run
            report.failed[memory.id] = f"{type(exc).__name__}: {exc}"
            continue
        edges = []
        with store._lock:  # one memory's edges are checked together and written as one WAL frame
            store._check_open()
            for p in proposals:
                why = _malformed(p)
                if why is not None:
                    report.rejected.append((memory.id, p, why))
                    continue
                if p.confidence < min_confidence:
                    report.below_threshold.append((memory.id, p))
                    continue
                try:
                    edges.append(store._edge_for(memory.id, p.dst, p.type, float(p.confidence), p.reason, None, None))
                except (InvalidMemory, StoreError) as exc:  # unknown dst, other namespace, bad type, itself
                    report.rejected.append((memory.id, p, str(exc)))
            if edges:
                store._write_edges(edges)
        report.stored.extend(edges)
    return report


def _malformed(p: object) -> str | None:
    """Why a proposal cannot even be checked by the store, or None."""
    if not isinstance(p, EdgeProposal):
        return f"a proposal must be an EdgeProposal, got {type(p).__name__}"
    if not isinstance(p.dst, str) or not p.dst:
        return f"dst must be a memory id, got {p.dst!r}"
    if not is_confidence(p.confidence):
        return f"confidence must be a number in [0, 1], got {p.confidence!r}"
    return None

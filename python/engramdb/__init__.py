"""engramdb: an embeddable long-term memory engine for AI agents, with a C++ core.

    db = engramdb.open("./memory")          # a folder of Arrow files (None: in memory)
    db.add("Alice moved to Lisbon", namespace="alice")
    hits = db.search("where does Alice live?", namespace="alice")

`engramdb.kernels` holds the native kernels; `engramdb.capabilities()` says what they run on.
The code is layered (README "How the code is laid out"): kernels -> model -> spaces, hierarchy ->
storage -> index -> retrieval, ingest, graph -> the facade (`engramdb.store`) -> surfaces (CLI).
"""

from __future__ import annotations

from . import kernels
from ._capabilities import capabilities
from ._version import __version__
from .graph.heuristic import Candidate, EdgeProposal, HeuristicInferrer, InferenceReport
from .model import Edge, FormatError, Hit, Hits, InvalidMemory, Memory, SearchStats, StoreError, StoreLocked, Tuning
from .store import Store, open

__all__ = [
    "Candidate",
    "Edge",
    "EdgeProposal",
    "FormatError",
    "HeuristicInferrer",
    "Hit",
    "Hits",
    "InferenceReport",
    "InvalidMemory",
    "Memory",
    "SearchStats",
    "Store",
    "StoreError",
    "StoreLocked",
    "Tuning",
    "__version__",
    "capabilities",
    "kernels",
    "open",
]

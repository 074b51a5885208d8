"""engramdb: an embeddable long-term memory engine for AI agents, with a C++ core.

    db = engramdb.open("./memory")          # a folder of Arrow files (None: in memory)
    db.add("Alice moved to Lisbon", namespace="alice")
    hits = db.search("where does Alice live?", namespace="alice")

`engramdb.kernels` holds the native kernels; `engramdb.capabilities()` says what they run on.
"""

from __future__ import annotations

from . import kernels
from ._capabilities import capabilities
from ._version import __version__
from .retrieval.edge_inference import Candidate, EdgeProposal, HeuristicInferrer, InferenceReport
from .store import Edge, Hit, InvalidMemory, Memory, Store, StoreError, StoreLocked, open

__all__ = [
    "Candidate",
    "Edge",
    "EdgeProposal",
    "HeuristicInferrer",
    "Hit",
    "InferenceReport",
    "InvalidMemory",
    "Memory",
    "Store",
    "StoreError",
    "StoreLocked",
    "__version__",
    "capabilities",
    "kernels",
    "open",
]

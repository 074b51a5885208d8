"""engramdb: an embeddable long-term memory engine for AI agents, with a C++ core.

    db = engramdb.open("./memory")          # a folder of Arrow files (None: in memory)
    db.add("Alice moved to Lisbon", namespace="alice")
    hits = db.search("where does Alice live?", namespace="alice")

`engramdb.kernels` holds the native kernels; `engramdb.capabilities()` says what they run on.
The code is layered (docs/design.md "Layers"): kernels -> model -> spaces, hierarchy ->
storage -> index -> retrieval, ingest, graph -> the facade (`engramdb.store`) -> surfaces (CLI).
The names below load on first use, so `import engramdb.kernels` (or any lower layer) does not
load the layers above it.
"""

from __future__ import annotations

import importlib

from ._version import __version__

# typing.TYPE_CHECKING without importing typing: 25 ms of a new process on a 2-core machine, a fifth
# of a hook's whole answer through its resident (agents/resident_link.py); mypy reads the name as typing's
TYPE_CHECKING = False
if TYPE_CHECKING:  # what the lazy names below resolve to
    from typing import Any

    from . import kernels
    from ._capabilities import capabilities
    from .context.curiosity import CuriosityItem
    from .context.result import Context, ContextItem
    from .graph.heuristic import Candidate, EdgeProposal, HeuristicInferrer, InferenceReport
    from .model import (
        ConflictError,
        CorruptFile,
        Edge,
        FormatError,
        Hit,
        Hits,
        InvalidMemory,
        Memory,
        RepairWarning,
        SearchStats,
        StoreError,
        StoreLocked,
        Tuning,
    )
    from .store import Added, Page, Snapshot, Store, backup, capture, open, repair, verify

_WHERE = {
    "capabilities": "._capabilities",
    "Candidate": ".graph.heuristic",
    "Context": ".context.result",
    "ContextItem": ".context.result",
    "CuriosityItem": ".context.curiosity",
    "EdgeProposal": ".graph.heuristic",
    "HeuristicInferrer": ".graph.heuristic",
    "InferenceReport": ".graph.heuristic",
    **dict.fromkeys(("ConflictError", "CorruptFile", "Edge", "FormatError", "Hit", "Hits", "InvalidMemory", "Memory", "RepairWarning",
                     "SearchStats", "StoreError", "StoreLocked", "Tuning"), ".model"),
    "Added": ".store",
    "Page": ".store",
    "Snapshot": ".store",
    "Store": ".store",
    "backup": ".store",
    "capture": ".store",
    "open": ".store",
    "repair": ".store",
    "verify": ".store",
}

__all__ = [
    "Added",
    "Candidate",
    "ConflictError",
    "Context",
    "ContextItem",
    "CorruptFile",
    "CuriosityItem",
    "Edge",
    "EdgeProposal",
    "FormatError",
    "HeuristicInferrer",
    "Hit",
    "Hits",
    "InferenceReport",
    "InvalidMemory",
    "Memory",
    "Page",
    "RepairWarning",
    "SearchStats",
    "Snapshot",
    "Store",
    "StoreError",
    "StoreLocked",
    "Tuning",
    "__version__",
    "backup",
    "capabilities",
    "capture",
    "kernels",
    "open",
    "repair",
    "verify",
]


def __getattr__(name: str) -> Any:
    """The public names (and subpackages such as `engramdb.kernels`), imported on first use."""
    where = _WHERE.get(name)
    if where is not None:
        value = getattr(importlib.import_module(where, __name__), name)
    else:
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

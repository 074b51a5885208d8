"""The facade: `open` and the `Store` verbs over the layers below (storage, index, ingest, graph,
retrieval)."""

from ..model.edge import Edge
from ..model.errors import InvalidMemory, StoreError, StoreLocked
from ..model.hit import Hit, Hits, SearchStats
from ..model.memory import Memory, validate_memory
from ..model.tuning import Tuning
from .added import Added
from .facade import Store, open
from .folder_ops import backup, capture, repair, verify
from .options import Options
from .paging import Page
from .reads import Snapshot

__all__ = ["Added", "Edge", "Hit", "Hits", "InvalidMemory", "Memory", "Options", "Page", "SearchStats", "Snapshot", "Store", "StoreError",
           "StoreLocked", "Tuning", "backup", "capture", "open", "repair", "validate_memory", "verify"]

"""Plain data the layers above share: memories, edges, hits, tuning and errors (no I/O here)."""

from .edge import Edge, EdgeKey, validate_edge_fields
from .errors import (
    ConflictError,
    CorruptFile,
    FormatError,
    InvalidMemory,
    RepairWarning,
    StoreError,
    StoreLocked,
)
from .hit import Hit, Hits, SearchStats
from .memory import Memory, as_utc, check_namespace, from_micros, micros, utc_now, validate_memory
from .tuning import Tuning

__all__ = [
    "ConflictError", "CorruptFile", "Edge", "EdgeKey", "FormatError", "Hit", "Hits", "InvalidMemory", "Memory", "RepairWarning", "SearchStats", "StoreError",
    "StoreLocked", "Tuning", "as_utc", "check_namespace", "from_micros", "micros", "utc_now", "validate_edge_fields", "validate_memory",
]

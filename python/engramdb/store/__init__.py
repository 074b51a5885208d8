"""The embedded store (S1-S9): memory records, their Arrow persistence, and the lifecycle verbs."""

from .edges import Edge
from .lock import StoreLocked
from .record import InvalidMemory, Memory, validate_memory
from .store import Hit, Store, StoreError, open

__all__ = ["Edge", "Hit", "InvalidMemory", "Memory", "Store", "StoreError", "StoreLocked", "open", "validate_memory"]

"""The embedded store (S1-S9): memory records, their Arrow persistence, and the lifecycle verbs."""

from .record import InvalidMemory, Memory, validate_memory

__all__ = ["InvalidMemory", "Memory", "validate_memory"]

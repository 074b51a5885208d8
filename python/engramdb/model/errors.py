"""The errors engramdb raises on purpose; each message names the field, value or file at fault."""

from __future__ import annotations


class StoreError(RuntimeError):
    """An operation the store's state does not allow (unknown id, version conflict, closed store)."""


class InvalidMemory(ValueError):
    """A memory field holds a value the store refuses; the message names the field and value."""


class StoreLocked(RuntimeError):
    """Another process has the store open for writing."""


class FormatError(RuntimeError):
    """The store on disk cannot be opened by this version; the message says exactly why."""

"""The errors engramdb raises on purpose; each message names the field, value or file at fault."""

from __future__ import annotations


class StoreError(RuntimeError):
    """An operation the store's state does not allow (unknown id, version conflict, closed store)."""


class ConflictError(StoreError):
    """An update named a version that is no longer current, and the merge rule could not merge it
    (K4); `expected` and `current` are the two versions."""

    def __init__(self, memory_id: str, expected: int, current: int, why: str) -> None:
        self.memory_id, self.expected, self.current, self.why = memory_id, expected, current, why
        super().__init__(f"memory {memory_id!r}: the update was written against version {expected}, but version "
                         f"{current} is current and {why}; reread it and retry")

    def __reduce__(self) -> tuple[type[ConflictError], tuple[str, int, int, str]]:
        # pickled by its own arguments (the default passes the message as the one argument), so it
        # crosses processes as itself: a Ray actor's call, a worker's result
        return type(self), (self.memory_id, self.expected, self.current, self.why)


class InvalidMemory(ValueError):
    """A memory field holds a value the store refuses; the message names the field and value."""


class StoreLocked(RuntimeError):
    """Another process has the store open for writing."""


class FormatError(RuntimeError):
    """The store on disk cannot be opened by this version; the message says exactly why."""


class NewerFormat(FormatError):
    """The store was written by a newer engramdb (a format this version cannot read)."""


class CorruptFile(StoreError):
    """A store file is damaged (its size or checksum is not what the manifest recorded, or it does
    not parse); `path` names it. Nothing of it was served."""

    def __init__(self, path: object, why: str) -> None:
        self.path, self.why = path, why
        super().__init__(f"{path} is damaged: {why}; nothing of it was read. `engramdb verify` checks every file; "
                         "open read-only with salvage=True to read the intact ones")

    def __reduce__(self) -> tuple[type[CorruptFile], tuple[object, str]]:
        return type(self), (self.path, self.why)  # as ConflictError's: crosses processes as itself


class RepairWarning(UserWarning):
    """A store was repaired as it opened (its manifest rebuilt from its files); the message says why."""

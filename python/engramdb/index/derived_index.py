"""What every derived index of a store offers: tree, HNSW, BM25 (turn maps: a subset, unsaved).

A derived index is rebuildable from the segments alone. It is loaded from its saved files when
they are whole and current (`load`; `load_state` says "adopted" or why not), brought up to a snapshot
(`sync`: returns an immutable version a search reads, or one the search can filter down to its
snapshot), written back by the writer (`save`), and forgotten when rows are renumbered (`drop`: empty at the new row epoch, so a sync of a
snapshot from before it never publishes the rows a purge removed).
"""

from __future__ import annotations

from typing import Any, Protocol

from ..storage.derived_files import DerivedFiles
from ..storage.view import View


class DerivedIndex(Protocol):
    """One derived index of one space (see the module docstring)."""

    kind: str
    dirty: bool  # changed since it was last saved
    load_state: str | None  # "adopted" (from its file), or why it was rebuilt; None: never loaded

    def load(self, files: DerivedFiles, view: View) -> bool: ...

    def sync(self, view: View, *, wait: bool = True) -> Any: ...

    def save(self, files: DerivedFiles) -> None: ...

    def drop(self, epoch: int = -1) -> None: ...

    def describe(self) -> dict[str, Any]: ...

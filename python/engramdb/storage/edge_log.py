"""The edge log: every edge row in write order, read as the live edges of a snapshot.

Edge rows are appended (link, unlink, supersede, inference) and never changed; the live edge of a
key is its newest row, unless that row removes it. A snapshot remembers how many rows it holds
(`bound`) and reads only those, so the writer appends while searches read, without a lock: a list
append and a dict insert are atomic in CPython, and nothing already written moves. A purge,
which removes rows, builds a new log.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model.edge import Edge, EdgeKey


class EdgeLog:
    """Edge rows in order, with each key's rows and each memory's keys (out and in)."""

    def __init__(self, edges: Iterable[Edge] = ()) -> None:
        self._rows: list[Edge] = []
        self._versions: dict[EdgeKey, list[int]] = {}  # key -> its row numbers, ascending
        self._out: dict[str, list[EdgeKey]] = {}  # src -> keys, in order of first appearance
        self._in: dict[str, list[EdgeKey]] = {}
        self.append(edges)

    def __len__(self) -> int:
        """Rows written (a snapshot's bound)."""
        return len(self._rows)

    def append(self, edges: Iterable[Edge]) -> None:
        """Add rows, oldest first (the writer only)."""
        for e in edges:
            key = e.key
            versions = self._versions.get(key)
            if versions is None:
                self._out.setdefault(e.src, []).append(key)
                self._in.setdefault(e.dst, []).append(key)
                versions = self._versions[key] = []
            self._rows.append(e)
            versions.append(len(self._rows) - 1)  # after the row: a reader never sees a missing one

    def get(self, key: EdgeKey, bound: int) -> Edge | None:
        """The live edge of `key` among the first `bound` rows, or None."""
        versions = self._versions.get(key)
        if versions is None:
            return None
        for i in reversed(versions):
            if i < bound:
                e = self._rows[i]
                return None if e.removed_at is not None else e
        return None

    def outgoing(self, id: str, bound: int) -> list[Edge]:
        """Live edges whose src is `id`."""
        return self._live(self._out.get(id, ()), bound)

    def incoming(self, id: str, bound: int) -> list[Edge]:
        """Live edges whose dst is `id`."""
        return self._live(self._in.get(id, ()), bound)

    def live(self, bound: int) -> list[Edge]:
        """Every live edge among the first `bound` rows."""
        return self._live(list(self._versions), bound)

    def rows(self, bound: int) -> list[Edge]:
        """The first `bound` rows themselves (history: removals included)."""
        return self._rows[:bound]

    def _live(self, keys: Iterable[EdgeKey], bound: int) -> list[Edge]:
        out = []
        for key in list(keys):
            e = self.get(key, bound)
            if e is not None:
                out.append(e)
        return out

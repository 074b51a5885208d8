"""The id index: each memory id -> the key of its newest row, shared by every snapshot of an epoch.

Keys are global row numbers across the segments in order (committed files, then the WAL's rows).
They survive a checkpoint (the WAL's rows become one file, same order), compaction
(concatenation) and archival (same rows, content moved): only a purge renumbers rows, and it
starts a new epoch with a new index. Within an epoch rows are only ever appended, so the index is
append-only too: `latest[id]` only moves to a higher key, and `previous[key]` (the row a later
version replaced) is written once and never changed. A snapshot of `rows` rows therefore reads
the index without a lock: it walks back from `latest[id]` past keys it does not hold.

The index is built on first use, up to the rows of the snapshot asking (a reader that only
searches never pays for it: 1M ids is ~0.6 s of dict work), and extended the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np


class _Rows(Protocol):
    """What the index reads: each segment's ids, and where each segment starts in key space."""

    ids: list[str]


class IdIndex:
    """id -> newest key, append-only within one row epoch (see the module docstring)."""

    def __init__(self) -> None:
        self._latest: dict[str, int] = {}
        self._previous: dict[int, int] = {}  # key -> the key of the version it replaced
        self._rows = 0  # keys [0, _rows) are indexed
        self._lock = threading.Lock()  # one extender at a time; lookups take no lock

    @property
    def rows(self) -> int:
        """How many keys are indexed."""
        return self._rows

    def extend(self, segments: Sequence[_Rows], bases: np.ndarray, rows: int) -> list[tuple[int, int]]:
        """Index keys up to `rows` (of these segments, which start at `bases`); returns the
        (replaced key, replacing key) pairs of the rows it added, oldest first."""
        replaced: list[tuple[int, int]] = []
        if self._rows >= rows:
            return replaced
        with self._lock:
            start = self._rows
            latest, previous = self._latest, self._previous
            for si, seg in enumerate(segments):
                base = int(bases[si])
                n = len(seg.ids)
                lo, hi = max(start, base), min(rows, base + n)
                if lo >= hi:
                    continue
                ids = seg.ids[lo - base : hi - base]
                if latest.keys().isdisjoint(ids) and len(set(ids)) == len(ids):
                    # the bulk path (a reopen, a batch of new ids): isdisjoint walks these ids only
                    latest.update(zip(ids, range(lo, hi)))
                    continue
                for key, mid in enumerate(ids, lo):
                    old = latest.get(mid)
                    if old is not None:
                        previous[key] = old
                        replaced.append((old, key))
                    latest[mid] = key
            self._rows = max(self._rows, rows)
        return replaced

    def lookup(self, id: str, rows: int) -> int | None:
        """The key of `id`'s newest row among the first `rows` keys, or None."""
        key = self._latest.get(id)
        while key is not None and key >= rows:
            key = self._previous.get(key)
        return key

    def __contains__(self, id: object) -> bool:
        return id in self._latest

    def items(self, rows: int) -> Iterator[tuple[str, int]]:
        """(id, newest key) of every id with a row among the first `rows` keys."""
        for mid, key in list(self._latest.items()):  # a copy: the writer may add ids meanwhile
            k: int | None = key
            while k is not None and k >= rows:
                k = self._previous.get(k)
            if k is not None:
                yield mid, k

    def keys(self, rows: int) -> np.ndarray:
        """The newest key of every id with a row among the first `rows` keys (in no order)."""
        keys = np.fromiter(list(self._latest.values()), np.int64)  # a copy: the writer may add ids
        late = np.flatnonzero(keys >= rows)
        if len(late):  # ids rewritten after this view: walk back to the version it saw (rare)
            back = []
            for key in keys[late].tolist():
                k: int | None = key
                while k is not None and k >= rows:
                    k = self._previous.get(k)
                back.append(-1 if k is None else k)
            keys[late] = back
            keys = keys[keys >= 0]
        return keys

    def count(self, rows: int) -> int:
        """How many ids have a row among the first `rows` keys."""
        if rows >= self._rows:
            return len(self._latest)
        return sum(1 for _ in self.items(rows))

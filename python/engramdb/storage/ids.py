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

Until something needs it whole (a write, a snapshot's current rows), a lookup probes instead: one
small dict per run of `PROBE_RUN` keys, newest run first, each holding its ids' newest key in the
run. A new process's first requests (a context at 100,000 memories looks up ~150 ids) pay for
dicts that fit the CPU's caches, about half the time of one dict of every id; the runs are kept
for the epoch (keys never change within one) and dropped once the whole index is built.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np


class _Rows(Protocol):
    """What the index reads: each segment's ids, and where each segment starts in key space."""

    ids: list[str]


PROBE_RUN = 8_192  # keys per probe dict (see the module docstring)


class IdIndex:
    """id -> newest key, append-only within one row epoch (see the module docstring)."""

    def __init__(self) -> None:
        self._latest: dict[str, int] = {}
        self._previous: dict[int, int] = {}  # key -> the key of the version it replaced
        self._rows = 0  # keys [0, _rows) are indexed
        self._lock = threading.Lock()  # one extender at a time; lookups take no lock
        # the same, as arrays `keys()` reads without a dict walk (an agent's loop asks at every
        # write: 100,000 dict values and a sort each time): whether each key is its id's newest,
        # and (replacing key, replaced key) in key order; a replacement is recorded before the
        # flag flips, so a reader that sees the flip finds the pair
        self._current = np.zeros(0, bool)
        self._swaps = np.zeros((0, 2), np.int64)
        self._nswaps = 0
        # the probe's dicts: (first key, end key) -> id -> its newest key in that run; and per
        # `rows` probed, its runs newest first
        self._runs: dict[tuple[int, int], dict[str, int]] = {}
        self._probes: dict[int, list[dict[str, int]]] = {}

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
            if start >= rows:
                return replaced
            parts = []
            for si, seg in enumerate(segments):
                base = int(bases[si])
                lo, hi = max(start, base), min(rows, base + len(seg.ids))
                if lo < hi:
                    parts.append(seg.ids[lo - base : hi - base])
            # the keys [start, rows) in order: the segments tile key space
            ids = parts[0] if len(parts) == 1 else list(itertools.chain.from_iterable(parts))
            assert len(ids) == rows - start, (len(ids), start, rows)
            cur = self._grown(rows)
            # one dict of the new rows (a reopen at 100,000 memories: one build instead of a
            # disjointness check and an update per segment); a later row of an id wins in it
            fresh = dict(zip(ids, range(start, rows)))
            latest = self._latest
            if len(fresh) == len(ids) and latest.keys().isdisjoint(fresh):  # every row a new id: no chains
                if latest:
                    latest.update(fresh)
                else:
                    self._latest = fresh
                cur[start:rows] = True
            else:
                self._chain(ids, start, fresh, cur, replaced)
            self._rows = max(self._rows, rows)
            self._runs, self._probes = {}, {}  # lookups read the index now (a prober keeps its own lists)
        return replaced

    def _chain(self, ids: list[str], start: int, fresh: dict[str, int], cur: np.ndarray,
               replaced: list[tuple[int, int]]) -> None:
        """Index new rows some of which replace a row of their id (written before or among them):
        only those ids' rows are walked, in key order, recording each replacement before its flag
        flips and before `latest` moves past it (lookups and `keys` read without the lock)."""
        latest, previous = self._latest, self._previous
        newest = np.fromiter(map(fresh.__getitem__, ids), np.int64, len(ids))
        older = np.flatnonzero(newest != np.arange(start, start + len(ids))) + start  # an id's earlier rows here
        involved = (latest.keys() & fresh.keys()) | {ids[k - start] for k in older.tolist()}
        walk = sorted(set(older.tolist()) | {fresh[mid] for mid in involved})
        cur[start : start + len(ids)] = True
        for key in walk:
            mid = ids[key - start]
            old = latest.get(mid)
            if old is not None:
                previous[key] = old
                replaced.append((old, key))
                self._swapped(key, old)
                cur[old] = False
            latest[mid] = key
        latest.update(fresh)  # every other new id; an involved id's entry is already this value

    def _grown(self, rows: int) -> np.ndarray:
        """The current-key flags with room for `rows` keys (a new array when it grows: a reader
        holding the old one reads the flags of its own rows, which only later keys change)."""
        if len(self._current) < rows:
            bigger = np.zeros(max(rows, 2 * len(self._current), 1024), bool)
            bigger[: len(self._current)] = self._current
            self._current = bigger
        return self._current

    def _swapped(self, key: int, old: int) -> None:
        if self._nswaps == len(self._swaps):
            bigger = np.zeros((max(1024, 2 * len(self._swaps)), 2), np.int64)
            bigger[: self._nswaps] = self._swaps[: self._nswaps]
            self._swaps = bigger
        self._swaps[self._nswaps] = (key, old)
        self._nswaps += 1

    def probe(self, segments: Sequence[_Rows], bases: np.ndarray, rows: int, id: str) -> int | None:
        """`lookup` without the whole index (see the module docstring): the key of `id`'s newest row
        among the first `rows` keys (of these segments, which start at `bases`), or None."""
        runs = self._probes.get(rows)
        if runs is None:
            runs = self._probe_runs(segments, bases, rows)
        for run in runs:
            key = run.get(id)
            if key is not None:
                return key
        return None

    def _probe_runs(self, segments: Sequence[_Rows], bases: np.ndarray, rows: int) -> list[dict[str, int]]:
        with self._lock:  # one builder: concurrent first requests wait for it rather than build the same
            runs = self._probes.get(rows)
            if runs is not None:
                return runs
            made = dict(self._runs)
            runs = []
            for lo in range(0, rows, PROBE_RUN):
                span = (lo, min(rows, lo + PROBE_RUN))
                run = made.get(span)
                if run is None:
                    # a later row of an id wins within a run, and a later run is probed first
                    run = made[span] = dict(zip(_ids_between(segments, bases, *span), range(*span)))
                runs.append(run)
            runs.reverse()
            self._runs = made
            if len(self._probes) >= 8:  # snapshots of a few sizes are probed at once at most
                self._probes = {}
            self._probes = {**self._probes, rows: runs}
            return runs

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
        """The newest key of every id with a row among the first `rows` keys, ascending: the
        flagged keys below `rows`, and the keys a later version (at `rows` or past it) replaced,
        which are the newest this view sees. The flags are read before the pairs: a flip the
        read saw has its pair recorded already."""
        base = np.flatnonzero(self._current[:rows])
        n = self._nswaps
        swaps = self._swaps[:n]
        later = swaps[np.searchsorted(swaps[:, 0], rows):, 1] if n else swaps[:0, 1]
        later = later[later < rows]
        return np.union1d(base, later) if len(later) else base

    def count(self, rows: int) -> int:
        """How many ids have a row among the first `rows` keys."""
        if rows >= self._rows:
            return len(self._latest)
        return sum(1 for _ in self.items(rows))


def _ids_between(segments: Sequence[_Rows], bases: np.ndarray, lo: int, hi: int) -> list[str]:
    """The ids of keys [lo, hi), in key order (the segments tile key space)."""
    out: list[str] = []
    first = int(np.searchsorted(bases, lo, side="right")) - 1
    for si in range(max(first, 0), len(segments)):
        base = int(bases[si])
        if base >= hi:
            break
        ids = segments[si].ids
        out += ids[max(lo - base, 0) : hi - base]
    return out

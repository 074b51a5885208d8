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

Until something needs it whole (a write, a snapshot's current rows), a lookup probes instead. The
ids the store makes (32 hex digits) are probed without a Python object per row: each segment's id
column gives a 64-bit fingerprint per row straight from its bytes (four words, multiplied and
xored), sorted once with the rows' keys; a lookup finds its fingerprint's rows by bisection and
keeps the newest whose id is the one asked (equal fingerprints of other ids are told apart there).
At 100,000 memories that is ~3 ms where dicts of every id cost ~12 of a new process's first
context (issue 26). A segment holding other ids (an id a caller chose) is probed through small
dicts, one per run of `PROBE_RUN` keys, newest run first. Both are kept for the epoch (keys never
change within one) and dropped once the whole index is built.
"""

from __future__ import annotations

import itertools
import struct
import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from .._arrow_numpy import string_offsets


class _Rows(Protocol):
    """What the index reads: each segment's ids, and where each segment starts in key space."""

    ids: list[str]


PROBE_RUN = 8_192  # keys per probe dict (see the module docstring)
FP_BYTES = 32  # the length of the ids the store makes (uuid4 hex), probed by fingerprint
# the fingerprint's word multipliers (odd 64-bit constants; the last word is taken as it is)
FP_MULTIPLIERS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 1)
# more rows than this under one fingerprint (ids made to collide, or one id rewritten that often)
# and the probe uses dicts throughout: a lookup walks the rows of its fingerprint
FP_MAX_EQUAL = 64
_MASK = (1 << 64) - 1
_WORDS = struct.Struct("<4Q")


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
        # (first key, end key) -> id -> its newest key in that run, or (first key, end key, "fp") ->
        # a whole segment's fingerprints; and per `rows` probed, its probe
        self._runs: dict[tuple[Any, ...], Any] = {}
        self._probes: dict[int, _Probe] = {}

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
        found = self._probes.get(rows)
        if found is None:
            found = self._probe_runs(segments, bases, rows)
        return found.get(id)

    def _probe_runs(self, segments: Sequence[_Rows], bases: np.ndarray, rows: int) -> _Probe:
        with self._lock:  # one builder: concurrent first requests wait for it rather than build the same
            found = self._probes.get(rows)
            if found is not None:
                return found
            made = dict(self._runs)
            runs: list[dict[str, int]] = []
            fps: list[np.ndarray] = []
            keys: list[np.ndarray] = []
            for si, seg in enumerate(segments):
                lo = int(bases[si])
                hi = min(rows, lo + len(seg.ids))
                if lo >= hi:
                    continue
                fp = made.get((lo, hi, "fp"))
                if fp is None:
                    fp = _fingerprints(seg, 0, hi - lo)
                if fp is None:
                    runs += _dict_runs(segments, bases, lo, hi, made)
                    continue
                made[(lo, hi, "fp")] = fp
                fps.append(fp)
                keys.append(np.arange(lo, hi, dtype=np.int64))
            found = _Probe(segments, bases, runs, fps, keys)
            if found.crowded:  # a fingerprint shared by too many rows: dicts of every run instead
                found = _Probe(segments, bases, _dict_runs(segments, bases, 0, rows, made), [], [])
            self._runs = made
            if len(self._probes) >= 8:  # snapshots of a few sizes are probed at once at most
                self._probes = {}
            self._probes = {**self._probes, rows: found}
            return found

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


class _Probe:
    """One snapshot's probe (see the module docstring): the rows of fingerprinted segments as one
    sorted uint64 array, each a row's fingerprint in the high bits and its key in the low ones (one
    sort of plain integers, no argsort and gathers), and the other segments' dict runs."""

    def __init__(self, segments: Sequence[_Rows], bases: np.ndarray, runs: list[dict[str, int]],
                 fps: list[np.ndarray], keys: list[np.ndarray]) -> None:
        self._segments, self._starts, self._runs = segments, bases.tolist(), runs[::-1]  # newest first
        self.crowded = False
        self._packed: np.ndarray | None = None
        self._bits = 0
        if fps:
            top = max((int(k[-1]) for k in keys if len(k)), default=0)  # the highest key
            self._bits = bits = max(1, top.bit_length())
            packed = np.concatenate(fps)
            packed &= np.uint64(~((1 << bits) - 1) & _MASK)
            packed |= np.concatenate(keys).view(np.uint64)  # keys are >= 0
            packed.sort()
            self._packed = packed
            # more than FP_MAX_EQUAL rows under one fingerprint: then a row and the one that many
            # places on (sorted) share it, their xor below the key bits
            k = FP_MAX_EQUAL
            self.crowded = len(packed) > k and bool(((packed[k:] ^ packed[:-k]) < np.uint64(1 << bits)).any())

    def get(self, id: str) -> int | None:
        """The newest key of `id` among the probed rows, or None."""
        best = None
        for run in self._runs:  # newest first: the first hit is the newest of the dicts' rows
            best = run.get(id)
            if best is not None:
                break
        packed = self._packed
        if packed is None:
            return best
        fp = _fingerprint(id)
        if fp is None:
            return best
        bits = self._bits
        head = fp >> bits
        low = (1 << bits) - 1
        i = int(packed.searchsorted(np.uint64(head << bits)))
        while True:  # the rows of this fingerprint, keys ascending (read a few at a time: one is usual)
            window = packed[i : i + 4].tolist()
            for value in window:
                if value >> bits != head:
                    return best
                key = value & low
                if (best is None or key > best) and self._id_at(key) == id:
                    best = key
            if len(window) < 4:
                return best
            i += 4

    def _id_at(self, key: int) -> str:
        si = bisect_right(self._starts, key) - 1
        found: str = self._segments[si].ids[key - self._starts[si]]
        return found


def _dict_runs(segments: Sequence[_Rows], bases: np.ndarray, lo: int, hi: int,
               made: dict[tuple[Any, ...], Any]) -> list[dict[str, int]]:
    """The dicts of keys [lo, hi), one per `PROBE_RUN` keys, oldest first (kept in `made`)."""
    runs = []
    for start in range(lo, hi, PROBE_RUN):
        span = (start, min(hi, start + PROBE_RUN))
        run = made.get(span)
        if run is None:  # a later row of an id wins within a run, and a later run is probed first
            run = made[span] = dict(zip(_ids_between(segments, bases, *span), range(*span)))
        runs.append(run)
    return runs


def _fingerprint(id: str) -> int | None:
    """The fingerprint `_fingerprints` gives a row holding `id`, None when no row can (not 32 bytes
    of UTF-8, as the id column holds it: a 16-letter id of two-byte letters is 32)."""
    try:
        raw = id.encode()
    except UnicodeEncodeError:  # a lone surrogate: no stored id is one
        return None
    if len(raw) != FP_BYTES:
        return None
    w0, w1, w2, w3 = _WORDS.unpack(raw)
    m0, m1, m2, m3 = FP_MULTIPLIERS
    fp: int = ((w0 * m0) ^ (w1 * m1) ^ (w2 * m2) ^ (w3 * m3)) & _MASK
    return fp


def _fingerprints(seg: _Rows, lo: int, hi: int) -> np.ndarray | None:
    """The fingerprints (uint64) of rows [lo, hi) of a segment's id column, read from its bytes;
    None when the segment has no table or a row's id is not 32 bytes (it is probed by dicts)."""
    table = getattr(seg, "table", None)
    if not isinstance(table, pa.Table) or "id" not in table.schema.names:
        return None
    out = []
    for chunk in table.column("id").slice(lo, hi - lo).chunks:
        n = len(chunk)
        if not n:
            continue
        if chunk.null_count or not (pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type)):
            return None
        offsets = string_offsets(chunk)
        if not bool((np.diff(offsets) == FP_BYTES).all()):
            return None
        words = np.frombuffer(chunk.buffers()[2], "<u8", 4 * n, int(offsets[0])).reshape(n, 4)
        fp = words[:, 0] * np.uint64(FP_MULTIPLIERS[0])
        for j in (1, 2, 3):
            fp ^= words[:, j] * np.uint64(FP_MULTIPLIERS[j])
        out.append(fp)
    return np.concatenate(out) if out else np.zeros(0, np.uint64)


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

"""Row filters (H4): which rows of a snapshot a query may see, as bool arrays the kernels read.

A query sees its namespace only (the partition), rows alive at its system time (current versions,
not forgotten; or, with `known_at`, the versions the store believed then), valid at its valid
time (`as_of`, or now), and of one of its memory types when it names some. Filters run inside
every scan and index search, never after the top-k cut.

Key masks (one bool per global key of a run of segments) are cached for the common query
(current memories valid now): a cached mask is kept while the snapshot still holds the very
segment objects it was built from (segments are copied, never changed, when a version closes) and
the clock has not passed the namespace's next valid_from / valid_until. Each segment's part is
kept on the segment under the same rule, so the first query after a write (a new tail segment)
filters the new rows only.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from .segment import NEVER, Segment

MASKS_KEPT = 64  # cached key masks (namespace x types x segment run)


def row_filter(seg: Segment, namespace: str, known_us: int | None, t: int | None,
               rows: np.ndarray | None = None, types: frozenset[str] | None = None) -> np.ndarray | None:
    """Which rows of `seg` (all, or `rows`) a query may see: its namespace, alive then, valid
    then, of one of `types` when given. None when no row of the whole segment passes (and
    `rows` is None)."""
    code = seg.ns_codes.get(namespace)
    if code is None:
        return None if rows is None else np.zeros(len(rows), bool)

    def pick(a: np.ndarray) -> np.ndarray:
        return a if rows is None else a[rows]

    mask = pick(seg.ns_index) == code
    sys_end = pick(seg.sys_end)
    if known_us is None:
        mask &= (sys_end == NEVER) & ~pick(seg.forgotten)
    else:
        mask &= (pick(seg.learned_at) <= known_us) & (known_us < sys_end)
    if t is not None:
        mask &= (pick(seg.valid_from) <= t) & (t < pick(seg.valid_until))
    if types is not None:
        mask &= pick(seg.type_mask(types))
    return mask if rows is not None or mask.any() else None


class MaskCache:
    """Key masks of current-and-valid-now queries, shared by the snapshots of one store."""

    def __init__(self) -> None:
        # (namespace, types, segments) -> (the segments, the clock it was made at, when it next
        # changes, the mask): reused for a clock in [made at, changes) only, as a clock stepped
        # back (NTP, a restored VM) before an edge already passed must not see past it
        self._masks: OrderedDict[tuple[str, frozenset[str] | None, int],
                                 tuple[tuple[weakref.ref[Segment], ...], int, int, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def key_mask(self, segments: Sequence[Segment], namespace: str, known_us: int | None, t: int | None,
                 at_now: bool, types: frozenset[str] | None = None) -> np.ndarray:
        """Which keys of `segments` (a leading run of a snapshot's segments) a query may see."""
        now_query = known_us is None and t is not None and at_now  # t is the clock: cacheable
        key = (namespace, types, len(segments))
        if now_query:
            with self._lock:
                cached = self._masks.get(key)
            if cached is not None and t is not None and cached[1] <= t < cached[2] \
                    and len(cached[0]) == len(segments) and all(a() is b for a, b in zip(cached[0], segments)):
                return cached[3]
        parts, since, change = [], -NEVER, NEVER
        for seg in segments:
            if now_query and t is not None:
                seg_since, seg_change, m = self._now_part(seg, namespace, t, types)
                since, change = max(since, seg_since), min(change, seg_change)
            else:
                m = row_filter(seg, namespace, known_us, t, types=types)
            parts.append(m if m is not None else np.zeros(len(seg), bool))
        mask = np.concatenate(parts) if parts else np.zeros(0, bool)
        mask.flags.writeable = False  # shared by every query that reuses it
        if now_query:
            with self._lock:
                # the segments by weak reference: a tail a write replaced dies with its snapshot
                # (holding it kept its arrays and caches alive for up to 64 writes, so the garbage
                # collector promoted ~10 objects a turn of an agent's loop to its oldest generation)
                self._masks[key] = (tuple(weakref.ref(s) for s in segments), since, change, mask)
                self._masks.move_to_end(key)
                while len(self._masks) > MASKS_KEPT:
                    self._masks.popitem(last=False)
        return mask

    @staticmethod
    def _now_part(seg: Segment, namespace: str, t: int,
                  types: frozenset[str] | None) -> tuple[int, int, np.ndarray | None]:
        """One segment's part of a current-and-valid-now mask, with the span of clocks it holds
        for ([made at, next edge)), kept on the segment: a write makes a new tail segment and
        leaves the others as they were, so the first query after it filters only the new rows,
        not the whole namespace."""
        cached = seg.now_masks.get((namespace, types))
        if cached is not None and cached[0] <= t < cached[1]:
            return cached
        m = row_filter(seg, namespace, None, t, types=types)
        change = NEVER
        if namespace in seg.ns_codes:  # even when no row passes now
            mine = seg.ns_index == seg.ns_codes[namespace]
            for edge in (seg.valid_from[mine], seg.valid_until[mine]):
                later = edge[edge > t]
                if len(later):
                    change = min(change, int(later.min()))
        if m is not None:
            m.flags.writeable = False  # shared by every mask made from it
        seg.now_masks[(namespace, types)] = (t, change, m)
        return t, change, m

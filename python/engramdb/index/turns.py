"""Turn maps: (session_id, seq) -> the newest row of that turn, per namespace (conversation
neighbours, H3). Derived from the segments alone, never saved; each map is kept while the
snapshots asking still hold the very segments it was built from."""

from __future__ import annotations

import threading
from collections import ChainMap, OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..storage.segment import Segment
from ..storage.view import Loc, View

MAPS_KEPT = 64  # namespaces whose turn map is kept


class TurnMaps:
    """The turn maps of one store's snapshots: per namespace, a map of the committed segments
    (kept while the snapshots hold those very segments: it changes at a checkpoint) under a map of
    the WAL's rows (at most a WAL's worth, made per snapshot). An agent's loop writes a turn, then
    asks: rebuilding the whole map at every write cost 110 ms at 100,000 turns."""

    kind = "turns"

    def __init__(self) -> None:
        self._maps: OrderedDict[str, tuple[tuple[Segment, ...], dict[tuple[str, int], Loc]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, view: View, namespace: str) -> Mapping[tuple[str, int], Loc]:
        """(session_id, seq) -> (segment, row) of the newest row of each turn in a namespace."""
        key = f"turns:{namespace}"
        found = view.derived.get(key)
        if found is None:
            committed = tuple(view.segments[: view.committed])
            base = self._committed(committed, namespace)
            tail = _map(view.segments, namespace, range(view.committed, len(view.segments)))
            found = view.derived[key] = ChainMap(tail, base) if tail else base  # a later row wins
        assert isinstance(found, Mapping)
        return found

    def _committed(self, segments: tuple[Segment, ...], namespace: str) -> dict[tuple[str, int], Loc]:
        with self._lock:
            cached = self._maps.get(namespace)
        if cached is not None and len(cached[0]) == len(segments) and all(a is b for a, b in zip(cached[0], segments)):
            return cached[1]
        out = _map(segments, namespace, range(len(segments)))
        with self._lock:
            self._maps[namespace] = (segments, out)
            self._maps.move_to_end(namespace)
            while len(self._maps) > MAPS_KEPT:
                self._maps.popitem(last=False)
        return out

    def drop(self) -> None:
        with self._lock:
            self._maps.clear()

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {ns: {"turns": len(m)} for ns, (_, m) in self._maps.items()}


def _map(segments: Sequence[Segment], namespace: str, which: range) -> dict[tuple[str, int], Loc]:
    """(session_id, seq) -> (segment, row) over the segments numbered `which` (a later row wins)."""
    out: dict[tuple[str, int], Loc] = {}
    for si in which:
        seg = segments[si]
        code = seg.ns_codes.get(namespace)
        if code is None:
            continue
        sess, names, seq = seg.turns()
        rows = np.flatnonzero((seg.ns_index == code) & (sess >= 0) & (seq >= 0))
        for r, c, q in zip(rows.tolist(), sess[rows].tolist(), seq[rows].tolist()):
            out[(names[c], q)] = (si, r)
    return out

"""Turn maps: (session_id, seq) -> the newest row of that turn, per namespace (conversation
neighbours, H3). Derived from the segments alone, never saved; each map is kept while the
snapshots asking still hold the very segments it was built from."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from ..storage.segment import Segment
from ..storage.view import Loc, View

MAPS_KEPT = 64  # namespaces whose turn map is kept


class TurnMaps:
    """The turn maps of one store's snapshots."""

    kind = "turns"

    def __init__(self) -> None:
        self._maps: OrderedDict[str, tuple[tuple[Segment, ...], dict[tuple[str, int], Loc]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, view: View, namespace: str) -> dict[tuple[str, int], Loc]:
        """(session_id, seq) -> (segment, row) of the newest row of each turn in a namespace."""
        with self._lock:
            cached = self._maps.get(namespace)
        if cached is not None and len(cached[0]) == len(view.segments) \
                and all(a is b for a, b in zip(cached[0], view.segments)):
            return cached[1]
        out: dict[tuple[str, int], Loc] = {}
        for si, seg in enumerate(view.segments):
            code = seg.ns_codes.get(namespace)
            if code is None:
                continue
            sess, names, seq = seg.turns()
            rows = np.flatnonzero((seg.ns_index == code) & (sess >= 0) & (seq >= 0))
            for r, c, q in zip(rows.tolist(), sess[rows].tolist(), seq[rows].tolist()):
                out[(names[c], q)] = (si, r)
        with self._lock:
            self._maps[namespace] = (view.segments, out)
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

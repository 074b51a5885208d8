"""Turn maps: (session_id, seq) -> the newest row of that turn, per namespace (conversation
neighbours, H3). Derived from the segments alone, never saved; each map is kept while the
snapshots asking still hold the very segments it was built from."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
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
        self._maps: OrderedDict[str, tuple[tuple[Segment, ...], TurnIndex]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, view: View, namespace: str) -> Mapping[tuple[str, int], Loc]:
        """(session_id, seq) -> (segment, row) of the newest row of each turn in a namespace."""
        key = f"turns:{namespace}"
        found = view.derived.get(key)
        if found is None:
            committed = tuple(view.segments[: view.committed])
            base = self._committed(committed, namespace)
            tail = _map(view.segments, namespace, range(view.committed, len(view.segments)))
            found = view.derived[key] = _Layered(tail, base) if tail else base  # a later row wins
        assert isinstance(found, Mapping)
        return found

    def _committed(self, segments: tuple[Segment, ...], namespace: str) -> TurnIndex:
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


class TurnIndex(Mapping[tuple[str, int], Loc]):
    """(session_id, seq) -> (segment, row), the newest row of each turn, over some segments: one
    sorted int64 array of (session number << 32 | seq) and the rows' locations, built with numpy
    (a dict of 100,000 turns took 70 ms to build; this takes a few, and the first context after an
    open or a checkpoint builds one)."""

    def __init__(self, sessions: dict[str, int], keys: np.ndarray, segs: np.ndarray, rows: np.ndarray) -> None:
        self._sessions, self._keys, self._segs, self._rows = sessions, keys, segs, rows

    def __getitem__(self, turn: tuple[str, int]) -> Loc:
        name, seq = turn
        sess = self._sessions.get(name)
        if sess is None or not 0 <= seq < 1 << 32:
            raise KeyError(turn)
        key = (sess << 32) | seq
        i = int(np.searchsorted(self._keys, key))
        if i == len(self._keys) or int(self._keys[i]) != key:
            raise KeyError(turn)
        return int(self._segs[i]), int(self._rows[i])

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[tuple[str, int]]:
        names = {v: k for k, v in self._sessions.items()}
        for key in self._keys.tolist():
            yield names[key >> 32], key & 0xFFFFFFFF


class _Layered(Mapping[tuple[str, int], Loc]):
    """The WAL's turns over the committed ones: a turn in both reads as its newer row."""

    def __init__(self, top: TurnIndex, under: TurnIndex) -> None:
        self._top, self._under = top, under

    def __getitem__(self, turn: tuple[str, int]) -> Loc:
        try:
            return self._top[turn]
        except KeyError:
            return self._under[turn]

    def __len__(self) -> int:
        return len(set(self._top) | set(self._under))

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(set(self._top) | set(self._under))


def _map(segments: Sequence[Segment], namespace: str, which: range) -> TurnIndex:
    """The turns of a namespace over the segments numbered `which` (a later row wins)."""
    sessions: dict[str, int] = {}
    keys, segs, rows = [], [], []
    for si in which:
        seg = segments[si]
        code = seg.ns_codes.get(namespace)
        if code is None:
            continue
        sess, names, seq = seg.turns()
        mine = np.flatnonzero((seg.ns_index == code) & (sess >= 0) & (seq >= 0) & (seq < 1 << 32))
        if not len(mine):
            continue
        number = np.array([sessions.setdefault(n, len(sessions)) for n in names], np.int64)  # segment's codes -> ours
        keys.append((number[sess[mine]] << 32) | seq[mine])
        segs.append(np.full(len(mine), si, np.int32))
        rows.append(mine.astype(np.int64))
    if not keys:
        return TurnIndex({}, np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, np.int64))
    k, sg, r = np.concatenate(keys), np.concatenate(segs), np.concatenate(rows)
    # the newest row of a turn is the last of its key in (segment, row) order: a stable sort keeps
    # that order among equal keys, and the last of each run is kept
    order = np.argsort(k, kind="stable")
    k, sg, r = k[order], sg[order], r[order]
    last = np.ones(len(k), bool)
    last[:-1] = k[1:] != k[:-1]
    return TurnIndex(sessions, k[last], sg[last], r[last])

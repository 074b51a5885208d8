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
_INT64_MAX = 2**63 - 1  # the seq column's limit
_SEQ_SPAN = 1 << 32  # seqs below this pack with their session number into one int64 (PackedTurns)
_LOW = _SEQ_SPAN - 1


class TurnMaps:
    """The turn maps of one store's snapshots: per namespace, a map of the committed segments
    (kept while the snapshots hold those very segments: it changes at a checkpoint) under a map of
    the WAL's rows (at most a WAL's worth, made per snapshot). An agent's loop writes a turn, then
    asks: rebuilding the whole map at every write cost 110 ms at 100,000 turns."""

    kind = "turns"

    def __init__(self) -> None:
        self._maps: OrderedDict[str, tuple[tuple[Segment, ...], TurnIndex | PackedTurns]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def lock(self) -> threading.Lock:
        """The lock of the committed maps' cache (a fork holds it across: index/registry.py)."""
        return self._lock

    def get(self, view: View, namespace: str) -> Mapping[tuple[str, int], Loc]:
        """(session_id, seq) -> (segment, row) of the newest row of each turn in a namespace."""
        key = f"turns:{namespace}"
        found = view.derived.get(key)
        if found is None:
            committed = view.committed_segments
            base = self._committed(committed, namespace)
            tail = _map(view.segments, namespace, range(view.committed, len(view.segments)))
            found = view.derived[key] = _Layered(tail, base) if tail else base  # a later row wins
        assert isinstance(found, Mapping)
        return found

    def _committed(self, segments: tuple[Segment, ...], namespace: str) -> TurnIndex | PackedTurns:
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


class _TurnMap(Mapping[tuple[str, int], Loc]):
    """A turn map's lookup by `get` (each map's own, which never raises): `map[turn]` raises
    KeyError for a turn it does not hold, as a Mapping does."""

    def __getitem__(self, turn: tuple[str, int]) -> Loc:
        found = self.get(turn)
        if found is None:
            raise KeyError(turn)
        return found


class TurnIndex(_TurnMap):
    """(session_id, seq) -> (segment, row), the newest row of each turn, over some segments: the
    turns' session numbers and seqs as int64 arrays sorted by (session, seq), and the rows'
    locations, built with numpy (a dict of 100,000 turns took 70 ms to build; this takes a few,
    and the first context after an open or a checkpoint builds one). A seq is any int64 >= 0 (a
    caller's may be epoch milliseconds, MAX_SEQ allows 2**62 - 1): no packing into 32 bits."""

    def __init__(self, sessions: dict[str, int], sess: np.ndarray, seq: np.ndarray, segs: np.ndarray,
                 rows: np.ndarray) -> None:
        self._sessions, self._sess, self._seq, self._segs, self._rows = sessions, sess, seq, segs, rows
        # where each session's run starts in the sorted arrays (session numbers are 0..n-1)
        self._bounds = np.searchsorted(sess, np.arange(len(sessions) + 1, dtype=np.int64))

    def get(self, turn: tuple[str, int], default: Loc | None = None) -> Loc | None:  # type: ignore[override]
        """The turn's location, or `default`: without raising and catching a KeyError (Mapping's
        own `get`), as the context's walk asks for ~100 neighbours a call."""
        name, seq = turn
        sess = self._sessions.get(name)
        if sess is None or not 0 <= seq <= _INT64_MAX:  # a neighbour's seq + 1 may pass int64
            return default
        lo, hi = int(self._bounds[sess]), int(self._bounds[sess + 1])
        i = lo + int(self._seq[lo:hi].searchsorted(seq))
        if i == hi or int(self._seq[i]) != seq:
            return default
        return int(self._segs[i]), int(self._rows[i])

    def __len__(self) -> int:
        return len(self._seq)

    def __iter__(self) -> Iterator[tuple[str, int]]:
        names = {v: k for k, v in self._sessions.items()}
        for sess, seq in zip(self._sess.tolist(), self._seq.tolist()):
            yield names[sess], seq


class _Layered(_TurnMap):
    """The WAL's turns over the committed ones: a turn in both reads as its newer row."""

    def __init__(self, top: TurnIndex | PackedTurns, under: TurnIndex | PackedTurns) -> None:
        self._top, self._under = top, under

    def get(self, turn: tuple[str, int], default: Loc | None = None) -> Loc | None:  # type: ignore[override]
        """The turn's newer location, or `default` (see TurnIndex.get)."""
        found = self._top.get(turn)
        return found if found is not None else self._under.get(turn, default)

    def __len__(self) -> int:
        return len(set(self._top) | set(self._under))

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(set(self._top) | set(self._under))


class PackedTurns(_TurnMap):
    """TurnIndex when every seq fits 32 bits (how an agent numbers turns): one sorted int64 per
    turn, its session number in the high half and its seq in the low one, and one int64 per turn
    locating its row (segment in the high half, row in the low one). Two arrays where TurnIndex
    keeps four and their session bounds: a new process's first context builds it over every
    committed segment (issue 26)."""

    def __init__(self, sessions: dict[str, int], keys: np.ndarray, locs: np.ndarray) -> None:
        self._sessions, self._keys, self._locs = sessions, keys, locs

    def get(self, turn: tuple[str, int], default: Loc | None = None) -> Loc | None:  # type: ignore[override]
        """The turn's location, or `default` (see TurnIndex.get)."""
        name, seq = turn
        sess = self._sessions.get(name)
        if sess is None or not 0 <= seq < _SEQ_SPAN:  # no stored seq is past 32 bits here
            return default
        key = sess << 32 | seq
        i = int(self._keys.searchsorted(key))
        if i == len(self._keys) or int(self._keys[i]) != key:
            return default
        loc = int(self._locs[i])
        return loc >> 32, loc & _LOW

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[tuple[str, int]]:
        names = {v: k for k, v in self._sessions.items()}
        for key in self._keys.tolist():
            yield names[key >> 32], key & _LOW


def _turn_rows(segments: Sequence[Segment], namespace: str, which: range,
               sessions: dict[str, int]) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """Per segment numbered in `which` that holds turns of `namespace`: (its number, those rows,
    their seqs, their sessions numbered in `sessions`, which this fills as names come)."""
    for si in which:
        seg = segments[si]
        code = seg.ns_codes.get(namespace)
        if code is None:
            continue
        sess, names, seq = seg.turns()
        mine = np.flatnonzero((seg.ns_index == code) & (sess >= 0) & (seq >= 0))
        if len(mine):
            number = np.array([sessions.setdefault(n, len(sessions)) for n in names], np.int64)  # segment's codes -> ours
            yield si, mine, seq[mine], number[sess[mine]]


def _map(segments: Sequence[Segment], namespace: str, which: range) -> TurnIndex | PackedTurns:
    """The turns of a namespace over the segments numbered `which` (a later row wins): packed
    when every seq fits 32 bits, else as TurnIndex."""
    sessions: dict[str, int] = {}
    keys, locs = [], []
    for si, mine, sq, key in _turn_rows(segments, namespace, which, sessions):
        if int(sq.max()) >= _SEQ_SPAN:
            return _wide_map(segments, namespace, which)
        key <<= 32
        key |= sq
        keys.append(key)
        mine |= si << 32  # (segment, row) as one int64
        locs.append(mine)
    if len(sessions) >= 1 << 31:
        return _wide_map(segments, namespace, which)
    if not keys:
        return PackedTurns({}, np.empty(0, np.int64), np.empty(0, np.int64))
    key, loc = (keys[0], locs[0]) if len(keys) == 1 else (np.concatenate(keys), np.concatenate(locs))
    if bool((key[1:] > key[:-1]).all()):
        # already in turn order, each turn once: how a store written turn by turn lies (one
        # session's turns in order, sessions numbered as they first appear); no sort, no copy
        return PackedTurns(sessions, key, loc)
    # the newest row of a turn is the last of its key in (segment, row) order: the sort is stable,
    # so that order stays among equal turns, and the last of each run is kept
    order = np.argsort(key, kind="stable")
    key, loc = key[order], loc[order]
    last = np.ones(len(key), bool)
    last[:-1] = key[1:] != key[:-1]
    return PackedTurns(sessions, key[last], loc[last])


def _wide_map(segments: Sequence[Segment], namespace: str, which: range) -> TurnIndex:
    """`_map` for seqs past 32 bits (a caller's may be epoch milliseconds): TurnIndex."""
    sessions: dict[str, int] = {}
    sess_parts, seq_parts, segs, rows = [], [], [], []
    for si, mine, sq, number in _turn_rows(segments, namespace, which, sessions):
        sess_parts.append(number)
        seq_parts.append(sq)
        segs.append(np.full(len(mine), si, np.int32))
        rows.append(mine.astype(np.int64))
    if not seq_parts:
        empty = np.empty(0, np.int64)
        return TurnIndex({}, empty, empty, np.empty(0, np.int32), empty)
    ss, sq = np.concatenate(sess_parts), np.concatenate(seq_parts)
    sg, r = np.concatenate(segs), np.concatenate(rows)
    # the newest row of a turn is the last of its (session, seq) in (segment, row) order: the
    # sort is stable, so that order stays among equal turns, and the last of each run is kept
    order = np.lexsort((sq, ss))
    ss, sq, sg, r = ss[order], sq[order], sg[order], r[order]
    last = np.ones(len(sq), bool)
    last[:-1] = (ss[1:] != ss[:-1]) | (sq[1:] != sq[:-1])
    return TurnIndex(sessions, ss[last], sq[last], sg[last], r[last])

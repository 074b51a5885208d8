"""A session's current turns in the order they were said, carried from one snapshot to the next.

An agent's loop writes a turn to its session and then asks for a context, which reads that
session's turns: the new snapshot made by the write used to find them again from every key
(`View.current_rows`: each memory's newest version, 100,000 keys, then every segment's session
codes; ~0.6 ms a context at 100,000 memories). Here each store (its id index, which every
snapshot of the store shares) keeps the turns the latest snapshot found, and a newer snapshot of
the same row epoch brings them up to date from its new rows alone. That is the same answer:
within a row epoch a key is always the same row and a row never changes (its session, namespace
and forgotten flag are the row's; storage/segment.py), so a turn of the older snapshot is a turn
of the newer one unless a new row is a newer version of its memory (an update, a forget), and
the newer snapshot's other turns are among its new rows. Locations are the same for keys in
segments laid out alike in both (the WAL's tail is merged and folded into files as it grows:
those are located again). Many new rows (a large batch) take the whole pass, as before. The
order is the whole pass's: by seq (none first), then learning time, then key.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from itertools import compress

import numpy as np

from .ids import IdIndex
from .segment import Segment

Loc = tuple[int, int]
SESSIONS_KEPT = 64  # sessions whose turns a store remembers (cleared when full)
ROWS_CHECKED = 512  # new rows a snapshot looks at one by one (more: the whole pass)


@dataclass(frozen=True)
class Turns:
    """One session's current, not forgotten turns of one namespace in one snapshot, in order."""

    epoch: int
    rows: int  # the snapshot's rows
    bases: np.ndarray  # the snapshot's segment starts (View.bases): where its locations point
    keys: np.ndarray  # int64, in turn order
    seq: np.ndarray  # int64 (-1: none)
    learned: np.ndarray  # int64 microseconds
    locs: list[Loc]


_MEMOS: weakref.WeakKeyDictionary[IdIndex, dict[tuple[str, str], Turns]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _new_lock_in_child() -> None:
    """A child forked while another thread held the lock would wait for ever; the memos are
    whole (their updates hold the GIL between bytecodes) and only a cache, so they start afresh."""
    global _LOCK
    _LOCK = threading.Lock()
    _MEMOS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


def ordered(epoch: int, segments: tuple[Segment, ...], bases: np.ndarray, rows: int,
            parts: list[tuple[int, np.ndarray]], seqs: list[np.ndarray] | None = None) -> Turns:
    """The turns at (segment, rows) parts, sorted: by seq (`seqs`: each part's, else read),
    learning time, then key."""
    if not parts:
        empty = np.empty(0, np.int64)
        return Turns(epoch, rows, bases, empty, empty, empty, [])
    segs = np.concatenate([np.full(len(r), si, np.int64) for si, r in parts])
    at = np.concatenate([r for _, r in parts]).astype(np.int64)
    if seqs is None:
        seqs = [segments[si].turns()[2][r] for si, r in parts]
    seq = np.concatenate(seqs).astype(np.int64)
    learned = np.concatenate([segments[si].learned_at[r] for si, r in parts]).astype(np.int64)
    keys = bases[segs] + at
    order = np.lexsort((keys, learned, seq))
    return Turns(epoch, rows, bases, keys[order], seq[order], learned[order],
                 list(zip(segs[order].tolist(), at[order].tolist())))


def remembered(ids: IdIndex, namespace: str, session_id: str) -> Turns | None:
    """The turns the store's latest snapshot to ask found, if any."""
    memo = _MEMOS.get(ids)
    return None if memo is None else memo.get((namespace, session_id))


def remember(ids: IdIndex, namespace: str, session_id: str, turns: Turns) -> None:
    """Keep `turns` for the next snapshot (unless a newer snapshot's are kept already)."""
    with _LOCK:
        memo = _MEMOS.get(ids)
        if memo is None:
            memo = _MEMOS[ids] = {}
        old = memo.get((namespace, session_id))
        if old is not None and old.epoch == turns.epoch and old.rows > turns.rows:
            return
        if len(memo) >= SESSIONS_KEPT:
            memo.clear()
        memo[(namespace, session_id)] = turns


def extended(old: Turns, epoch: int, segments: tuple[Segment, ...], bases: np.ndarray, rows: int, ids: IdIndex,
             new_rows: Callable[[int], list[tuple[int, np.ndarray, np.ndarray]]]) -> Turns | None:
    """`old` brought to a newer snapshot of the store, or None when the whole pass must run.

    `ids` is indexed up to `rows`; `new_rows(key)` gives the (segment, rows, their seq) of the
    session's not forgotten rows of the namespace from `key` on (current or not)."""
    if old.epoch != epoch or old.rows > rows or rows - old.rows > ROWS_CHECKED:
        return None
    # the turns a new row replaces (a newer version of their memory) are turns no more
    replaced = []
    for si in range(int(np.searchsorted(bases, old.rows, side="right")) - 1, len(segments)):
        lo, hi = max(old.rows - int(bases[si]), 0), min(rows - int(bases[si]), len(segments[si]))
        for mid in segments[si].ids[lo:hi]:
            prev = ids.lookup(mid, old.rows)
            if prev is not None:
                replaced.append(prev)
    keep = np.isin(old.keys, replaced, invert=True) if replaced else np.ones(len(old.keys), bool)
    keys, seq, learned = old.keys[keep], old.seq[keep], old.learned[keep]
    locs = old.locs if keep.all() else list(compress(old.locs, keep.tolist()))
    # a kept turn's location stands while its segment starts and ends where it did
    same = min(len(old.bases), len(bases))
    differ = np.flatnonzero(old.bases[:same] != bases[:same])
    start = int(bases[(int(differ[0]) if len(differ) else same) - 1])  # keys below it: the same segments
    moved = np.flatnonzero(keys >= start)
    if len(moved):
        seg = np.searchsorted(bases, keys[moved], side="right") - 1
        relocated = list(zip(seg.tolist(), (keys[moved] - bases[seg]).tolist()))
        if moved[0] == len(keys) - len(moved):  # the newest turns (the usual case): a suffix
            locs = locs[:int(moved[0])] + relocated
        else:
            locs = list(locs)
            for i, loc in zip(moved.tolist(), relocated):
                locs[i] = loc
    # the new rows that are turns, current in this snapshot
    parts, seqs = [], []
    for si, found, seq_of in new_rows(old.rows):
        seg_ids, base = segments[si].ids, int(bases[si])
        current = np.array([ids.lookup(seg_ids[r], rows) == base + r for r in found.tolist()], bool)
        if current.any():
            parts.append((si, found[current]))
            seqs.append(seq_of[current])
    new = ordered(epoch, segments, bases, rows, parts, seqs)
    if not len(new.keys):
        return Turns(epoch, rows, bases, keys, seq, learned, locs)
    keys = np.concatenate([keys, new.keys])
    seq = np.concatenate([seq, new.seq])
    learned = np.concatenate([learned, new.learned])
    locs = locs + new.locs
    order = np.lexsort((keys, learned, seq))
    if (np.diff(order) > 0).all():  # the new turns come last (the usual case: said after the others)
        return Turns(epoch, rows, bases, keys, seq, learned, locs)
    return Turns(epoch, rows, bases, keys[order], seq[order], learned[order], [locs[i] for i in order.tolist()])

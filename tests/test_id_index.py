"""The id index's current keys (storage/ids.py, the storage layer's seam): kept as flags and
replacement pairs so a snapshot's current rows need no walk of every id; checked against the
plain definition (each id's newest key below a view's rows) over random histories of new ids,
rewrites and older views, as the store's snapshots ask."""

from __future__ import annotations

import random

import numpy as np
from engramdb.storage.ids import IdIndex
from hypothesis import given, settings
from hypothesis import strategies as st


class _Segment:
    def __init__(self, ids: list[str]) -> None:
        self.ids = ids


def _newest(history: list[str], rows: int) -> np.ndarray:
    out: dict[str, int] = {}
    for key, mid in enumerate(history[:rows]):
        out[mid] = key
    return np.array(sorted(out.values()), np.int64)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_current_keys_are_each_ids_newest_row_for_every_view(seed: int) -> None:
    rng = random.Random(seed)
    ix = IdIndex()
    history: list[str] = []
    segments: list[_Segment] = []
    bases = [0]
    for step in range(rng.randint(1, 12)):
        n = rng.randint(1, 30)
        ids = ([f"m{rng.randint(0, 40)}" for _ in range(n)] if rng.random() < 0.6
               else [f"new-{step}-{i}" for i in range(n)])  # rewrites, or a batch of new ids (the bulk path)
        segments.append(_Segment(ids))
        history += ids
        bases.append(bases[-1] + n)
        ix.extend(segments, np.array(bases, np.int64), bases[-1])
        for rows in {rng.randint(0, len(history)) for _ in range(4)} | {len(history)}:
            assert np.array_equal(ix.keys(rows), _newest(history, rows)), (step, rows)


def _laid_out(batches: list[list[str]]) -> tuple[list[_Segment], list[str], list[int]]:
    """One segment per batch of ids: the segments, every id in key order, and where each segment
    starts in key space (then the total)."""
    segments = [_Segment(ids) for ids in batches]
    history = [mid for ids in batches for mid in ids]
    bases = [0]
    for ids in batches:
        bases.append(bases[-1] + len(ids))
    return segments, history, bases


def _reference(history: list[str], rows: int) -> tuple[dict[str, int], list[tuple[int, int]]]:
    """Each id's newest key below `rows`, and every (replaced, replacing) pair among those keys."""
    latest: dict[str, int] = {}
    pairs = []
    for key, mid in enumerate(history[:rows]):
        if mid in latest:
            pairs.append((latest[mid], key))
        latest[mid] = key
    return latest, pairs


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_extending_over_many_segments_at_once_answers_as_row_by_row(seed: int) -> None:
    """A reopen indexes every segment in one extend, a later snapshot the rest (ending anywhere in a
    segment): the same lookups, current keys, counts and replacement pairs (oldest first) as the
    plain definition, whether the new rows are all new ids or repeat an id among themselves or
    one indexed before."""
    rng = random.Random(seed)
    batches = []
    for step in range(rng.randint(1, 10)):
        n = rng.randint(1, 25)
        kind = rng.random()
        batches.append([f"new-{step}-{i}" for i in range(n)] if kind < 0.4
                       else [f"m{rng.randint(0, 30)}" for _ in range(n)] if kind < 0.8
                       else [f"new-{step}-{i % 3}" for i in range(n)])  # new ids, rewrites, new ids repeated
    segments, history, bases = _laid_out(batches)
    total = bases[-1]
    ix = IdIndex()
    done: list[tuple[int, int]] = []
    stops = sorted({rng.randint(1, total) for _ in range(rng.randint(0, 3))} | {total})
    for stop in stops:
        done += ix.extend(segments, np.array(bases, np.int64), stop)
        assert ix.rows == stop
        latest, pairs = _reference(history, stop)
        assert done == pairs
        for rows in {rng.randint(0, stop) for _ in range(4)} | {stop}:
            want, _ = _reference(history, rows)
            assert np.array_equal(ix.keys(rows), np.array(sorted(want.values()), np.int64)), (stop, rows)
            assert dict(ix.items(rows)) == want
            assert ix.count(rows) == len(want)
            for mid in set(history) | {"absent"}:
                assert ix.lookup(mid, rows) == want.get(mid)
        assert all(mid in ix for mid in latest) and "absent" not in ix


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 3, 7, 8_192]))
def test_a_probe_answers_as_the_whole_index(seed: int, run: int) -> None:
    """Before anything builds the index, lookups probe per-run dicts (runs of `run` keys, crossing
    segment ends, a segment holding several): each id's newest key below any number of rows,
    rewritten ids and ids repeated within one run included, and after the whole index is built."""
    import engramdb.storage.ids as ids_mod

    rng = random.Random(seed)
    segments, history, bases = _laid_out(
        [[f"m{rng.randint(0, 25)}" if rng.random() < 0.5 else f"new-{step}-{i}" for i in range(rng.randint(0, 20))]
         for step in range(rng.randint(0, 8))])
    b = np.array(bases, np.int64)
    saved, ids_mod.PROBE_RUN = ids_mod.PROBE_RUN, run
    try:
        ix = IdIndex()
        for rows in [rng.randint(0, len(history)) for _ in range(3)] + [len(history)]:
            want, _ = _reference(history, rows)
            for mid in set(history) | {"absent"}:
                assert ix.probe(segments, b, rows, mid) == want.get(mid), (rows, mid)
        assert ix.rows == 0  # probing indexed nothing
        ix.extend(segments, b, len(history))
        want, _ = _reference(history, len(history))
        for mid in set(history) | {"absent"}:
            assert ix.lookup(mid, len(history)) == want.get(mid) == ix.probe(segments, b, len(history), mid)
    finally:
        ids_mod.PROBE_RUN = saved

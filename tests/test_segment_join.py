"""The WAL tail's merge (storage/versions.py `merged_tail`) joins two segments' per-row arrays
instead of deriving them again from the joined table (issue 26: every agent-loop write merged the
tail). At the storage seam: a joined segment holds exactly what a segment made from the joined
table holds, for any namespaces, times, forgotten rows and replacements."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
from engramdb.model.memory import Memory
from engramdb.storage.columns import memories_to_table
from engramdb.storage.segment import NEVER, Segment
from engramdb.storage.versions import merged_tail
from hypothesis import given, settings
from hypothesis import strategies as st

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
NAMESPACES = ["a", "b", "c", "d"]

row = st.tuples(st.sampled_from(NAMESPACES), st.integers(0, 10_000), st.one_of(st.none(), st.integers(0, 10_000)),
                st.one_of(st.none(), st.integers(10_001, 20_000)), st.booleans())


def segment(rows: list[tuple[str, int, int | None, int | None, bool]], start: int) -> Segment:
    mems = [Memory(id=f"m{start + i}", namespace=ns, content=f"text {start + i}", version=1,
                   learned_at=T0 + timedelta(seconds=learned),
                   valid_from=None if vf is None else T0 + timedelta(seconds=vf),
                   valid_until=None if vu is None else T0 + timedelta(seconds=vu),
                   forgotten_at=T0 + timedelta(days=9) if forgotten else None)
            for i, (ns, learned, vf, vu, forgotten) in enumerate(rows)]
    return Segment(memories_to_table(mems))


@settings(max_examples=60, deadline=None)
@given(st.lists(row, min_size=1, max_size=12), st.lists(row, min_size=1, max_size=12), st.data())
def test_a_joined_segment_holds_what_the_joined_table_gives(a: list, b: list, data: st.DataObject) -> None:
    older, newer = segment(a, 0), segment(b, len(a))
    # a replacement lowered some rows' system-time ends before the merge
    for seg in (older, newer):
        closed = data.draw(st.lists(st.integers(0, len(seg) - 1), max_size=3))
        seg.sys_end[closed] = 12_345
    joined = Segment.joined(older, newer)
    plain = Segment(joined.table)
    assert joined.ids == plain.ids
    assert joined.ns_names == plain.ns_names and joined.ns_codes == plain.ns_codes
    assert joined.ns_index.dtype == plain.ns_index.dtype and np.array_equal(joined.ns_index, plain.ns_index)
    for name in ("learned_at", "valid_from", "valid_until", "forgotten"):
        assert np.array_equal(getattr(joined, name), getattr(plain, name)), name
    assert np.array_equal(joined.sys_end, np.concatenate([older.sys_end, newer.sys_end]))
    assert joined.sys_end.max() <= NEVER
    for ns in NAMESPACES:
        assert joined.ns_count(ns) == plain.ns_count(ns)
        mine = plain.learned_at[plain.ns_index == plain.ns_codes[ns]] if ns in plain.ns_codes else plain.learned_at[:0]
        assert joined.ns_newest(ns) == plain.ns_newest(ns) == max(0, int(mine.max()) if len(mine) else 0)
    assert [joined.memory_at(i) for i in range(len(joined))] == [plain.memory_at(i) for i in range(len(plain))]
    # the tail's merge gives the joined segment
    (merged,) = merged_tail((older, newer)) if len(older) <= len(newer) else (joined,)
    assert merged.ids == joined.ids and np.array_equal(merged.sys_end, joined.sys_end)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=40))
def test_the_tail_merges_small_segments_and_keeps_large_ones(sizes: list[int]) -> None:
    """The WAL tail as writes of these sizes leave it (storage/versions.py, scaled down: merges stop
    at 8 rows, and past 5 in-memory segments the counter merges whatever their size): every row
    once, in order; a segment over the cap only once the tail was long, or as written."""
    from engramdb.storage import versions

    cap, most = 8, 5
    old = (versions.TAIL_MERGE_ROWS, versions.TAIL_SEGMENTS)
    versions.TAIL_MERGE_ROWS, versions.TAIL_SEGMENTS = cap, most
    try:
        tail: tuple[Segment, ...] = ()
        start, long_once = 0, False
        for n in sizes:
            long_once |= len(tail) + 1 > most
            tail = versions.merged_tail((*tail, segment([("a", start + i, None, None, False) for i in range(n)], start)))
            start += n
            if not long_once:
                assert all(len(s) <= cap or len(s) in sizes for s in tail)
        assert [i for s in tail for i in s.ids] == [f"m{i}" for i in range(start)]
    finally:
        versions.TAIL_MERGE_ROWS, versions.TAIL_SEGMENTS = old


def test_one_row_writes_leave_a_short_tail() -> None:
    """An agent's writes, one row each: the small ones merge as a binary counter, the blocks of the
    cap wait (until the WAL is folded into a file) or, past the limit, merge too."""
    from engramdb.storage import versions

    cap, most = 8, 5
    old = (versions.TAIL_MERGE_ROWS, versions.TAIL_SEGMENTS)
    versions.TAIL_MERGE_ROWS, versions.TAIL_SEGMENTS = cap, most
    try:
        tail: tuple[Segment, ...] = ()
        for k in range(200):
            tail = versions.merged_tail((*tail, segment([("a", k, None, None, False)], k)))
            # the limit, and a binary counter's log2 beside it (the merges past the limit are one too)
            assert len(tail) <= most + (k + 1).bit_length(), [len(x) for x in tail]
        assert [i for s in tail for i in s.ids] == [f"m{i}" for i in range(200)]
        assert max(len(s) for s in tail) > cap  # past the limit the blocks merged
    finally:
        versions.TAIL_MERGE_ROWS, versions.TAIL_SEGMENTS = old

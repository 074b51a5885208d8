"""System time across versions: a row stops being current where a later version of its memory
was learned. Rows never change; the store keeps each row's end (`sys_end`) beside it, set at open
for what the files hold and by copy on write as new versions arrive (a published segment never
changes under a reader)."""

from __future__ import annotations

import numpy as np

from .._arrow_numpy import numpy_of
from ..kernels.sets import unique
from .segment import MEMO_ROWS, Segment


def close_versions(segments: list[Segment]) -> None:
    """Set sys_end of every row a later version replaced (at open, before anything is shared),
    without the full id index: only rows of ids that have a version > 1 somewhere can be replaced
    (a first version never follows another row of its id: ids are unique at add, and purge
    removes every row of an id)."""
    replaced: set[str] = set()
    for seg in segments:
        later = np.flatnonzero(numpy_of(seg.table.column("version")) > 1)
        replaced.update(seg.ids[int(r)] for r in later)
    if not replaced:
        return
    last: dict[str, tuple[int, int]] = {}
    for si, seg in enumerate(segments):
        for row, mid in enumerate(seg.ids):
            if mid in replaced:
                prev = last.get(mid)
                if prev is not None:
                    old = segments[prev[0]]
                    old.sys_end[prev[1]] = min(int(old.sys_end[prev[1]]), int(seg.learned_at[row]))
                last[mid] = (si, row)


def with_closures(segments: tuple[Segment, ...], bases: np.ndarray,
                   replaced: list[tuple[int, int]]) -> tuple[Segment, ...]:
    """The segments with each replaced row's system time ended where its replacement was learned
    (copies of the segments touched: a published view's segments never change)."""
    pairs = np.asarray(replaced, np.int64)
    new_seg = np.searchsorted(bases, pairs[:, 1], side="right") - 1
    at = np.array([segments[s].learned_at[k - bases[s]] for s, k in zip(new_seg.tolist(), pairs[:, 1].tolist())],
                  np.int64)
    old_seg = np.searchsorted(bases, pairs[:, 0], side="right") - 1
    out = list(segments)
    for s in unique(old_seg).tolist():
        sel = old_seg == s
        out[s] = out[s].with_closed(pairs[sel, 0] - bases[s], at[sel])
    return tuple(out)


# The tail's merges stop at this many rows: a merge copies every column of both (a long turn's token
# vectors too), so a batch this large (an `add_many` of a conversation) was copied once more at
# each merge above it, ~10% of a long-turn ingest (bench/RESULTS.md "Ingest by native analysis
# passes"), and an agent's write now and then paid the copy of a few thousand rows. The WAL is
# folded into a file at `Tuning.checkpoint_rows` (4,096): at most that / this merged segments wait
# beside the counter's log2(this) small ones. Past TAIL_SEGMENTS in-memory segments (a larger
# `checkpoint_rows`) the counter merges whatever their size again, so a search never meets more.
TAIL_MERGE_ROWS = 512
TAIL_SEGMENTS = 24


def _in_memory(segments: list[Segment]) -> int:
    """How many of the trailing segments are the WAL's (not yet a file)."""
    n = 0
    for seg in reversed(segments):
        if seg.file is not None:
            break
        n += 1
    return n


def merged_tail(segments: tuple[Segment, ...]) -> tuple[Segment, ...]:
    """The WAL's in-memory segments merged as a binary counter: the newest two are one while the
    older is no larger than the newer. An agent adds one turn per write: without this, a WAL of
    4,096 one-row segments made every search scan, filter and mask 4,096 segments (92 ms a
    context after 500 turns); with it there are at most log2(TAIL_MERGE_ROWS) + 1 small ones and
    the merged ones above TAIL_MERGE_ROWS (about TAIL_SEGMENTS in all, never more than twice that,
    whatever the writes' sizes: see below), and a row is copied about log2(TAIL_MERGE_ROWS) times. Keys (global row numbers) stay the same: same rows, same order (as a
    checkpoint's fold), so the id index and every key-based index need nothing."""
    out = list(segments)
    while len(out) >= 2 and out[-1].file is None and out[-2].file is None and len(out[-2]) <= len(out[-1]) \
            and (len(out[-2]) + len(out[-1]) <= TAIL_MERGE_ROWS or _in_memory(out) > TAIL_SEGMENTS) \
            and out[-2].table.schema.equals(out[-1].table.schema, check_metadata=True):
        _join_at(out, len(out) - 2)
    # The counter merges only an older part no larger than the newer: writes of falling sizes (a
    # conversation's batches of 300, 299, ... rows) never merged, and the tail grew with every
    # write (300 in-memory segments, each scanned, filtered and masked by every search; a large
    # `checkpoint_rows` let it grow to thousands). Past twice the limit, neighbours merge back
    # down to it (any two neighbours keep the rows' order and keys), the pair whose larger part is
    # smallest first: a batch of small ones, not a large one copied at each write.
    if _in_memory(out) > 2 * TAIL_SEGMENTS:
        while (n := _in_memory(out)) > TAIL_SEGMENTS:
            pairs = [i for i in range(len(out) - n, len(out) - 1)
                     if out[i].table.schema.equals(out[i + 1].table.schema, check_metadata=True)]
            if not pairs:
                break  # a space added between writes: the checkpoint folds them
            _join_at(out, min(pairs, key=lambda i: (max(len(out[i]), len(out[i + 1])), len(out[i]) + len(out[i + 1]))))
    return tuple(out) if len(out) != len(segments) else segments


def _join_at(out: list[Segment], i: int) -> None:
    """Replace `out[i]` and `out[i + 1]` by their join (replacements, sys_end, carried over)."""
    older, newer = out[i], out[i + 1]
    merged = Segment.joined(older, newer)
    _carry_caches(merged, older, newer)
    out[i:i + 2] = [merged]


def _carry_caches(merged: Segment, older: Segment, newer: Segment) -> None:
    """Give a merged tail what its two parts had already derived (same rows, same order): the
    materialised memories and the current-and-valid-now masks. Without it the first query after
    each write read again the memories of the session being written (an agent's own turns are
    its hits) and filtered the whole tail again: ~2 ms of each search after a write at 100K."""
    shift = len(older)
    merged.memo.update(older.memo)
    merged.memo.update({row + shift: m for row, m in newer.memo.items()})
    if len(merged.memo) > MEMO_ROWS:
        merged.memo.clear()
    for key in older.now_masks.keys() & newer.now_masks.keys():
        (s1, c1, m1), (s2, c2, m2) = older.now_masks[key], newer.now_masks[key]
        if m1 is None and m2 is None:
            mask = None
        else:
            mask = np.concatenate([m1 if m1 is not None else np.zeros(len(older), bool),
                                   m2 if m2 is not None else np.zeros(len(newer), bool)])
            mask.flags.writeable = False
        merged.now_masks[key] = (max(s1, s2), min(c1, c2), mask)  # both parts hold in between

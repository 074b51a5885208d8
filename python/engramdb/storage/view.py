"""A snapshot of the store: what every read sees, immutable once published.

The writer publishes a new `View` after each write (a new tuple of segments, a higher edge bound);
a search takes the current view and runs without the writer's lock, however long it takes and
whatever is written meanwhile. What makes that safe:

- segments never change once in a view: rows are immutable, and when a newer version closes a
  row's system time the writer copies that segment (`Segment.with_closed`);
- the id index and the edge log are append-only within a row epoch, and a view reads them only
  up to its own bounds (`rows`, `edge_rows`);
- the archived map is replaced, never edited.

Keys: a row's global key is its position across the view's segments in order (committed files,
then the rows still in the WAL); see storage/ids.py for why keys survive checkpoints.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

import numpy as np

from .._arrow_numpy import arrow_of
from .._requests_first import give_way
from ..kernels.sets import unique
from ..model.edge import Edge, EdgeKey
from ..model.memory import Memory
from ..spaces.batches import concat, empty_batch, take
from ..spaces.protocol import Embedding
from ..spaces.schema import Schema
from . import session_turns
from .edge_log import EdgeLog
from .filters import MaskCache, row_filter
from .ids import IdIndex
from .segment import Segment

Loc = tuple[int, int]  # (segment, row)
LOCS_KEPT = 4_096  # ids whose location one snapshot remembers (View.loc_of)
FEW_ROWS = 16  # rows at a segment's end View._session_rows reads from the table
CHUNK = 8_192  # rows a large read converts in one C call (`values_at`, `_by_segment`)
_UNSEEN = object()
ROW_ARRAYS: dict[str, Callable[[Segment], np.ndarray]] = {  # View.column_at's names
    "learned_at": lambda s: s.learned_at, "valid_from": lambda s: s.valid_from, "valid_until": lambda s: s.valid_until,
    "sys_end": lambda s: s.sys_end, "forgotten": lambda s: s.forgotten, "seq": lambda s: s.seqs()}


_T = TypeVar("_T")


class _once(Generic[_T]):
    """`functools.cached_property` without its lock. On Python 3.10-3.11 that holds one lock per
    property for every instance while any computes: a process forked while another thread laid
    out a snapshot inherited the lock held, and every read in the child, of any store, waited for
    ever. A value here is a function of the frozen view, so two threads racing compute the same."""

    def __init__(self, fn: Callable[[Any], _T]) -> None:
        self.fn, self.name, self.__doc__ = fn, fn.__name__, fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _once[_T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> _T | _once[_T]:
        if obj is None:
            return self
        value = self.fn(obj)
        obj.__dict__[self.name] = value  # found there from now on (a non-data descriptor yields to it)
        return value


@dataclass(frozen=True, eq=False)
class View:
    """One published state of the store (see the module docstring)."""

    generation: int  # bumped by every write: a view of a later generation holds every earlier write
    epoch: int  # row epoch: keys mean the same rows while it stays (a purge renumbers)
    schema: Schema
    segments: tuple[Segment, ...]
    ids: IdIndex
    edges: EdgeLog
    edge_rows: int
    archived: Mapping[str, str]  # memory id -> the archive file holding its content
    masks: MaskCache
    folder: Path | None
    # what searches derive from this snapshot alone (a dense space's vector source, ...): filled
    # on first use by whichever search gets there first; a value is a function of the snapshot,
    # so two searches racing to fill one store equal values
    derived: dict[str, Any] = field(default_factory=dict, init=False)  # never carried to the next view
    # id -> (segment, row) looked up in this snapshot: a context asks about the same hundred ids
    # some 450 times (links, matches, masses, vectors); bounded, cleared when full
    _locs: dict[str, Loc | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    # ------------------------------------------------------------------------------ layout
    @_once
    def bases(self) -> np.ndarray:
        """Where each segment starts in key space, then the total."""
        b = np.zeros(len(self.segments) + 1, np.int64)
        np.cumsum([len(s) for s in self.segments], out=b[1:])
        b.flags.writeable = False
        return b

    @_once
    def _starts(self) -> list[int]:
        """`bases` as Python ints, for one key's segment by bisect: numpy's searchsorted costs ~2 us
        a scalar call, and a context locates some 250 ids one at a time."""
        starts: list[int] = self.bases.tolist()
        return starts

    @property
    def rows(self) -> int:
        """Rows (every version) in the view."""
        return int(self.bases[-1])

    @_once
    def committed(self) -> int:
        """How many leading segments are committed files (the WAL's segments always trail them)."""
        n = 0
        for s in self.segments:
            if s.file is None:
                break
            n += 1
        return n

    @property
    def committed_segments(self) -> tuple[Segment, ...]:
        """The leading segments that are committed files (what derived indexes are built over)."""
        return self.segments[: self.committed]

    def segment_rows(self, seg: int) -> int:
        """Rows (every version) of one segment."""
        return int(self.bases[seg + 1] - self.bases[seg])

    @property
    def committed_rows(self) -> int:
        """Rows in committed files: the keys derived indexes cover."""
        return int(self.bases[self.committed])

    def locate(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(segment, row) arrays of global keys."""
        keys = np.asarray(keys, np.int64)
        seg = np.searchsorted(self.bases, keys, side="right") - 1
        return seg, keys - self.bases[seg]

    def locs(self, keys: np.ndarray) -> list[Loc]:
        """(segment, row) of global keys."""
        seg, row = self.locate(keys)
        return list(zip(seg.tolist(), row.tolist()))

    def keys(self, locs: list[Loc]) -> np.ndarray:
        """Global keys of (segment, row) locations."""
        if not locs:
            return np.empty(0, np.int64)
        a = np.asarray(locs, np.int64)
        out: np.ndarray = self.bases[a[:, 0]] + a[:, 1]
        return out

    # ------------------------------------------------------------------------------ memories
    def _ids(self) -> IdIndex:
        if self.ids.rows < self.rows:
            self.ids.extend(self.segments, self.bases, self.rows)
        return self.ids

    def index_ids(self) -> None:
        """Index every id of this snapshot now (what a first write or a first read of a session's
        turns does otherwise: ~60 ms at 100,000 memories; a writer's warm-up calls it)."""
        self._ids()

    def key_of(self, id: str) -> int | None:
        """The key of a memory's newest row in this view (forgotten or not), or None."""
        ids = self.ids
        if ids.rows == 0:  # nothing indexed yet (a new process's first reads): probe (storage/ids.py)
            return ids.probe(self.segments, self.bases, self.rows, id)
        return self._ids().lookup(id, self.rows)

    def loc_of(self, id: str) -> Loc | None:
        """(segment, row) of a memory's newest row, or None."""
        memo = self._locs
        known = memo.get(id, _UNSEEN)  # one read: a thread may clear the memory between two
        if known is not _UNSEEN:
            return known  # type: ignore[return-value]
        key = self.key_of(id)
        loc: Loc | None = None
        if key is not None:
            starts = self._starts
            seg = bisect_right(starts, key) - 1
            loc = (seg, key - starts[seg])
        if len(memo) >= LOCS_KEPT:
            memo.clear()
        memo[id] = loc
        return loc

    def __contains__(self, id: object) -> bool:
        return isinstance(id, str) and self.key_of(id) is not None

    def get(self, id: str, *, include_forgotten: bool = False) -> Memory | None:
        """The current version of a memory, or None (unknown, or forgotten unless asked)."""
        loc = self.loc_of(id)
        if loc is None:
            return None
        m = self.memory_at(*loc)
        if m.forgotten_at is not None and not include_forgotten:
            return None
        return m

    def memory_at(self, seg: int, row: int) -> Memory:
        """The memory stored at one row (its own copy; see Segment.memory_at)."""
        return self.segments[seg].memory_at(row)

    def memories_at(self, locs: list[Loc]) -> list[Memory]:
        """The memories at (segment, row) locations, in order."""
        return [self.segments[si].memory_at(row) for si, row in locs]

    def versions(self, id: str) -> list[Memory]:
        """Every stored version of a memory, oldest first (a scan of the id column: for history,
        not for hot paths)."""
        out = []
        for seg in self.segments:
            if id in seg.ids:
                out += [seg.memory_at(r) for r, x in enumerate(seg.ids) if x == id]
        return sorted(out, key=lambda m: m.version)

    def is_live(self, id: str) -> bool:
        """True for a memory with a current version that is not forgotten."""
        loc = self.loc_of(id)
        return loc is not None and not bool(self.segments[loc[0]].forgotten[loc[1]])

    def current(self) -> Iterator[tuple[str, Loc]]:
        """(id, (segment, row)) of every memory's newest version, forgotten ones included."""
        bases = self.bases
        for mid, key in self._ids().items(self.rows):
            seg = int(np.searchsorted(bases, key, side="right") - 1)
            yield mid, (seg, key - int(bases[seg]))

    def current_rows(self) -> list[tuple[int, np.ndarray]]:
        """(segment, rows) of every memory's newest version in this view, forgotten ones
        included, segment by segment: the vectorised form of current() for counting. Made once
        per snapshot (a context reads it for the session's turns and for its divergence: a sort
        of every key at 100,000 memories each); callers never change the arrays."""
        found = self.derived.get("current_rows")
        if found is None:
            keys = self._ids().keys(self.rows)  # ascending: each segment's keys are one run of them
            bounds = np.searchsorted(keys, self.bases)
            found = self.derived["current_rows"] = [(si, keys[bounds[si]:bounds[si + 1]] - int(self.bases[si]))
                                                    for si in range(len(self.segments)) if bounds[si + 1] > bounds[si]]
        assert isinstance(found, list)
        return found

    def current_locs(self, namespace: str | None = None, *, include_forgotten: bool = False,
                     session_id: str | None = None) -> list[Loc]:
        """(segment, row) of the newest version of every memory (of one namespace, of one session),
        in key order, forgotten ones left out unless asked: current_rows() filtered segment by
        segment, so a session's turns are found without reading the rest of the namespace."""
        out: list[Loc] = []
        for si, rows in self._current_rows_of(namespace, include_forgotten, session_id):
            out += [(si, r) for r in rows.tolist()]
        return out

    def current_row_arrays(self, namespace: str) -> list[tuple[int, np.ndarray]]:
        """current_locs(namespace) as (segment, ascending rows) arrays, segment by segment: for a
        reader that takes a few of a namespace's memories (newest first, say) without a Python
        tuple for each of 100,000."""
        return list(self._current_rows_of(namespace, False, None))

    def list_order(self, namespace: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A namespace's current, not forgotten memories in the order `Store.list` gives them
        (learned_at, then seq with none first, then the store's order) as three int64 arrays:
        their keys ascending, each one's place in that order, and the keys in that order. Where a
        row sits is not when it was learned: an import appends memories learned long ago, and one
        batch (one learned_at) lists its turns by seq after its notes. Made once per snapshot
        without a Python object per memory."""
        key = f"list_order:{namespace}"
        found = self.derived.get(key)
        if found is None:
            rows = self.current_row_arrays(namespace)
            if not rows:
                empty = np.zeros(0, np.int64)
                found = (empty, empty, empty)
            else:
                bases = self.bases
                keys = np.concatenate([int(bases[si]) + r for si, r in rows])
                learned = np.concatenate([self.segments[si].learned_at[r] for si, r in rows])
                seq = np.concatenate([self.segments[si].seqs()[r] for si, r in rows])
                order = np.lexsort((seq, learned))  # stable: equal (learned_at, seq) stay in key order
                place = np.empty(len(order), np.int64)
                place[order] = np.arange(len(order), dtype=np.int64)
                found = (keys, place, keys[order])
            for a in found:
                a.flags.writeable = False  # shared by every reader of this snapshot
            self.derived[key] = found
        assert isinstance(found, tuple)
        return found

    def _current_rows_of(self, namespace: str | None, include_forgotten: bool,
                         session_id: str | None) -> Iterator[tuple[int, np.ndarray]]:
        """current_locs' rows, segment by segment, as arrays."""
        for si, rows in self.current_rows():
            seg = self.segments[si]
            if namespace is not None and namespace not in seg.ns_codes:
                continue
            if session_id is not None:  # first: most segments hold none of a session's turns
                code = seg.session_code(session_id)
                if code is None:  # no row of this segment is in the session
                    continue
                rows = rows[seg.turns()[0][rows] == code]
            if namespace is not None:
                rows = rows[seg.ns_index[rows] == seg.ns_codes[namespace]]
            if not include_forgotten:
                rows = rows[~seg.forgotten[rows]]
            if len(rows):
                yield si, rows

    def session_locs(self, namespace: str, session_id: str) -> list[Loc]:
        """The current (not forgotten) turns of one session in the order they were said: by seq
        (none first), then learning time. Found once per snapshot, and carried from the store's
        previous snapshot when only rows were added since (storage/session_turns.py: an agent's
        session is the one being written, and the whole pass reads every key)."""
        key = f"session:{namespace}:{session_id}"
        found = self.derived.get(key)
        if found is None:
            ids = self._ids()
            old = session_turns.remembered(ids, namespace, session_id)
            turns = None if old is None else session_turns.extended(
                old, self.epoch, self.segments, self.bases, self.rows, ids,
                lambda first_key: self._session_rows(first_key, namespace, session_id))
            if turns is None:
                turns = session_turns.ordered(self.epoch, self.segments, self.bases, self.rows,
                                              list(self._current_rows_of(namespace, False, session_id)))
            session_turns.remember(ids, namespace, session_id, turns)
            found = self.derived[key] = turns.locs
        assert isinstance(found, list)
        return found

    def _session_rows(self, first_key: int, namespace: str, session_id: str
                      ) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(segment, rows, their seq) of the not forgotten rows of a session in a namespace,
        current or not, from key `first_key` on. A few rows at a segment's end (a write's) are read
        from the table: the WAL's tail is a new segment at each write, and its `turns()` would
        encode every row of it again."""
        out = []
        bases = self.bases
        for si in range(int(np.searchsorted(bases, first_key, side="right")) - 1, len(self.segments)):
            seg = self.segments[si]
            ns = seg.ns_codes.get(namespace)
            if ns is None:
                continue
            lo = max(first_key - int(bases[si]), 0)
            if len(seg) - lo <= FEW_ROWS:
                names = seg.table.column("session_id").slice(lo).to_pylist()
                mine = np.array([name == session_id for name in names], bool)
                rows = lo + np.flatnonzero(mine & (seg.ns_index[lo:] == ns) & ~seg.forgotten[lo:])
                if len(rows):
                    seqs = seg.table.column("seq").slice(lo).to_pylist()
                    out.append((si, rows, np.array([-1 if (x := seqs[r - lo]) is None else x for r in rows.tolist()],
                                                   np.int64)))
                continue
            code = seg.session_code(session_id)
            if code is None:
                continue
            codes, _, seq = seg.turns()
            rows = lo + np.flatnonzero((codes[lo:] == code) & (seg.ns_index[lo:] == ns) & ~seg.forgotten[lo:])
            if len(rows):
                out.append((si, rows, seq[rows]))
        return out

    def live_count(self) -> int:
        """Memories whose current version in this view is not forgotten."""
        return sum(len(rows) - int(self.segments[si].forgotten[rows].sum())
                   for si, rows in self.current_rows())

    def namespace_counts(self) -> dict[str, int]:
        """Memories (forgotten ones included) per namespace, by current version."""
        counts: dict[str, int] = {}
        for si, rows in self.current_rows():
            segment = self.segments[si]
            per_code = np.bincount(segment.ns_index[rows], minlength=len(segment.ns_names))
            for code in np.flatnonzero(per_code).tolist():
                name = segment.ns_names[code]
                counts[name] = counts.get(name, 0) + int(per_code[code])
        return dict(sorted(counts.items()))

    def count(self) -> int:
        """Memories with a version in this view (forgotten ones included)."""
        return self._ids().count(self.rows)

    def row_vector(self, id: str, space: str) -> Embedding:
        """One space's stored vector of a memory's current version, as a batch of one."""
        loc = self.loc_of(id)
        if loc is None:
            raise KeyError(id)
        return take(self.segments[loc[0]].vectors(self.schema, space), [loc[1]])

    def row_vectors(self, id: str) -> dict[str, Embedding]:
        """Every space's stored vector of a memory's current version."""
        return {s.name: self.row_vector(id, s.name) for s in self.schema}

    # ------------------------------------------------------------------------------ columns
    # What a row holds, read by location without making a Memory (100,000 of those cost seconds).
    # The `*_at(locs)` forms read a segment at a time and return values in the order of `locs`.
    def id_at(self, loc: Loc) -> str:
        """The memory id stored at one row."""
        return self.segments[loc[0]].ids[loc[1]]

    def ids_at(self, locs: Iterable[Loc]) -> list[str]:
        """The memory ids stored at these rows, in order."""
        segments = self.segments
        return [segments[si].ids[row] for si, row in locs]

    def namespace_at(self, loc: Loc) -> str:
        """The namespace of one row."""
        return self.segments[loc[0]].namespace(loc[1])

    def namespaces_at(self, locs: Sequence[Loc]) -> list[str]:
        """The namespaces of these rows, in order."""
        out: list[str] = [""] * len(locs)
        for si, pick, rows in self._by_segment(locs):
            seg = self.segments[si]
            names = seg.ns_names
            for i, code in zip(pick.tolist(), seg.ns_index[rows].tolist()):
                out[i] = names[code]
        return out

    def turn_at(self, loc: Loc) -> tuple[str | None, int]:
        """(session id, seq) of one row: where it sits in its conversation (None and -1 when it
        has no session or no seq)."""
        codes, names, seq = self.segments[loc[0]].turns()
        code = int(codes[loc[1]])
        return (names[code] if code >= 0 else None), int(seq[loc[1]])

    def session_keys_at(self, keys: np.ndarray) -> np.ndarray:
        """One int64 per global row key: its session (equal for the turns of one session in any
        segment of this snapshot, 0 for a row without one; see `Segment.session_keys`)."""
        keys = np.asarray(keys, np.int64)
        out = np.zeros(len(keys), np.int64)
        if not len(keys):
            return out
        seg, row = self.locate(keys)
        for si in unique(seg).tolist():
            at = seg == si
            out[at] = self.segments[si].session_keys()[row[at]]
        return out

    def column_at(self, name: str, locs: Sequence[Loc]) -> np.ndarray:
        """One per-row array of these rows, in order: "learned_at", "valid_from", "valid_until",
        "sys_end" (int64 microseconds), "seq" (int64, -1 when none) or "forgotten" (bool)."""
        read = ROW_ARRAYS.get(name)
        if read is None:
            raise ValueError(f"column must be one of {', '.join(map(repr, ROW_ARRAYS))}; got {name!r}")
        out = np.empty(len(locs), np.bool_ if name == "forgotten" else np.int64)
        for si, pick, rows in self._by_segment(locs):
            out[pick] = read(self.segments[si])[rows]
        return out

    def values_at(self, name: str, locs: Sequence[Loc]) -> list[Any]:
        """A stored column's values of these rows as Python objects (None where null), in order:
        "content", "metadata", "confidence", ... (storage/columns.py), one take per segment."""
        out: list[Any] = [None] * len(locs)
        for si, pick, rows in self._by_segment(locs):
            table = self.segments[si].table
            if name not in table.column_names:
                raise ValueError(f"no stored column {name!r}")
            column = table.column(name)
            for at in range(0, len(rows), CHUNK):  # a chunk a C call: a worker's read gives way to requests between two
                got = column.take(arrow_of(np.asarray(rows[at:at + CHUNK], np.int64))).to_pylist()
                for i, value in zip(pick[at:at + CHUNK].tolist(), got):
                    out[i] = value
                give_way()
        return out

    def row_array(self, seg: int, name: str) -> np.ndarray:
        """One per-row array (as `column_at` names them) of every row of one segment: what a scan
        filters a segment at a time with. Read only: the segment's own."""
        read = ROW_ARRAYS.get(name)
        if read is None:
            raise ValueError(f"column must be one of {', '.join(map(repr, ROW_ARRAYS))}; got {name!r}")
        return read(self.segments[seg])

    def vectors(self, seg: int, space: str) -> Embedding:
        """One space's vectors of every row of one segment (zero-copy where the space allows):
        what a scan reads a segment at a time."""
        return self.segments[seg].vectors(self.schema, space)

    def vectors_at(self, space: str, locs: Sequence[Loc]) -> Embedding:
        """One space's vectors of these rows, in order, one take per segment."""
        parts, order = [], []
        by_segment = self._by_segment(locs)
        if len(by_segment) > 1 and self.schema[space].kind == "dense":
            return self._dense_at(space, len(locs), by_segment)
        for si, pick, rows in by_segment:
            parts.append(self.segments[si].vectors_of(self.schema, space, rows))
            order.append(pick)
        if not parts:  # no rows: an empty batch of the space's kind (not a whole segment decoded for it)
            return empty_batch(self.schema[space])
        if len(parts) == 1:  # `take` made the copy already (a second cost a topic refresh 5-30 ms)
            return parts[0]
        return take(concat(parts), np.argsort(np.concatenate(order), kind="stable"))

    def _dense_at(self, space: str, n: int, by_segment: list[tuple[int, np.ndarray, np.ndarray]]) -> np.ndarray:
        """`vectors_at` of a dense space over several segments, each segment's rows gathered into their
        places (a topics run's 100,000 x 384 was copied three times: taken, joined, ordered; ~1 s)."""
        whole = [np.asarray(self.segments[si].vectors(self.schema, space)) for si, _, _ in by_segment]
        out = np.empty((n, *whole[0].shape[1:]), np.result_type(*whole))  # as joining them would make it
        for x, (_, pick, rows) in zip(whole, by_segment):
            if x.dtype == out.dtype and int(pick[-1]) - int(pick[0]) == len(pick) - 1:  # a run of places: no scatter
                np.take(x, rows, axis=0, out=out[int(pick[0]):int(pick[-1]) + 1])
            else:
                out[pick] = x[rows]
            give_way()
        return out

    def namespace_mask(self, seg: int, namespace: str) -> np.ndarray | None:
        """One bool per row of one segment: is it in `namespace`? None when no row is (the
        caller skips the segment without reading it)."""
        segment = self.segments[seg]
        code = segment.ns_codes.get(namespace)
        if code is None:
            return None
        mask: np.ndarray = segment.ns_index == code
        return mask

    def session_mask(self, seg: int, session_id: str) -> np.ndarray | None:
        """One bool per row of one segment: is it a turn of `session_id` (of any namespace)? None
        when no row is."""
        codes, names, _ = self.segments[seg].turns()
        try:
            code = names.index(session_id)
        except ValueError:
            return None
        mask: np.ndarray = codes == code
        return mask

    def _by_segment(self, locs: Sequence[Loc]) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(segment, positions in locs, rows) for each segment the locations fall in."""
        if not len(locs):
            return []
        if len(locs) <= CHUNK:
            a = np.asarray(locs, np.int64).reshape(-1, 2)
        else:  # 100,000 tuples in one C call held the GIL ~30 ms: a worker's read gives way between chunks
            a = np.empty((len(locs), 2), np.int64)
            for at in range(0, len(locs), CHUNK):
                part = locs[at:at + CHUNK]
                a[at:at + len(part)] = np.asarray(part, np.int64).reshape(-1, 2)
                give_way()
        segs, rows = a[:, 0], a[:, 1]
        if segs[0] == segs[-1] and (segs == segs[0]).all():  # the usual case: one segment
            return [(int(segs[0]), np.arange(len(a)), rows)]
        out = []
        for si in unique(segs).tolist():
            pick = np.flatnonzero(segs == si)
            out.append((si, pick, rows[pick]))
        return out

    # ------------------------------------------------------------------------------ edges
    def edge(self, key: EdgeKey) -> Edge | None:
        """The live edge of (src, dst, type), or None."""
        return self.edges.get(key, self.edge_rows)

    def outgoing(self, id: str) -> list[Edge]:
        """Live edges from `id`."""
        return self.edges.outgoing(id, self.edge_rows)

    def incoming(self, id: str) -> list[Edge]:
        """Live edges to `id`."""
        return self.edges.incoming(id, self.edge_rows)

    def live_edges(self) -> list[Edge]:
        """Every live edge."""
        return self.edges.live(self.edge_rows)

    # ------------------------------------------------------------------------------ filters
    def row_filter(self, seg: int, namespace: str, known_us: int | None, t: int | None,
                   rows: np.ndarray | None = None, types: frozenset[str] | None = None) -> np.ndarray | None:
        """Which rows of one segment a query may see (storage/filters.py)."""
        return row_filter(self.segments[seg], namespace, known_us, t, rows, types)

    def key_mask(self, namespace: str, known_us: int | None, t: int | None, at_now: bool,
                 types: frozenset[str] | None = None, *, committed_only: bool = False) -> np.ndarray:
        """One bool per key (of every segment, or of the committed ones) a query may see."""
        run = self.segments[: self.committed] if committed_only else self.segments
        return self.masks.key_mask(run, namespace, known_us, t, at_now, types)

    def newest_namespaces(self) -> list[str]:
        """The namespaces of the newest segment's rows (the WAL's, else the newest file's): where
        the last writes went."""
        return list(self.segments[-1].ns_names) if self.segments else []

    def namespace_rows(self, namespace: str, *, committed_only: bool = False) -> int:
        """Rows (every version) of a namespace."""
        key = f"rows:{namespace}:{committed_only}"
        n = self.derived.get(key)
        if n is None:
            run = self.segments[: self.committed] if committed_only else self.segments
            n = self.derived[key] = sum(s.ns_count(namespace) for s in run)
        return int(n)

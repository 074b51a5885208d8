"""Turn positions: `seq` assigned per (namespace, session) when the caller gives none.

Conversation-neighbour expansion (H3) finds the turns next to a hit by (session_id, seq); a
caller who stores turns in order should not have to count them. A record with a session_id and
no seq gets the next position of its session: one past the highest seq that session holds in
the store (every version, so a position is never reused) or that this writer has handed out.
A caller's own seq is kept, and the count goes on after it. A caller's seq is at most
`checks.MAX_SEQ` (2**62 - 1), so the count has room above it; a session whose positions reached
the 64-bit column's end (a store written before that limit) is refused by name, never overflowed.
"""

from __future__ import annotations

import threading

import pyarrow as pa

from .._arrow_numpy import array_of
from ..model.checks import INT64_MAX
from ..model.errors import InvalidMemory
from ..storage.view import View


class TurnCounter:
    """The writer's next seq per (namespace, session). First use of a session reads its highest
    seq from the segments (vectorised, once per session per process); later batches count on."""

    def __init__(self) -> None:
        self._next: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget the counts (after a write that may set seq by other paths: update, import)."""
        with self._lock:
            self._next.clear()

    def assign(self, view: View, table: pa.Table) -> pa.Table:
        """`table` with seq filled for rows that have a session_id and no seq (positions in row
        order); unchanged when there are none. Call under the writer's lock, with its view."""
        sessions = table.column("session_id").to_pylist()
        seqs = table.column("seq").to_pylist()
        if all(s is None or q is not None for s, q in zip(sessions, seqs)):
            self._note(table, sessions, seqs)
            return table
        namespaces = table.column("namespace").to_pylist()
        out: list[int | None] = []
        with self._lock:
            counts: dict[tuple[str, str], int] = {}  # kept only when every row fits (a refusal moves nothing on)
            for ns, sess, q in zip(namespaces, sessions, seqs):
                if sess is None:
                    out.append(q)
                    continue
                key = (ns, sess)
                nxt = counts.get(key, self._next.get(key))
                if nxt is None:
                    nxt = highest_seq(view, ns, sess) + 1
                if q is None:
                    if nxt > INT64_MAX:
                        raise InvalidMemory(f"session {sess!r} of namespace {ns!r} has used every position up to "
                                            f"{INT64_MAX:,}: the next seq would overflow the store's 64-bit column; "
                                            "give seq explicitly (0 to 2**62 - 1) or start a new session_id")
                    q = nxt
                out.append(q)
                counts[key] = max(nxt, q + 1)
            self._next.update(counts)
        i = table.schema.get_field_index("seq")
        return table.set_column(i, table.schema.field(i), array_of(out, table.schema.field(i).type))

    def _note(self, table: pa.Table, sessions: list[str | None], seqs: list[int | None]) -> None:
        """Caller-given seqs move the count on (only for sessions already counted)."""
        if not self._next:
            return
        namespaces = table.column("namespace").to_pylist()
        with self._lock:
            for ns, sess, q in zip(namespaces, sessions, seqs):
                if sess is not None and q is not None and (ns, sess) in self._next:
                    self._next[(ns, sess)] = max(self._next[(ns, sess)], q + 1)


def highest_seq(view: View, namespace: str, session: str) -> int:
    """The highest seq of a session in a namespace over every row of the view (-1 when none)."""
    best = -1
    for si in range(len(view.segments)):
        mine = view.namespace_mask(si, namespace)
        turns = view.session_mask(si, session) if mine is not None else None
        if mine is None or turns is None:
            continue
        mask = mine & turns
        if mask.any():
            best = max(best, int(view.row_array(si, "seq")[mask].max()))
    return best


__all__ = ["TurnCounter", "highest_seq"]

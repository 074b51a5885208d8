"""Typed edges between memories as the verbs see them (S7 `link` / `unlink` / `edges`, H2):
the checks an edge passes before it is written, and the live edges of a memory in a snapshot."""

from __future__ import annotations

from datetime import datetime

from ..model.edge import Edge, validate_edge_fields
from ..model.errors import InvalidMemory, StoreError
from ..model.memory import Memory, as_utc, utc_now
from ..storage.view import View

DIRECTIONS = ("out", "in", "both")


def current(view: View, id: str, *, include_forgotten: bool = False) -> Memory:
    """The current version of a memory the verbs may change (not archived), or StoreError; an id
    that is not a str raises TypeError naming it (a list given to forget was "unhashable")."""
    if not isinstance(id, str):
        raise TypeError(f"id must be a str, got {type(id).__name__} {id!r:.80}")
    if id in view.archived:
        raise StoreError(f"memory {id!r} is archived (its content is in {view.archived[id]}); unarchive it first")
    m = view.get(id, include_forgotten=include_forgotten)
    if m is None:
        raise StoreError(f"no memory with id {id!r}" + ("" if include_forgotten else " (or it is forgotten)"))
    return m


def edge_for(view: View, src: str, dst: str, type: str, confidence: float, reason: str | None,
             valid_from: datetime | None, valid_until: datetime | None) -> Edge:
    """The checked edge `link` writes: both ends current memories of one namespace, not the same."""
    conf, start, end = validate_edge_fields(type, confidence, reason, valid_from, valid_until)
    a, b = pair(view, src, dst, ("src", "dst"))
    return Edge(a.id, b.id, type, a.namespace, conf, reason, start, end, created_at=utc_now())


def pair(view: View, first: str, second: str, names: tuple[str, str]) -> tuple[Memory, Memory]:
    """Two different current memories of one namespace (what an edge, and supersede, join)."""
    a, b = current(view, first), current(view, second)
    if a.id == b.id:
        raise InvalidMemory(f"{names[0]} and {names[1]} must be two different memories; both are {first!r}")
    if a.namespace != b.namespace:
        raise StoreError(f"{names[0]} {first!r} is in namespace {a.namespace!r} and {names[1]} {second!r} in "
                         f"{b.namespace!r}: memories of different namespaces are never linked")
    return a, b


def removal(view: View, src: str, dst: str, type: str) -> Edge | None:
    """The row that ends the live edge `src -[type]-> dst`, or None when there is none."""
    old = view.edge((src, dst, type))
    if old is None:
        return None
    return Edge(src, dst, type, old.namespace, old.confidence, old.reason, old.valid_from, old.valid_until,
                created_at=old.created_at, removed_at=utc_now())


def edges_of(view: View, id: str, *, direction: str, type: str | None, as_of: datetime | None,
             include_forgotten: bool) -> list[Edge]:
    """The live edges of a memory in one direction, of one type, valid at `as_of`; edges to a
    forgotten memory only when asked."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'out', 'in' or 'both', got {direction!r}")
    t = as_utc("as_of", as_of)
    found = (view.outgoing(id) if direction != "in" else []) + (view.incoming(id) if direction != "out" else [])
    out = []
    for e in found:
        if type is not None and e.type != type:
            continue
        if t is not None and not e.valid_at(t):
            continue
        if not include_forgotten and not all(view.is_live(x) for x in (e.src, e.dst)):
            continue
        out.append(e)
    return out

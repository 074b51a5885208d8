"""Paging a namespace (`Store.list`): its current memories in the order they were learned, a page
at a time, with a cursor that outlives writes."""

from __future__ import annotations

import base64
import bisect
import json
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..model.memory import Memory, micros, utc_now
from ..storage.view import Loc, View

_LIST_FIELDS = ("memory_type", "session_id", "role", "source")
LIST_ORDERS_KEPT = 8  # namespaces whose list order is kept between pages
# (sort keys (learned_at, seq, place), locations, valid_until, id -> position) of one namespace
_ListOrder = tuple[list[tuple[int, int, int]], list[Loc], np.ndarray, dict[str, int]]


class Page(list):  # type: ignore[type-arg]
    """One page of `Store.list`: the memories (a list) and `next_cursor` (None on the last page)."""

    next_cursor: str | None = None


class Pager:
    """A store's list orders, one per recently paged namespace and snapshot."""

    def __init__(self) -> None:
        self._orders: dict[str, tuple[weakref.ref[View], _ListOrder]] = {}

    def clear(self) -> None:
        """Forget every order (a purge: they hold ids and locations)."""
        self._orders = {}

    def page(self, view: View, namespace: str, *, filters: Mapping[str, Any] | None = None, limit: int = 100,
             cursor: str | None = None, include_ended: bool = False, newest_first: bool = False) -> Page:
        """One page of `view`'s namespace (`Store.list` says what each argument does)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an int >= 1, got {limit!r}")
        checks = dict(filters or {})
        for k in checks:
            if k not in _LIST_FIELDS and not k.startswith("metadata."):
                raise ValueError(f"filters: unknown field {k!r}; use one of {', '.join(_LIST_FIELDS)} or metadata.KEY")
        after = _decode_cursor(cursor)
        now = micros(utc_now())
        keys, locs, until, where = self._order(view, namespace)
        start = len(keys) if newest_first else 0
        if after is not None:
            at = where.get(after[2])
            if at is not None and keys[at][:2] == after[:2]:
                start = at if newest_first else at + 1
            else:  # the cursor's memory changed or left since: resume at its batch's start (repeat, never skip)
                group = (after[0], after[1])
                start = bisect.bisect_right(keys, (*group, len(keys))) if newest_first else \
                    bisect.bisect_left(keys, (*group, -1))
        steps = range(start - 1, -1, -1) if newest_first else range(start, len(keys))
        page = Page()
        last: tuple[int, int, str] | None = None
        for i in steps:
            if not include_ended and until[i] <= now:
                continue
            m = view.memory_at(*locs[i])
            if all(_field(m, k) == v for k, v in checks.items()):
                if len(page) == limit and last is not None:
                    page.next_cursor = _encode_cursor(last)
                    break
                page.append(m)
                last = (keys[i][0], keys[i][1], m.id)
        return page

    def _order(self, view: View, namespace: str) -> _ListOrder:
        """A namespace's current memories sorted by (learned_at, seq, place in the store), with
        their locations, valid_until and each id's position, built once per snapshot: a page is a
        lookup and `limit` reads, so walking 100,000 memories a page at a time costs one sort."""
        cache = self._orders
        hit = cache.get(namespace)
        if hit is not None and hit[0]() is view:
            return hit[1]
        locs = view.current_locs(namespace)  # in the store's order: a batch's own
        learned, seq, until = (view.column_at(c, locs).tolist() for c in ("learned_at", "seq", "valid_until"))
        rows = [((learned[place], seq[place], place), loc, until[place], mid)
                for place, (loc, mid) in enumerate(zip(locs, view.ids_at(locs)))]
        rows.sort(key=lambda row: row[0])
        order = ([k for k, _, _, _ in rows], [loc for _, loc, _, _ in rows],
                 np.fromiter((u for _, _, u, _ in rows), np.int64, len(rows)),
                 {mid: i for i, (_, _, _, mid) in enumerate(rows)})
        cache.pop(namespace, None)
        for old in list(cache)[: max(0, len(cache) - LIST_ORDERS_KEPT + 1)]:  # keep the latest few
            cache.pop(old, None)  # (a service pages many users' namespaces; threads may race here)
        cache[namespace] = (weakref.ref(view), order)  # not pinning an old snapshot (its files)
        return order


def _field(m: Memory, key: str) -> Any:
    if key.startswith("metadata."):
        return m.metadata.get(key[len("metadata."):])
    return getattr(m, key)


def _encode_cursor(at: tuple[int, int, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(at).encode()).decode()


def _decode_cursor(cursor: str | None) -> tuple[int, int, str] | None:
    if cursor is None:
        return None
    try:
        when, seq, mid = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return int(when), int(seq), str(mid)
    except (ValueError, TypeError):
        raise ValueError(f"cursor {cursor!r} is not one list() returned") from None


__all__ = ["LIST_ORDERS_KEPT", "Page", "Pager"]

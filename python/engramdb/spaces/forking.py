"""Embedders whose locks a forked child makes anew.

An embedder holds a lock while it embeds (its tables fill as texts come). A process forked while
another thread held it inherits the lock held by a thread the child does not have, and every embed
in the child (a search of its own store included) would wait for ever. Each registered object's
`_after_fork_in_child()` runs in the child: it makes its lock anew and drops what the lost thread
may have left half written (caches only: the same vectors after).
"""

from __future__ import annotations

import os
import weakref
from typing import Any, TypeVar

T = TypeVar("T")

_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()


def members(live: weakref.WeakSet[T]) -> list[T]:
    """A WeakSet's members, copied while other threads may add to it or drop from it: a hook that
    runs before a fork runs in the parent while they do, and `list()` of the set raised "Set
    changed size during iteration" there (the hook then took none of its locks; found by the stop
    44 adversary pass with thousands of stores opened beside the forks)."""
    while True:
        try:
            return list(live)
        except RuntimeError:  # changed while copied: copy again
            continue


def renewed_in_child(obj: Any) -> None:
    """Have `obj._after_fork_in_child()` called in every child forked while `obj` lives."""
    _LIVE.add(obj)


def _renew_in_child() -> None:
    for obj in list(_LIVE):
        obj._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_in_child)

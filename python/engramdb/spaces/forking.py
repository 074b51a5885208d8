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
from typing import Any

_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()


def renewed_in_child(obj: Any) -> None:
    """Have `obj._after_fork_in_child()` called in every child forked while `obj` lives."""
    _LIVE.add(obj)


def _renew_in_child() -> None:
    for obj in list(_LIVE):
        obj._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_in_child)

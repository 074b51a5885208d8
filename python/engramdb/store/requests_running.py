"""Whether a request (a search, a context) is running in this process: what the background
worker's optional work waits for before each of its steps (store/background.py `warm`).

Why: a writer's worker warms what a first request reads (issue 26) on a second thread, and with
the GIL the two share one interpreter: a request that came at once after the open ran 30-45 ms
slower while the warm-up made each segment's row reader and read its vectors beside it (at
100,000 memories, a first context of 125-164 ms against 80-119 without that part). The part a
request can do for itself as fast therefore waits until no request runs, for a bounded time.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import TypeVar

_F = TypeVar("_F", bound=Callable[..., object])

_quiet = threading.Condition()
_running = 0  # requests running now, in every store of the process


def _begin() -> None:
    global _running
    with _quiet:
        _running += 1


def _end() -> None:
    global _running
    with _quiet:
        _running -= 1
        if _running <= 0:
            _quiet.notify_all()


def request(method: _F) -> _F:
    """`method` counted as a request while it runs (a search, a context; nested calls count once each)."""

    @functools.wraps(method)
    def counted(*args: object, **kwargs: object) -> object:
        _begin()
        try:
            return method(*args, **kwargs)
        finally:
            _end()

    return counted  # type: ignore[return-value]


def wait_until_quiet(limit: float) -> bool:
    """Wait until no request runs, at most `limit` seconds; whether none runs. Bounded, so that a
    store that is never quiet still gets the work done (as a request then does it itself)."""
    with _quiet:
        return _quiet.wait_for(lambda: _running <= 0, timeout=limit)


def _forget_in_child() -> None:
    """In a forked child: the threads that ran the parent's requests are not there (their count
    would never come down), and the condition may have been held by one of them."""
    global _quiet, _running
    _quiet, _running = threading.Condition(), 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)

__all__ = ["request", "wait_until_quiet"]

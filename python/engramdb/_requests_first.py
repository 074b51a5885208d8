"""Requests first: which requests (a search, a context) run in this process now, and how the
background worker's work steps aside for them.

Why: a writer's worker (store/background.py) warms what a first request reads and refreshes topics
on a second thread, and with the GIL the two share one interpreter. A request that came at once
after the open ran 30-45 ms slower while the warm-up read vectors beside it (at 100,000 memories, a
first context of 125-164 ms against 80-119 without that part), and a topics run over a namespace of
100,000 turns (seconds of Python: tokens, small talk, labels) made every request beside it about
twice as slow, its large C calls holding the GIL 10-40 ms at a time (issue 26).

So:
- `request` counts a method while it runs (`Reads.search`, `ContextAssembly.context`), and
  `requesting` a block (a write: `Engine.writing`; an agent's loop adds a turn, then asks);
- `wait_until_quiet` waits, for a bounded time, until none runs (the warm-up's steps);
- inside a `background_job`, `give_way()` (called between chunks of a long job's work) waits while
  a request runs: 20 ms at most a call, and over a job at most as long as the job has worked on
  its thread, or 0.1 s when that is longer (a flush of ~1,000 log rows, 12 ms of Python, ran
  beside an agent's next write and doubled it: 7 -> 30 ms). A request never waits long for a job
  that waits for it: were a request to need a lock the job holds, the job would stop 0.1 s at most
  and then go at half its pace or better (a log's appender never waits for a flush under way).
- Outside a background job `give_way()` does nothing: `db.topics()` called by a user's thread runs
  at full pace beside that user's own searches.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

_F = TypeVar("_F", bound=Callable[..., object])

GIVE_WAY_S = 0.02  # the longest one `give_way` waits
SHORTEST_WAY_S = 0.001  # it waits only when it may wait this long
FIRST_WAYS_S = 0.1  # a job may wait this long in all before its own work sets the bound (a short job: a flush)

_quiet = threading.Condition()
_running = 0  # requests running now, in every store of the process
_job = threading.local()  # on a worker's thread while its job runs: .began (thread CPU s), .waited (s)


def _begin() -> None:
    global _running
    with _quiet:
        _running += 1


def _end() -> None:
    global _running
    with _quiet:
        # never below 0: a request that forked a child ends in the child too, where the count began at 0
        _running = max(0, _running - 1)
        if _running <= 0:
            _quiet.notify_all()


def request(method: _F) -> _F:
    """`method` counted as a request while it runs (a search, a context, an add; nested calls count
    once each), unless a background job calls it (see `requesting`)."""

    @functools.wraps(method)
    def counted(*args: object, **kwargs: object) -> object:
        with requesting():
            return method(*args, **kwargs)

    return counted  # type: ignore[return-value]


@contextlib.contextmanager
def requesting() -> Iterator[None]:
    """The block counted as a request while it runs (a write the caller waits for:
    `Engine.writing`), unless a background job runs it (a job never waits for itself)."""
    counted = getattr(_job, "began", None) is None
    if counted:
        _begin()
    try:
        yield
    finally:
        if counted:
            _end()


def wait_until_quiet(limit: float) -> bool:
    """Wait until no request runs, at most `limit` seconds; whether none runs. Bounded, so that a
    store that is never quiet still gets the work done (as a request then does it itself)."""
    with _quiet:
        return _quiet.wait_for(lambda: _running <= 0, timeout=limit)


@contextlib.contextmanager
def background_job(stopping: Callable[[], bool] | None = None) -> Iterator[None]:
    """The calling thread runs a background job until the block ends: `give_way()` in it steps aside
    for requests (see the module docstring), unless `stopping()` says the job's worker is closing
    (a close waits for the job: it would otherwise wait for every request beside it too)."""
    _job.began, _job.waited, _job.stopping = time.thread_time(), 0.0, stopping
    try:
        yield
    finally:
        del _job.began, _job.waited, _job.stopping


class Stopped(Exception):
    """Raised by `give_way()` inside `stoppable()` once the job's worker is closing."""


@contextlib.contextmanager
def stoppable() -> Iterator[None]:
    """Inside a background job: the work in the block may stop at any `give_way()` once the job's
    worker is closing (`Stopped` is raised there), because it changes nothing until it ends (a
    topics run at 100,000 memories takes seconds, and a store's close waits for the running job)."""
    before = getattr(_job, "stoppable", False)
    _job.stoppable = True
    try:
        yield
    finally:
        _job.stoppable = before


def give_way() -> bool:
    """In a background job, while a request runs: wait until none does (see the module docstring
    for the bounds); whether it waited. Costs two reads when no request runs; nothing outside a
    job. Once the job's worker is closing it never waits, and inside `stoppable()` it raises `Stopped`."""
    began = getattr(_job, "began", None)
    if began is None:
        return False
    if _job.stopping is not None and _job.stopping():
        if getattr(_job, "stoppable", False):
            raise Stopped("the store is closing")
        return False
    if _running <= 0:
        return False
    allowed = min(GIVE_WAY_S, max(FIRST_WAYS_S, time.thread_time() - began) - _job.waited)
    if allowed < SHORTEST_WAY_S:
        return False
    t0 = time.monotonic()
    wait_until_quiet(allowed)
    _job.waited += time.monotonic() - t0
    return True


def _forget_in_child() -> None:
    """In a forked child: the threads that ran the parent's requests are not there (their count
    would never come down), and the condition may have been held by one of them."""
    global _quiet, _running
    _quiet, _running = threading.Condition(), 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)

__all__ = ["FIRST_WAYS_S", "GIVE_WAY_S", "SHORTEST_WAY_S", "Stopped", "background_job", "give_way", "request",
           "requesting", "stoppable", "wait_until_quiet"]

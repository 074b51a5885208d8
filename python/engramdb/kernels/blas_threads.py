"""One BLAS thread for the engine's own small matrix products (threadpoolctl).

numpy hands a product of a few thousand rows (HDC's projection of an ingest block: 2,048 x 256 by
256 x bits) to OpenBLAS, whose threads keep spinning for a while after it returns. Each ingest
block's product is followed by single-threaded work (tokens, hashing, Arrow), which those spinning
threads compete with: on a 2-core machine an ingest of long turns ran at 8,100 memories/s with
BLAS's threads as they come and 15,600/s with the projection held to one thread (bench/RESULTS.md,
"ingest third pass"). The limit holds only for the product's duration and is put back after it;
another thread's BLAS call in that window runs on one thread too (slower, never different).
Without threadpoolctl (an install that left it out, or one that fails to scan the libraries) the
products run as numpy runs them.

BLAS's thread count is one setting for the whole process, so one thread at a time owns the limit:
the first to enter sets it and puts the caller's setting back when it leaves; a thread entering
meanwhile (two stores ingesting at once, a nested product) changes nothing. Had each set and put
back its own, two overlapping windows would put back each other's 1 and leave BLAS on one thread
for good (and threadpoolctl lets only the thread that set OpenBLAS's count change it again).
A fork while another thread holds the limit gives the child the caller's setting back: nothing in
the child would ever leave that window.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType
from typing import Any

_lock = threading.Lock()  # held while the limit is set or put back; a fork waits for it
_controller: Any = None  # threadpoolctl's controller: the BLAS libraries loaded, found once
_missing = False
_owner: threading.Thread | None = None  # the thread whose window holds the limit
_held: Any = None  # its threadpoolctl limiter (the caller's setting, to put back)


def _found() -> Any:
    """threadpoolctl's controller, or None without it (looked for once)."""
    global _controller, _missing
    if _controller is not None or _missing:
        return _controller
    with _lock:
        if _controller is None and not _missing:
            try:
                from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

                _controller = ThreadpoolController()  # scans the loaded libraries: ~ms, once
            except Exception:  # noqa: BLE001 - missing, or unable to scan this process: products as numpy runs them
                _missing = True
    return _controller


class _OneThread:
    """The window: BLAS on one thread from enter to exit, when this thread owns the limit."""

    __slots__ = ("_limiter",)

    def __init__(self) -> None:
        self._limiter: Any = None

    def __enter__(self) -> None:
        global _owner, _held
        controller = _found()
        if controller is None:
            return
        with _lock:
            if _owner is not None and _owner.is_alive():
                return  # another window (this thread's own, nested, or another's) holds it
            limiter = controller.limit(limits=1, user_api="blas")  # set now; reads the setting first
            limiter.__enter__()  # threadpoolctl's ownership count: its exit frees OpenBLAS for other threads
            _owner, _held, self._limiter = threading.current_thread(), limiter, limiter

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        global _owner, _held
        limiter, self._limiter = self._limiter, None
        if limiter is None:
            return
        with _lock:
            try:
                limiter.__exit__(None, None, None)  # the caller's setting back
            finally:
                if _held is limiter:
                    _owner = _held = None


def one_blas_thread() -> _OneThread:
    """A context in which BLAS runs on one thread (nothing changes without threadpoolctl, nor
    while another thread's window holds the limit)."""
    return _OneThread()


def _before_fork() -> None:
    _lock.acquire()  # no window half set or half put back in the child


def _after_fork_in_parent() -> None:
    _lock.release()


def _after_fork_in_child() -> None:
    global _owner, _held
    held, owner = _held, _owner
    if held is not None and owner is not threading.current_thread():
        _owner = _held = None  # its thread is not in the child: nothing would put the setting back
        try:
            held.restore_original_limits()
            from threadpoolctl import OpenBLASController

            clear = getattr(OpenBLASController, "clear_controlling_thread", None)  # threadpoolctl >= 3.6
            if clear is not None:
                clear()  # the child's thread that set it back does not keep OpenBLAS to itself
        except Exception:  # noqa: BLE001,S110 - a child left on one BLAS thread is slower, never wrong
            pass
    _lock.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


__all__ = ["one_blas_thread"]

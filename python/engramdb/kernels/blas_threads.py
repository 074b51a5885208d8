"""One BLAS thread for the engine's own small matrix products (threadpoolctl).

numpy hands a product of a few thousand rows (HDC's projection of an ingest block: 2,048 x 256 by
256 x bits) to OpenBLAS, whose threads keep spinning for a while after it returns. Each ingest
block's product is followed by single-threaded work (tokens, hashing, Arrow), which those spinning
threads compete with: on a 2-core machine an ingest of long turns ran at 8,100 memories/s with
BLAS's threads as they come and 15,600/s with the projection held to one thread (bench/RESULTS.md,
"ingest third pass"). The limit holds only for the product's duration and is put back after it;
another thread's BLAS call in that window runs on one thread too (slower, never different).
Without threadpoolctl (an install that left it out) the products run as numpy runs them.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext
from typing import Any

_lock = threading.Lock()
_controller: Any = None  # threadpoolctl's controller: the BLAS libraries loaded, found once
_missing = False


def one_blas_thread() -> AbstractContextManager[Any]:
    """A context in which BLAS runs on one thread (nothing changes without threadpoolctl)."""
    global _controller, _missing
    if _missing:
        return nullcontext()
    controller = _controller
    if controller is None:
        with _lock:
            if _controller is None and not _missing:
                try:
                    from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]
                except ImportError:
                    _missing = True
                    return nullcontext()
                _controller = ThreadpoolController()  # scans the loaded libraries: ~ms, once
            controller = _controller
    if controller is None:
        return nullcontext()
    limited: AbstractContextManager[Any] = controller.limit(limits=1, user_api="blas")
    return limited


__all__ = ["one_blas_thread"]

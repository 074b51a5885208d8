"""The n x n float32 distance matrices of a topic refresh, kept between refreshes (issue 29).

A refresh makes one n x n matrix per voting space (16 MB each at 2,000 memories). Fresh ones cost
the kernel its page zeroing every run (up to about 20 ms of system time a 2,000-memory refresh,
each page faulted in as the product first writes it); reused, they cost nothing: every entry is
written before it is read (`clustering.distances` fills all of it). A lease takes buffers from a
process-wide pool (under a lock, so refreshes in several threads or stores never share one) and
gives them all back when it ends; the pool then keeps the largest of them up to `HELD` bytes in
all and lets the rest go, so what stays allocated between refreshes is bounded (three matrices
at 2,000 memories; one at the 3,000-memory sample).
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import final

import numpy as np

HELD = 64 << 20  # bytes of buffers kept between refreshes, at most


class Pool:
    """Flat float32 buffers free for a lease; at most `held` bytes of them kept."""

    def __init__(self, held: int = HELD) -> None:
        self._free: list[np.ndarray] = []
        self._lock = threading.Lock()
        self._held = held

    def lease(self) -> Lease:
        """A lease on this pool's buffers: `with pool.lease() as lease: d = lease.square(n)`."""
        return Lease(self)

    def held(self) -> int:
        """Bytes of free buffers kept now."""
        with self._lock:
            return sum(b.nbytes for b in self._free)

    def _take(self, size: int) -> np.ndarray:
        with self._lock:
            fits = [k for k, b in enumerate(self._free) if b.size >= size]
            if fits:
                return self._free.pop(min(fits, key=lambda k: self._free[k].size))
        return np.empty(size, np.float32)

    def _give(self, buffers: list[np.ndarray]) -> None:
        with self._lock:
            kept, total = [], 0
            for b in sorted(self._free + buffers, key=lambda b: -b.size):
                if total + b.nbytes <= self._held:
                    kept.append(b)
                    total += b.nbytes
            self._free = kept


@final
class Lease:
    """Buffers taken from a `Pool` for one refresh, all given back when the `with` block ends:
    nothing made from them may be used after it."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool
        self._taken: list[np.ndarray] = []

    def square(self, n: int) -> np.ndarray:
        """An n x n C-contiguous float32 matrix of undefined contents."""
        flat = self._pool._take(n * n)
        self._taken.append(flat)
        out: np.ndarray = flat[:n * n].reshape(n, n)
        return out

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        taken, self._taken = self._taken, []
        self._pool._give(taken)


POOL = Pool()  # the process's: every store's refreshes lease from it

__all__ = ["HELD", "POOL", "Lease", "Pool"]

"""One query's context: the snapshot it reads, its filters, and what went wrong along the way.

Every retrieval method takes the context, reads the snapshot (storage's `View`) and the derived
indexes through it, filters inside its scan by the plan's namespace, time and types (H4), and
returns ranked (segment, row) locations or key arrays. Nothing here takes the writer's lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from ..index.registry import Indexes
from ..model.memory import micros, utc_now
from ..model.tuning import Tuning
from ..spaces.protocol import Embedder
from ..spaces.query import lexical_space
from ..storage.view import Loc, View
from .plan import SearchPlan

log = logging.getLogger("engramdb.search")

# Independent methods of one query overlap on this pool (the kernels release the GIL); the
# calling thread runs one of them itself, so a query costs one thread hop, not two. Only a query
# that runs alone does so: when searches run side by side the cores are already busy, and thread
# hops and GIL hand-offs would cost throughput (bench/test_bench_concurrency.py).
POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="engramdb-search")


class InFlight:
    """How many searches of this process are running (a context manager counts one)."""

    def __init__(self) -> None:
        self._n = 0
        self._lock = threading.Lock()

    def __enter__(self) -> InFlight:  # noqa: PYI034 - not meant to be subclassed
        with self._lock:
            self._n += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._n -= 1

    @property
    def alone(self) -> bool:
        """True while at most one search runs."""
        return self._n <= 1


IN_FLIGHT = InFlight()

Ranked = list[tuple[Loc, float]]
Found = Ranked | tuple[np.ndarray, np.ndarray]  # a ranked list, or (keys, scores) arrays
T = TypeVar("T")


class QueryContext:
    """One query's snapshot, filters and failures."""

    def __init__(self, view: View, indexes: Indexes, embedders: Mapping[str, Embedder], tuning: Tuning,
                 plan: SearchPlan) -> None:
        self.view, self.indexes, self.embedders, self.tuning, self.plan = view, indexes, embedders, tuning, plan
        self.namespace, self.types = plan.namespace, plan.types
        self.known_us, self.as_of_us = plan.known_us, plan.as_of_us
        # the clock recency factors measure ages against, and dates a query names are read on
        self.now_us = plan.now_us if plan.now_us is not None else time.time_ns() // 1_000
        # valid time to filter on, and whether it is the clock's now (a cacheable mask)
        self.t = plan.as_of_us if plan.as_of_us is not None else (
            micros(utc_now()) if plan.known_us is None else None)
        self.at_now = plan.as_of_us is None
        self.lexical = lexical_space(view.schema, embedders)  # the space BM25 indexes, or None
        self.failed: dict[str, str] = {}
        self.index_stats: dict[str, Any] = {}  # what the dense index did (SearchStats.index)

    def run(self, methods: Mapping[str, Callable[[], T]], *, parallel: bool = True) -> dict[str, T]:
        """Run methods, overlapped when this search runs alone (unless told not to: methods that
        are short Python loops gain nothing from a thread hop but GIL hand-offs); a failing one is
        logged, recorded and left out."""
        out: dict[str, T] = {}
        names = list(methods)
        if len(names) <= 1 or not parallel or self.tuning.search_threads < 2 or not IN_FLIGHT.alone:
            for name in names:
                self._call(name, methods[name], out)
            return out
        futures = {name: POOL.submit(methods[name]) for name in names[1:]}
        self._call(names[0], methods[names[0]], out)
        for name, fut in futures.items():
            try:
                out[name] = fut.result()
            except Exception as exc:  # noqa: BLE001 - one method failing must not fail the search
                self.fail(name, exc)
        return {name: out[name] for name in names if name in out}

    def _call(self, name: str, fn: Callable[[], T], out: dict[str, T]) -> None:
        try:
            out[name] = fn()
        except Exception as exc:  # noqa: BLE001 - one method failing must not fail the search
            self.fail(name, exc)

    def fail(self, name: str, exc: Exception) -> None:
        """Record a method that raised and was skipped (logged, named in explain and the stats)."""
        log.warning("search method %r failed and was skipped: %s", name, exc)
        self.failed[name] = f"{type(exc).__name__}: {exc}"

    def rows_ok(self, seg: int, rows: np.ndarray) -> np.ndarray:
        """Which of these rows of one segment the query may see."""
        got = self.view.row_filter(seg, self.namespace, self.known_us, self.t, rows=rows, types=self.types)
        assert got is not None
        return got

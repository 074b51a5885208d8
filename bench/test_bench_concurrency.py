"""Searches side by side on one shared store handle (issue "The house"): 1 vs 2 threads, and
2 threads while a writer adds batches through the same handle.

The store: one namespace "n" of 100,000 Zipf-text memories with clustered dense vectors (the
corpus of bench/test_bench_search.py), default profile, tree and BM25 built. QUERIES distinct
queries, `strategy="hybrid"`, k = 10, `query_vector=` given (no model inside the timing).

- `test_threads`: the queries split over 1, then 2 threads searching one handle, alternated (paired
  ratios: this machine's speed drifts); queries per second and the median paired speedup in
  extra_info. Every hit list must equal the serial run's (same ids, same scores).
- `test_threads_beside_a_writer`: 2 search threads while a third adds batches of 200 memories to
  another namespace (dedup off, a checkpoint every 4,096 rows: WAL frames, segment files, tree
  and BM25 sync all happen meanwhile). Reported: search latency p50/p95/max, and the writer's
  commit durations (each add_many call, checkpoint included): a search must never wait for a
  commit, so its worst latency should not exceed the slowest commit. Hits must equal the serial
  run's (the writer's namespace is another one).
- Each is run with both `Tuning.search_threads` settings (1, the default: a search runs its
  methods in turn; 2: a search running alone overlaps them on a two-thread pool).

Run: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python -m pytest bench/test_bench_concurrency.py -q -p no:cacheprovider`
(the ratios are printed at the end and kept in extra_info; no timing is asserted).
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _zipf
import engramdb
import numpy as np
import pytest

N = 100_000
QUERIES = 400
BATCH = 10_000
WRITE_BATCH = 200
ROUNDS = 5
PAIRS = 15


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="engramdb-bench-threads-")) / "mem"
    docs = _zipf.documents(N)
    X, _ = _zipf.vectors(N, QUERIES)
    with engramdb.open(path, dedup="off") as db:
        for a in range(0, N, BATCH):
            db.add_many([{"content": docs[i], "namespace": "n", "vectors": {"dense": X[i]}}
                         for i in range(a, a + BATCH)])
        db.admin.build_index()
    yield path
    shutil.rmtree(path.parent, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def queries() -> tuple[list[str], np.ndarray]:
    _, Q = _zipf.vectors(N, QUERIES)
    return _zipf.queries(QUERIES), Q


def answers(db: engramdb.Store, idx: range | list[int]) -> dict[int, list[tuple[str, float]]]:
    qs, Q = queries()
    return {i: [(h.id, h.score) for h in db.search(qs[i], namespace="n", k=10, strategy="hybrid",
                                                      query_vector=Q[i])] for i in idx}


def split(threads: int, fn: Any) -> float:
    """Run fn(share) on `threads` threads over interleaved shares of the queries; wall seconds."""
    shares = [list(range(j, QUERIES, threads)) for j in range(threads)]
    workers = [threading.Thread(target=fn, args=(s,)) for s in shares]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - t0


@pytest.fixture(scope="module", params=[1, 2], ids=["search_threads=1", "search_threads=2"])
def store(request: pytest.FixtureRequest, folder: Path) -> Iterator[tuple[engramdb.Store, dict[int, Any], int]]:
    setting = int(request.param)
    db = engramdb.open(folder, dedup="off", tuning=engramdb.Tuning(search_threads=setting, search_cache=0))
    answers(db, range(QUERIES))  # warm: lazy loads, masks, the hit memo every round will reuse
    serial = answers(db, range(QUERIES))
    yield db, serial, setting
    db.close()


def test_threads(benchmark: Any, store: Any) -> None:
    """1 and 2 threads, alternated PAIRS times (a shared 2-core machine drifts by tens of percent
    within a minute: a ratio of two runs taken apart would measure the drift); the benchmark
    times the 2-thread runs."""
    db, serial, setting = store
    got: dict[int, Any] = {}
    one: list[float] = []
    two: list[float] = []

    def run() -> None:
        one.append(split(1, lambda share: got.update(answers(db, share))))
        assert got == serial
        got.clear()
        two.append(split(2, lambda share: got.update(answers(db, share))))
        assert got == serial  # side by side, every query answers exactly as it does alone

    benchmark.group = f"hybrid-100k-threads (search_threads={setting})"
    benchmark.pedantic(run, rounds=PAIRS, iterations=1)
    ratios = [a / b for a, b in zip(one, two)]
    qps1, qps2 = QUERIES / float(np.median(one)), QUERIES / float(np.median(two))
    benchmark.extra_info.update({
        "search_threads": setting, "queries": QUERIES, "pairs": PAIRS, "qps_1_thread": qps1, "qps_2_threads": qps2,
        "speedup_median": float(np.median(ratios)), "speedup_min": min(ratios), "speedup_max": max(ratios),
        "target": 1.6})
    print(f"\nsearch_threads={setting}: 1 thread {qps1:.0f} q/s, 2 threads {qps2:.0f} q/s (medians); paired "
          f"speedup median {np.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f})")


def test_threads_beside_a_writer(benchmark: Any, store: Any) -> None:
    db, serial, setting = store
    docs = _zipf.documents(N)
    X, _ = _zipf.vectors(N, QUERIES)
    queries()
    got: dict[int, Any] = {}
    latencies: list[float] = []
    commits: list[float] = []
    written = [0]

    def reader(share: list[int]) -> None:
        qs, Q = queries()
        for i in share:
            t0 = time.perf_counter()
            hits = db.search(qs[i], namespace="n", k=10, strategy="hybrid", query_vector=Q[i])
            latencies.append(time.perf_counter() - t0)
            got[i] = [(h.id, h.score) for h in hits]

    def run() -> None:
        stop = threading.Event()

        def writer() -> None:
            while not stop.is_set():
                a = written[0] % (N - WRITE_BATCH)
                t0 = time.perf_counter()
                db.add_many([{"content": docs[i], "namespace": "w", "vectors": {"dense": X[i]}}
                             for i in range(a, a + WRITE_BATCH)])
                commits.append(time.perf_counter() - t0)
                written[0] += WRITE_BATCH

        w = threading.Thread(target=writer)
        w.start()
        try:
            split(2, reader)
        finally:
            stop.set()
            w.join()

    benchmark.group = f"hybrid-100k-beside-writer (search_threads={setting})"
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1)
    assert got == serial  # the writer's namespace is another: every hit list stays the serial run's
    ms = np.array(latencies) * 1e3
    cm = np.array(commits) * 1e3
    benchmark.extra_info.update({
        "search_threads": setting, "search_p50_ms": float(np.percentile(ms, 50)),
        "search_p95_ms": float(np.percentile(ms, 95)), "search_max_ms": float(ms.max()),
        "commit_p50_ms": float(np.percentile(cm, 50)), "commit_max_ms": float(cm.max()),
        "memories_written": written[0], "commits": len(cm),
    })
    print(f"\nsearch_threads={setting} beside a writer: search p50 {np.percentile(ms, 50):.2f} ms, p95 "
          f"{np.percentile(ms, 95):.2f}, max {ms.max():.1f}; commits p50 {np.percentile(cm, 50):.1f} ms, max "
          f"{cm.max():.1f} ({written[0]} memories written)")

"""Cost of the importance layer (issue "[4 of 7]": access log, ELO ratings, consolidation).

Three measurements, recorded in extra_info (benchmarks record, they do not assert speed):

- the batch ELO update (importance/batch.py) over an in-memory access log of 110,000 rows:
  10,000 queries of 10 "search" rows each over 5,000 memory ids (random.Random(0), scores uniform
  in [0, 1], ranks in score order) plus one "feedback" row per query naming one of its shown ids.
  Every round starts from fresh `Ratings()`; the log is read once, outside the timing.
  Target: 100,000 entries/s.
- a dry-run consolidation of 100,000 memories (one namespace, default profile, in memory) after
  2,000 logged searches with feedback and `update_importance()`, 20 days later (the logged
  queries replayed to protect what they reach) and 40 days later (none in the window; the grace
  has passed and decay has bitten). Target: 10 s.
- default search latency (k = 10) at 100,000 memories with the access log on (every search is
  logged and its hits annotated with ELO) and off (nothing logged, `query_id` None): one store
  folder built once, reopened per setting; 20 warm-up queries, then 300 timed one at a time.
  Target: with the log within 5% of without (recorded, not asserted).

Both 100K stores are module-scoped (~1 min each to build on a 2-core machine).
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pyarrow as pa
import pytest
from engramdb.importance import batch
from engramdb.importance.ratings import Ratings
from engramdb.storage.access_log import access_log

N = 100_000
BATCH = 10_000
NAMESPACE = "n"

# batch ELO update
LOG_QUERIES = 10_000
SHOWN = 10
LOG_MEMORIES = 5_000
TARGET_ENTRIES_PER_S = 100_000

# consolidation
FEEDBACK_SEARCHES = 2_000
TARGET_CONSOLIDATION_S = 10

# search latency with / without the access log
WARM = 20
TIMED = 300
RATED_SEARCHES = 300  # searches with feedback before the store is closed, so its hits have ratings


def _content(i: int) -> str:
    return f"note {i} about topic {i % 97} and item {i % 1013}"


def _fill(db: Any) -> float:
    """Add the N memories in batches of BATCH; returns the seconds it took."""
    t0 = time.perf_counter()
    for a in range(0, N, BATCH):
        db.add_many([{"content": _content(i), "namespace": NAMESPACE} for i in range(a, a + BATCH)])
    return time.perf_counter() - t0


def _search_with_feedback(db: Any, n: int) -> float:
    """n logged searches, each reporting its top hit used; returns the seconds it took."""
    t0 = time.perf_counter()
    for j in range(n):
        hits = db.search(f"topic {j % 97} item", namespace=NAMESPACE, k=10)
        if len(hits):
            db.feedback(hits.query_id, used=[hits[0].id])
    return time.perf_counter() - t0


def _queries(n: int, seed: int) -> list[str]:
    """Varied queries over the contents' words: topic / item / note numbers, alone and together."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        form = rng.randrange(4)
        topic, item, note = rng.randrange(97), rng.randrange(1013), rng.randrange(N)
        out.append([f"topic {topic} item {item}", f"note {note} about topic {topic}",
                    f"item {item}", f"about topic {topic} and item"][form])
    return out


# ------------------------------------------------------------------------------ batch ELO update
def _access_rows() -> list[dict[str, Any]]:
    rng = random.Random(0)
    ids = [f"mem-{i:05d}" for i in range(LOG_MEMORIES)]
    t0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
    rows: list[dict[str, Any]] = []
    for q in range(LOG_QUERIES):
        qid = f"q{q:06d}"
        at = t0 + timedelta(seconds=q)
        shown = [ids[i] for i in rng.sample(range(LOG_MEMORIES), SHOWN)]
        scores = sorted((rng.random() for _ in range(SHOWN)), reverse=True)
        base = {"kind": "search", "query_id": qid, "namespace": NAMESPACE, "session_id": None, "at": at,
                "query": f"query {q}", "strategy": "hybrid", "used": False}
        rows.extend({**base, "memory_id": mid, "rank": r + 1, "score": s, "latency_ms": 1.0 if r == 0 else None}
                    for r, (mid, s) in enumerate(zip(shown, scores)))
        rows.append({"kind": "feedback", "query_id": qid, "namespace": NAMESPACE, "session_id": None,
                     "at": at + timedelta(milliseconds=500), "query": None, "strategy": None,
                     "memory_id": rng.choice(shown), "rank": None, "score": None, "used": True, "latency_ms": None})
    return rows


def test_batch_elo_update_throughput(benchmark: Any) -> None:
    rows = _access_rows()
    log = access_log(None, writable=True, flush_rows=1 << 30)  # in memory, never flushed
    t0 = time.perf_counter()
    log.append(rows)
    t_append = time.perf_counter() - t0
    t0 = time.perf_counter()
    table: pa.Table = log.read()
    t_read = time.perf_counter() - t0
    assert table.num_rows == len(rows) == LOG_QUERIES * (SHOWN + 1)
    benchmark.group = "importance-batch-elo"
    reports: list[batch.UpdateReport] = []

    def update(ratings: Ratings, log_table: pa.Table) -> None:
        reports.append(batch.apply(ratings, log_table))

    benchmark.pedantic(update, setup=lambda: ((Ratings(), table), {}), rounds=5, iterations=1)
    report = reports[-1]
    mean = float(benchmark.stats.stats.mean) if benchmark.stats is not None else report.seconds
    benchmark.extra_info.update({
        "rows": table.num_rows, "entries_per_second": round(table.num_rows / mean),
        "matches": report.matches, "updates": report.updates, "entries": report.entries,
        "rated_memories": len({c["memory_id"] for c in report.changes}),
        "log_append_s": round(t_append, 3), "log_read_s": round(t_read, 3),
        "target_entries_per_second": TARGET_ENTRIES_PER_S,
    })
    # every round replays the same log from fresh ratings: the same work each time
    assert all((r.entries, r.matches, r.updates) == (report.entries, report.matches, report.updates)
               for r in reports)
    assert report.matches == LOG_QUERIES and report.updates == LOG_QUERIES * SHOWN


# ------------------------------------------------------------------------------ consolidation
@pytest.fixture(scope="module")
def rated_store_in_memory() -> Iterator[tuple[Any, dict[str, Any]]]:
    db = engramdb.open(None)
    t_add = _fill(db)
    t0 = time.perf_counter()
    db.admin.build_index()
    t_index = time.perf_counter() - t0
    t_feedback = _search_with_feedback(db, FEEDBACK_SEARCHES)
    up = db.importance.refresh()
    yield db, {"add_s": round(t_add, 2), "index_s": round(t_index, 2),
               "searches_with_feedback": FEEDBACK_SEARCHES, "searches_with_feedback_s": round(t_feedback, 2),
               "update_importance_s": round(up.seconds, 3), "elo_matches": up.matches, "elo_updates": up.updates}
    db.close()


@pytest.mark.parametrize("days_on", [20, 40])
def test_consolidation_100k(benchmark: Any, rated_store_in_memory: tuple[Any, dict[str, Any]], days_on: int) -> None:
    """20 days on, the logged queries are inside the 30-day window and are replayed 50 deep to
    protect what they reach; 40 days on, none is."""
    db, setup = rated_store_in_memory
    later = datetime.now(timezone.utc) + timedelta(days=days_on)
    benchmark.group = "importance-consolidation"
    reports: list[Any] = []

    def run() -> None:
        reports.append(db.lifecycle.consolidate(namespace=NAMESPACE, dry_run=True, now=later))

    benchmark.pedantic(run, rounds=3, iterations=1)
    report = reports[-1]
    benchmark.extra_info.update({
        "memories": len(report.decisions), "decisions": report.counts(), "days_on": days_on,
        "protected": sum("recent question" in d.reason for d in report.decisions),
        "seconds_per_run": [round(r.seconds, 3) for r in reports], "target_seconds": TARGET_CONSOLIDATION_S,
        **setup,
    })
    assert len(report.decisions) == N  # a dry run decides for every memory and changes nothing
    assert all(r.counts() == report.counts() for r in reports)


# ------------------------------------------------------------------------------ search with / without the log
@pytest.fixture(scope="module")
def store_folder_100k() -> Iterator[tuple[Path, dict[str, Any]]]:
    folder = Path(tempfile.mkdtemp(prefix="engramdb-bench-importance-"))
    path = folder / "mem"
    db = engramdb.open(path)
    t_add = _fill(db)
    t0 = time.perf_counter()
    db.admin.build_index()
    db.admin.checkpoint()
    t_index = time.perf_counter() - t0
    _search_with_feedback(db, RATED_SEARCHES)  # ratings exist, so annotation looks real ones up
    up = db.importance.refresh()
    db.close()
    yield path, {"add_s": round(t_add, 2), "index_s": round(t_index, 2), "searches_with_feedback": RATED_SEARCHES,
                 "elo_updates_before": up.updates}
    shutil.rmtree(folder, ignore_errors=True)


def _logged_rows(db: Any) -> int:
    return int(db.stats()["usage"]["log"]["next_seq"])


@pytest.mark.parametrize("access_log", [True, False])
def test_search_latency_with_and_without_the_access_log(
        benchmark: Any, store_folder_100k: tuple[Path, dict[str, Any]], access_log: bool) -> None:
    path, setup = store_folder_100k
    benchmark.group = "importance-search-access-log"
    db = engramdb.open(path, access_log=access_log, tuning=engramdb.Tuning(search_cache=0))
    try:
        for q in _queries(WARM, seed=2):
            db.search(q, namespace=NAMESPACE, k=10)
        qs = _queries(TIMED, seed=1)
        times: list[float] = []
        results: list[Any] = []
        seq_before = _logged_rows(db)

        def run() -> None:
            for q in qs:
                t0 = time.perf_counter()
                hits = db.search(q, namespace=NAMESPACE, k=10)
                times.append(time.perf_counter() - t0)
                results.append(hits)

        benchmark.pedantic(run, rounds=1, iterations=1)
        logged = _logged_rows(db) - seq_before
    finally:
        db.close()
    ms = np.array(times) * 1e3
    n_hits = sum(len(h) for h in results)
    annotated = sum(1 for h in results for x in h if x.elo is not None and x.tier is not None)
    benchmark.extra_info.update({
        "access_log": access_log, "memories": N, "queries": len(ms),
        "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)), "mean_ms": float(ms.mean()),
        "hits_per_query": n_hits / len(ms), "annotated_hit_share": annotated / max(1, n_hits),
        "rows_logged": logged, "target": "within 5% of access_log=False", **setup,
    })
    # a correctness check, not a timing one: the log is on or off, as asked
    assert n_hits > 0
    if access_log:
        assert all(h.query_id is not None for h in results)
        assert annotated == n_hits  # every hit carries its ELO and tier
        assert logged == sum(max(1, len(h)) for h in results)  # one row per hit (one for an empty search)
    else:
        assert all(h.query_id is None for h in results)
        assert logged == 0

"""Store throughput and latency (issue: Store): add_many with caller vectors and with the built-in
embedders, reopening a store, exact search p50/p95.

Sizes: 100,000 memories (10 namespaces) for search and reopen; batches of 5,000 for add_many.
extra_info carries memories/s, p50/p95 in ms, so bench/report.py and RESULTS.md can quote them.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import _data
import engramdb
import numpy as np
import pytest
from engramdb.spaces.schema import Schema, Space

N = 100_000
BATCH = 5_000
DENSE = Schema([Space("dense", "dense", 384, "cosine")])


@pytest.fixture(scope="module")
def unit_rows() -> np.ndarray:
    x = np.random.default_rng(7).standard_normal((N, 384)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def store_100k(unit_rows: np.ndarray) -> Any:
    folder = Path(tempfile.mkdtemp(prefix="engramdb-bench-"))
    db = engramdb.open(folder / "mem", schema=DENSE, embedders={}, dedup="off")
    for b in range(0, N, BATCH):
        db.add_many([{"content": f"memory {i}", "namespace": f"ns{i % 10}", "vectors": {"dense": unit_rows[i]}}
                     for i in range(b, b + BATCH)])
    db.close()
    yield folder / "mem"
    shutil.rmtree(folder, ignore_errors=True)


def test_add_many_caller_vectors(benchmark: Any, unit_rows: np.ndarray) -> None:
    benchmark.group = "store-add"
    records = [{"content": f"memory {i}", "namespace": "n", "vectors": {"dense": unit_rows[i]}} for i in range(BATCH)]

    def run() -> None:
        db = engramdb.open(None, schema=DENSE, embedders={}, dedup="off")
        db.add_many(records)

    benchmark.pedantic(run, rounds=5, warmup_rounds=1)
    benchmark.extra_info["memories_per_s"] = BATCH / benchmark.stats.stats.median
    benchmark.extra_info["target_per_s"] = 50_000


def test_add_many_caller_vectors_on_disk(benchmark: Any, unit_rows: np.ndarray, tmp_path: Path) -> None:
    """The same, into a store folder: every batch is an fsynced WAL frame, checkpoints included."""
    benchmark.group = "store-add"
    records = [{"content": f"memory {i}", "namespace": "n", "vectors": {"dense": unit_rows[i]}} for i in range(BATCH)]
    runs = iter(range(100))

    def run() -> None:
        with engramdb.open(tmp_path / f"s{next(runs)}", schema=DENSE, embedders={}, dedup="off") as db:
            db.add_many(records)

    benchmark.pedantic(run, rounds=5, warmup_rounds=1)
    benchmark.extra_info["memories_per_s"] = BATCH / benchmark.stats.stats.median
    benchmark.extra_info["target_per_s"] = 50_000


def test_add_many_builtin_embedders(benchmark: Any) -> None:
    benchmark.group = "store-add"
    words = ["Caroline", "Melanie", "painted", "lake", "sunrise", "support", "group", "adoption", "camping", "hiking", "pottery", "kids"]
    rng = np.random.default_rng(3)
    records = [{"content": " ".join(rng.choice(words, size=12)) + f" on day {i}", "namespace": "n"} for i in range(BATCH)]

    def run() -> None:
        db = engramdb.open(None, dedup="off")  # the default profile: dense + lexical + hdc + tokens
        db.add_many(records)

    benchmark.pedantic(run, rounds=3, warmup_rounds=1)
    benchmark.extra_info["memories_per_s"] = BATCH / benchmark.stats.stats.median
    benchmark.extra_info["target_per_s"] = 5_000


@pytest.fixture(scope="module")
def store_100k_one_namespace() -> Any:
    """100,000 clustered memories (bench/_data.py) in one namespace, tree built and saved (build_index)."""
    rows = _data.dense("clustered").X
    folder = Path(tempfile.mkdtemp(prefix="engramdb-bench-"))
    with engramdb.open(folder / "mem", schema=DENSE, embedders={}, dedup="off") as db:
        for b in range(0, N, 20_000):
            db.add_many([{"content": f"memory {i}", "namespace": "one", "vectors": {"dense": rows[i]}}
                         for i in range(b, b + 20_000)])
        t0 = time.perf_counter()
        db.admin.build_index()
        build_s = time.perf_counter() - t0
    yield folder / "mem", build_s
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("strategy", ["tree", "exact"])
def test_search_100k_one_namespace(benchmark: Any, store_100k_one_namespace: Any, strategy: str) -> None:
    """p50/p95 of store.search (hits materialised) on a 100K namespace: centroid tree vs exact scan."""
    benchmark.group = "store-search-100k-one-namespace"
    path, build_s = store_100k_one_namespace
    db = engramdb.open(path, schema=DENSE, embedders={}, read_only=True)
    queries = db_queries = _data.dense("clustered").Q  # fresh draws from the same clusters
    lat, found, work = [], [], []
    for q in queries:
        t0 = time.perf_counter()
        hits = db.search(q, namespace="one", k=10, strategy=strategy)
        lat.append(time.perf_counter() - t0)
        found.append({h.id for h in hits})
        work.append(hits.stats.index.get("e_computations", 0))  # each search's own statistics
    if strategy == "tree":
        exact = [{h.id for h in db.search(q, namespace="one", k=10, strategy="exact")} for q in db_queries[:50]]
        benchmark.extra_info["recall_at_10"] = float(np.mean([len(a & b) / 10 for a, b in zip(found, exact)]))
        benchmark.extra_info["tree_build_s"] = build_s
        benchmark.extra_info["e_computations"] = float(np.mean(work))
    lat.sort()
    benchmark.extra_info["p50_ms"] = 1e3 * lat[len(lat) // 2]
    benchmark.extra_info["p95_ms"] = 1e3 * lat[int(len(lat) * 0.95)]
    benchmark.pedantic(lambda: db.search(queries[0], namespace="one", k=10, strategy=strategy), rounds=20,
                       warmup_rounds=2)
    db.close()


def test_reopen_100k(benchmark: Any, store_100k: Path) -> None:
    benchmark.group = "store-reopen"

    def run() -> None:
        engramdb.open(store_100k, schema=DENSE, embedders={}, read_only=True).close()

    benchmark.pedantic(run, rounds=5, warmup_rounds=1)
    benchmark.extra_info["memories"] = N


def test_search_100k_p50_p95(benchmark: Any, store_100k: Path, unit_rows: np.ndarray) -> None:
    benchmark.group = "store-search"
    db = engramdb.open(store_100k, schema=DENSE, embedders={}, read_only=True)
    queries = unit_rows[:200] + 0.01
    lat = []
    for q in queries:
        t0 = time.perf_counter()
        hits = db.search(q, namespace="ns0", k=10)
        lat.append(time.perf_counter() - t0)
        assert len(hits) == 10
    lat.sort()
    benchmark.extra_info["p50_ms"] = 1e3 * lat[len(lat) // 2]
    benchmark.extra_info["p95_ms"] = 1e3 * lat[int(len(lat) * 0.95)]
    benchmark.pedantic(lambda: db.search(queries[0], namespace="ns0", k=10), rounds=20, warmup_rounds=2)
    db.close()

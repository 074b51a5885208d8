"""Context assembly latency at 100,000 memories (issue "[6 of 7]"; target p95 < 20 ms without the
query's model embedding).

One namespace of 100,000 Zipf-text memories (bench/_zipf.py) in a store folder with its indexes
built, default profile with the built-in embedders (the query's embedding is model-free hashing, well under a millisecond, and included).
The namespace's topics are computed once before timing (a sample of 3,000 clustered, the rest
joined by centroid), as an agent's store would have them. Then 200 different questions, one
`db.context(q, namespace="n", max_tokens=1000)` each; p50 / p95 and the mean of each stage
(`Context.stats["ms"]`: search, candidates, topics, related, render) in extra_info. The search
cache is off (`Tuning(search_cache=0)`): the numbers are the assembly, not a repeat.

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python -m pytest bench/test_bench_context.py -q -p no:cacheprovider --benchmark-json=/tmp/bench_context.json`
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import _zipf
import engramdb
import numpy as np

N = 100_000
QUERIES = 200


def test_context_latency_at_100k(benchmark: Any) -> None:
    docs = _zipf.documents(N)
    folder = Path(tempfile.mkdtemp(prefix="engramdb-bench-context-"))
    db = engramdb.open(folder / "mem", dedup="off", access_log=False, tuning=engramdb.Tuning(search_cache=0))
    t0 = time.perf_counter()
    for a in range(0, N, 10_000):
        db.add_many([{"content": docs[i], "namespace": "n"} for i in range(a, a + 10_000)])
    db.build_index()  # the centroid tree and BM25, as after a bulk load
    t_add = time.perf_counter() - t0
    t0 = time.perf_counter()
    topics = db.topics("n")
    t_topics = time.perf_counter() - t0
    qs = _zipf.queries(QUERIES + 20)
    for q in qs[QUERIES:]:  # warm: lazily built indexes and masks
        db.context(q, namespace="n", max_tokens=1000)
    times: list[float] = []
    stages: dict[str, list[float]] = {}
    tokens: list[int] = []

    def run() -> None:
        for q in qs[:QUERIES]:
            t = time.perf_counter()
            ctx = db.context(q, namespace="n", max_tokens=1000)
            times.append((time.perf_counter() - t) * 1e3)
            tokens.append(ctx.stats["tokens"])
            for k, v in ctx.stats["ms"].items():
                stages.setdefault(k, []).append(v)

    benchmark.group = "context"
    benchmark.pedantic(run, rounds=1, iterations=1)
    ms = np.array(times)
    benchmark.extra_info.update({
        "memories": N, "queries": len(ms), "max_tokens": 1000, "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2), "mean_tokens": round(float(np.mean(tokens)), 1),
        "stage_mean_ms": {k: round(float(np.mean(v)), 3) for k, v in stages.items()},
        "add_s": round(t_add, 1), "topics_s": round(t_topics, 1), "topics": len(topics), "target_p95_ms": 20})
    assert max(tokens) <= 1000
    db.close()
    shutil.rmtree(folder, ignore_errors=True)

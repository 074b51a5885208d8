"""A 1,000,000-memory store (384-d clustered vectors, 10 namespaces of 100K): build, index, reopen, search.

Run: python bench/store_1m.py [--path /tmp/st-1m] (a few minutes; figures go to RESULTS.md).
Reports add_many throughput with caller vectors, build_index time (ten 100K-memory trees),
reopen time (three times: the first after the build is warm in the page cache like any reopen
on this machine), and search p50/p95 with the centroid tree vs the exact scan, plus the tree's
recall@10 against exact on the same queries.
"""

from __future__ import annotations

import argparse
import shutil
import time

import engramdb
import numpy as np
from engramdb.spaces.schema import Schema, Space

N, B, D, CENTRES, SIGMA = 1_000_000, 20_000, 384, 1_000, 0.05


def clustered(rng: np.random.Generator, centres: np.ndarray, n: int) -> np.ndarray:
    x = centres[rng.integers(0, len(centres), n)] + SIGMA * rng.standard_normal((n, D), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--path", default="/tmp/st-1m")
    args = ap.parse_args()
    shutil.rmtree(args.path, ignore_errors=True)
    schema = Schema([Space("dense", "dense", D, "cosine")])
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((CENTRES, D)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    db = engramdb.open(args.path, schema=schema, embedders={}, dedup="off")
    spent = 0.0
    for b in range(0, N, B):
        x = clustered(rng, centres, B)
        recs = [{"content": f"memory {i}", "namespace": f"ns{i % 10}", "vectors": {"dense": x[i - b]}}
                for i in range(b, b + B)]
        t = time.perf_counter()
        db.add_many(recs)
        spent += time.perf_counter() - t
    print(f"add_many 1M with caller vectors: {spent:.1f}s = {N / spent:,.0f}/s", flush=True)
    t = time.perf_counter()
    built = db.admin.build_index()
    print(f"build_index: {time.perf_counter() - t:.1f}s for {len(built)} trees of {min(built.values()):,}+", flush=True)
    db.close()
    queries = clustered(rng, centres, 100)
    for attempt in range(3):
        t = time.perf_counter()
        db = engramdb.open(args.path, schema=schema, embedders={}, read_only=True)
        print(f"reopen 1M #{attempt + 1}: {time.perf_counter() - t:.2f}s segments={db.stats()['segments']}", flush=True)
        db.search(queries[0], namespace="ns0", k=10)  # loads the tree file (timed below separately)
        for strategy in ("tree", "exact"):
            lat, got = [], []
            for q in queries:
                t = time.perf_counter()
                hits = db.search(q, namespace="ns0", k=10, strategy=strategy)
                lat.append(time.perf_counter() - t)
                got.append({h.id for h in hits})
            lat.sort()
            if strategy == "tree":
                work = hits.stats.index.get("e_computations")
                tree_sets = got
            else:
                recall = np.mean([len(a & b) / 10 for a, b in zip(tree_sets, got)])
            print(f"  search 1M ({strategy}, 100K namespace): p50 {lat[50] * 1e3:.2f} ms p95 {lat[95] * 1e3:.2f} ms",
                  flush=True)
        print(f"  tree recall@10 vs exact: {recall:.3f}; last E-computations {work}", flush=True)
        db.close()


if __name__ == "__main__":
    main()

"""Privacy verbs at 100,000 memories, for bench/RELIABILITY.md: purge of a whole namespace, purge
of 1,000 ids spread over every segment, and a backup of the store.

A 100,000-memory store (384-d caller vectors, 10 namespaces of 10,000, 5 segments of 20,000) is
built afresh for each timed call, so every call starts from the same folder. After the namespace
purge, two other namespaces' memories are compared with what they were (the test suite compares every
column of the Arrow rows).

Run: python bench/privacy.py [--path /tmp/engramdb-privacy] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
from engramdb.spaces.schema import Schema, Space

N, B, D, NAMESPACES = 100_000, 20_000, 384, 10
SCHEMA = Schema([Space("dense", "dense", D, "cosine")])


def build(path: Path) -> engramdb.Store:
    shutil.rmtree(path, ignore_errors=True)
    rng = np.random.default_rng(0)
    db = engramdb.open(path, schema=SCHEMA, embedders={})
    for b in range(0, N, B):
        x = rng.standard_normal((B, D), dtype=np.float32)
        db.add_many([{"content": f"memory {i} of user {i % NAMESPACES}", "namespace": f"user{i % NAMESPACES}",
                      "id": f"m{i}", "vectors": {"dense": x[i - b]}} for i in range(b, b + B)])
    return db


def rows_of(db: engramdb.Store, namespace: str) -> list[tuple[Any, ...]]:
    out = []
    for i in range(int(namespace[4:]), N, NAMESPACES):
        m = db.get(f"m{i}")
        assert m is not None
        out.append((m.id, m.content, m.version, m.learned_at, m.valid_from, m.metadata))
    return out


def timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--path", default="/tmp/engramdb-privacy")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    path = Path(args.path)
    results: dict[str, list[float]] = {"purge(namespace=) of 10,000": [], "purge of 1,000 ids": [],
                                       "backup": []}
    for _ in range(args.repeat):
        db = build(path)
        kept = {ns: rows_of(db, ns) for ns in ("user1", "user7")}
        results["purge(namespace=) of 10,000"].append(timed(lambda db=db: db.purge(namespace="user3")))
        assert db.get("m3") is None and len(db) == N - N // NAMESPACES
        assert {ns: rows_of(db, ns) for ns in kept} == kept, "another namespace changed"
        db.close()
        db = build(path)
        ids = [f"m{i}" for i in range(0, N, N // 1000)]
        results["purge of 1,000 ids"].append(timed(lambda db=db, ids=ids: db.purge(ids)))
        assert len(db) == N - 1000
        dest = path.with_name(path.name + "-backup")
        shutil.rmtree(dest, ignore_errors=True)
        results["backup"].append(timed(lambda db=db, dest=dest: db.admin.backup(dest)))
        assert len(engramdb.open(dest, schema=SCHEMA, embedders={}, read_only=True)) == N - 1000
        db.close()
        shutil.rmtree(dest, ignore_errors=True)
    size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    print(f"store: {N:,} memories, 384-d, {NAMESPACES} namespaces, {size / 1e6:.0f} MB on disk")
    for name, times in results.items():
        print(f"{name}: median {statistics.median(times):.2f} s over {len(times)} runs "
              f"({', '.join(f'{t:.2f}' for t in times)})")
    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()

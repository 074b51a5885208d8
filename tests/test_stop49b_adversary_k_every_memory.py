"""Stop 49 second adversary (4d02102, 9329e93): "a search whose k takes every memory of the namespace
scans exactly by default", but the test is `k >= view.namespace_rows(ns)`, and that counts rows,
every version. A namespace whose memories were updated holds more rows than memories: a k equal to
the memories (500 memories, 1,000 rows) still goes through the index, and HNSW returns 499 of the
500 (a node its graph did not reach), the tree 455-498 (2k/leaf leaves probed cover about the rows,
not the memories: the superseded rows fill them)."""

from __future__ import annotations

from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb import Tuning
from engramdb.spaces.schema import Schema, Space

D = 32
SCHEMA = Schema([Space("dense", "dense", D, "cosine")])
N = 500


def _vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((20, D)).astype(np.float32)
    x = c[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, D)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("index", ["hnsw", "tree"])
def test_a_k_of_every_memory_returns_every_memory_after_updates(tmp_path: Path, index: str) -> None:
    x, y = _vectors(N, 0), _vectors(N, 1)
    tuning = Tuning(tree_min_rows=300, tree_leaf_size=16, background=False, search_cache=0)
    db = engramdb.open(tmp_path / "s", schema=SCHEMA, embedders={}, tuning=tuning, index=index)
    db.add_many([{"id": f"m{i}", "content": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}} for i in range(N)])
    for i in range(N):  # each memory a second version: 1,000 rows, 500 memories
        db.update(f"m{i}", content=f"m{i} v2", vectors={"dense": y[i]})
    db.admin.checkpoint()
    db.admin.build_index()
    short = []
    for qi in range(0, N, 50):
        for k in (N, N - 1):
            got = db.search(y[qi], namespace="a", k=k, strategy="dense_only")
            exact = db.search(y[qi], namespace="a", k=k, strategy="exact")
            assert len(exact) == k
            if len(got) != k:
                short.append((qi, k, len(got)))
    db.close()
    assert not short, f"(query, k, hits): {short[:6]}"

"""Stop 49 second adversary (062e0f7): "a sync of a snapshot older than the index's epoch never
publishes", but an HNSW version is not immutable: `HnswVersion.query` reads the index's graphs as
they are now (`self.index.graphs[ns]`), whatever epoch the version was made at. A snapshot (or any
search in flight) pinned before a purge then
- raises KeyError once the purge dropped the graphs (the version still lists the namespace), and
- once the graphs are rebuilt at the new row epoch, reads their renumbered keys as keys of its own,
  older rows: wrong memories, among them a purged one (keys shifted by the rows purged before them).
A tree version is immutable and answers the snapshot exactly (checked alongside)."""

from __future__ import annotations

from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb import Tuning
from engramdb.spaces.schema import Schema, Space

D = 32
SCHEMA = Schema([Space("dense", "dense", D, "cosine")])
TUNING = Tuning(tree_min_rows=300, tree_leaf_size=16, background=False, search_cache=0)


def _vectors(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    c = rng.standard_normal((20, D)).astype(np.float32)
    x = c[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, D)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("index", ["hnsw", "tree"])
def test_a_snapshot_from_before_a_purge_searches_its_own_rows(tmp_path: Path, index: str) -> None:
    x = _vectors(600)
    db = engramdb.open(tmp_path / "s", schema=SCHEMA, embedders={}, tuning=TUNING, index=index)
    db.add_many([{"id": f"m{i}", "content": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}}
                 for i in range(600)])
    db.admin.checkpoint()
    db.admin.build_index()
    snap = db.admin.snapshot()
    want = [h.id for h in snap.search(x[11], namespace="a", k=5, strategy="exact")]
    assert [h.id for h in snap.search(x[11], namespace="a", k=5, strategy="dense_only")] == want

    assert db.purge([f"m{i}" for i in range(10)]) == 10
    # the graphs were dropped: KeyError 'a' from HnswVersion.query
    assert [h.id for h in snap.search(x[11], namespace="a", k=5, strategy="dense_only")] == want

    db.search(x[11], namespace="a", k=5)  # the writer's search rebuilds the index at the new epoch
    db.admin.build_index()
    # the rebuilt graphs' keys read as the snapshot's: ['m1', 'm41', ...] for ['m11', 'm51', ...]
    assert [h.id for h in snap.search(x[11], namespace="a", k=5, strategy="dense_only")] == want
    db.close()

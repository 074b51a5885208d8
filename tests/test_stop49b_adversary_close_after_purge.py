"""Stop 49 second adversary (062e0f7): `Indexes._from_nothing` keeps a writer's close from building
a dense index from nothing (one a purge left empty counts now), but only on the close's own `save`
(closing=True). The close first folds the WAL (`engine.checkpoint()`), and without a worker
(`Tuning(background=False)`) the checkpoint's `on_commit` saves the indexes with closing=False
(store/background.py `after_commit`): a purge, then any write, then close builds the tree (or HNSW
graph) from nothing inside close (5 s at 100,000 memories) and writes its file. With a worker the
same close builds nothing (checked alongside)."""

from __future__ import annotations

from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb import Tuning
from engramdb.spaces.schema import Schema, Space

D = 32
SCHEMA = Schema([Space("dense", "dense", D, "cosine")])


@pytest.mark.parametrize("background", [False, True])
@pytest.mark.parametrize("index", ["tree", "hnsw"])
def test_a_close_after_a_purge_and_a_write_builds_no_index(tmp_path: Path, index: str, background: bool) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((800, D)).astype(np.float32)
    path = tmp_path / "s"
    tuning = Tuning(tree_min_rows=300, tree_leaf_size=16, background=background)
    db = engramdb.open(path, schema=SCHEMA, embedders={}, tuning=tuning, index=index)
    db.add_many([{"id": f"m{i}", "content": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}}
                 for i in range(800)])
    db.admin.checkpoint()
    db.admin.build_index()
    db.search(x[0], namespace="a", k=5)
    assert db.purge(["m5"]) == 1
    db.add_many([{"id": "new", "content": "new", "namespace": "a", "vectors": {"dense": x[7]}}])  # in the WAL
    db.close()
    names = sorted(f.name for f in (path / "index").iterdir())
    assert not [n for n in names if n.startswith(("tree-", "hnsw-"))], names  # built and saved by the close

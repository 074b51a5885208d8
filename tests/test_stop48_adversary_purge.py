"""Stop 48 adversary: `Store.purge(ids, namespace=...)` with ids that came out EMPTY.

Stop 48 made the store refuse ids with `namespace=` (the cluster client's `purge(ids, namespace=)`
removes only those ids, the store removed the whole namespace besides). An empty list is still taken
as "no ids": `db.purge([h.id for h in hits if ...], namespace="alice")` with no hit left removes
every memory of alice, where the cluster's same call (Shard.purge) removes nothing.
Script: /tmp/adv48/purge_empty_ids.py. Failed on d2ba664; fixed in the same stop.
"""

from __future__ import annotations

from pathlib import Path

import engramdb
import pytest
from engramdb.cluster.shard import Shard


def _seed(path: Path) -> None:
    with engramdb.open(path) as db:
        db.add_many([{"content": f"alice fact {i}", "namespace": "alice", "id": f"a{i}"} for i in range(5)])


def test_the_cluster_shard_removes_nothing_for_empty_ids(tmp_path: Path) -> None:
    _seed(tmp_path / "s")
    shard = Shard("s0", str(tmp_path / "s"))
    try:
        assert shard.purge([], "alice")[0] == 0
        assert shard.db.stats()["namespaces"] == {"alice": 5}
    finally:
        shard.db.close()


@pytest.mark.parametrize("ids", [[], set(), iter(())], ids=["list", "set", "iterator"])
def test_empty_ids_with_namespace_do_not_remove_the_namespace(tmp_path: Path, ids: object) -> None:
    _seed(tmp_path / "m")
    with engramdb.open(tmp_path / "m") as db:
        try:
            db.purge(ids, namespace="alice")  # type: ignore[arg-type]
        except ValueError:
            pass  # refused: as good as removing nothing
        assert db.stats()["namespaces"] == {"alice": 5}

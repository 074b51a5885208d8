"""J + S6: the store's centroid trees: filters inside the tree scan, the hot path, and the tree
files as derived data (rebuilt when missing, corrupt or stale; gone with a purge)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
import store_helpers
from clock_helpers import Clock
from engramdb.index.tree_index import TreeIndex
from engramdb.spaces.schema import Schema, Space
from engramdb.storage import Engine

D = 32
SCHEMA = Schema([Space("dense", "dense", D, "cosine")])
TUNING = store_helpers.small_trees(500, 16)  # trees from 500 memories, leaves of 16


def opened(path: Path | None, **kw: Any) -> engramdb.Store:
    return engramdb.open(path, schema=SCHEMA, embedders={}, tuning=TUNING, **kw)


def vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((20, D)).astype(np.float32)
    x = c[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, D)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def filled(path: Path | None, n: int = 1_500, **kw: Any) -> tuple[engramdb.Store, np.ndarray]:
    x = vectors(n)
    db = opened(path, dedup="off", **kw)
    db.add_many([{"content": f"m{i}", "id": f"m{i}", "namespace": "a" if i % 3 else "b",
                  "vectors": {"dense": x[i]}} for i in range(n)])
    db.admin.checkpoint()
    db.admin.settle()  # the trees follow a checkpoint on the store's background worker
    return db, x


def test_tree_search_agrees_with_exact_and_keeps_namespaces_apart(tmp_path: Path) -> None:
    db, x = filled(tmp_path / "s")
    hits = db.search(x[1], namespace="a", k=10, explain=True)
    assert hits[0].explain is not None and hits[0].explain["strategy"] == "tree"
    assert hits[0].id == "m1"
    assert hits.stats.strategy == "tree" and hits.stats.index["e_computations"] > 0  # the search's own stats
    assert hits.stats.index["e_computations"] == hits[0].explain["tree"]["e_computations"]
    exact = db.search(x[1], namespace="a", k=10, strategy="exact")
    assert len({h.id for h in hits} & {h.id for h in exact}) >= 8
    assert all(int(h.id[1:]) % 3 for h in hits)  # never a memory of namespace b
    for q in x[:30:3]:  # b's rows as queries against a: still only a's
        assert all(int(h.id[1:]) % 3 for h in db.search(q, namespace="a", k=20))
    assert db.stats()["trees"]["dense"]["a"]["memories"] == 1_000
    assert db.admin.tree_recall("a") >= 0.8


def test_forgotten_superseded_and_future_rows_stay_out_of_tree_results(tmp_path: Path) -> None:
    db, x = filled(tmp_path / "s")
    db.forget("m1")
    db.supersede("m2", "m4")
    db.update("m5", valid_from=datetime(2999, 1, 1, tzinfo=timezone.utc))
    db.admin.checkpoint()
    db.admin.settle()
    for mid in ("m1", "m2", "m5"):
        q = x[int(mid[1:])]
        ids = [h.id for h in db.search(q, namespace="a", k=50, strategy="tree")]
        assert mid not in ids
    then = db.search(x[5], namespace="a", k=1, strategy="tree", as_of=datetime(2999, 6, 1, tzinfo=timezone.utc))
    assert then[0].id == "m5"


def test_a_memory_added_a_moment_ago_is_found_first(tmp_path: Path) -> None:
    db, _ = filled(tmp_path / "s")
    fresh = vectors(1, seed=99)[0]
    db.add("just now", namespace="a", id="new1", vectors={"dense": fresh})
    assert db.search(fresh, namespace="a", k=1)[0].id == "new1"  # in the WAL: scanned exactly
    db.admin.checkpoint()
    db.admin.settle()
    assert db.search(fresh, namespace="a", k=1)[0].id == "new1"  # committed: the hot rows


@pytest.mark.parametrize("damage", ["delete", "corrupt", "stale"])
def test_tree_files_are_rebuilt_when_missing_corrupt_or_stale(tmp_path: Path, damage: str) -> None:
    db, x = filled(tmp_path / "s")
    before = [h.id for h in db.search(x[7], namespace="a", k=5)]
    db.close()
    data = tmp_path / "s" / "index" / "tree-dense.arrow"
    side = data.with_suffix(".json")
    assert data.exists() and side.exists()
    if damage == "delete":
        data.unlink()
    elif damage == "corrupt":
        raw = bytearray(data.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        data.write_bytes(bytes(raw))
    else:
        side.write_text(side.read_text().replace('"epoch": 0', '"epoch": 7'))
    db = opened(tmp_path / "s")
    assert [h.id for h in db.search(x[7], namespace="a", k=5)] == before
    reason = db.stats()["index_files"]["tree-dense"]
    assert reason.split()[0] in ("missing", "corrupt", "stale")
    db.admin.settle()  # the search asked the worker to rebuild it (a close builds none from nothing)
    db.close()
    again = opened(tmp_path / "s")
    again.search(x[7], namespace="a", k=5)
    assert again.stats()["index_files"]["tree-dense"] == "adopted"  # the rebuilt file was saved and is trusted


def test_purge_removes_tree_files_and_renumbers(tmp_path: Path) -> None:
    db, x = filled(tmp_path / "s")
    db.search(x[1], namespace="a", k=5)
    db.close()
    db = opened(tmp_path / "s")
    db.purge("m1")
    assert not list((tmp_path / "s" / "index").glob("tree-*"))
    hits = db.search(x[1], namespace="a", k=5)
    assert "m1" not in [h.id for h in hits] and hits[0].memory.content != "m1"
    assert db.search(x[4], namespace="a", k=1)[0].id == "m4"  # keys after the purged row still right


def test_a_close_after_a_purge_builds_no_tree_and_the_next_writer_does(tmp_path: Path) -> None:
    """A close never builds a tree from nothing (at 100,000 memories a close after a purge waited
    5-12 s for one): readers scan exactly meanwhile, with the same hits, and the next writer's
    worker builds and saves it when a search asks."""
    db, x = filled(tmp_path / "s")
    db.search(x[1], namespace="a", k=5)
    db.close()
    db = opened(tmp_path / "s")
    db.purge("m1")
    db.close()
    assert not list((tmp_path / "s" / "index").glob("tree-*"))
    with opened(tmp_path / "s", read_only=True) as reader:
        hits = [h.id for h in reader.search(x[4], namespace="a", k=5, strategy="tree")]
        exact = [h.id for h in reader.search(x[4], namespace="a", k=5, strategy="dense_only")]
        assert hits[0] == "m4" and "m1" not in hits and hits == exact
    db = opened(tmp_path / "s")
    db.search(x[4], namespace="a", k=5)
    db.admin.settle()
    db.close()
    with opened(tmp_path / "s", read_only=True) as reader:
        reader.search(x[4], namespace="a", k=5)
        assert reader.stats()["index_files"]["tree-dense"] == "adopted"


def test_small_namespaces_and_memory_stores_use_exact_scan(tmp_path: Path) -> None:
    on_disk, x = filled(tmp_path / "s")  # a: 1,000 rows, b: 500, over the threshold of 500
    in_memory, _ = filled(None)
    for ns, q in (("a", x[1]), ("b", x[0])):
        assert on_disk.search(q, namespace=ns, k=3, explain=True)[0].explain["strategy"] == "tree"  # type: ignore[index]
        hits = in_memory.search(q, namespace=ns, k=3, explain=True)  # the same rows, never committed: exact
        assert hits[0].explain is not None and hits[0].explain["strategy"] == "exact" and hits.stats.index == {}
        assert [h.id for h in hits] == [h.id for h in in_memory.search(q, namespace=ns, k=3, strategy="exact")]
    small, y = filled(tmp_path / "t", n=600)  # b: 200 rows, below the threshold, even on disk
    hits = small.search(y[0], namespace="b", k=3, explain=True)
    assert hits[0].explain is not None and hits[0].explain["strategy"] == "exact"


def test_hnsw_index_kind_answers_with_the_same_filters(tmp_path: Path) -> None:
    db, x = filled(tmp_path / "s", index="hnsw")
    hits = db.search(x[1], namespace="a", k=10, explain=True)
    assert hits[0].explain is not None and hits[0].explain["strategy"] == "hnsw" and hits[0].id == "m1"
    exact = db.search(x[1], namespace="a", k=10, strategy="exact")
    assert len({h.id for h in hits}) == 10  # a newest row the graph also holds is one hit, not two
    assert len({h.id for h in hits} & {h.id for h in exact}) >= 9
    assert all(int(h.id[1:]) % 3 for h in hits)
    db.forget("m1")
    db.admin.checkpoint()
    db.admin.settle()
    assert "m1" not in [h.id for h in db.search(x[1], namespace="a", k=10)]
    db.close()
    graphs = list((tmp_path / "s" / "index").glob("hnsw-dense-*.usearch"))
    assert graphs
    graphs[0].unlink()
    again = opened(tmp_path / "s", index="hnsw")
    assert again.search(x[4], namespace="a", k=1)[0].id == "m4"
    assert again.stats()["index_files"]["hnsw-dense"].startswith("missing")
    assert again.search(x[4], namespace="a", k=1, strategy="tree")[0].id == "m4"  # either kind on demand


@pytest.mark.parametrize("kind", ["tree", "hnsw"])
def test_an_index_and_its_newest_rows_give_each_memory_once(tmp_path: Path, kind: str) -> None:
    """The newest rows are scanned exactly beside the index, which may hold them too: a memory
    found both ways was returned twice (and pushed a true neighbour out of the k)."""
    x = vectors(1_500)
    db = opened(tmp_path / "s", dedup="off", index=kind)
    db.add_many([{"content": f"m{i}", "id": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}}
                 for i in range(1_500)])
    db.admin.checkpoint()
    db.admin.settle()
    for q in (x[1], x[1_490], x[1_499]):
        hits = db.search(q, namespace="a", k=50, strategy=kind, explain=True)
        assert hits[0].explain is not None and hits[0].explain["strategy"] == kind
        assert len({h.id for h in hits}) == len(hits) == 50
        exact = db.search(q, namespace="a", k=50, strategy="exact")
        assert len({h.id for h in hits} & {h.id for h in exact}) >= 45
    db.close()


def test_index_kind_is_checked() -> None:
    with pytest.raises(ValueError, match="index must be 'tree', 'tree-packed', 'hnsw' or 'none', got 'ivf'"):
        opened(None, index="ivf")


def test_build_index_after_a_bulk_load_serves_readers(tmp_path: Path) -> None:
    x = vectors(1_200)
    with opened(tmp_path / "s", dedup="off") as db:
        db.add_many([{"content": f"m{i}", "id": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}}
                     for i in range(1_200)])
        assert db.admin.build_index() == {"a": 1_200}
    reader = opened(tmp_path / "s", read_only=True)
    hit = reader.search(x[3], namespace="a", k=1, explain=True)[0]
    assert hit.id == "m3" and hit.explain is not None and hit.explain["strategy"] == "tree"
    assert reader.stats()["index_files"] == {"tree-dense": "adopted"}  # the writer's file, not rebuilt
    assert sorted(p.name for p in (tmp_path / "s" / "index").iterdir()) == ["tree-dense.arrow", "tree-dense.json"]


def test_a_reader_without_a_saved_tree_scans_exactly_and_builds_none(tmp_path: Path) -> None:
    """A store whose writer closed before any tree was saved (a script's bulk load, no worker): a
    read-only process cannot save a tree, so it does not build one on its request path (4-10 s at
    100,000 memories, in every hook process): it scans the namespace exactly, the same hits as the
    writer's exact search. Once a writer saves the tree, readers adopt it."""
    x = vectors(1_200)
    no_worker = store_helpers.small_trees(500, 16, background=False)
    with engramdb.open(tmp_path / "s", schema=SCHEMA, embedders={}, tuning=no_worker, dedup="off") as db:
        db.add_many([{"content": f"m{i}", "id": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}}
                     for i in range(1_200)])
        exact = [[h.id for h in db.search(q, namespace="a", k=10, strategy="exact")] for q in x[:5]]
    assert not (tmp_path / "s" / "index").exists() or not list((tmp_path / "s" / "index").glob("tree-*"))
    reader = opened(tmp_path / "s", read_only=True)
    for q, want in zip(x[:5], exact):
        hits = reader.search(q, namespace="a", k=10)
        assert hits.stats.strategy == "exact" and hits.stats.index == {}
        assert [h.id for h in hits] == want
    assert "trees" not in reader.stats() or not reader.stats()["trees"].get("dense")
    reader.close()
    with opened(tmp_path / "s") as db:
        db.admin.build_index()
    reader = opened(tmp_path / "s", read_only=True)
    assert reader.search(x[3], namespace="a", k=1).stats.strategy == "tree"
    reader.close()


def test_the_cached_filter_follows_writes_and_the_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import timedelta

    db, x = filled(tmp_path / "s")
    assert db.search(x[2], namespace="a", k=1)[0].id == "m2"
    db.forget("m2")
    db.admin.checkpoint()
    db.admin.settle()
    assert db.search(x[2], namespace="a", k=1)[0].id != "m2"  # a write invalidates the mask
    # the clock is moved past valid_from (clock_helpers): with the real one 0.5 s before it, a slow
    # machine's query could come after it, and the check that m4 is not valid yet was skipped there
    clock = Clock(monkeypatch)
    soon = clock.now() + timedelta(minutes=10)
    db.update("m4", valid_from=soon)
    db.admin.checkpoint()
    db.admin.settle()
    assert db.search(x[4], namespace="a", k=1)[0].id != "m4"  # not valid yet
    clock.forward(11 * 60)
    assert db.search(x[4], namespace="a", k=1)[0].id == "m4"  # the clock passed its valid_from


def test_a_tree_grown_past_twice_its_build_is_rebuilt(tmp_path: Path) -> None:
    x = vectors(2_000)
    db = opened(tmp_path / "s", dedup="off")
    db.add_many([{"content": f"m{i}", "id": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}} for i in range(600)])
    db.admin.build_index()

    def tree_a(store: engramdb.Store) -> dict[str, Any]:
        info: dict[str, Any] = store.stats()["trees"]["dense"]["a"]
        return info

    assert tree_a(db)["built"] == 600 and tree_a(db)["memories"] == 600
    db.add_many([{"content": f"m{i}", "id": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}}
                 for i in range(600, 1_100)])
    db.admin.build_index()
    assert tree_a(db)["built"] == 600 and tree_a(db)["memories"] == 1_100  # grown by inserts
    db.add_many([{"content": f"m{i}", "id": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}}
                 for i in range(1_100, 1_300)])
    db.admin.build_index()
    assert tree_a(db)["built"] == 1_300  # past 2 x 600: rebuilt whole
    db.close()
    # the index layer's seam: the saved tree, loaded over the folder's snapshot, keeps its invariants
    engine = Engine(tmp_path / "s", schema=None, read_only=True, tuning=TUNING)
    ix = TreeIndex("dense", D, TUNING)
    assert ix.load(engine.files, engine.view) and ix.load_state == "adopted"
    ix.current.trees["a"].check()
    engine.close()
    again = opened(tmp_path / "s", read_only=True)
    again.search(x[0], namespace="a", k=1)
    assert tree_a(again)["built"] == 1_300  # the build size travels in the sidecar


def test_indexes_serve_cosine_spaces_only(tmp_path: Path) -> None:
    schema = Schema([Space("dense", "dense", D, "dot")])
    x = vectors(700)
    db = engramdb.open(tmp_path / "s", schema=schema, embedders={}, dedup="off")
    db.add_many([{"content": f"m{i}", "id": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}} for i in range(700)])
    db.admin.checkpoint()
    db.admin.settle()
    hit = db.search(x[3], namespace="a", k=1, explain=True)[0]
    assert hit.id == "m3" and hit.explain is not None and hit.explain["strategy"] == "exact"
    with pytest.raises(ValueError, match="strategy 'tree' needs a dense cosine space; 'dense' is dense with metric 'dot'"):
        db.search(x[3], namespace="a", k=1, strategy="tree")


def test_packed_trees_answer_like_plain_trees(tmp_path: Path) -> None:
    db, x = filled(tmp_path / "s")
    plain = [[h.id for h in db.search(x[i], namespace="a", k=10)] for i in range(0, 300, 7)]
    db.close()
    db = opened(tmp_path / "s", index="tree-packed", dedup="off")
    packed = [[h.id for h in db.search(x[i], namespace="a", k=10)] for i in range(0, 300, 7)]
    assert packed == plain
    assert db.stats()["trees"]["dense"]["a"]["packed"]
    db.forget("m7")  # the filter reaches the packed copy too
    assert "m7" not in [h.id for h in db.search(x[7], namespace="a", k=10)]
    db.add("fresh", namespace="a", id="fresh", vectors={"dense": x[7]})
    db.admin.checkpoint()  # the tree grows: the new version is packed before it is published
    db.admin.settle()
    # 1,000 rows + the forget's new version + fresh: trees hold every committed row
    assert db.stats()["trees"]["dense"]["a"]["memories"] == 1_002 and db.stats()["trees"]["dense"]["a"]["packed"]
    assert db.search(x[7], namespace="a", k=1)[0].id == "fresh"
    db.close()
    with pytest.raises(ValueError, match="tree-packed"):
        opened(tmp_path / "s", index="packed")


def test_a_k_past_what_the_probed_leaves_hold_is_still_filled(tmp_path: Path) -> None:
    """A tree search probed `tree_probe` leaves whatever k was: k = 1,000 in a namespace of 795
    returned the 455 memories its leaves held. The leaves probed now hold k twice over."""
    db, x = filled(tmp_path / "s", 1_200)
    for k in (300, 700, 1_000):
        hits = db.search(x[1], namespace="a", k=k, strategy="tree", explain=True)
        exact = db.search(x[1], namespace="a", k=k, strategy="exact")
        assert hits[0].explain is not None and hits[0].explain["strategy"] == "tree"
        assert len(hits) == len(exact) == min(k, 800)
        assert len({h.id for h in hits} & {h.id for h in exact}) >= 0.95 * len(exact)
    db.close()


def test_a_k_as_large_as_the_namespace_is_answered_exactly_by_either_index_kind(tmp_path: Path) -> None:
    """HNSW's graph search, asked for every key, returned one fewer than the namespace held (a node
    it did not reach). The default strategy scans exactly when k takes every memory anyway."""
    db, x = filled(tmp_path / "s", 1_200, index="hnsw")
    hits = db.search(x[1], namespace="a", k=900, strategy="dense_only", explain=True)
    assert len(hits) == 800 and hits[0].explain is not None and hits[0].explain["strategy"] == "exact"
    assert db.search(x[1], namespace="a", k=10, strategy="dense_only", explain=True)[0].explain["strategy"] == "hnsw"
    db.close()

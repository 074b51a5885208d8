"""The first-context speed-ups under attack (bench/RELIABILITY.md, "First-context speed-ups under
attack"): files a store reads in place (tree lists, ratings, segment columns, turn maps) and the
id probes, compared with what `get`, `list` and `search` must return."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pyarrow as pa
import pytest
import store_helpers
from engramdb.spaces.schema import Schema, Space

D = 32
SCHEMA = Schema([Space("dense", "dense", D, "cosine")])
TUNING = store_helpers.small_trees(500, 16)  # trees from 500 memories, leaves of 16
N = 900  # namespace "a" holds 600 of them: a tree


def toy_store(path: Path, **kw: Any) -> engramdb.Store:
    return engramdb.open(path, schema=store_helpers.toy_schema(), embedders=store_helpers.toy_embedders(),  # type: ignore[arg-type]
                         **kw)


def vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((20, D)).astype(np.float32)
    x = c[rng.integers(0, 20, n)] + 0.3 * rng.standard_normal((n, D)).astype(np.float32)
    out: np.ndarray = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return out


@pytest.fixture(scope="module")
def treed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed store whose namespace "a" has a saved tree file."""
    path = tmp_path_factory.mktemp("treed") / "s"
    x = vectors(N)
    db = engramdb.open(path, schema=SCHEMA, embedders={}, tuning=TUNING, dedup="off")
    db.add_many([{"content": f"m{i}", "id": f"m{i}", "namespace": "a" if i % 3 else "b",
                  "vectors": {"dense": x[i]}} for i in range(N)])
    db.admin.checkpoint()
    db.admin.settle()
    db.close()
    assert (path / "index" / "tree-dense.arrow").exists()
    return path


def _lists(offsets: np.ndarray, values: np.ndarray) -> pa.Array:
    """A list<int64> array of these offsets as they are (no check: a damaged writer's lists)."""
    off = pa.py_buffer(np.asarray(offsets, np.int32).tobytes())
    return pa.Array.from_buffers(pa.list_(pa.int64()), len(offsets) - 1, [None, off],
                                 children=[pa.array(np.asarray(values, np.int64))])


def _resigned(folder: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    """Rewrite the tree file through `change` and sign it again (size and CRC-32 in its sidecar):
    what a buggy or foreign writer leaves, which the CRC cannot catch."""
    data = folder / "index" / "tree-dense.arrow"
    table = change(pa.ipc.open_file(data).read_all())
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    raw = sink.getvalue().to_pybytes()
    data.write_bytes(raw)
    side = data.with_suffix(".json")
    meta = json.loads(side.read_text())
    meta.update(bytes=len(raw), crc32=zlib.crc32(raw))
    side.write_text(json.dumps(meta))


def _list_change(column: str, edit: Callable[[np.ndarray, np.ndarray], None]) -> Callable[[pa.Table], pa.Table]:
    def change(table: pa.Table) -> pa.Table:
        col = table.column(column).combine_chunks()
        offsets, values = col.offsets.to_numpy().astype(np.int64), col.values.to_numpy().astype(np.int64)
        edit(offsets, values)
        i = table.schema.get_field_index(column)
        return table.set_column(i, table.schema.field(column), pa.chunked_array([_lists(offsets, values)]))
    return change


def _settings_change(key: str, value: int) -> Callable[[pa.Table], pa.Table]:
    def change(table: pa.Table) -> pa.Table:
        meta = dict(table.schema.metadata)
        settings = json.loads(meta[b"engramdb.trees"])
        settings["a"][key] = value
        meta[b"engramdb.trees"] = json.dumps(settings).encode()
        return table.replace_schema_metadata(meta)
    return change


def _swap_middle(offsets: np.ndarray, values: np.ndarray) -> None:
    """Two neighbouring offsets that differ, swapped: one list ends before it starts."""
    rising = np.flatnonzero((offsets[1:-1] > 0) & (offsets[2:] > offsets[1:-1])) + 1
    m = int(rising[len(rising) // 2])
    offsets[m], offsets[m + 1] = offsets[m + 1], offsets[m]


def _negative_offset(offsets: np.ndarray, values: np.ndarray) -> None:
    offsets[1] = -3


def _child_out_of_range(offsets: np.ndarray, values: np.ndarray) -> None:
    values[0] = 10**6


def _every_child_the_root(offsets: np.ndarray, values: np.ndarray) -> None:
    values[:] = 0


def _negative_key(offsets: np.ndarray, values: np.ndarray) -> None:
    values[0] = -5


def _key_past_the_rows(offsets: np.ndarray, values: np.ndarray) -> None:
    values[values == 7] = 2**40  # m7's row, the one query x[7] must find first


def _levels_lifted(table: pa.Table) -> pa.Table:
    """Every node 10 levels up and the height with them: links still go one level down, but no
    leaf is at level 1."""
    i = table.schema.get_field_index("level")
    lifted = pa.array((table.column("level").to_numpy().astype(np.int64) + 10).astype(np.int8))
    return _settings_change("height", 13)(table.set_column(i, table.schema.field("level"), pa.chunked_array([lifted])))


def _nan_centroids(table: pa.Table) -> pa.Table:
    i = table.schema.get_field_index("centroid")
    dim = table.schema.field("centroid").type.list_size
    flat = pa.array(np.full(table.num_rows * dim, np.nan, np.float32))
    return table.set_column(i, table.schema.field("centroid"),
                            pa.chunked_array([pa.FixedSizeListArray.from_arrays(flat, dim)]))


def _no_parents(table: pa.Table) -> pa.Table:
    """Every parent -1: searches descend by the children, an insert walks up by the parents."""
    i = table.schema.get_field_index("parent")
    return table.set_column(i, table.schema.field("parent"),
                            pa.chunked_array([pa.array(np.full(table.num_rows, -1, np.int64))]))


def _last_link_dropped(offsets: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The last child link gone: the leaf it named is in no list (its keys unreachable)."""
    offsets[offsets > len(values) - 1] -= 1
    return values[:-1]


def _orphan(table: pa.Table) -> pa.Table:
    col = table.column("children").combine_chunks()
    offsets, values = col.offsets.to_numpy().astype(np.int64), col.values.to_numpy().astype(np.int64)
    values = _last_link_dropped(offsets, values)
    i = table.schema.get_field_index("children")
    return table.set_column(i, table.schema.field("children"), pa.chunked_array([_lists(offsets, values)]))


def _a_leaf_counted_minus_one(table: pa.Table) -> pa.Table:
    """One leaf's count -1 (what the running means divide by once an insert joins it)."""
    counts = table.column("count").to_numpy().copy()
    levels = table.column("level").to_numpy()
    counts[int(np.flatnonzero(levels == 1)[0])] = -1
    i = table.schema.get_field_index("count")
    return table.set_column(i, table.schema.field("count"), pa.chunked_array([pa.array(counts)]))


TREE_DAMAGE: dict[str, Callable[[pa.Table], pa.Table]] = {
    "a leaf counted -1": _a_leaf_counted_minus_one,
    "parents all -1": _no_parents,
    "a leaf no list names": _orphan,
    "levels lifted": _levels_lifted,
    "centroids NaN": _nan_centroids,
    "children offsets decrease": _list_change("children", _swap_middle),
    "children offset negative": _list_change("children", _negative_offset),
    "child out of range": _list_change("children", _child_out_of_range),
    "a loop to the root": _list_change("children", _every_child_the_root),
    "members offsets decrease": _list_change("members", _swap_middle),
    "spill offsets decrease": _list_change("spill", _swap_middle),
    "negative member key": _list_change("members", _negative_key),
    "a key past the rows": lambda t: _list_change("spill", _key_past_the_rows)(
        _list_change("members", _key_past_the_rows)(t)),
    "root out of range": _settings_change("root", 10**6),
    "no root": _settings_change("root", -1),
    "height past the levels": _settings_change("height", 10**6),
    "height past C's int": _settings_change("height", 2**40),
}

_CHILD = r"""
import json, sys
import numpy as np
import engramdb
from engramdb.spaces.schema import Schema, Space
sys.path.insert(0, sys.argv[2])
import store_helpers
schema = Schema([Space("dense", "dense", 32, "cosine")])
db = engramdb.open(sys.argv[1], schema=schema, embedders={}, tuning=store_helpers.small_trees(500, 16),
                   read_only=True)
x = np.load(sys.argv[3])
out = {"searches": [], "state": None}
for i in (7, 100, 401):
    got = {}
    for strategy in ("auto", "tree", "exact"):
        try:
            hits = db.search(x[i], namespace="a", k=5, **({} if strategy == "auto" else {"strategy": strategy}))
            got[strategy] = [h.id for h in hits]
        except Exception as exc:
            got[strategy] = f"{type(exc).__name__}: {str(exc)[:200]}"
    out["searches"].append(got)
out["state"] = db.stats()["index_files"].get("tree-dense")
print(json.dumps(out))
"""


@pytest.mark.parametrize("damage", sorted(TREE_DAMAGE))
def test_a_tree_file_with_impossible_lists_is_rebuilt_not_searched(treed: Path, tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "s"
    shutil.copytree(treed, folder)
    _resigned(folder, TREE_DAMAGE[damage])
    xs = tmp_path / "x.npy"
    np.save(xs, vectors(N))
    # a child process: a native crash on the file would be a signal here, not the test run's end
    done = subprocess.run([sys.executable, "-c", _CHILD, str(folder), str(Path(__file__).parent), str(xs)],
                          check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for got in out["searches"]:
        # the tree is approximate, yet these neighbours are clear: every strategy finds the same
        assert got["auto"] == got["tree"] == got["exact"], got
        assert len(got["exact"]) == 5
    assert out["state"].startswith("unreadable"), out["state"]  # refused at load, rebuilt from the segments


def test_an_intact_tree_file_is_still_adopted(treed: Path, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    shutil.copytree(treed, folder)
    _resigned(folder, lambda t: t)  # written again as it was
    db = engramdb.open(folder, schema=SCHEMA, embedders={}, tuning=TUNING, read_only=True)
    x = vectors(N)
    assert [h.id for h in db.search(x[7], namespace="a", k=5)] == \
        [h.id for h in db.search(x[7], namespace="a", k=5, strategy="exact")]
    assert db.stats()["index_files"]["tree-dense"] == "adopted"
    db.close()


def test_a_batch_whose_records_all_leave_out_the_namespace_is_refused_before_anything_is_written(
        tmp_path: Path) -> None:
    """A batch of plain dicts sharing one key set is checked a column at a time: a column no record
    set was skipped as "all None, the default", but the namespace has no default. Such a batch was
    stored with a null namespace (unreadable as a namespace, and the memory could not be updated);
    one record of another key set in the batch refused it."""
    db = toy_store(tmp_path / "s", dedup="off")
    db.add("kept", namespace="a", id="k")
    for batch in ([{"content": "no namespace", "id": "b1"}],
                  [{"content": "no namespace", "id": "b1"}, {"content": "nor here", "id": "b2"}],
                  [{"content": "no namespace either"}]):
        with pytest.raises(engramdb.InvalidMemory, match=r"records\[0\]: namespace is required"):
            db.add_many(batch)
    assert db.get("b1") is None and db.get("b2") is None
    assert [m.id for m in db.list("a")] == ["k"]
    db.close()


def test_a_new_process_probing_ids_across_runs_answers_as_the_model(tmp_path: Path) -> None:
    """Ids looked up before anything builds the whole id index probe runs of 8,192 keys, newest
    first: versions of one id in several runs (updates, forget and restore, a purge then the same
    id added again, a compaction) read as the model says, in a reader's first lookups."""
    path = tmp_path / "s"
    db = toy_store(path, dedup="off")
    n = 10_000
    db.add_many([{"content": f"c{i}", "id": f"m{i}", "namespace": "a"} for i in range(n)])
    model: dict[str, tuple[str, bool]] = {f"m{i}": (f"c{i}", False) for i in range(n)}
    rng = np.random.default_rng(5)
    for r in range(3):
        for i in rng.choice(n, 150, replace=False).tolist():
            mid = f"m{i}"
            if mid in model and not model[mid][1]:
                db.update(mid, content=f"c{i} r{r}")
                model[mid] = (f"c{i} r{r}", False)
        for i in rng.choice(n, 40, replace=False).tolist():
            mid = f"m{i}"
            if mid in model:
                (db.restore if model[mid][1] else db.forget)(mid)
                model[mid] = (model[mid][0], not model[mid][1])
        db.admin.checkpoint()
    gone = [f"m{i}" for i in rng.choice(n, 20, replace=False).tolist()]
    for mid in gone:
        db.purge(mid)
        del model[mid]
    for mid in gone[:10]:
        db.add(f"again {mid}", id=mid, namespace="a")
        model[mid] = (f"again {mid}", False)
    db.admin.compact()
    late = next(mid for mid, (_, forgotten) in model.items() if not forgotten)
    db.update(late, content="after the compaction")  # a version past the compacted file
    model[late] = ("after the compaction", False)
    db.close()
    reader = toy_store(path, read_only=True)
    for mid in [*model, *gone[10:], "m10000", "nobody"]:  # lookups first: the probes answer them
        m = reader.get(mid, include_forgotten=True)
        want = model.get(mid)
        assert (None if m is None else (m.content, m.forgotten_at is not None)) == want, mid
    live = {mid for mid, (_, forgotten) in model.items() if not forgotten}
    assert {m.id for m in reader.list("a", limit=n + 100)} == live  # the whole index agrees
    reader.close()


def test_a_ratings_file_with_negative_counts_is_replayed_not_adopted(tmp_path: Path) -> None:
    """Counts are never negative as a writer makes them; a ratings file (CRC signed) holding one
    was adopted, and a search with exploration then raised a raw ValueError from the Thompson
    draw (betavariate of 1 + a negative count) on every such hit."""
    from engramdb.importance.ratings import Rating, Ratings
    from engramdb.storage.derived_files import DerivedFiles

    path = tmp_path / "s"
    db = toy_store(path, dedup="off")
    db.add_many([{"content": f"alpha beta {i}", "id": f"m{i}", "namespace": "a"} for i in range(20)])
    db.close()
    bad = Ratings()
    bad.by_id = {f"m{i}": Rating("a", 1400.0, 1, -7, -9) for i in range(20)}
    bad.save(DerivedFiles(path, writable=True))  # the layer's own writer: size and CRC-32 as it signs them
    got, state = Ratings.load(DerivedFiles(path, writable=False))
    assert state == "a bad row ('m0', shown -7)" and got.by_id == {}
    reader = toy_store(path, read_only=True)
    hits = reader.search("alpha beta", namespace="a", k=5, explore=0.5)
    assert len(hits) == 5
    assert all(reader.importance(f"m{i}").used == 0 for i in range(20))  # replayed from the (empty) log
    reader.close()


def _leaves_counted_minus_one(table: pa.Table) -> pa.Table:
    counts = table.column("count").to_numpy().copy()
    counts[table.column("level").to_numpy() == 1] = -1
    i = table.schema.get_field_index("count")
    return table.set_column(i, table.schema.field("count"), pa.chunked_array([pa.array(counts)]))


@pytest.mark.parametrize("damage", ["parents all -1", "leaves counted -1"])
def test_a_writer_given_a_tree_file_it_cannot_grow_rebuilds_it_and_closes(treed: Path, tmp_path: Path,
                                                                          damage: str) -> None:
    """An insert walks up a leaf's parents and divides by its counts: with the file's parents all
    -1, or its leaves counted -1, every sync after the load failed (the background worker retrying
    every 2 s, the tree stuck at 600 memories) and `close` raised ValueError from it."""
    folder = tmp_path / "s"
    shutil.copytree(treed, folder)
    _resigned(folder, _no_parents if damage == "parents all -1" else _leaves_counted_minus_one)
    y = vectors(200, seed=9)
    db = engramdb.open(folder, schema=SCHEMA, embedders={}, tuning=TUNING, dedup="off")
    db.add_many([{"content": f"n{i}", "id": f"n{i}", "namespace": "a", "vectors": {"dense": y[i]}} for i in range(200)])
    db.admin.checkpoint()
    db.admin.settle()
    assert db.stats()["trees"]["dense"]["a"]["memories"] == 800  # the new rows are in the tree
    assert [h.id for h in db.search(y[3], namespace="a", k=3)] == \
        [h.id for h in db.search(y[3], namespace="a", k=3, strategy="exact")]
    db.close()

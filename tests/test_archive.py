"""J7 archival: old leaves' content moves to an archive file, centroids and vectors stay, archived
hits say so and never carry the text, unarchive brings it back, purge removes it from the archive."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import engramdb
import numpy as np
import pyarrow as pa
import pytest
import store_helpers
from engramdb import InvalidMemory, StoreError
from engramdb.spaces.schema import Schema, Space

D = 16
SCHEMA = Schema([Space("dense", "dense", D, "cosine")])
TUNING = store_helpers.small_trees(200, 8)  # trees from 200 memories, leaves of 8


def two_eras(path: Path) -> tuple[engramdb.Store, np.ndarray, datetime]:
    """300 old memories around 10 topics, then 100 fresh ones around 10 other topics."""
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((20, D)).astype(np.float32)
    labels = np.concatenate([rng.integers(0, 10, 300), rng.integers(10, 20, 100)])
    x = centres[labels] + 0.05 * rng.standard_normal((400, D)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    db = engramdb.open(path, schema=SCHEMA, embedders={}, dedup="off", tuning=TUNING)
    db.add_many([{"content": f"old secret {i}", "id": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}}
                 for i in range(300)])
    time.sleep(0.01)
    cut = datetime.now(timezone.utc)
    time.sleep(0.01)
    db.add_many([{"content": f"fresh {i}", "id": f"m{i}", "namespace": "a", "vectors": {"dense": x[i]}}
                 for i in range(300, 400)])
    db.admin.checkpoint()
    return db, x, cut


def test_old_leaves_are_archived_and_their_hits_say_so(tmp_path: Path) -> None:
    db, x, cut = two_eras(tmp_path / "s")
    report = db.lifecycle.archive(cut)
    assert report["leaves"] > 0 and 250 <= report["memories"] <= 300
    assert all(not db.lifecycle.is_archived(f"m{i}") for i in range(300, 400))  # fresh ones stay
    archived = [i for i in range(300) if db.lifecycle.is_archived(f"m{i}")]
    hit = db.search(x[archived[0]], namespace="a", k=1, strategy="tree")[0]
    assert hit.id == f"m{archived[0]}" and hit.archived and hit.memory.content == ""
    assert not db.search(x[350], namespace="a", k=1)[0].archived
    db.close()
    # centroids kept and marked, in the saved tree file (a plain Arrow file: a row per node)
    nodes = pa.ipc.open_file(str(tmp_path / "s" / "index" / "tree-dense.arrow")).read_all().to_pydict()
    marked = [lvl == 1 and arch for ns, lvl, arch in zip(nodes["namespace"], nodes["level"], nodes["archived"])
              if ns == "a"]
    assert sum(marked) == report["leaves"]
    for f in (tmp_path / "s").iterdir():  # the text is only in the archive file
        if f.name.startswith("seg-") or f.name.startswith("wal-"):
            assert b"old secret" not in f.read_bytes()
    assert any(b"old secret" in f.read_bytes() for f in (tmp_path / "s").glob("archive-*.arrow"))


def test_archived_memories_refuse_changes_until_unarchived(tmp_path: Path) -> None:
    db, _, cut = two_eras(tmp_path / "s")
    db.lifecycle.archive(cut)
    mid = next(f"m{i}" for i in range(300) if db.lifecycle.is_archived(f"m{i}"))
    with pytest.raises(StoreError, match=f"memory '{mid}' is archived .* unarchive it first"):
        db.update(mid, memory_type="note")
    db.close()
    db = engramdb.open(tmp_path / "s", schema=SCHEMA, embedders={}, tuning=TUNING)
    assert db.lifecycle.is_archived(mid)  # survives reopening
    assert db.lifecycle.unarchive([mid]) == 1
    got = db.get(mid)
    assert got is not None and got.content == f"old secret {mid[1:]}"
    assert db.update(mid, memory_type="note").version == 2
    n = db.lifecycle.unarchive()
    assert n > 0 and not any(db.lifecycle.is_archived(f"m{i}") for i in range(400))
    # what is left is an empty archive file, which names the one it replaced (storage/repair.py);
    # compaction drops it
    assert [engramdb.verify(tmp_path / "s")["files"][p.name] for p in (tmp_path / "s").glob("archive-*")] == ["ok"]
    db.admin.compact()
    assert not list((tmp_path / "s").glob("archive-*"))
    with pytest.raises(StoreError, match="not archived"):
        db.lifecycle.unarchive(["m1"])


def test_purge_takes_content_out_of_the_archive(tmp_path: Path) -> None:
    db, _, cut = two_eras(tmp_path / "s")
    db.lifecycle.archive(cut)
    mid = next(f"m{i}" for i in range(300) if db.lifecycle.is_archived(f"m{i}"))
    db.purge(mid)
    assert not db.lifecycle.is_archived(mid) and db.get(mid, include_forgotten=True) is None
    text = f"old secret {mid[1:]}".encode()
    for f in (tmp_path / "s").glob("*.arrow"):
        data = f.read_bytes()
        assert text + b"\x00" not in data and not data.endswith(text)


def test_archive_needs_a_folder_and_an_aware_time(tmp_path: Path) -> None:
    mem = engramdb.open(None, schema=SCHEMA, embedders={})
    with pytest.raises(StoreError, match="needs a store folder"):
        mem.lifecycle.archive(datetime.now(timezone.utc))
    db, _, _ = two_eras(tmp_path / "s")
    with pytest.raises(InvalidMemory, match="older_than is a naive datetime"):
        db.lifecycle.archive(datetime(2020, 1, 1))
    assert db.lifecycle.archive(datetime(2000, 1, 1, tzinfo=timezone.utc)) == {"memories": 0, "leaves": 0, "file": None}
    assert db.lifecycle.archive(datetime.now(timezone.utc) + timedelta(days=1), namespace="elsewhere")["memories"] == 0


def test_export_carries_archived_text(tmp_path: Path) -> None:
    db, _, cut = two_eras(tmp_path / "s")
    db.lifecycle.archive(cut)
    mid = next(f"m{i}" for i in range(300) if db.lifecycle.is_archived(f"m{i}"))
    assert db.admin.export(tmp_path / "out.jsonl") == 400
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines()) if "id" in r}
    assert rows[mid]["content"] == f"old secret {mid[1:]}" and rows["m350"]["content"] == "fresh 350"
    db.admin.export(tmp_path / "out.arrow")
    fresh = engramdb.open(None, schema=SCHEMA, embedders={}, dedup="off")
    fresh.admin.import_(tmp_path / "out.arrow")
    got = fresh.get(mid)
    assert got is not None and got.content == f"old secret {mid[1:]}"

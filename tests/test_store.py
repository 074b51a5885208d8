"""S1-S3, S6, S7 through the public store API: add, get, versions, supersede, forget, search, reopen."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb import InvalidMemory, StoreError, Tuning
from engramdb.index import Indexes
from engramdb.retrieval.plan import SearchPlan
from engramdb.retrieval.search import run_search
from engramdb.spaces.schema import SpaceError
from engramdb.storage import Engine
from store_helpers import ToyDense, toy_embedders, toy_schema

T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)


def open_store(path: Path | None = None, **kw: Any) -> engramdb.Store:
    # dedup off: these tests store identical contents on purpose (tests/test_dedup.py covers S8)
    return engramdb.open(path, schema=toy_schema(), embedders=toy_embedders(), dedup="off", **kw)  # type: ignore[arg-type]


def test_add_get_and_search_in_memory() -> None:
    db = open_store()
    m = db.add("Alice moved to Lisbon", namespace="alice", session_id="s1", role="user", memory_type="fact")
    assert m.version == 1 and m.learned_at is not None and m.namespace == "alice"
    assert db.get(m.id) == m
    db.add("Bob likes tea", namespace="alice")
    hits = db.search("Alice moved to Lisbon", namespace="alice", k=5)
    assert hits[0].id == m.id and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(hits) == 2
    assert db.get("nope") is None


def test_namespaces_are_a_hard_partition() -> None:
    db = open_store()
    mine = db.add("the launch code is 1234", namespace="tenant-a")
    db.add("the launch code is 1234", namespace="tenant-b")  # identical content elsewhere
    for space in ("dense", "bits"):
        hits = db.search("the launch code is 1234", namespace="tenant-a", k=50, space=space)
        assert [h.id for h in hits] == [mine.id]
    assert db.search("the launch code is 1234", namespace="tenant-c", k=50) == []


def test_bad_input_is_refused_whole_and_named() -> None:
    db = open_store()
    db.add("kept", namespace="n", id="keep")
    good = {"content": "fine", "namespace": "n"}
    with pytest.raises(InvalidMemory, match=r"records\[1\]: valid_from is a naive datetime"):
        db.add_many([good, {"content": "x", "namespace": "n", "valid_from": datetime(2024, 1, 1)}])
    with pytest.raises(InvalidMemory, match=r"records\[0\]: content must be a non-empty string"):
        db.add_many([{"content": "", "namespace": "n"}])
    with pytest.raises(InvalidMemory, match=r"unknown field\(s\) \['colour'\]"):
        db.add_many([{"content": "x", "namespace": "n", "colour": "red"}])
    with pytest.raises(SpaceError, match="space 'dense': row 0 contains NaN"):
        db.add("nan vector", namespace="n", vectors={"dense": np.full(8, np.nan)})
    with pytest.raises(SpaceError, match=r"must have shape \(1, 8\)"):
        db.add("short vector", namespace="n", vectors={"dense": np.ones(7)})
    with pytest.raises(SpaceError, match="unknown space 'nope'"):
        db.search("x", namespace="n", space="nope")
    with pytest.raises(StoreError, match="already exists"):
        db.add("again", namespace="n", id="keep")
    assert len(db) == 1 and db.get("keep") is not None  # nothing of the refused batches landed


def test_caller_vectors_work_everywhere() -> None:
    db = open_store()
    v = np.zeros(8, np.float32)
    v[3] = 1
    m = db.add("anything", namespace="n", vectors={"dense": v, "bits": np.full(8, 255, np.uint8)})
    hits = db.search(v, namespace="n", k=1)
    assert hits[0].id == m.id and hits[0].score == pytest.approx(1.0)


def test_update_versions_and_optimistic_conflicts() -> None:
    db = open_store()
    m = db.add("Alice lives in Porto", namespace="alice")
    m2 = db.update(m.id, content="Alice lives in Lisbon", expected_version=1)
    assert m2.version == 2 and db.get(m.id) == m2
    with pytest.raises(engramdb.ConflictError, match="written against version 1, but version 2 is current"):
        db.update(m.id, content="stale write", expected_version=1, merge=None)
    assert db.search("Alice lives in Lisbon", namespace="alice", k=1)[0].id == m.id
    # the old content is no longer current, but the store still knew it back then
    assert db.search("Alice lives in Porto", namespace="alice", k=5)[0].memory.content == "Alice lives in Lisbon"
    before = m2.learned_at - timedelta(microseconds=1)  # type: ignore[operator]
    old = db.search("Alice lives in Porto", namespace="alice", k=1, known_at=before)
    assert old[0].memory.content == "Alice lives in Porto" and old[0].memory.version == 1
    with pytest.raises(InvalidMemory, match="update cannot change"):
        db.update(m.id, namespace="bob")


def test_supersede_ends_the_old_fact_in_valid_time() -> None:
    db = open_store()
    old = db.add("Alice works at the bakery", namespace="alice", valid_from=T0)
    new = db.add("Alice works at the library", namespace="alice", valid_from=T0 + timedelta(days=30))
    o2, n2 = db.supersede(old.id, new.id)
    assert o2.valid_until == new.valid_from and o2.superseded_by == new.id and n2.supersedes == old.id
    assert db.get(old.id) == o2  # nothing deleted
    now_hits = db.search("Alice works at the bakery", namespace="alice", k=5)
    assert [h.id for h in now_hits] == [new.id]  # a fact superseded before now is not current
    then = db.search("Alice works at the bakery", namespace="alice", k=5, as_of=T0 + timedelta(days=1))
    assert [h.id for h in then] == [old.id]  # at that time only the bakery was true


def test_forget_and_restore() -> None:
    db = open_store()
    m = db.add("a secret", namespace="n")
    db.forget(m.id)
    assert db.get(m.id) is None and db.get(m.id, include_forgotten=True) is not None
    assert db.search("a secret", namespace="n", k=5) == []
    db.restore(m.id)
    assert db.search("a secret", namespace="n", k=5)[0].id == m.id
    with pytest.raises(StoreError, match="no memory with id 'ghost'"):
        db.forget("ghost")


def test_persistence_round_trip_with_checkpoints(tmp_path: Path) -> None:
    db = open_store(tmp_path / "mem", tuning=Tuning(checkpoint_rows=7))
    ids = db.add_many([{"content": f"turn {i}", "namespace": "n", "session_id": "s", "seq": i} for i in range(5)])
    ids += db.add_many([{"content": f"turn {i}", "namespace": "n"} for i in range(5, 9)])  # crosses 7: checkpoint
    db.update(ids[0], content="turn zero, edited")
    db.forget(ids[1])
    expected = {i: db.get(i, include_forgotten=True) for i in ids}
    assert db.stats()["segments"] == 1
    db.close()
    files = sorted(p.name for p in (tmp_path / "mem").iterdir())
    # file numbers are drawn from one counter: seg-1, wal-2 (first checkpoint), seg-3, wal-4 (on close)
    assert files == ["LOCK", "engramdb.store", "manifest.json", "manifest.prev.json", "seg-000001.arrow",
                     "seg-000003.arrow", "wal-000004.log"]
    again = open_store(tmp_path / "mem", tuning=Tuning(checkpoint_rows=7))
    assert {i: again.get(i, include_forgotten=True) for i in ids} == expected
    assert again.search("turn 7", namespace="n", k=1)[0].id == ids[7]
    assert again.get(ids[1]) is None
    again.close()


def test_unclosed_store_recovers_from_the_wal(tmp_path: Path) -> None:
    # a process that writes and dies without close() (os._exit: no cleanup runs); the WAL has the write
    script = (f"import engramdb, json, os\n"
              f"db = engramdb.open({str(tmp_path / 'mem')!r}, dedup='off')\n"
              f"m = db.add('written but never closed', namespace='n', id='m1')\n"
              f"print(json.dumps(m.learned_at.isoformat()), flush=True)\n"
              f"os._exit(0)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    learned = datetime.fromisoformat(json.loads(out.stdout))
    again = engramdb.open(tmp_path / "mem")  # the dead writer's lock went with it
    got = again.get("m1")
    assert got is not None and got.content == "written but never closed" and got.learned_at == learned
    again.close()


def test_schema_mismatch_on_reopen_is_refused(tmp_path: Path) -> None:
    open_store(tmp_path / "mem").close()
    from engramdb.spaces.schema import Schema, Space

    with pytest.raises(SpaceError, match="has another schema"):
        engramdb.open(tmp_path / "mem", schema=Schema([Space("other", "dense", 4, "dot")]), embedders={})


def test_zero_copy_dense_vectors_from_segment_files(tmp_path: Path) -> None:
    db = open_store(tmp_path / "mem")
    db.add_many([{"content": f"row {i}", "namespace": "n"} for i in range(20)])
    db.close()
    # storage's seam: the engine's snapshot of the folder, its first segment file
    engine = Engine(tmp_path / "mem", schema=None, read_only=True, tuning=Tuning())
    seg = engine.view.segments[0]
    vecs = seg.vectors(engine.schema, "dense")
    assert seg.file == "seg-000001.arrow"
    assert not vecs.flags.owndata  # a view into the memory-mapped file, not a copy
    np.testing.assert_allclose(vecs[3], ToyDense(8).embed(["row 3"])[0])
    engine.close()


def test_crash_debris_is_removed_and_only_the_stores_own(tmp_path: Path) -> None:
    db = open_store(tmp_path / "mem")
    ids = db.add_many([{"content": f"row {i}", "namespace": "n"} for i in range(3)])
    db.close()
    folder = tmp_path / "mem"
    # what a crash in the middle of a checkpoint leaves: a segment and a WAL the journal names (the
    # writer notes a name before it creates the file) that no manifest lists, and temp files
    (folder / "seg-000042.arrow").write_bytes((folder / "seg-000001.arrow").read_bytes())
    (folder / "seg-000042.arrow.tmp").write_bytes(b"half")
    (folder / "wal-000043.log").write_bytes(b"EGWAL001")
    (folder / "journal.log").write_text("seg-000042.arrow\nwal-000043.log\n")
    (folder / "manifest.json.tmp").write_text("{")
    # files that look like ours but that no journal names: a user's, or another program's
    (folder / "seg-000099.arrow").write_bytes(b"not ours")
    (folder / "notes.tmp").write_text("mine")
    again = open_store(folder)
    assert len(again) == 3 and all(again.get(i) is not None for i in ids)  # the debris was never read
    names = {p.name for p in folder.iterdir()}
    assert not names & {"seg-000042.arrow", "seg-000042.arrow.tmp", "wal-000043.log", "manifest.json.tmp",
                        "journal.log"}
    assert (folder / "seg-000099.arrow").read_bytes() == b"not ours" and (folder / "notes.tmp").read_text() == "mine"
    again.close()


def test_a_folder_that_is_not_a_store_is_refused_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    folder.mkdir()
    for name, data in (("seg-000001.arrow", b"a"), ("wal-000002.log", b"b"), ("x.tmp", b"c"), ("a.jpg", b"d")):
        (folder / name).write_bytes(data)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    for read_only in (False, True):
        with pytest.raises(StoreError, match="is not an engramdb store|no engramdb store"):
            engramdb.open(folder, read_only=read_only)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_lost_manifest_never_makes_a_new_empty_store(tmp_path: Path) -> None:
    """The bug this replaced: a store without its manifest was taken for a new one and its files
    deleted. A reader refuses, changing nothing; a writer rebuilds the manifest (tests/test_repair.py)."""
    db = open_store(tmp_path / "mem", tuning=Tuning(checkpoint_rows=4))
    ids = db.add_many([{"content": f"row {i}", "namespace": "n"} for i in range(10)])
    db.close()
    folder = tmp_path / "mem"
    (folder / "manifest.json").unlink()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(StoreError, match="manifest.json is missing. Nothing was changed"):
        engramdb.open(folder, read_only=True)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # every segment and the WAL still there
    with pytest.warns(engramdb.RepairWarning):
        again = engramdb.open(folder)
    assert len(again) == 10 and all(again.get(i) is not None for i in ids)
    again.close()


@pytest.mark.parametrize("persistent", [True, False])
def test_purge_removes_the_content_from_every_file(tmp_path: Path, persistent: bool) -> None:
    db = open_store(tmp_path / "mem" if persistent else None)
    secret = db.add("my passport number is X1234567", namespace="n")
    db.update(secret.id, content="my passport number is X1234567 (renewed)")
    keep = db.add_many([{"content": f"harmless {i}", "namespace": "n"} for i in range(3)])
    db.admin.checkpoint()
    other = db.add("written after the checkpoint", namespace="n")
    asked = db.search("my passport number is X1234567", namespace="n", k=5)  # logged with its hits
    assert secret.id in [h.id for h in asked] and asked.query_id is not None
    db.feedback(asked.query_id, used=[secret.id])
    db.admin.checkpoint()  # the access log's rows are in a file
    db.importance.refresh()  # and the ratings and the ELO log hold the secret's id
    assert db.purge(secret.id) == 2
    assert db.get(secret.id, include_forgotten=True) is None
    # a search for it finds nothing (asked in other words: the text of a search made after the
    # purge is new data the access log keeps; those made before it went with the memory)
    assert all(h.id != secret.id for h in db.search("passport number renewed", namespace="n", k=50))
    assert all(db.get(i) is not None for i in [*keep, other.id])
    with pytest.raises(StoreError, match="no memory with id"):
        db.purge(secret.id)
    db.close()
    if persistent:
        for p in (tmp_path / "mem").rglob("*"):  # the derived index files too
            if p.is_file():
                assert b"X1234567" not in p.read_bytes(), f"{p.name} still holds the purged content"
        again = open_store(tmp_path / "mem")
        assert again.get(secret.id) is None and len(again) == 4
        again.close()


@pytest.mark.parametrize("suffix", [".jsonl", ".arrow"])
def test_export_import_round_trip(tmp_path: Path, suffix: str) -> None:
    db = open_store()
    a = db.add("Alice moved to Lisbon", namespace="alice", valid_from=T0, metadata={"k": [1, 2]}, role="user")
    db.add("Bob likes tea", namespace="bob")
    b = db.add("Alice adopted a cat", namespace="alice", vectors={"dense": np.eye(8, dtype=np.float32)[2]})
    assert db.admin.export(tmp_path / f"alice{suffix}", namespace="alice") == 2
    other = open_store()
    ids = other.admin.import_(tmp_path / f"alice{suffix}")
    assert sorted(ids) == sorted([a.id, b.id])
    got = other.get(a.id)
    assert got is not None and (got.content, got.valid_from, got.metadata, got.role) == (a.content, T0, {"k": [1, 2]}, "user")
    hit = other.search(np.eye(8, dtype=np.float32)[2], namespace="alice", k=1)[0]
    if suffix == ".arrow":  # vectors travel with Arrow exports
        assert hit.id == b.id and hit.score == pytest.approx(1.0)
    else:  # JSONL holds the records only: the text is embedded again on import
        assert hit.score < 0.99  # no row holds the vector given at add any more
        again = other.search("Alice adopted a cat", namespace="alice", k=1)[0]
        assert again.id == b.id and again.score == pytest.approx(1.0, abs=1e-5)
        rows = [r for r in map(json.loads, (tmp_path / "alice.jsonl").read_text().splitlines()) if "id" in r]
        assert sorted(r["id"] for r in rows) == sorted([a.id, b.id]) and not any("vectors" in r for r in rows)
        assert {r["id"]: r["valid_from"] for r in rows}[a.id] == T0.isoformat()
    with pytest.raises(ValueError, match="must end in .jsonl or .arrow"):
        db.admin.export(tmp_path / "x.csv")


def test_compact_merges_segments_and_keeps_history(tmp_path: Path) -> None:
    db = open_store(tmp_path / "mem", tuning=Tuning(checkpoint_rows=3))
    ids = [db.add(f"fact {i}", namespace="n").id for i in range(10)]
    before_update = db.get(ids[0]).learned_at  # type: ignore[union-attr]
    db.update(ids[0], content="fact zero, revised")
    db.forget(ids[1])
    assert db.stats()["segments"] >= 3
    expected = {i: db.get(i, include_forgotten=True) for i in ids}
    assert db.admin.compact() >= 3
    assert db.stats()["segments"] == 1
    assert {i: db.get(i, include_forgotten=True) for i in ids} == expected
    old = db.search("fact 0", namespace="n", k=1, known_at=before_update)  # history survived
    assert old[0].memory.content == "fact 0"
    db.close()
    names = sorted(p.name for p in (tmp_path / "mem").iterdir() if p.suffix == ".arrow")
    assert len(names) == 1
    again = open_store(tmp_path / "mem")
    assert {i: again.get(i, include_forgotten=True) for i in ids} == expected
    again.close()


def test_reopen_closes_old_versions_without_the_id_index(tmp_path: Path) -> None:
    """A reader that only searches never builds the id index, yet sees current versions only."""
    db = engramdb.open(tmp_path / "mem", schema=toy_schema(), embedders=toy_embedders(), dedup="off")  # type: ignore[arg-type]
    db.add("alpha one", namespace="n", id="a")
    db.add("beta two", namespace="n", id="b")
    db.admin.checkpoint()
    db.update("a", content="gamma three")  # in the WAL: replaces a committed row
    db.forget("b")
    db.admin.checkpoint()
    db.update("a", content="delta four")  # stays in the WAL
    # the retrieval seam over storage's: a plan run against a read-only engine's snapshot
    engine = Engine(tmp_path / "mem", schema=None, read_only=True, tuning=Tuning())
    view = engine.view
    plan = SearchPlan.build(view.schema, namespace="n", k=10, space=None, strategy=None, as_of=None,
                            known_at=None, types=None, explain=False, weights=None, recency=None, stages=None)
    hits = run_search(plan, view, Indexes(engine.files, Tuning(), "tree"), toy_embedders(), Tuning(),  # type: ignore[arg-type]
                      "alpha one")
    assert [h.memory.content for h in hits] == ["delta four"]
    assert view.ids.rows == 0  # the search needed no id index
    reader = engramdb.open(tmp_path / "mem", schema=toy_schema(), embedders=toy_embedders(), read_only=True)  # type: ignore[arg-type]
    assert [h.memory.content for h in reader.search("alpha one", namespace="n", k=10)] == ["delta four"]
    assert reader.get("a") is not None and reader.get("a").content == "delta four"  # type: ignore[union-attr]
    assert reader.get("b") is None and len(reader) == 1


def test_a_caller_editing_a_returned_memory_changes_nothing_stored_or_returned_later() -> None:
    db = engramdb.open(None)
    m = db.add("Biscuit the cat sleeps in boxes", namespace="n", metadata={"tags": ["cat"]})
    first = db.get(m.id)
    assert first is not None
    first.metadata["tags"].append("dog")
    first.metadata["new"] = 1
    hit = db.search("cat boxes", namespace="n", k=1)[0]
    hit.memory.metadata["tags"].append("bird")
    again = db.get(m.id)
    assert again is not None and again.metadata == {"tags": ["cat"]}
    assert db.search("cat boxes", namespace="n", k=1)[0].memory.metadata == {"tags": ["cat"]}


def rows_of_namespace(folder: Path, namespace: str) -> Any:
    """Every row (every version, every column, vectors included) of one namespace, through
    storage's seam, in key order."""
    import pyarrow as pa

    engine = Engine(folder, schema=None, read_only=True, tuning=Tuning())
    parts = []
    for seg in engine.view.segments:
        mask = np.asarray(seg.ns_index) == seg.ns_codes.get(namespace, -1)
        parts.append(seg.table.filter(pa.array(mask)))
    engine.close()
    return pa.concat_tables(parts).combine_chunks()


def test_purge_many_ids_or_a_namespace_in_one_rewrite(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    db = open_store(folder, tuning=Tuning(checkpoint_rows=16))
    keep = db.add_many([{"content": f"kept {i}", "namespace": "keep", "metadata": {"i": i}} for i in range(40)])
    db.update(keep[0], content="kept 0, edited")
    a = db.add_many([{"content": f"alice secret {i}", "namespace": "alice"} for i in range(30)])
    db.link(a[0], a[1], "CAUSED_BY")
    db.link(keep[1], keep[2], "CAUSED_BY")
    db.admin.checkpoint()
    before = rows_of_namespace(folder, "keep")
    assert db.purge([a[0], a[1], a[2]]) == 3
    assert all(db.get(i, include_forgotten=True) is None for i in a[:3]) and db.edges(keep[1])
    with pytest.raises(StoreError, match="no memory with id 'ghost'"):
        db.purge([a[3], "ghost"])  # all or nothing
    assert db.get(a[3]) is not None
    # "these ids of that namespace" (the cluster client's meaning) must not remove the namespace
    with pytest.raises(ValueError, match="ids or namespace=, not both.*namespace='alice'"):
        db.purge([a[3]], namespace="alice")
    assert db.get(a[3]) is not None and db.stats()["namespaces"]["alice"] == 27
    assert db.purge(namespace="alice") == 27
    assert db.stats()["namespaces"] == {"keep": 40} and db.purge(namespace="alice") == 0
    db.close()
    after = rows_of_namespace(folder, "keep")
    assert after.equals(before)  # every other row copied unchanged: every version, every column
    for p in folder.iterdir():
        if p.is_file():
            assert b"alice secret" not in p.read_bytes(), p.name


def test_two_writers_interleaved_merge_through_the_rule() -> None:
    """K4: two writers read version 1 and write; the second's stale write is retried and merged
    (its text, both metadata, the higher confidence), or refused with both versions named."""
    import threading

    db = open_store()
    m = db.add("Maya works at the bakery", namespace="n", metadata={"a": 1}, confidence=0.6)
    results: dict[str, object] = {}
    gate = threading.Barrier(2)

    def writer(name: str, **changes: object) -> None:
        gate.wait()
        try:
            results[name] = db.update(m.id, expected_version=1, **changes)
        except engramdb.StoreError as exc:
            results[name] = exc

    a = threading.Thread(target=writer, args=("a",), kwargs={"metadata": {"b": 2}, "confidence": 0.9})
    b = threading.Thread(target=writer, args=("b",), kwargs={"content": "Maya runs a market stall",
                                                              "metadata": {"c": 3}, "confidence": 0.5})
    a.start(), b.start()
    a.join(), b.join()
    final = db.get(m.id)
    assert final is not None and final.version == 3
    assert final.metadata == {"b": 2, "c": 3} or final.metadata == {"a": 1, "b": 2, "c": 3}
    assert final.confidence == 0.9
    with pytest.raises(engramdb.ConflictError) as err:
        db.update(m.id, content="late", expected_version=2, merge=lambda cur, ch: None)
    assert (err.value.expected, err.value.current) == (2, 3) and "could not merge" in str(err.value)

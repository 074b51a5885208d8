"""The small-segment merge (storage/coalesce.py) attacked: faults at its steps, kills, damaged
files, readers in other processes (bench/RELIABILITY.md, "Small-segment merges under attack").
tests/test_coalesce.py has its ordinary behaviour."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import engramdb
from engramdb.storage import disk
from engramdb.storage.coalesce import MOST


def _manifest(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "manifest.json").read_text())  # type: ignore[no-any-return]


def _listed(folder: Path) -> set[str]:
    m = _manifest(folder)
    return {e["file"] for e in m["segments"] + m["edges"] + m["archives"]} | {m["wal"]}


def _data_files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.startswith(("seg-", "edges-", "wal-", "archive-"))}


def _session(folder: Path, i: int) -> str:
    with engramdb.open(folder) as db:
        return db.add(f"session {i}: the heron by pond {i}", namespace="n", id=f"s{i}").id


def test_a_file_the_checkpoint_failed_to_delete_is_still_deleted_after_the_merge_commits(tmp_path: Path) -> None:
    """The checkpoint commits, then fails to delete the old WAL (left, journaled, for the next
    open); the merge's commit right after must not forget it: the next open removes it."""
    folder = tmp_path / "s"
    ids = [_session(folder, i) for i in range(MOST - 1)]
    failed: list[str] = []

    def hook(op: str, path: str, detail: Any) -> None:
        if op == "unlink" and os.path.basename(path).startswith("wal-") and not failed:
            failed.append(os.path.basename(path))
            raise OSError(errno.EIO, os.strerror(errno.EIO), path)

    with disk.inject(hook):
        ids.append(_session(folder, MOST - 1))  # its close checkpoints, then merges
    assert failed and len(_manifest(folder)["segments"]) < MOST  # the merge committed
    with engramdb.open(folder) as db:  # the next writer's open removes the store's debris
        assert all(db.get(i) is not None for i in ids)
    assert _data_files(folder) == _listed(folder)
    assert engramdb.verify(folder)["ok"]


def test_a_file_a_commit_failed_to_delete_is_deleted_by_the_next_commit(tmp_path: Path) -> None:
    """Any two commits in a row, no merge between: a checkpoint fails to delete its old WAL (left,
    journaled); the next checkpoint's commit used to clear the journal with it still there, so no
    open ever removed it. Engine.commit now deletes every journaled name the manifest does not list."""
    folder = tmp_path / "s"
    failed: list[str] = []

    def hook(op: str, path: str, detail: Any) -> None:
        if op == "unlink" and os.path.basename(path).startswith("wal-") and not failed:
            failed.append(os.path.basename(path))
            raise OSError(errno.EIO, os.strerror(errno.EIO), path)

    with engramdb.open(folder) as db:
        first = db.add("the first note", namespace="n").id
        with disk.inject(hook):
            db.admin.checkpoint()  # committed; its old WAL not deleted
        assert failed and (folder / failed[0]).exists()
        second = db.add("the second note", namespace="n").id
        db.admin.checkpoint()  # the next commit, in the same process
        assert not (folder / failed[0]).exists()
        assert db.get(first) is not None and db.get(second) is not None
    assert _data_files(folder) == _listed(folder)
    assert engramdb.verify(folder)["ok"]


def test_a_file_damaged_after_it_was_opened_is_not_merged_into_a_sound_one(tmp_path: Path) -> None:
    """A small segment's bytes damaged on disk while the writer has it open (mapped: the writer
    sees the new bytes): a merge must not copy them into a new file under a fresh checksum, which
    would pass every later check. The merge is refused, the damage stays visible to verify."""
    folder = tmp_path / "s"
    for i in range(MOST - 2):
        _session(folder, i)
    with engramdb.open(folder) as db:
        db.add("session 6: the heron by pond 6", namespace="n", id="s6")
        db.admin.checkpoint()
        victim = folder / _manifest(folder)["segments"][3]["file"]
        with open(victim, "r+b") as fh:  # in place: the same file the writer mapped
            at = fh.read().index(b"pond 3")
            fh.seek(at + 1)
            fh.write(b"X")
        db.add("session 7", namespace="n", id="s7")
        db.admin.checkpoint()  # MOST small segments: a merge is tried
        assert victim.name in {s["file"] for s in _manifest(folder)["segments"]}  # not merged away
    assert not engramdb.verify(folder)["ok"]  # the damage is still found, not laundered


def _small_segments(folder: Path) -> None:
    """The fault matrix's base store, then sessions until MOST - 1 small segments, then one row in
    the WAL: the next checkpoint folds it and merges (archived, edited, forgotten rows among them)."""
    import fault_matrix

    def trailing_small() -> int:  # the last run of one-row-tier files (1-7 rows): what the next merges
        rows = [s["rows"] for s in _manifest(folder)["segments"]]
        return len(rows) - max((k + 1 for k, n in enumerate(rows) if n >= MOST), default=0)

    i = 0
    while trailing_small() < MOST - 1:
        db = fault_matrix.open_store(folder)
        db.add(f"session note {i}", namespace="a", id=f"s{i}")
        if i % 3 == 0:
            db.update("a30" if i == 0 else f"s{i - 1}", content=f"edited in session {i}")
        if i == 2:
            db.lifecycle.archive(ids=["s1"])
        db.close()
        i += 1
    db = fault_matrix.open_store(folder)
    db.add("the merging one", namespace="a", id="merge")
    db.close(checkpoint=False)


def _checkpoint(db: engramdb.Store) -> None:
    db.admin.checkpoint()


def test_an_error_at_any_step_of_a_merge_keeps_every_memory_and_leaves_no_debris(
        tmp_path: Path, monkeypatch: Any) -> None:
    """ENOSPC or EIO at a sample of the I/O calls of a checkpoint that merges (the fault matrix's
    checks: opens, verify ok, the state as before, the handle still writes) and no file of the
    store's kind left unlisted after the next open. bench/RELIABILITY.md has the full sweep."""
    import fault_matrix

    op = fault_matrix.Op("coalesce", _checkpoint, prepare=_small_segments)
    monkeypatch.setitem(fault_matrix.OPS, "coalesce", op)
    template, expect = fault_matrix.templates(tmp_path, ["coalesce"])["coalesce"]
    total = fault_matrix.count_calls(op, template, tmp_path)
    assert total > 100  # the fold and the merge
    failures = []
    for fault, at in [(("ENOSPC", "EIO")[k % 2], at) for k, at in enumerate(range(1, total + 1, 2))]:
        folder = fault_matrix.fresh(template, tmp_path / "case")
        hook = fault_matrix.Counter(at, fault)
        raised = fault_matrix.run_op(op, folder, hook)
        why = fault_matrix.check(op, folder, expect, fault, raised, not hook.fired)
        if _data_files(folder) != _listed(folder):
            why += f" debris {sorted(_data_files(folder) - _listed(folder))}"
        if why:
            failures.append((fault, at, hook.fired, why))
    assert not failures, failures[:3]

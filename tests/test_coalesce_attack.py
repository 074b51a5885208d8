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

"""Small segment files merged as they pile up (storage/coalesce.py): each process that writes and
closes leaves a segment of its own; past `MOST` small ones, runs of neighbours are merged into one
file, every row keeping its key (memories, history, derived indexes unchanged). A failure while
merging leaves the files as they were and the checkpoint committed."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import engramdb
import pytest
import store_helpers
from engramdb.storage.coalesce import MOST, small_runs, tier
from engramdb.storage.engine import Engine


def _segments(folder: Path) -> list[int]:
    return [int(s["rows"]) for s in json.loads((folder / "manifest.json").read_text())["segments"]]


def _sessions(folder: Path, n: int, start: int = 0, **kw: Any) -> list[str]:
    ids = []
    for i in range(start, start + n):
        with engramdb.open(folder, **kw) as db:  # a hook's writer: one session's turns, then close
            ids.append(db.add(f"session {i}: the heron nested by pond {i}", namespace="n", session_id=f"s{i}").id)
            if i % 5 == 0:
                db.update(ids[-1], content=f"session {i}: the heron nested by pond {i}, twice")
    return ids


def test_runs_of_small_neighbours_of_one_tier_are_chosen_from_most() -> None:
    small = 4_096
    assert small_runs([1] * (MOST - 1), small) == []
    assert small_runs([1] * MOST, small) == [(0, MOST)]
    assert small_runs([5_000, *([1] * MOST), 5_000, *([2] * (MOST - 1))], small) == [(1, 1 + MOST)]
    # a merged run (tier 1) and new one-row files (tier 0) are not merged together: each row is
    # rewritten once a tier, not with every later run
    assert small_runs([*([8] * (MOST - 1)), *([1] * MOST)], small) == [(MOST - 1, 2 * MOST - 1)]
    assert small_runs([*([8] * MOST), 3], small) == [(0, MOST)]
    assert small_runs([*([4_095] * MOST)], small) == [(0, MOST)] and small_runs([4_096] * MOST, small) == []
    assert [tier(n) for n in (1, 7, 8, 63, 64, 511, 512, 4_095)] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_one_row_sessions_write_each_row_a_few_times(tmp_path: Path) -> None:
    """Write amplification bounded by the tiers: 200 one-row sessions rewrite each row about once
    a tier (the merged files' rows, summed, against the rows stored)."""
    folder = tmp_path / "s"
    rewritten = 0
    for i in range(200):
        before = {s["file"] for s in json.loads((folder / "manifest.json").read_text())["segments"]} \
            if folder.exists() else set()
        with engramdb.open(folder) as db:
            db.add(f"session {i}: a short note", namespace="n")
        after = json.loads((folder / "manifest.json").read_text())["segments"]
        rewritten += sum(int(s["rows"]) for s in after if s["file"] not in before and int(s["rows"]) > 1)
    rows = _segments(folder)
    assert sum(rows) == 200 and len(rows) <= 3 * (MOST - 1)
    assert rewritten <= 3 * 200  # tiers 0 -> 1 -> 2 (8, 64 rows): each row merged at most twice (~2,800 untiered)


def test_sixty_sessions_leave_a_few_files_and_every_memory(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    ids = _sessions(folder, 60)
    rows = _segments(folder)
    assert len(rows) <= 2 * (MOST - 1) and sum(rows) == 60 + 12  # every version kept (12 updates)
    with engramdb.open(folder, read_only=True) as db:
        for i, mid in enumerate(ids):
            m = db.get(mid)
            assert m is not None and m.content.startswith(f"session {i}:")
            assert len(db.history(mid)) == (2 if i % 5 == 0 else 1)
        assert db.search("heron pond 37", namespace="n", k=1)[0].id == ids[37]
    assert sorted(p.name for p in folder.glob("seg-*.arrow")) == sorted(
        s["file"] for s in json.loads((folder / "manifest.json").read_text())["segments"])  # no debris


def test_derived_indexes_stay_valid_across_a_merge(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    tuning = store_helpers.small_trees(40, 8)
    with engramdb.open(folder, tuning=tuning) as db:
        db.add_many([{"content": f"heron note {i} about reeds and water", "namespace": "n"} for i in range(60)])
        db.admin.build_index()
    ids = _sessions(folder, 20, start=100, tuning=tuning)
    with engramdb.open(folder, read_only=True, tuning=tuning) as reader:
        hit = reader.search("heron nested by pond 113", namespace="n", k=1)[0]
        assert hit.id == ids[13]
        # the dense index is read by a dense search (the default one recalls by BM25 in this profile)
        assert reader.search("heron nested by pond 113", namespace="n", k=80, strategy="dense_only")
        assert reader.stats()["index_files"].get("tree-dense") == "adopted"  # the writer's file, not rebuilt


def test_a_merge_that_fails_leaves_the_files_and_is_tried_again(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "s"
    ids = _sessions(folder, MOST - 1)
    real = Engine.commit
    failed: list[list[str]] = []

    def commit(self: Engine, unlisted: Any = ()) -> None:
        if unlisted and all(str(u).startswith("seg-") for u in unlisted) and not failed:
            failed.append(list(unlisted))
            raise OSError(errno.ENOSPC, "No space left on device")  # the merge's commit, not the checkpoint's
        real(self, unlisted)

    monkeypatch.setattr(Engine, "commit", commit)
    ids += _sessions(folder, 1, start=MOST - 1)  # the MOST-th small segment: a merge is tried, and fails
    assert failed and len(_segments(folder)) == MOST
    with engramdb.open(folder, read_only=True) as db:
        assert all(db.get(i) is not None for i in ids)
    assert len(list(folder.glob("seg-*.arrow"))) == MOST  # the failed merge's file is gone
    ids += _sessions(folder, 1, start=MOST)  # the next checkpoint merges
    assert len(_segments(folder)) < MOST
    with engramdb.open(folder, read_only=True) as db:
        assert all(db.get(i) is not None for i in ids)

"""Damaged files, opened in child processes (tests/damage_harness.py; the full grid of 100 flips
and 20 truncations per file kind is bench/damage.py): never a crash, never altered content
served, always an engramdb error naming the file or a salvage serving intact memories only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import damage_harness as harness
import pytest


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("damage") / "store"
    return folder, harness.build(folder)


def test_the_pristine_store_has_every_file_kind_and_serves_everything(pristine: tuple[Path, dict[str, Any]]) -> None:
    folder, expected = pristine
    kinds = harness.files_of(folder)
    assert all(kinds.values()), {k: len(v) for k, v in kinds.items()}
    results = harness.run(folder, expected, [{"id": 0, "kind": "none", "op": "flip", "file": "engramdb.store",
                                                "name": "engramdb.store", "at": 0}])
    assert results[0]["open"] == "served" and results[0]["salvage"] == "salvaged"  # (the marker's content is not read)
    assert results[0]["salvaged_memories"] == len(expected) == 200


def test_flipped_and_truncated_files_are_refused_or_salvaged(pristine: tuple[Path, dict[str, Any]]) -> None:
    folder, expected = pristine
    todo = harness.cases(folder, flips=12, truncations=4, seed=1)
    results = harness.run(folder, expected, todo)
    assert len(results) == 6 * 16
    assert harness.failures(results) == []
    by_kind = {k: [r["open"] for r in results if r["kind"] == k] for k in harness.KINDS}
    # every checksummed file kind is refused when damaged; derived index files are rebuilt and serve all
    for kind in ("segment", "edges", "archive", "manifest"):
        assert all(o == "refused" for o in by_kind[kind]), (kind, by_kind[kind])
    wal = [r for r in results if r["kind"] == "wal"]
    assert all(r["open"] == "refused" for r in wal if r["op"] == "flip")  # a flipped acknowledged frame is named
    # a truncated WAL reads as a crash during an append would leave it: the frames before the cut,
    # older versions where a later one was cut off, nothing altered (the documented limit)
    assert harness.torn_tails(results) == [r for r in wal if r["op"] == "truncate" and r["open"] != "refused"]
    assert all(o == "served" for o in by_kind["index"]), by_kind["index"]
    salvaged = [r for r in results if r["kind"] == "segment"]
    assert all(r["salvage"] == "salvaged" and 0 < r["salvaged_memories"] < 200 for r in salvaged)

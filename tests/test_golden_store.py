"""Golden store folders: what format_version 1 wrote (tools/make_golden_store.py) still opens,
reads and searches the same, read-only in place and writable from a copy."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb.store.manifest import FormatError
from store_helpers import toy_embedders, toy_schema

GOLDEN = Path(__file__).parent / "golden" / "store-v1"


def check_v1(db: engramdb.store.Store) -> None:
    g1 = db.get("g1", include_forgotten=True)
    assert g1 is not None and g1.forgotten_at is not None and g1.version == 2 and db.get("g1") is None
    assert g1.valid_from == datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc) and g1.role == "user"
    g2 = db.get("g2")
    assert g2 is not None and g2.superseded_by == "g4" and g2.valid_until == datetime(2024, 6, 1, tzinfo=timezone.utc)
    g3 = db.get("g3")
    assert g3 is not None and g3.content == "Bob likes green tea" and g3.metadata == {"lang": "en"}
    v = np.eye(8, dtype=np.float32)
    assert [h.id for h in db.search(v[3], namespace="alice", k=5)] == ["g4"]  # g1 forgotten, g2 superseded
    assert db.search(v[4], namespace="bob", k=1)[0].id == "g3"
    then = db.search(v[1], namespace="alice", k=1, as_of=datetime(2024, 5, 15, tzinfo=timezone.utc))
    assert then[0].id == "g2"


def test_golden_v1_opens_read_only_in_place() -> None:
    db = engramdb.open(GOLDEN, schema=toy_schema(), embedders=toy_embedders(), read_only=True)  # type: ignore[arg-type]
    check_v1(db)
    db.close()
    assert sorted(p.name for p in GOLDEN.iterdir()) == [
        "manifest.json", "seg-000001.arrow", "seg-000002.arrow", "wal-000003.log"
    ], "opening read-only must not touch the folder"


def test_golden_v1_takes_writes_from_a_copy(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "s")
    db = engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    check_v1(db)
    db.add("Carol joined", namespace="carol", vectors={"dense": np.eye(8, dtype=np.float32)[5]})
    db.close()
    again = engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    check_v1(again)
    assert len(again) == 4
    again.close()


def test_a_future_format_is_refused_with_the_reason(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "s")
    manifest = tmp_path / "s" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"format_version": 1', '"format_version": 99'))
    with pytest.raises(FormatError, match="newer engramdb \\(format_version 99\\)"):
        engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]

"""S7 link / H2 edges: typed directed edges, validated, persisted through WAL and files, purged."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb import InvalidMemory, StoreError
from engramdb.model.edge import EDGE_TYPE_RE
from store_helpers import toy_embedders, toy_schema

V = np.eye(8, dtype=np.float32)
T = datetime(2024, 1, 1, tzinfo=timezone.utc)


def make(path: Path | None = None) -> engramdb.Store:
    db = engramdb.open(path, schema=toy_schema(), embedders=toy_embedders(), dedup="off")  # type: ignore[arg-type]
    if len(db) == 0:
        for i, ns in enumerate(["a", "a", "a", "b"]):
            db.add(f"memory {i}", namespace=ns, id=f"m{i}", vectors={"dense": V[i]})
    return db


@pytest.mark.parametrize("good", ["SUPERSEDES", "CAUSED_BY", "PART_OF", "A", "STEP_2"])
def test_edge_types_are_upper_snake_case(good: str) -> None:
    assert EDGE_TYPE_RE.match(good)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": "caused_by"}, "UPPER_SNAKE_CASE.*'caused_by'"),
        ({"type": "CAUSED__BY"}, "UPPER_SNAKE_CASE"),
        ({"type": "_X"}, "UPPER_SNAKE_CASE"),
        ({"type": "X" * 65}, "at most 64"),
        ({"confidence": 1.5}, "confidence must be a number in \\[0, 1\\], got 1.5"),
        ({"confidence": float("nan")}, "confidence"),
        ({"confidence": True}, "confidence"),
        ({"reason": 7}, "reason must be a string"),
        ({"valid_from": datetime(2024, 1, 1)}, "valid_from is a naive datetime"),
        ({"valid_from": T, "valid_until": datetime(2023, 1, 1, tzinfo=timezone.utc)}, "valid_until .* is before"),
    ],
)
def test_bad_edges_are_refused_by_field(kwargs: dict[str, object], message: str) -> None:
    db = make()
    args = {"type": "RELATES_TO", **kwargs}
    kind = args.pop("type")
    with pytest.raises(InvalidMemory, match=message):
        db.link("m0", "m1", kind, **args)  # type: ignore[arg-type]
    assert db.stats()["edges"] == 0


def test_links_need_two_live_memories_of_one_namespace() -> None:
    db = make()
    with pytest.raises(StoreError, match="memories of different namespaces are never linked"):
        db.link("m0", "m3", "RELATES_TO")
    with pytest.raises(InvalidMemory, match="two different memories"):
        db.link("m0", "m0", "RELATES_TO")
    # supersede joins two memories the same way: one check for both verbs
    with pytest.raises(InvalidMemory, match="old_id and new_id must be two different memories"):
        db.supersede("m0", "m0")
    with pytest.raises(StoreError, match="old_id 'm0' is in namespace .* never linked"):
        db.supersede("m0", "m3")
    assert db.stats()["edges"] == 0 and db.get("m0").version == 1  # type: ignore[union-attr]
    with pytest.raises(StoreError, match="no memory with id 'nope'"):
        db.link("m0", "nope", "RELATES_TO")
    db.forget("m2")
    with pytest.raises(StoreError, match="forgotten"):
        db.link("m0", "m2", "RELATES_TO")
    assert db.stats()["edges"] == 0


def test_link_replace_unlink_and_directions() -> None:
    db = make()
    db.link("m0", "m1", "CAUSED_BY", confidence=0.7, reason="first guess")
    e = db.link("m0", "m1", "CAUSED_BY", confidence=0.9, reason="confirmed")
    db.link("m2", "m0", "PART_OF")
    assert db.edges("m0") == [e]  # the second link replaced the first
    assert [x.src for x in db.edges("m0", direction="in")] == ["m2"]
    assert {x.type for x in db.edges("m0", direction="both")} == {"CAUSED_BY", "PART_OF"}
    assert [x.type for x in db.edges("m0", direction="both", type="PART_OF")] == ["PART_OF"]
    assert db.unlink("m0", "m1", "CAUSED_BY") and not db.unlink("m0", "m1", "CAUSED_BY")
    assert db.edges("m0") == [] and db.stats()["edges"] == 1
    with pytest.raises(ValueError, match="direction must be"):
        db.edges("m0", direction="sideways")


def test_edge_validity_and_forgotten_ends() -> None:
    db = make()
    db.link("m0", "m1", "WORKED_AT", valid_from=T, valid_until=datetime(2025, 1, 1, tzinfo=timezone.utc))
    assert db.edges("m0", as_of=datetime(2024, 6, 1, tzinfo=timezone.utc))
    assert not db.edges("m0", as_of=datetime(2025, 6, 1, tzinfo=timezone.utc))
    assert not db.edges("m0", as_of=datetime(2023, 6, 1, tzinfo=timezone.utc))
    db.forget("m1")
    assert db.edges("m0") == [] and len(db.edges("m0", include_forgotten=True)) == 1
    db.restore("m1")
    assert len(db.edges("m0")) == 1


def test_supersede_writes_a_supersedes_edge() -> None:
    db = make()
    db.supersede("m0", "m1")
    (e,) = db.edges("m1")
    assert (e.src, e.dst, e.type, e.confidence) == ("m1", "m0", "SUPERSEDES", 1.0)


def test_edges_persist_through_wal_checkpoint_and_reader(tmp_path: Path) -> None:
    db = make(tmp_path / "s")
    db.link("m0", "m1", "CAUSED_BY", reason="x")
    reader = engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders(), read_only=True)  # type: ignore[arg-type]
    assert [e.type for e in reader.edges("m0")] == ["CAUSED_BY"]  # from the WAL, before any checkpoint
    reader.close()
    db.admin.checkpoint()
    db.link("m1", "m2", "FOLLOWS")
    db.close()
    with make(tmp_path / "s") as again:
        assert sorted(e.type for e in again.edges("m1", direction="both")) == ["CAUSED_BY", "FOLLOWS"]
        assert again.edges("m0")[0].reason == "x"


def test_purge_removes_edges_in_memory_store() -> None:
    db = make()
    db.link("m0", "m1", "CAUSED_BY")
    db.link("m1", "m2", "FOLLOWS")
    db.purge("m1")
    assert db.stats()["edges"] == 0 and db.edges("m0") == [] and db.edges("m2", direction="in") == []

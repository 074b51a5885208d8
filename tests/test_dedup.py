"""S8: duplicates on write, exact and near, per namespace, with the skip / merge / off policies."""

from __future__ import annotations

import engramdb
import numpy as np
import pytest
from store_helpers import toy_embedders, toy_schema


def open_store(policy: str, threshold: float = 0.9) -> engramdb.Store:
    return engramdb.open(None, schema=toy_schema(), embedders=toy_embedders(),  # type: ignore[arg-type]
                               dedup=policy, dedup_threshold=threshold)


def unit(i: int, noise: float = 0.0) -> np.ndarray:
    v = np.zeros(8, np.float32)
    v[i] = 1.0
    v[(i + 1) % 8] = noise
    return v


def test_skip_exact_and_near_duplicates_in_the_same_namespace_only() -> None:
    db = open_store("skip")
    first = db.add("Alice moved to Lisbon", namespace="a", vectors={"dense": unit(0)})
    ids = db.add_many([
        {"content": "Alice moved to Lisbon", "namespace": "a", "vectors": {"dense": unit(0)}},  # exact
        {"content": "Alice has moved to Lisbon", "namespace": "a", "vectors": {"dense": unit(0, 0.2)}},  # near (0.98)
        {"content": "Alice moved to Lisbon", "namespace": "b", "vectors": {"dense": unit(0)}},  # other tenant
        {"content": "Bob likes tea", "namespace": "a", "vectors": {"dense": unit(3)}},
        {"content": "Bob likes tea!", "namespace": "a", "vectors": {"dense": unit(3, 0.1)}},  # dup within batch
    ])
    assert ids[0] == first.id and ids[1] == first.id
    assert ids[2] != first.id and db.get(ids[2]) is not None  # never deduplicated across namespaces
    assert ids[4] == ids[3]
    kinds = [(e.index, e.kind, e.action) for e in db.last_dedup]
    assert kinds == [(0, "exact", "skipped"), (1, "near", "skipped"), (4, "near", "skipped")]
    assert db.last_dedup[1].similarity == pytest.approx(1 / np.sqrt(1.04), abs=1e-5)
    assert len(db) == 3


def test_below_threshold_is_not_a_duplicate() -> None:
    db = open_store("skip", threshold=0.99)
    db.add("one", namespace="a", vectors={"dense": unit(0)})
    db.add("two", namespace="a", vectors={"dense": unit(0, 0.2)})  # cosine 0.98 < 0.99
    assert db.last_dedup == [] and len(db) == 2


def test_merge_counts_the_copies_on_the_original() -> None:
    db = open_store("merge")
    first = db.add("Alice moved to Lisbon", namespace="a")
    db.add_many([{"content": "Alice moved to Lisbon", "namespace": "a"} for _ in range(3)])
    got = db.get(first.id)
    assert got is not None and got.metadata["merged_duplicates"] == 3 and got.version == 2
    assert {e.action for e in db.last_dedup} == {"merged"} and len(db) == 1


def test_off_keeps_everything_and_forgotten_memories_do_not_count() -> None:
    db = open_store("off")
    db.add_many([{"content": "same", "namespace": "a"}] * 2)
    assert len(db) == 2 and db.last_dedup == []
    db2 = open_store("skip")
    m = db2.add("same", namespace="a")
    db2.forget(m.id)
    again = db2.add("same", namespace="a")
    assert again.id != m.id  # a forgotten memory is not a reason to refuse a new one


def test_bad_policy_is_named() -> None:
    with pytest.raises(ValueError, match="dedup policy must be one of"):
        open_store("sometimes")


def test_the_default_keeps_every_turn_and_every_acknowledged_id_is_found() -> None:
    db = engramdb.open()  # default profile, default policy
    assert db.dedup == "off"
    ids = db.add_many([{"content": f"memory number {i} about topic {i % 17}", "namespace": "n", "id": f"m{i}"}
                       for i in range(4_000)])
    assert ids == [f"m{i}" for i in range(4_000)]
    assert all(db.get(f"m{i}") is not None for i in range(4_000)) and len(db) == 4_000
    turns = db.add_many([{"content": t, "namespace": "chat", "session_id": "s", "seq": i}
                         for i, t in enumerate(["Thanks!", "You're welcome.", "Thanks!"])])
    assert len(set(turns)) == 3 and [db.get(t).seq for t in turns] == [0, 1, 2]  # type: ignore[union-attr]


def test_a_named_record_is_always_stored_and_reported() -> None:
    db = open_store("skip")
    first = db.add("Alice moved to Lisbon", namespace="a", id="a1", vectors={"dense": unit(0)})
    ids = db.add_many([{"content": "Alice moved to Lisbon", "namespace": "a", "id": "a2", "vectors": {"dense": unit(0)}},
                       {"content": "Alice moved to Lisbon", "namespace": "a", "vectors": {"dense": unit(0)}}])
    assert ids == ["a2", first.id]  # the named one is stored; the unnamed copy is skipped, its id the original's
    assert [(e.index, e.duplicate_of, e.action) for e in db.last_dedup] == [(0, "a1", "kept"), (1, "a1", "skipped")]
    assert db.get("a2") is not None and len(db) == 2


@pytest.mark.parametrize("policy", ["skip", "merge"])
def test_a_negation_is_never_a_duplicate(policy: str) -> None:
    db = engramdb.open(dedup=policy)  # the default profile's hashing space drops stop words, "don't" among them
    a = db.add("I like cats", namespace="n")
    b = db.add("I don't like cats", namespace="n")
    c = db.add("I never liked cats", namespace="n")
    assert len({a.id, b.id, c.id}) == 3 and len(db) == 3 and db.last_dedup == []
    ids = db.add_many([{"content": "She is not coming", "namespace": "n"}, {"content": "She is coming", "namespace": "n"}])
    assert len(set(ids)) == 2 and len(db) == 5
    assert db.add("I like cats", namespace="n").id == a.id  # the same statement still is one

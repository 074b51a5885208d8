"""The store's errors cross processes as themselves (pickled, as a Ray actor's or a worker's result
is), and forgetting a forgotten memory changes nothing (a retried call)."""

from __future__ import annotations

import pickle

import engramdb
from engramdb.model.errors import ConflictError, CorruptFile


def test_every_store_error_pickles_as_itself() -> None:
    errors = [CorruptFile("/data/s0/seg-000001.arrow", "its checksum is not the manifest's"),
              ConflictError("m1", 2, 3, "the two versions change the same field"),
              engramdb.StoreError("plain"), engramdb.InvalidMemory("content is empty")]
    for exc in errors:
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc) and vars(back) == vars(exc)


def test_forgetting_a_forgotten_memory_returns_it_as_it_is() -> None:
    with engramdb.open() as db:
        m = db.add("The spare key is under the blue pot.", namespace="n")
        first = db.forget(m.id)
        again = db.forget(m.id)
        assert again == first and again.forgotten_at is not None
        assert [v.version for v in db.history(m.id)] == [1, 2]

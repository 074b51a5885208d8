"""The query embeddings a store keeps (K5, spaces/query.py) after a purge: emptied, and for a minute
none of the purging store's kept, since a search under way on another thread embedded its query
(text that may say what the purged memories said) before the purge and would keep it right after.
Other stores keep theirs."""

from __future__ import annotations

import engramdb
from engramdb.spaces.query import cached_queries


def test_a_purge_keeps_none_of_its_stores_queries_for_a_while() -> None:
    db, other = engramdb.open(None), engramdb.open(None)
    for store in (db, other):
        store.add_many([{"id": f"m{i}", "content": f"the lighthouse keeper's log, night {i}", "namespace": "n"}
                        for i in range(5)])
    db.search("lighthouse keeper", namespace="n")
    assert cached_queries() >= 1
    db.purge(["m0"])
    assert cached_queries() == 0
    db.search("the keeper's purged night", namespace="n")  # as a search racing the purge would
    assert cached_queries() == 0
    other.search("lighthouse log", namespace="n")
    assert cached_queries() == 1  # another store's query is kept

"""Each kind of derived index is made and loaded under its own lock (index/registry.py, issue 26):
a request that needs BM25 does not wait for a tree load under way on another thread (the open's
warm job loads the dense index first; a first search reads BM25 first). The tree load is held
open by the test until the BM25 index has loaded; before, the one lock of every kind kept
the BM25 load waiting for it (the wait's timeout only guards the test against hanging)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import engramdb
import pytest
from engramdb.index.lexical_index import StoreBm25
from engramdb.index.tree_index import TreeIndex


def test_a_bm25_search_does_not_wait_for_a_tree_load_under_way(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with engramdb.open(tmp_path / "s", tuning=engramdb.Tuning(background=False, tree_min_rows=20)) as db:
        db.add_many([{"content": f"Note {i} about the garden shed and the blue bicycle.", "namespace": "n"}
                     for i in range(40)])
    entered, release, lexical_loaded = threading.Event(), threading.Event(), threading.Event()
    real_tree, real_bm25 = TreeIndex.load, StoreBm25.load

    def held(self: TreeIndex, files: Any, view: Any) -> bool:
        entered.set()
        release.wait(timeout=30)
        return real_tree(self, files, view)

    def bm25_load(self: StoreBm25, files: Any, view: Any) -> bool:
        out = real_bm25(self, files, view)
        lexical_loaded.set()
        return out

    monkeypatch.setattr(TreeIndex, "load", held)
    monkeypatch.setattr(StoreBm25, "load", bm25_load)
    db = engramdb.open(tmp_path / "s", tuning=engramdb.Tuning(background=False, tree_min_rows=20))
    got: list[Any] = []
    try:
        dense = threading.Thread(target=db.search, args=("blue bicycle",), kwargs={"namespace": "n", "space": "dense"})
        dense.start()
        assert entered.wait(timeout=30)  # the tree load is under way, held
        # the default search reads BM25 first (then the dense index, which waits for the tree)
        search = threading.Thread(target=lambda: got.append(db.search("blue bicycle", namespace="n", k=3)))
        search.start()
        loaded = lexical_loaded.wait(timeout=20)
        release.set()
        dense.join()
        search.join()
        assert loaded  # BM25 was loaded while the tree load was still held
        assert got and len(got[0]) == 3
    finally:
        release.set()
        db.close()

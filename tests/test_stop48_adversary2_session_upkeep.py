"""Stop 48, second adversary: SessionEnd's upkeep and the close that builds no tree from nothing.

`session_upkeep.upkeep` builds the indexes (`build_index`) so the next session's read-only hooks
find them saved, then consolidates, whose "purge" step purges what a person forgot more than 30
days ago. That purge drops every index, and since stop 48 the close no longer builds the tree from
nothing: the next session's readers have no tree file and scan exactly until the next SessionEnd
(which again drops it whenever something is purged). Before stop 48 the close rebuilt it.
tree_min_rows is lowered only to keep the store small.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import engramdb
import pytest
from engramdb.agents import session_upkeep
from engramdb.store import facade


def test_a_session_upkeep_whose_consolidation_purged_leaves_the_tree_saved(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    tuning = engramdb.Tuning(background=False, tree_min_rows=500)
    monkeypatch.setattr(session_upkeep, "QUICK", tuning)
    p = tmp_path / "store"
    with engramdb.open(p, tuning=tuning) as db:
        ms = db.add_many([{"content": f"note {i} about the garden {i % 13}", "namespace": "me"} for i in range(1200)])
        real = facade.utc_now
        monkeypatch.setattr(facade, "utc_now", lambda: real() - timedelta(days=31))
        db.forget(ms[0])  # forgotten by a person 31 days ago: the consolidation purges it
        monkeypatch.setattr(facade, "utc_now", real)
    session_upkeep.upkeep(p, "me")
    with engramdb.open(p, read_only=True, tuning=tuning) as r:
        assert r.get(ms[0], include_forgotten=True) is None  # the purge ran
        hits = r.search("garden 7", namespace="me", k=5, log=False, strategy="dense_only")
        assert r.stats()["index_files"].get("tree-dense") == "adopted", r.stats()["index_files"]
        assert hits.stats.index.get("index") == "tree"

"""What the first context of a process reads (issue 26): its purge check costs nothing unless a
purge came between its search and its snapshot, and then still leaves the purged memories out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import engramdb
import pytest

_TEXTS = ["She practises the violin concerto every evening before the concert.",
          "Tune the guitar strings before the concert starts.",
          "The orchestra plays the symphony's slow movement beautifully.",
          "My sister bakes sourdough bread on Sundays."]


def _store(folder: Path) -> engramdb.Store:
    db = engramdb.open(folder, tuning=engramdb.Tuning(background=False))
    db.add_many([{"content": t, "namespace": "a", "session_id": "s1", "seq": i} for i, t in enumerate(_TEXTS)])
    return db


def test_a_purge_between_the_search_and_the_snapshot_leaves_the_purged_memory_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = _store(tmp_path / "s")
    gone: list[str] = []
    said: list[str] = []
    search = db.search

    def search_then_purge(*args: Any, **kwargs: Any) -> engramdb.Hits:
        hits = search(*args, **kwargs)
        if not gone:  # the context's own search: a purge lands before the context takes its snapshot
            assert len(hits) >= 2
            gone.append(hits[0].id)
            said.extend(h.memory.content for h in hits)
            db.purge(gone)
        return hits

    monkeypatch.setattr(db, "search", search_then_purge)
    ctx = db.context("before the concert", namespace="a", max_tokens=200)
    assert gone and db.get(gone[0]) is None
    assert gone[0] not in {i.id for i in ctx.items}
    assert said[0] not in ctx.text
    assert said[1] in ctx.text  # the rest still came
    db.close()


def test_without_a_purge_the_context_is_the_same_whether_or_not_the_id_index_was_built(tmp_path: Path) -> None:
    """The first context of a reopened store (no id index yet) and a later one (index built by a
    `get`) give the same block."""
    folder = tmp_path / "s"
    _store(folder).close()
    with engramdb.open(folder, tuning=engramdb.Tuning(background=False)) as db:
        first = db.context("concert strings", namespace="a", max_tokens=200, log=False)
    with engramdb.open(folder, tuning=engramdb.Tuning(background=False)) as db:
        some = db.list("a", limit=1)[0].id
        assert db.get(some) is not None
        again = db.context("concert strings", namespace="a", max_tokens=200, log=False)
    assert first.text == again.text and [i.id for i in first.items] == [i.id for i in again.items]

"""Stop 49 adversary (474153a): a purge carries the passage vectors of the memories it keeps, "and
what it carries is what a rebuild makes". Not for an archived memory: archiving strips its content
from the segments but leaves its passage vectors (same keys, same epoch), the purge carries them,
and a rebuild from the segments has none for it (its content is empty there). The carried store
and the rebuilt one then disagree on the passage count and rank the archived memory differently.
(The root is older: archive alone already leaves vectors a rebuild would not make; before
474153a the purge's drop at least made the store agree with a rebuild again.)"""

from __future__ import annotations

from pathlib import Path

import engramdb
from engramdb.spaces.passages import passages
from engramdb.spaces.profiles import embedders_for, profile_schema

SCHEMA = profile_schema("default")
TOPICS = ["violin lessons in Lisbon", "a sourdough starter that failed", "the ferry timetable to Skye",
          "a broken bicycle chain", "tax forms for the bakery", "the chess club's spring tournament"]


def _open(path: Path) -> engramdb.Store:
    return engramdb.open(path, schema=SCHEMA, embedders=dict(embedders_for(SCHEMA)), dedup="off")


def _long(i: int) -> str:
    filler = f"Entry {i} of the diary went on about the weather and the neighbours' garden. "
    return filler * 12 + f"Then memory {i} turned to {TOPICS[i % len(TOPICS)]}, which mattered most. " + filler * 12


def _answers(db: engramdb.Store) -> list[list[tuple[str, object]]]:
    return [[(h.id, h.passage) for h in db.search(f"what happened with {t}", namespace="n", k=8,
                                                   weights={"bm25": 0.0})] for t in TOPICS]


def test_a_purge_after_an_archive_carries_what_a_rebuild_makes(tmp_path: Path) -> None:
    path = tmp_path / "s"
    db = _open(path)
    db.add_many([{"id": f"l{i}", "content": _long(i), "namespace": "n"} for i in range(10)])
    _answers(db)  # every passage embedded
    db.lifecycle.archive(ids=["l4"])
    assert db.purge(["l1"]) == 1
    carried = _answers(db)
    carried_count = db.stats()["passages"]["dense"]["passages"]
    db.close()

    for f in (path / "index").glob("passages-*"):
        f.unlink()
    rebuilt = _open(path)
    answers = _answers(rebuilt)
    # passages of the memories whose content is in the segments: all but the purged and the archived one
    assert rebuilt.stats()["passages"]["dense"]["passages"] == sum(
        len(passages(_long(i))) for i in range(10) if i not in (1, 4))
    assert rebuilt.stats()["passages"]["dense"]["passages"] == carried_count
    assert answers == carried
    rebuilt.close()

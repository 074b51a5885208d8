"""Stop 49 second adversary (062e0f7 `Renumbering.carries`): a purge carries the BM25 indexes and
passage vectors over unless a memory is archived *now* (`carries=not archived`). But an index made
while a memory was archived, then kept through its unarchive, holds what its stripped row made
(no passages analysed from its empty content), not what its restored content makes: unarchive
changes no key and re-analyses nothing. Before 474153a/454ae6d the purge's drop made such a store
agree with a rebuild again; now the purge carries the stale index, saves it, and every later open
adopts it: the restored memory's passage and BM25 score differ from an index made from the
segments (the test: passage (0, 1133) against (882, 1290), BM25 0.9929 against 1.0)."""

from __future__ import annotations

from pathlib import Path

import engramdb
from engramdb.spaces.profiles import embedders_for, profile_schema

SCHEMA = profile_schema("default")
FILLER = "The diary went on about the weather and the neighbours garden. " * 20


def _open(path: Path) -> engramdb.Store:
    return engramdb.open(path, schema=SCHEMA, embedders=dict(embedders_for(SCHEMA)), dedup="off")


def _answers(db: engramdb.Store) -> dict[str, list[tuple[str, object, float]]]:
    return {str(s): [(h.id, h.passage, round(h.score, 4))
                     for h in db.search("the quokka9981 plan", namespace="n", k=3, strategy=s)]
            for s in ("bm25", None)}


def test_a_purge_after_an_unarchive_carries_what_a_rebuild_makes(tmp_path: Path) -> None:
    path = tmp_path / "s"
    db = _open(path)
    db.add_many([{"id": f"m{i}", "content": FILLER + f"note {i}" + (" and the quokka9981 plan" if i == 4 else ""),
                  "namespace": "n"} for i in range(10)])
    db.lifecycle.archive(ids=["m4"])
    _answers(db)  # the indexes made while m4 is archived
    db.lifecycle.unarchive(["m4"])
    assert not db.lifecycle.is_archived("m4")
    assert db.purge(["m1"]) == 1  # nothing archived now: the indexes are carried over
    carried = _answers(db)
    db.close()

    for f in (path / "index").iterdir():
        f.unlink()
    rebuilt = _open(path)
    assert _answers(rebuilt) == carried
    rebuilt.close()

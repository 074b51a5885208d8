"""A purge reaches every file derived from what it deletes (S7, issue 24 item 8).

The canary: a namespace ("alice") holding distinctive words and ids goes through every feature
that derives a file (searches with and without hits, feedback, the ELO update, topics, themes,
context and its curiosity queue, consolidation, a dream, add_file, a reader's spooled searches
and a capture spooled while the writer holds the lock); `purge(namespace="alice")`; then every
byte of every file under the store folder is read and none of her words or ids is left, in UTF-8
nor as JSON escapes them. Bob's namespace, beside hers through all of it, is all still there.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import engramdb
import pytest
from engramdb.importance import elo

GRANT = "kwenthrix grant deadline"
ALICE_WORDS = ["kwenthrix", "Zoë", "vexillumquartz", "plovdivquasar", "glimmerhaven", "ombrevault"]
BOB_WORDS = ["tractorbarley", "Björnholm", "harvestquill"]


def alice_records() -> list[dict[str, Any]]:
    """Notes that match GRANT best, a seed linked to a target that says little of it (a surprise
    for the navigator: a curiosity item), and a second topic."""
    return [
        *({"id": f"alice-kw-{i}", "content": f"Zoë's kwenthrix grant deadline note {i}: the kwenthrix grant "
                                             f"deadline is close, draft {i}.", "namespace": "alice",
           "session_id": "alice-session-kw", "memory_type": "alice-kw-type"} for i in range(8)),
        {"id": "alice-kw-seed", "content": "The kwenthrix grant deadline moved to Friday.", "namespace": "alice"},
        {"id": "alice-kw-target", "content": "The funding office wants a signed budget sheet.", "namespace": "alice"},
        *({"id": f"alice-kw-tide-{i}", "content": f"Zoë kwenthrix lighthouse tide log {i} by the quay.",
           "namespace": "alice"} for i in range(10)),
        *({"id": f"alice-kw-bird-{i}", "content": f"Bird watching trip {i} by the lake.", "namespace": "alice"}
          for i in range(40)),
    ]


def bob_records() -> list[dict[str, Any]]:
    return [
        *({"id": f"bob-{i}", "content": f"Björnholm tractorbarley harvest note {i}: the tractorbarley field is "
                                        f"ready, row {i}.", "namespace": "bob", "session_id": "bob-session",
           "memory_type": "bob-type"} for i in range(8)),
        {"id": "bob-seed", "content": "The tractorbarley harvest moved to Monday.", "namespace": "bob"},
        {"id": "bob-target", "content": "The tractorbarley co-op wants a signed delivery note.", "namespace": "bob"},
        *({"id": f"bob-mill-{i}", "content": f"Björnholm tractorbarley mill log {i} by the river.",
           "namespace": "bob"} for i in range(10)),
    ]


def forms(word: str) -> list[bytes]:
    """The byte sequences a word may take in a file: UTF-8, and as JSON escapes non-ASCII."""
    return list(dict.fromkeys([word.encode(), json.dumps(word)[1:-1].encode()]))


def every_file(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def exercise(db: engramdb.Store, folder: Path, ns: str, words: str, file_text: str) -> dict[str, Any]:
    """Every feature that derives a file, on one namespace; returns its query ids and session."""
    session = f"{ns}-session-kw" if ns == "alice" else "bob-session"
    for _ in range(6):  # shown often: promoted to long-term by a consolidation a week on (the tier file)
        first = db.search(words, namespace=ns, k=5, session_id=session)
    assert first and first.query_id is not None
    db.feedback(first.query_id, used=[first[0].id])
    empty = db.search("plovdivquasar" if ns == "alice" else "harvestquill", namespace=ns, min_score=0.99)
    assert len(empty) == 0 and empty.query_id is not None  # a search that found nothing is logged too
    (folder.parent / f"{ns}.md").write_text(file_text)
    assert db.add_file(folder.parent / f"{ns}.md", namespace=ns)["added"] >= 3
    db.importance.refresh()
    assert db.topics(ns) and db.topics.themes(ns) is not None
    ctx = db.context(words, namespace=ns, session_id=session, max_tokens=800)
    assert ctx.items
    return {"queries": [first.query_id, empty.query_id, ctx.stats["query_id"]], "session": session}


@pytest.mark.parametrize("how", ["namespace", "ids"])
def test_a_purge_leaves_no_byte_of_the_purged_in_any_file(tmp_path: Path, how: str) -> None:
    folder = tmp_path / "s"
    db = engramdb.open(folder)
    db.add_many([*alice_records(), *bob_records()])
    db.link("alice-kw-seed", "alice-kw-target", "REQUIRES")
    db.link("bob-seed", "bob-target", "REQUIRES")
    db.update("alice-kw-3", content="Zoë's kwenthrix grant deadline note 3, revised: the kwenthrix draft is due.")
    db.forget("alice-kw-tide-9")
    alice = exercise(db, folder, "alice", GRANT, "\n\n".join(
        f"Zoë's vexillumquartz journal, entry {i}: the kwenthrix lamp burned all night by the quay." for i in range(80)))
    bob = exercise(db, folder, "bob", "tractorbarley harvest", "\n\n".join(
        f"Björnholm harvestquill ledger, line {i}: the tractorbarley crop went to the mill." for i in range(80)))
    assert db.curiosity("alice"), "the context queued the surprising hop from alice-kw-seed"
    now = datetime.now(timezone.utc)
    assert db.lifecycle.consolidate(dry_run=False, now=now + timedelta(days=8)).applied["promote"] > 0
    assert db.admin.dashboard(namespace="alice")["lifecycle_tiers"]["long_term"] > 0
    db.lifecycle.dream("alice", now=now + timedelta(days=9), dry_run=False)  # applied: its edges and forgets are derived too
    assert db.lifecycle.consolidate(namespace="alice", dry_run=False, now=now + timedelta(days=400)).applied["compress"] > 0
    assert db.lifecycle.archive(ids=["alice-kw-tide-0", "alice-kw-tide-1"])["file"] is not None  # her text in an archive file
    db.lifecycle.archive(ids=["bob-mill-0"])
    db.admin.checkpoint()
    # a reader's searches and context are spooled for the writer; a capture waits in the spool
    with engramdb.open(folder, read_only=True, access_log="spool") as reader:
        assert reader.search("glimmerhaven kwenthrix", namespace="alice").query_id is not None
        reader.context(GRANT, namespace="alice", max_tokens=300)
        reader.search("tractorbarley mill", namespace="bob")
    assert engramdb.capture(folder, [{"id": "alice-captured-ombrevault", "namespace": "alice",
                                      "content": "ombrevault: Zoë's kwenthrix note captured by a hook"},
                                     {"id": "bob-captured", "namespace": "bob",
                                      "content": "Björnholm's tractorbarley note captured by a hook"}])["spooled"] == 2
    assert any(p.suffix == ".access" for p in (folder / "spool").iterdir())
    alice_ids = [m.id for m in db.list("alice", limit=1000, include_ended=True)] + ["alice-kw-tide-9"]
    bob_ids = [m.id for m in db.list("bob", limit=1000, include_ended=True)]
    bob_before = {i: db.get(i, include_forgotten=True) for i in bob_ids}
    bob_elo = db.importance("bob-0").elo if db.importance("bob-0").updates else None
    bob_topics = [(t.id, t.label, t.members) for t in db.topics("bob")]

    if how == "namespace":
        assert db.purge(namespace="alice") >= len(alice_ids) + 1  # the capture's and every version
    else:  # every id of hers, the spooled capture's too (taken in first)
        db.purge([i for i in alice_ids if db.get(i, include_forgotten=True) is not None]  # (consolidation
                 + ["alice-captured-ombrevault"])  # purged the one forgotten 400 days before)

    # in memory: nothing of hers answers
    assert db.curiosity("alice") == [] and len(db.search(GRANT, namespace="alice", log=False)) == 0
    assert "alice" not in db.stats()["topics"]
    with pytest.raises(ValueError, match="no logged search"):
        db.feedback(str(alice["queries"][0]), used=[])
    db.close()

    canaries = [w for word in [*ALICE_WORDS, *alice_ids, "alice-captured-ombrevault", "alice-session-kw",
                               "alice-kw-type", "alice", *(str(q) for q in alice["queries"])] for w in forms(word)]
    found = {(name, c.decode(errors="replace")) for name, raw in every_file(folder).items() for c in canaries
             if c in raw}
    assert not found, f"purged bytes left in files: {sorted(found)}"
    # and everything of bob's is there, through the API and in the files
    raw_all = b"".join(every_file(folder).values())
    assert all(any(f in raw_all for f in forms(w)) for w in BOB_WORDS)
    with engramdb.open(folder) as again:
        for i, m in bob_before.items():
            got = again.get(i, include_forgotten=True)
            assert got is not None and m is not None and (got.id, got.version, got.content) == (m.id, m.version,
                                                                                             m.content)
        assert again.get("bob-captured") is not None
        assert again.search("tractorbarley harvest", namespace="bob", k=3)
        # the capture the purge took in is new to bob's topics, which are computed again: it may join one
        assert [(t.id, t.label, tuple(m for m in t.members if m != "bob-captured"))
                for t in again.topics("bob")] == bob_topics
        if bob_elo is not None:
            assert again.importance("bob-0").elo == pytest.approx(bob_elo, abs=1.0)
        assert any(r["namespace"] == "bob" for r in again.importance.log())
        for q in bob["queries"]:
            assert str(q).encode() in raw_all  # bob's searches stay in the access log
        assert again.importance("bob-0").elo != elo.INITIAL_ELO or bob_elo is None


def test_purge_refuses_an_id_that_is_not_a_string_before_anything_is_written(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    db.add("kwenthrix", namespace="alice", id="a1")
    engramdb.capture(tmp_path / "s", [{"id": "a2", "content": "spooled", "namespace": "alice"}])
    with pytest.raises(TypeError, match=r"ids must be memory ids \(non-empty strings\), got 5"):
        db.purge(["a1", 5])  # type: ignore[list-item]
    assert any((tmp_path / "s" / "spool").iterdir())  # refused before the spool was taken in
    assert db.get("a1") is not None
    db.close()

"""What the engine does on its own never destroys a memory (issue 25, items 1-5): the dream,
consolidation, contradiction supersede and concept forgetting act only on evidence about the
memory itself, are proposals first (a dry run by default), and the restore window's purge takes
only what a person forgot. Each test failed before its fix."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import engramdb
import pytest

POSTGRES = "Weekly sync notes. Attendees were Ana, Ben and Chloe. Decision: migrate billing to Postgres 16."
ANDROID = "Weekly sync notes. Attendees were Ana, Ben and Chloe. Decision: mobile app drops Android 9."


def now() -> datetime:
    return datetime.now(timezone.utc)


def _compressed_notes() -> tuple[engramdb.Store, str, str]:
    """Two notes that open with the same sentences, compressed by a consolidation 20 days on to
    the same summary (shown to searches and never used: their ELO falls to LOW)."""
    db = engramdb.open(None)
    a = db.add(POSTGRES, namespace="n").id
    b = db.add(ANDROID, namespace="n").id
    other = db.add("other note", namespace="n").id
    for _ in range(6):
        hits = db.search("weekly sync notes attendees decision", namespace="n", k=3)
        db.feedback(hits.query_id or "", used=[other])
    run = db.consolidate(dry_run=False, now=now() + timedelta(days=20), protect_days=0)
    assert run.applied["compress"] == 3
    assert db.get(a).content == db.get(b).content  # type: ignore[union-attr] # the same summary
    return db, a, b


def test_item1_compressed_notes_are_not_copies_and_a_month_later_nothing_is_purged() -> None:
    db, a, b = _compressed_notes()
    dream = db.dream("n", dry_run=False)
    assert dream["duplicates"] == [] and dream["duplicates_forgotten"] == []
    later = db.consolidate(dry_run=False, now=now() + timedelta(days=31))
    assert later.purged == []
    for mid, text in ((a, POSTGRES), (b, ANDROID)):
        assert db.get(mid) is not None and db.history(mid)[0].content == text
    assert db.search("Postgres 16 billing migration", namespace="n", k=1)[0].id == a


def test_a_dreams_forget_is_held_past_the_window_until_a_person_confirms_it() -> None:
    db = engramdb.open(None)
    both = db.add_many([{"content": "The spare key is under the blue flowerpot", "namespace": "n"}] * 2)
    forgotten_by_hand = db.add("an old shopping list", namespace="n").id
    db.forget(forgotten_by_hand)
    rep = db.dream("n", dry_run=False)
    [(first, copy)] = rep["duplicates"]  # one batch: the same time, so the lower id counts as the first
    assert {first, copy} == set(both) and rep["duplicates_forgotten"] == [copy]
    assert rep["forgotten"][copy].startswith(f"an exact copy of {first}")
    [waiting] = db.forget_proposals("n")
    assert waiting["id"] == copy and waiting["by"] == "dream" and "exact copy" in waiting["reason"]
    month = now() + timedelta(days=31)
    run = db.consolidate(dry_run=False, now=month)
    assert run.purged == [forgotten_by_hand]  # a person's forget goes when its window has passed
    assert list(run.held) == [copy] and "not confirmed" in run.held[copy]  # the engine's own does not
    assert db.purge_forgotten(now=month) == []
    assert db.get(copy, include_forgotten=True) is not None
    assert db.restore(copy).content == "The spare key is under the blue flowerpot"  # restorable all along
    db.forget(copy)  # forgotten again by hand: a person's forget, purged in its turn
    assert db.forget_proposals("n") == [] and db.purge_forgotten(now=month) == [copy]


def test_a_confirmed_dream_forget_is_purged_like_a_persons() -> None:
    db = engramdb.open(None)
    db.add_many([{"content": "Dentist on the 4th at noon", "namespace": "n"}] * 2)
    [copy] = db.dream("n", dry_run=False)["duplicates_forgotten"]
    assert db.confirm_forgotten([copy]) == [copy] and db.forget_proposals() == []
    assert db.consolidate(dry_run=False, now=now() + timedelta(days=31)).purged == [copy]
    assert db.get(copy, include_forgotten=True) is None


def test_item2_the_dream_keeps_the_current_fact_said_again_after_it_ended() -> None:
    db = engramdb.open(None)
    paris = db.add("I live in Paris", namespace="n").id
    berlin = db.add("I live in Berlin", namespace="n").id
    db.supersede(paris, berlin)
    again = db.add("I live in Paris", namespace="n").id
    db.supersede(berlin, again)
    rep = db.dream("n", dry_run=False)
    assert rep["duplicates"] == [] and db.get(again) is not None and db.get(again).valid_until is None  # type: ignore[union-attr]


def test_item3_forget_concept_takes_no_turn_for_its_neighbours_score() -> None:
    db = engramdb.open(None)
    party, tomatoes, invites, _ = db.add_many([{"content": t, "namespace": "n", "session_id": "s1"} for t in (
        "We are planning a surprise birthday party for Jake on Saturday",
        "Remind me to water the tomato plants",
        "The invitations for Jake's surprise birthday party went out",
        "What's the weather tomorrow")])
    proposed = db.forget_concept("a surprise birthday party for Jake", namespace="n")
    assert proposed.dry_run and set(proposed) == {party, invites} and tomatoes not in proposed.reasons
    assert all("its own text matches" in proposed.reasons[mid] for mid in proposed)
    done = db.forget_concept("a surprise birthday party for Jake", namespace="n", dry_run=False)
    assert list(done) == list(proposed) and db.get(tomatoes) is not None and db.get(party) is None
    assert db.get(party, include_forgotten=True).metadata["forgetting"]["by"] == "forget_concept"  # type: ignore[union-attr]


@pytest.mark.parametrize(("old", "new"), [
    ("Invoice 1001 was paid on March 3", "Invoice 1002 was paid on March 9"),
    ("Room 12 costs 80 euros a night", "Room 14 costs 95 euros a night"),
    ("Order 5521 shipped on May 2", "Order 5522 shipped on May 6"),
])
def test_item4_supersede_on_write_never_ends_a_fact_about_another_subject(old: str, new: str) -> None:
    db = engramdb.open(None, contradictions="supersede")
    first = db.add(old, namespace="n").id
    db.add(new, namespace="n")
    assert db.last_contradictions == [] and db.get(first).valid_until is None  # type: ignore[union-attr]
    assert db.resolve_contradictions(namespace="n", dry_run=False) == []


def test_item5_the_dream_leaves_archived_memories_alone(tmp_path: Path) -> None:
    with engramdb.open(tmp_path / "s") as db:
        old = db.add_many([{"content": f"note {i} about the garden shed", "namespace": "n"} for i in range(3)])
        db.archive(ids=old)  # their content is in the archive file: the rows hold ""
        both = db.add_many([{"content": "The boiler code is 4417", "namespace": "n"}] * 2)
        rep = db.dream("n", dry_run=False)
        assert [set(pair) for pair in rep["duplicates"]] == [set(both)] and all(db.is_archived(mid) for mid in old)
        db.unarchive(old)
        assert [db.get(mid).content for mid in old] == [f"note {i} about the garden shed" for i in range(3)]  # type: ignore[union-attr]


def test_every_surface_proposes_first(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with engramdb.open(path) as db:
        _, copy = db.add_many([{"content": "Bins go out on Tuesday night", "namespace": "n"}] * 2)
        rep = db.dream("n")
        assert rep["dry_run"] and rep["duplicates"] and db.get(copy) is not None
    out = subprocess.run([sys.executable, "-m", "engramdb", "consolidate", str(path)], capture_output=True,
                         text=True, check=True, timeout=120)
    assert out.stdout.startswith("dry run: ") or "\ndry run: " in out.stdout
    with engramdb.open(path) as db:
        assert db.tiers().runs == []  # nothing applied, nothing recorded
    subprocess.run([sys.executable, "-m", "engramdb", "consolidate", str(path), "--apply", "--json"],
                   capture_output=True, text=True, check=True, timeout=120)
    with engramdb.open(path) as db:
        assert len(db.tiers().runs) == 1


def test_bad_arguments_are_refused_by_name_before_anything_is_written() -> None:
    db = engramdb.open(None)
    _, copy = db.add_many([{"content": "Bins go out on Tuesday night", "namespace": "n"}] * 2)
    with pytest.raises(ValueError, match="max_edges must be an int >= 0, got -1"):
        db.dream("n", dry_run=False, max_edges=-1)
    with pytest.raises(ValueError, match="min_score must be a number in"):
        db.forget_concept("bins", namespace="n", dry_run=False, min_score=2)
    with pytest.raises(ValueError, match="concept must be a topic id or non-empty text"):
        db.forget_concept("  ", namespace="n", dry_run=False)
    with pytest.raises(TypeError, match="ids must be memory ids"):
        db.confirm_forgotten([""])
    with pytest.raises(ValueError, match="is not forgotten"):
        db.confirm_forgotten([copy])
    assert db.get(copy) is not None and len(db) == 2
    assert json.dumps(db.dream("n")["forgotten"])  # the report is plain data

"""What the engine does on its own never destroys a memory (issue 25, items 1-5): the dream,
consolidation, contradiction supersede and concept forgetting act only on evidence about the
memory itself, are proposals first (a dry run by default), and the restore window's purge takes
only what a person forgot. Each test failed before its fix."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import engramdb
import pytest
from store_helpers import shown_long_ago

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
    run = db.lifecycle.consolidate(dry_run=False, now=now() + timedelta(days=20), protect_days=0)
    assert run.applied["compress"] == 3
    assert db.get(a).content == db.get(b).content  # type: ignore[union-attr] # the same summary
    return db, a, b


def test_item1_compressed_notes_are_not_copies_and_a_month_later_nothing_is_purged() -> None:
    db, a, b = _compressed_notes()
    dream = db.lifecycle.dream("n", dry_run=False)
    assert dream["duplicates"] == [] and dream["duplicates_forgotten"] == []
    later = db.lifecycle.consolidate(dry_run=False, now=now() + timedelta(days=31))
    assert later.purged == []
    for mid, text in ((a, POSTGRES), (b, ANDROID)):
        assert db.get(mid) is not None and db.history(mid)[0].content == text
    assert db.search("Postgres 16 billing migration", namespace="n", k=1)[0].id == a


def test_a_dreams_forget_is_held_past_the_window_until_a_person_confirms_it() -> None:
    db = engramdb.open(None)
    both = db.add_many([{"content": "The spare key is under the blue flowerpot", "namespace": "n"}] * 2)
    forgotten_by_hand = db.add("an old shopping list", namespace="n").id
    db.forget(forgotten_by_hand)
    rep = db.lifecycle.dream("n", dry_run=False)
    [(first, copy)] = rep["duplicates"]  # one batch: the same time, so the lower id counts as the first
    assert {first, copy} == set(both) and rep["duplicates_forgotten"] == [copy]
    assert rep["forgotten"][copy].startswith(f"an exact copy of {first}")
    [waiting] = db.lifecycle.forget_proposals("n")
    assert waiting["id"] == copy and waiting["by"] == "dream" and "exact copy" in waiting["reason"]
    month = now() + timedelta(days=31)
    run = db.lifecycle.consolidate(dry_run=False, now=month)
    assert run.purged == [forgotten_by_hand]  # a person's forget goes when its window has passed
    assert list(run.held) == [copy] and "not confirmed" in run.held[copy]  # the engine's own does not
    assert db.lifecycle.purge_forgotten(now=month) == []
    assert db.get(copy, include_forgotten=True) is not None
    assert db.restore(copy).content == "The spare key is under the blue flowerpot"  # restorable all along
    db.forget(copy)  # forgotten again by hand: a person's forget, purged in its turn
    assert db.lifecycle.forget_proposals("n") == [] and db.lifecycle.purge_forgotten(now=month) == [copy]


def test_a_confirmed_dream_forget_is_purged_like_a_persons() -> None:
    db = engramdb.open(None)
    db.add_many([{"content": "Dentist on the 4th at noon", "namespace": "n"}] * 2)
    [copy] = db.lifecycle.dream("n", dry_run=False)["duplicates_forgotten"]
    assert db.lifecycle.confirm_forgotten([copy]) == [copy] and db.lifecycle.forget_proposals() == []
    assert db.lifecycle.consolidate(dry_run=False, now=now() + timedelta(days=31)).purged == [copy]
    assert db.get(copy, include_forgotten=True) is None


def test_item2_the_dream_keeps_the_current_fact_said_again_after_it_ended() -> None:
    db = engramdb.open(None)
    paris = db.add("I live in Paris", namespace="n").id
    berlin = db.add("I live in Berlin", namespace="n").id
    db.supersede(paris, berlin)
    again = db.add("I live in Paris", namespace="n").id
    db.supersede(berlin, again)
    rep = db.lifecycle.dream("n", dry_run=False)
    assert rep["duplicates"] == [] and db.get(again) is not None and db.get(again).valid_until is None  # type: ignore[union-attr]


def test_item3_forget_concept_takes_no_turn_for_its_neighbours_score() -> None:
    db = engramdb.open(None)
    party, tomatoes, invites, _ = db.add_many([{"content": t, "namespace": "n", "session_id": "s1"} for t in (
        "We are planning a surprise birthday party for Jake on Saturday",
        "Remind me to water the tomato plants",
        "The invitations for Jake's surprise birthday party went out",
        "What's the weather tomorrow")])
    proposed = db.lifecycle.forget_concept("a surprise birthday party for Jake", namespace="n")
    assert proposed.dry_run and set(proposed) == {party, invites} and tomatoes not in proposed.reasons
    assert all("its own text matches" in proposed.reasons[mid] for mid in proposed)
    done = db.lifecycle.forget_concept("a surprise birthday party for Jake", namespace="n", dry_run=False)
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
    assert db.lifecycle.resolve_contradictions(namespace="n", dry_run=False) == []


def test_item5_the_dream_leaves_archived_memories_alone(tmp_path: Path) -> None:
    with engramdb.open(tmp_path / "s") as db:
        old = db.add_many([{"content": f"note {i} about the garden shed", "namespace": "n"} for i in range(3)])
        db.lifecycle.archive(ids=old)  # their content is in the archive file: the rows hold ""
        both = db.add_many([{"content": "The boiler code is 4417", "namespace": "n"}] * 2)
        rep = db.lifecycle.dream("n", dry_run=False)
        assert [set(pair) for pair in rep["duplicates"]] == [set(both)] and all(db.lifecycle.is_archived(mid) for mid in old)
        db.lifecycle.unarchive(old)
        assert [db.get(mid).content for mid in old] == [f"note {i} about the garden shed" for i in range(3)]  # type: ignore[union-attr]


def test_every_surface_proposes_first(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with engramdb.open(path) as db:
        _, copy = db.add_many([{"content": "Bins go out on Tuesday night", "namespace": "n"}] * 2)
        rep = db.lifecycle.dream("n")
        assert rep["dry_run"] and rep["duplicates"] and db.get(copy) is not None
    out = subprocess.run([sys.executable, "-m", "engramdb", "consolidate", str(path)], capture_output=True,
                         text=True, check=True, timeout=120)
    assert out.stdout.startswith("dry run: ") or "\ndry run: " in out.stdout
    with engramdb.open(path) as db:
        assert db.importance.tiers().runs == []  # nothing applied, nothing recorded
    subprocess.run([sys.executable, "-m", "engramdb", "consolidate", str(path), "--apply", "--json"],
                   capture_output=True, text=True, check=True, timeout=120)
    with engramdb.open(path) as db:
        assert len(db.importance.tiers().runs) == 1


def test_bad_arguments_are_refused_by_name_before_anything_is_written() -> None:
    db = engramdb.open(None)
    _, copy = db.add_many([{"content": "Bins go out on Tuesday night", "namespace": "n"}] * 2)
    with pytest.raises(ValueError, match="max_edges must be an int >= 0, got -1"):
        db.lifecycle.dream("n", dry_run=False, max_edges=-1)
    with pytest.raises(ValueError, match="min_score must be a number in"):
        db.lifecycle.forget_concept("bins", namespace="n", dry_run=False, min_score=2)
    with pytest.raises(ValueError, match="concept must be a topic id or non-empty text"):
        db.lifecycle.forget_concept("  ", namespace="n", dry_run=False)
    with pytest.raises(TypeError, match="ids must be memory ids"):
        db.lifecycle.confirm_forgotten([""])
    with pytest.raises(ValueError, match="is not forgotten"):
        db.lifecycle.confirm_forgotten([copy])
    assert db.get(copy) is not None and len(db) == 2
    assert json.dumps(db.lifecycle.dream("n")["forgotten"])  # the report is plain data


# ---------------------------------------------------------------------------------------------------
# The adversary's second pass (issue 25, automatic verbs): each of these failed on 729a876.

def _told_long_ago(db: engramdb.Store, folder: Path, text: str, days: float, **fields: object) -> str:
    """A memory the store learned `days` ago (an export's record, imported as it was): what a
    consolidation at the present may compress or archive."""
    mid = f"old{abs(hash((text, days))) % 10**12:012d}"
    rec = {"id": mid, "content": text, "namespace": "n", "version": 1, "learned_at": (now() - timedelta(days=days)).isoformat(),
           "confidence": 1.0, "source": "turn", "metadata": {}, "provenance": {}, "memory_type": None, "role": None,
           "seq": None, "session_id": None, "valid_from": None, "valid_until": None, "expired_at": None,
           "forgotten_at": None, "supersedes": None, "superseded_by": None, **fields}
    path = folder / f"{mid}.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in ({"engramdb_export": {"format": 2}}, rec,
                                                      {"engramdb_export_end": {"memories": 1}})) + "\n")
    db.admin.import_(path)
    return mid


def _shown_never_used(db: engramdb.Store, query: str, used: str) -> None:
    """Searches that show the namespace's memories and use only `used`: the others lose, and once
    unused some 12 days they are LOW (compressible once unused 14 days: the runs look 20 or 31 days on)."""
    for _ in range(6):
        hits = db.search(query, namespace="n", k=5)
        db.feedback(hits.query_id or "", used=[used])


def test_b1_the_dream_keeps_an_open_ended_memory_that_repeats_one_ending_tomorrow() -> None:
    start = now() - timedelta(hours=2)
    db = engramdb.open(None)
    db.add("Alice is the on-call engineer", namespace="n", valid_from=start, valid_until=now() + timedelta(days=1))
    open_ended = db.add("Alice is the on-call engineer", namespace="n", valid_from=start).id
    rep = db.lifecycle.dream("n", dry_run=False)
    assert rep["duplicates"] == [] and db.get(open_ended) is not None
    hits = db.search("who is the on-call engineer", namespace="n", k=5, as_of=now() + timedelta(days=3), log=False)
    assert [h.id for h in hits] == [open_ended]


def test_b2_a_compression_never_writes_over_a_correction_made_while_it_summarizes() -> None:
    db = engramdb.open(None)
    target = db.add("The team offsite is in Room 12. Bring your laptop. Lunch is provided.", namespace="n").id
    other = db.add("unrelated note about the car", namespace="n").id
    _shown_never_used(db, "team offsite room laptop lunch", other)
    fixed = "The team offsite moved to Room 14. Bring your laptop. Lunch is provided."

    def summarizer(text: str) -> str:  # an LLM call takes seconds: the user corrects the memory meanwhile
        if db.get(target).content != fixed:  # type: ignore[union-attr]
            db.update(target, content=fixed)
        return text.split(".")[0] + "."

    run = db.lifecycle.consolidate(dry_run=False, now=now() + timedelta(days=20), protect_days=0, summarizer=summarizer)
    assert db.get(target).content == fixed  # type: ignore[union-attr]
    assert [v.content for v in db.history(target)][-1] == fixed and len(db.history(target)) == 2
    assert "changed" in run.skipped[target] and "compress" in run.counts()


def test_b3_the_dream_leaves_a_copy_the_user_changed_after_it_was_chosen(tmp_path: Path) -> None:
    with engramdb.open(tmp_path / "s") as db:
        note = _told_long_ago(db, tmp_path, "Quarterly planning note. The budget review moved. Details follow.", 20)
        other = db.add("unrelated note about the car", namespace="n").id
    # shown 20 days ago by a question it scores nothing for (none protects it), never used since: LOW
    shown_long_ago(tmp_path / "s", "n", [note], other, 20)
    db = engramdb.open(tmp_path / "s")
    db.add_many([{"content": "The spare key is under the blue flowerpot", "namespace": "n"}] * 2)
    [(first, copy)] = db.lifecycle.dream("n")["duplicates"]
    moved = "The spare key is now in the garage, on the hook by the door"

    def summarizer(text: str) -> str:  # the dream compresses the note after it chose the copy
        if db.get(copy).content != moved:  # type: ignore[union-attr]
            db.update(copy, content=moved)
        return text.split(".")[0] + "."

    rep = db.lifecycle.dream("n", dry_run=False, summarizer=summarizer)
    assert rep["consolidation_applied"]["compress"] == 1 and db.get(note).content.startswith("Quarterly")  # type: ignore[union-attr]
    assert rep["duplicates_forgotten"] == [] and "changed" in rep["skipped"][copy]
    assert db.get(copy).content == moved and db.get(first) is not None  # type: ignore[union-attr]


@pytest.mark.parametrize(("label", "older", "newer", "link"), [
    ("confidence", {"confidence": 0.2}, {"confidence": 1.0}, False),
    ("source", {"source": "rumour"}, {"source": "cto-email"}, False),
    ("provenance", {}, {"provenance": {"doc": "mail-4411"}}, False),
    ("its own edge", {}, {}, True),
    ("a user's 'compressed' key", {"metadata": {"compressed": "gzip"}}, {"metadata": {"compressed": "zstd"}}, False),
    ("a user's 'merged_duplicates' key", {"metadata": {"merged_duplicates": "no"}}, {"metadata": {}}, False),
    ("role", {"role": "user"}, {"role": "assistant"}, False),
    ("valid_until", {"valid_until": now() + timedelta(days=1)}, {}, False),
])
def test_b5_a_memory_that_differs_in_any_field_a_user_set_is_not_a_copy(label: str, older: dict[str, object],
                                                                       newer: dict[str, object], link: bool) -> None:
    db = engramdb.open(None)
    text = "The deploy freeze starts on Friday"
    db.add(text, namespace="n", **older)  # type: ignore[arg-type]
    new = db.add(text, namespace="n", **newer).id  # type: ignore[arg-type]
    if link:
        cause = db.add("The payment outage last week", namespace="n").id
        db.link(new, cause, "CAUSED_BY", reason="the CTO said so")
    rep = db.lifecycle.dream("n", dry_run=False)
    assert rep["duplicates"] == [] and db.get(new) is not None, label


def test_b5_the_engines_own_marks_do_not_make_two_copies_differ(tmp_path: Path) -> None:
    text = "The deploy freeze starts on Friday"
    with engramdb.open(tmp_path / "s", dedup="merge") as db:
        first = db.add(text, namespace="n").id
        db.add(text, namespace="n")  # merged into the first: the engine counts the copy in its metadata
        assert db.get(first).metadata["merged_duplicates"] == 1  # type: ignore[union-attr]
    with engramdb.open(tmp_path / "s") as db:  # dedup off: the same text stored again
        again = db.add(text, namespace="n").id
        assert db.lifecycle.dream("n")["duplicates"] == [(first, again)]


def test_b6_a_memory_restored_while_the_run_works_is_never_purged(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    x = db.add("My passport number is X1234567, expires 2031", namespace="n").id
    db.forget(x)  # a person forgot it...
    db.add("Long meeting note. Decisions were taken. Many details follow here.", namespace="n")
    other = db.add("unrelated note about the car", namespace="n").id
    _shown_never_used(db, "long meeting note decisions details", other)

    def summarizer(text: str) -> str:  # ...and, 31 days on, wants it back while the run summarizes
        if db.get(x) is None:
            db.restore(x)
        return text.split(".")[0] + "."

    run = db.lifecycle.consolidate(dry_run=False, now=now() + timedelta(days=31), protect_days=0, summarizer=summarizer)
    assert db.get(x) is not None and db.get(x).content.startswith("My passport")  # type: ignore[union-attr]
    assert run.purged == [] and "restored" in run.skipped[x] and run.applied.get("purge", 0) == 0
    db.close()


def test_b6_a_forget_confirmed_or_restored_meanwhile_is_judged_as_it_is_when_the_purge_runs(tmp_path: Path) -> None:
    """The purge list is read again under the writer's lock: what is still a person's forget past
    its window goes, nothing else."""
    db = engramdb.open(tmp_path / "s")
    gone, back = db.add_many([{"content": f"secret {i}", "namespace": "n"} for i in range(2)])
    db.forget(gone)
    db.forget(back)
    db.add("Long meeting note. Decisions were taken. Many details follow here.", namespace="n")
    other = db.add("unrelated note about the car", namespace="n").id
    _shown_never_used(db, "long meeting note decisions details", other)

    def summarizer(text: str) -> str:
        if db.get(back) is None:
            db.restore(back)
            db.forget(back)  # forgotten again now: its window starts over
        return text.split(".")[0] + "."

    run = db.lifecycle.consolidate(dry_run=False, now=now() + timedelta(days=31), protect_days=0, summarizer=summarizer)
    assert run.purged == [gone] and db.get(gone, include_forgotten=True) is None
    assert db.get(back, include_forgotten=True) is not None and back in run.skipped
    db.close()


@pytest.mark.parametrize("bad", [None, "no", "yes", 0, 0.0, [], 1])
def test_b7_resolve_contradictions_takes_only_true_or_false_for_dry_run(bad: object) -> None:
    db = engramdb.open(None)
    old = db.add("My rent is 1200 euros a month", namespace="n").id
    db.add("My rent is 1450 euros a month", namespace="n")
    assert db.lifecycle.resolve_contradictions(namespace="n")  # a proposal there is
    with pytest.raises(TypeError, match=re.escape(f"dry_run must be True or False, got {bad!r}")):
        db.lifecycle.resolve_contradictions(namespace="n", dry_run=bad)  # type: ignore[arg-type]
    assert db.get(old).valid_until is None  # type: ignore[union-attr]


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda db: db.lifecycle.consolidate(protect_days=float("inf")), ValueError, "protect_days must be a number in [0, 36500], got inf"),
    (lambda db: db.lifecycle.consolidate(protect_days=1e300), ValueError, "protect_days must be a number in [0, 36500], got 1e+300"),
    (lambda db: db.lifecycle.consolidate(protect_days=float("nan")), ValueError, "protect_days must be a number in [0, 36500], got nan"),
    (lambda db: db.lifecycle.consolidate(protect_days="30"), TypeError, "protect_days must be a number in [0, 36500], got '30'"),
    (lambda db: db.lifecycle.consolidate(protect_days=True), TypeError, "protect_days must be a number in [0, 36500], got True"),
    (lambda db: db.lifecycle.consolidate(protect_depth=-1), ValueError, "protect_depth must be an int in [0, 1000], got -1"),
    (lambda db: db.lifecycle.consolidate(protect_depth=2.5), TypeError, "protect_depth must be an int in [0, 1000], got 2.5"),
    (lambda db: db.lifecycle.consolidate(namespace=5), TypeError, "namespace"),
    (lambda db: db.lifecycle.consolidate(dry_run=False, steps=["compress", "delete"]), ValueError,
     "steps must be some of 'promote', 'archive', 'compress', 'purge', got 'delete'"),
    (lambda db: db.lifecycle.confirm_forgotten(None), TypeError, "ids must be a memory id or an iterable of them, got None"),
    (lambda db: db.lifecycle.confirm_forgotten(5), TypeError, "ids must be a memory id or an iterable of them, got 5"),
    (lambda db: db.lifecycle.resolve_contradictions(namespace="n", ids="abc"), TypeError,
     "ids must be an iterable of memory ids, not one string"),
    (lambda db: db.lifecycle.resolve_contradictions(namespace="n", ids=[5]), TypeError, "ids must be memory ids"),
    (lambda db: db.lifecycle.resolve_contradictions(namespace="n", min_score=float("nan")), ValueError,
     "min_score must be a number in [0, 1], got nan"),
    (lambda db: db.lifecycle.resolve_contradictions(namespace="n", detector="llm"), TypeError, "detector must be a callable"),
    (lambda db: db.lifecycle.resolve_contradictions(namespace=7), TypeError, "namespace"),
    (lambda db: db.lifecycle.dream("n", summarizer="short"), TypeError, "summarizer must be a callable"),
    (lambda db: db.lifecycle.consolidate(dry_run=False, summarizer="short"), TypeError, "summarizer must be a callable"),
])
def test_b8_bad_arguments_of_the_automatic_verbs_are_refused_by_name(call: Any, error: type[Exception],
                                                                     words: str) -> None:
    db = engramdb.open(None)
    kept = db.add("The boiler code is 4417", namespace="n").id
    db.forget(db.add("an old list", namespace="n").id)
    with pytest.raises(error) as got:
        call(db)
    assert words in str(got.value)
    assert db.get(kept) is not None and len(db.history(kept)) == 1 and db.importance.tiers().runs == []

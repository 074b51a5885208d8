"""Validity an agent can rely on (S2, S3; issue 26): a memory stored without `valid_from` is valid
from when it was first learned, in every later version; `supersede` ends the old version where the
new one starts; `add_messages` takes a time per message; `as_of` between two versions finds the
one true then, in search and in context."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import engramdb
import pytest
from clock_helpers import Clock
from engramdb import InvalidMemory, Memory
from engramdb.model.memory import utc_now


def tick() -> datetime:
    """A moment strictly between what was learned before and what is learned after it (the clock
    is read at microseconds: a short pause keeps the three apart)."""
    time.sleep(0.005)
    t = utc_now()
    time.sleep(0.005)
    return t


def contents(hits: list[engramdb.Hit]) -> list[str]:
    return [h.memory.content for h in hits]


@pytest.fixture(params=["memory", "disk"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> engramdb.Store:
    store = engramdb.open(None if request.param == "memory" else tmp_path / "s", dedup="off")
    yield store
    store.close()


def test_a_fact_corrected_without_dates_keeps_its_past(db: engramdb.Store) -> None:
    a = db.add("I live in Paris.", namespace="u")
    mid = tick()
    b = db.add("I live in Berlin now.", namespace="u")
    old, _ = db.supersede(a.id, b.id)
    assert old.valid_from == a.learned_at  # valid from when it was learned, in the new version too
    assert old.valid_until == b.learned_at  # ends where the new one starts
    assert contents(db.search("where do I live", namespace="u", as_of=mid)) == ["I live in Paris."]
    assert contents(db.search("where do I live", namespace="u")) == ["I live in Berlin now."]
    before_a = a.learned_at - timedelta(microseconds=1)  # before either was learned: neither held
    assert db.search("where do I live", namespace="u", as_of=before_a) == []
    ctx = db.context("where do I live", namespace="u", as_of=mid, log=False)
    assert "Paris" in ctx.text and "Berlin" not in ctx.text
    assert "Berlin" in db.context("where do I live", namespace="u", log=False).text


def test_supersede_ends_the_old_where_a_dated_new_one_starts(db: engramdb.Store) -> None:
    moved = datetime(2030, 1, 1, tzinfo=timezone.utc)
    a = db.add("I live in Paris.", namespace="u")
    b = db.add("I live in Berlin now.", namespace="u", valid_from=moved)
    old, _ = db.supersede(a.id, b.id)
    assert (old.valid_from, old.valid_until) == (a.learned_at, moved)
    then = moved - timedelta(days=1)
    assert contents(db.search("where do I live", namespace="u", as_of=then)) == ["I live in Paris."]


def test_every_later_version_keeps_the_first_ones_start(db: engramdb.Store) -> None:
    a = db.add("The boiler is serviced every spring.", namespace="u")
    mid = tick()
    db.update(a.id, confidence=0.8)  # a new version: still true from when it was first learned
    db.update(a.id, content="The boiler is serviced every spring by Hans.")
    db.forget(a.id)
    db.restore(a.id)
    versions = db.history(a.id)
    assert [v.version for v in versions] == [1, 2, 3, 4, 5]
    assert all(v.valid_from == a.learned_at for v in versions[1:])
    assert contents(db.search("boiler serviced", namespace="u", as_of=mid)) == [
        "The boiler is serviced every spring by Hans."]


def test_a_dated_memory_keeps_its_own_start_and_a_change_of_start_is_kept(db: engramdb.Store) -> None:
    start = datetime(2020, 5, 1, tzinfo=timezone.utc)
    a = db.add("Started at the bakery.", namespace="u", valid_from=start)
    assert db.update(a.id, confidence=0.9).valid_from == start
    later = datetime(2021, 5, 1, tzinfo=timezone.utc)
    assert db.update(a.id, valid_from=later).valid_from == later


def test_contradictions_resolved_keep_the_older_facts_past(db: engramdb.Store) -> None:
    a = db.add("My rent is 1200 a month.", namespace="u")
    mid = tick()
    b = db.add("My rent is 1350 a month.", namespace="u")
    done = db.lifecycle.resolve_contradictions(namespace="u", dry_run=False, ids=[b.id],
                                     detector=lambda old, new, sim: (1.0, "a new rent"))
    assert [(p.old, p.new, p.applied) for p in done] == [(a.id, b.id, True)]
    assert contents(db.search("rent a month", namespace="u", as_of=mid)) == ["My rent is 1200 a month."]
    assert contents(db.search("rent a month", namespace="u")) == ["My rent is 1350 a month."]


def test_superseding_with_an_older_memory_leaves_the_old_one_never_true(db: engramdb.Store) -> None:
    """The newer memory names one told before it as its successor: the successor started first,
    so the one superseded never held on its own: an empty interval, no error (as the contradiction
    verbs make one). Without a start of its own it ends (and starts) where the successor starts;
    a start it was given, or carries from an earlier version, stays, and it ends there."""
    first = db.add("The meeting is on Monday.", namespace="u")
    tick()
    second = db.add("The meeting is on Tuesday.", namespace="u")
    old, _ = db.supersede(second.id, first.id)
    assert old.valid_from == old.valid_until == first.learned_at
    assert contents(db.search("meeting", namespace="u")) == ["The meeting is on Monday."]
    third = db.add("The meeting is on Wednesday.", namespace="u")
    third_v2 = db.update(third.id, confidence=0.9)  # carries its start (when it was learned) from now on
    assert third_v2.valid_from == third.learned_at
    old, _ = db.supersede(third.id, first.id)
    assert old.valid_from == old.valid_until == third.learned_at
    dated = db.add("The meeting is on Thursday.", namespace="u", valid_from=utc_now() + timedelta(days=1))
    old, _ = db.supersede(dated.id, first.id)  # a start given, after the successor's
    assert old.valid_from == old.valid_until == dated.valid_from
    assert contents(db.search("meeting", namespace="u")) == ["The meeting is on Monday."]


def test_a_merged_copy_keeps_the_originals_start() -> None:
    db = engramdb.open(None, dedup="merge")
    a = db.add("The spare key is under the blue flowerpot.", namespace="u")
    mid = tick()
    assert db.add("The spare key is under the blue flowerpot.", namespace="u").id == a.id  # merged: a new version
    assert [v.valid_from for v in db.history(a.id)] == [None, a.learned_at]
    assert [h.id for h in db.search("spare key", namespace="u", as_of=mid)] == [a.id]


def test_with_changes_rule_on_the_record() -> None:
    """The rule lives where every writer of a new version passes (Memory.with_changes)."""
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    t1 = t0 + timedelta(days=3)
    m = Memory(id="m", namespace="n", content="x", learned_at=t0)
    v2 = m.with_changes(version=2, learned_at=t1)
    assert v2.valid_from == t0 and v2.valid_at(t0 + timedelta(days=1))
    assert v2.with_changes(version=3, learned_at=t1 + timedelta(days=1)).valid_from == t0
    assert m.with_changes(metadata={"a": 1}).valid_from is None  # not a new version: nothing inherited


# --------------------------------------------------------------------------- add_messages' times
def test_add_messages_takes_a_time_per_message(db: engramdb.Store) -> None:
    said = datetime(2023, 5, 7, 13, 56, tzinfo=timezone(timedelta(hours=2)))
    ids = db.add_messages([
        {"role": "user", "content": "I live in Paris.", "valid_from": "2023-05-07T13:56:00+02:00"},
        {"role": "assistant", "content": "Nice city.", "valid_from": said + timedelta(minutes=1)},
        {"role": "user", "content": "And you?", "valid_from": "2023-05-07T11:58:00Z"},
        {"role": "assistant", "content": "I have no home."},
    ], namespace="u", session_id="s")
    got = [db.get(i) for i in ids]
    assert [m.valid_from for m in got[:3]] == [said, said + timedelta(minutes=1), said + timedelta(minutes=2)]
    assert got[0].valid_from is not None and got[0].valid_from.tzinfo == timezone.utc
    assert all(m.metadata == {} for m in got)  # the time is the memory's, not a metadata key
    assert got[3].valid_from is None  # no time given: valid from when it was learned
    march = datetime(2023, 3, 1, tzinfo=timezone.utc)
    assert db.search("Paris", namespace="u", as_of=march) == []  # not said yet then
    assert contents(db.search("Paris", namespace="u", as_of=said)) == ["I live in Paris."]


@pytest.mark.parametrize(("value", "said"), [
    ("2023-05-07T13:56:00", r"'2023-05-07T13:56:00' has no UTC offset"),
    ("yesterday", r"'yesterday' is not an ISO-8601 time"),
    ("", r"'' is not an ISO-8601 time"),
    ("2023-13-45T00:00:00+00:00", r"'2023-13-45T00:00:00\+00:00' is not an ISO-8601 time"),
    (1683460560, r"got int 1683460560"),
    (True, r"got bool True"),
    (datetime(2023, 5, 7, 13, 56), r"naive datetime \(2023-05-07T13:56:00\)"),
])
def test_add_messages_refuses_a_bad_time_naming_the_message_before_writing(db: engramdb.Store, value: object,
                                                                          said: str) -> None:
    db.add("kept", namespace="u")
    msgs = [{"role": "user", "content": "fine", "valid_from": "2023-05-07T13:56:00+00:00"},
            {"role": "assistant", "content": "bad time", "valid_from": value}]
    with pytest.raises(InvalidMemory, match=rf"^message 1: valid_from .*{said}"):
        db.add_messages(msgs, namespace="u", session_id="s")
    assert len(db) == 1  # nothing written, not even the good message before it


def test_add_says_it_takes_a_datetime_not_a_string(db: engramdb.Store) -> None:
    """add / add_many take valid_from as an aware datetime (typed so); an ISO string is refused with
    the way to make one, before anything is written."""
    with pytest.raises(InvalidMemory, match=r"valid_from must be a timezone-aware datetime, got str "
                                            r"'2023-05-07T13:56:00\+02:00'.*datetime\.fromisoformat"):
        db.add("x", namespace="u", valid_from="2023-05-07T13:56:00+02:00")  # type: ignore[arg-type]
    with pytest.raises(InvalidMemory, match=r"records\[1\]: valid_from .*fromisoformat"):
        db.add_many([{"content": "y", "namespace": "u"},
                     {"content": "z", "namespace": "u", "valid_from": "2023-05-07"}])
    assert len(db) == 0


def test_what_a_write_leaves_cached_still_ends_when_a_memory_stops_being_valid(
        db: engramdb.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows a query sees now are kept per segment and carried into the write-ahead log's merged
    tail after each write; a memory whose validity ends soon must still leave results when the clock
    passes its end, and a superseded one as soon as it is replaced, one write at a time. The clock
    is moved past the end (clock_helpers): with an end 0.6 s ahead of the real clock, the 19 calls
    before it did not fit in the 0.6 s on a loaded machine, nor in a process of their own, whose
    first search loads what it needs (2 runs of 3 failed here, unloaded)."""
    clock = Clock(monkeypatch)
    soon = clock.now() + timedelta(minutes=10)
    db.add("The pool is open until the storm.", namespace="u", valid_until=soon)
    for i in range(6):  # one write at a time: the tail's segments merge as a binary counter
        db.add(f"The pool note number {i} is about lanes.", namespace="u")
        assert "The pool is open until the storm." in contents(db.search("pool storm", namespace="u", k=10))
    old = db.add("The gate code is 1234.", namespace="u")
    assert contents(db.search("gate code", namespace="u", k=1)) == ["The gate code is 1234."]
    new = db.add("The gate code is 9876.", namespace="u")
    db.supersede(old.id, new.id)
    assert "The gate code is 1234." not in contents(db.search("gate code", namespace="u", k=10))
    clock.forward(10 * 60 + 1)  # past its end
    db.add("One more pool note after the storm.", namespace="u")
    hits = contents(db.search("pool storm", namespace="u", k=10))
    assert "The pool is open until the storm." not in hits
    assert "One more pool note after the storm." in hits

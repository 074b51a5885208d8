"""Dates a query names (retrieval/dates.py) and `search(now=...)`: the periods read, and the order
they give through the public API."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import engramdb
import pytest
from engramdb.retrieval.dates import windows, without_relative
from hypothesis import given, settings
from hypothesis import strategies as st

UTC = timezone.utc
NOW = datetime(2023, 10, 20, 15, 0, tzinfo=UTC)  # a Friday
NOW_US = int(NOW.timestamp() * 1_000_000)


def _days(text: str, now_us: int = NOW_US) -> list[tuple[date, date]]:
    """Each window as (first day, last day) with the grace taken off again: one day before, and
    the period's own length (at most 7 days) after."""
    out = []
    for a, b in windows(text, now_us):
        first = datetime.fromtimestamp(a / 1e6, UTC).date() + timedelta(days=1)
        end = datetime.fromtimestamp(b / 1e6, UTC).date()  # exclusive, grace included
        length = None
        for n in range(1, 400):  # the period's length n days: end = first + n + min(7, n)
            if first + timedelta(days=n + min(7, n)) == end:
                length = n
                break
        assert length is not None, (text, first, end)
        out.append((first, first + timedelta(days=length - 1)))
    return out


@pytest.mark.parametrize(("text", "expected"), [
    ("What painting did Mel show on October 13, 2023?", [(date(2023, 10, 13), date(2023, 10, 13))]),
    ("What did Gina find on 1 February, 2023?", [(date(2023, 2, 1), date(2023, 2, 1))]),
    ("the 3rd of May 2022", [(date(2022, 5, 3), date(2022, 5, 3))]),
    ("notes from 2023-05-03", [(date(2023, 5, 3), date(2023, 5, 3))]),
    ("What did I start in December 2022?", [(date(2022, 12, 1), date(2022, 12, 31))]),
    ("Where did we go in 2021?", [(date(2021, 1, 1), date(2021, 12, 31))]),
    # no year: the latest such date not after now (2023-10-20)
    ("When did Melanie go camping in June?", [(date(2023, 6, 1), date(2023, 6, 30))]),
    ("What happened in mid-November?", [(date(2022, 11, 1), date(2022, 11, 30))]),
    ("Dinner on May 3rd", [(date(2023, 5, 3), date(2023, 5, 3))]),
    ("Dinner on December 24", [(date(2022, 12, 24), date(2022, 12, 24))]),
    # relative to now
    ("What did I eat yesterday?", [(date(2023, 10, 19), date(2023, 10, 19))]),
    ("What did I say today?", [(date(2023, 10, 20), date(2023, 10, 20))]),
    ("What did we decide last week?", [(date(2023, 10, 9), date(2023, 10, 15))]),
    ("What did we do last weekend?", [(date(2023, 10, 14), date(2023, 10, 15))]),
    ("the plan from last month", [(date(2023, 9, 1), date(2023, 9, 30))]),
    ("the trip last year", [(date(2022, 1, 1), date(2022, 12, 31))]),
    ("What did I buy two days ago?", [(date(2023, 10, 18), date(2023, 10, 18))]),
    ("a book I read 3 months ago", [(date(2023, 7, 1), date(2023, 7, 31))]),
    ("the call last Tuesday", [(date(2023, 10, 17), date(2023, 10, 17))]),
    ("the call last Friday", [(date(2023, 10, 13), date(2023, 10, 13))]),
])
def test_the_periods_a_query_names(text: str, expected: list[tuple[date, date]]) -> None:
    assert _days(text) == expected


@pytest.mark.parametrize("text", [
    "this may help with the garden", "I may go hiking", "How many dogs does Sam have?", "February 30",
    "version 13-45", "", "my 3 cats", "the 45th of May",
])
def test_no_period_where_none_is_named(text: str) -> None:
    assert windows(text, NOW_US) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    "May", "June", "sept", "last", "this", "past", "ago", "years", "days", "months", "weeks", "week", "in", "on",
    "1999", "2023", "0000", "0", "31", "29", "february", "9999", "100000", "yesterday", "today", "weekend",
    "Friday", "the", "of", "3rd", "-", "/", ",", "2023-02-29", "2024-02-29", "a", "couple", "few"]), max_size=12)
       .map(" ".join),
       st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999_999),
                    timezones=st.just(UTC)))
def test_any_text_at_any_now_gives_ordered_windows_and_never_raises(text: str, now: datetime) -> None:
    for a, b in windows(text, (now - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)):
        assert a < b


def _store() -> engramdb.Store:
    db = engramdb.open()
    # without a date the September memory is the better match (0.85 against 0.73: it is shorter)
    db.add("I baked a chocolate cake.", namespace="u", valid_from=datetime(2023, 9, 10, tzinfo=UTC))
    db.add("I baked a lemon cake for the party.", namespace="u", valid_from=datetime(2023, 6, 12, tzinfo=UTC))
    return db


def test_a_named_month_ranks_what_was_said_then_first_and_keeps_each_score() -> None:
    db = _store()
    plain = db.search("What cake did I bake?", namespace="u", k=2, log=False)
    assert "chocolate" in plain[0].memory.content  # the stronger match without a date
    dated = db.search("What cake did I bake in June?", namespace="u", k=2, now=NOW, log=False, explain=True)
    assert "lemon" in dated[0].memory.content
    assert dated[0].explain is not None and dated[0].explain["dated"] is True
    assert dated[1].explain is not None and dated[1].explain["dated"] is False
    # the order moved, the scores did not: each is still its own match
    same = db.search("What cake did I bake in June?", namespace="u", k=2, now=datetime(2026, 1, 2, tzinfo=UTC),
                     log=False)  # June 2025 holds nothing: the order of the plain search
    assert [h.id for h in same] == [h.id for h in plain]
    by_id = {h.id: h.score for h in same}
    assert all(h.score == pytest.approx(by_id[h.id]) for h in dated)


def test_an_explicit_year_needs_no_now_and_a_relative_date_reads_now() -> None:
    db = _store()
    assert "lemon" in db.search("What cake did I bake in June 2023?", namespace="u", k=1, log=False)[0].memory.content
    twins = engramdb.open()  # two matches of the same strength: only the date can order them
    twins.add("I baked a lemon cake.", namespace="u", valid_from=datetime(2023, 6, 12, tzinfo=UTC))
    twins.add("I baked a mocha cake.", namespace="u", valid_from=datetime(2023, 9, 10, tzinfo=UTC))
    for now, first in ((datetime(2023, 7, 3, tzinfo=UTC), "lemon"), (datetime(2023, 10, 3, tzinfo=UTC), "mocha")):
        hits = twins.search("What cake did I bake last month?", namespace="u", k=2, log=False, now=now)
        assert first in hits[0].memory.content, now
        assert hits[0].score == pytest.approx(hits[1].score)


@pytest.mark.parametrize("bad", ["2023-06-01", 1_700_000_000, datetime(2023, 6, 1)])
def test_now_must_be_an_aware_datetime(bad: object) -> None:
    db = _store()
    with pytest.raises((ValueError, TypeError), match="now"):
        db.search("cake", namespace="u", now=bad, log=False)  # type: ignore[arg-type]
    assert len(db) == 2


def test_the_cli_reads_now(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    with engramdb.open(path) as db:
        db.add("I baked a lemon cake.", namespace="u", valid_from=datetime(2023, 6, 12, tzinfo=UTC))
        db.add("I baked a mocha cake.", namespace="u", valid_from=datetime(2023, 9, 10, tzinfo=UTC))
    for now, first in (("2023-07-03T00:00:00+00:00", "lemon"), ("2023-10-03T00:00:00+00:00", "mocha")):
        out = subprocess.run([sys.executable, "-m", "engramdb", "search", "What cake did I bake last month?", "--path",
                              path, "--namespace", "u", "--now", now, "--json"], capture_output=True, text=True,
                             check=True).stdout
        assert first in json.loads(out)["hits"][0]["content"]
    bad = subprocess.run([sys.executable, "-m", "engramdb", "search", "cake", "--path", path, "--namespace", "u",
                          "--now", "last tuesday"], check=False, capture_output=True, text=True)
    assert bad.returncode != 0 and "--now" in bad.stderr


def test_a_long_query_is_read_only_at_its_start_and_many_dates_merge() -> None:
    assert windows("x " * 5_000 + "in June 2023", NOW_US) == []
    many = windows(" ".join(f"on May {d % 28 + 1}, 2023" for d in range(300)), NOW_US)
    assert len(many) == 1  # 28 days of May, each widened: one range
    assert all(a < b for a, b in many)


# ------------------------------------------------------------------ under attack (bench/RELIABILITY.md)
def test_now_at_the_last_microsecond_of_the_calendar_reads_its_dates() -> None:
    """The last instant a datetime holds: its day is read exactly (a float of its seconds rounded
    up into year 10000, a raw ValueError naming no argument)."""
    last = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    db = engramdb.open()
    db.add("I baked a lemon cake.", namespace="u", valid_from=datetime(9999, 12, 30, 12, tzinfo=UTC))
    db.add("I baked a mocha cake, a lemon one too.", namespace="u", valid_from=datetime(9999, 6, 1, tzinfo=UTC))
    hits = db.search("What cake did I bake yesterday?", namespace="u", k=2, now=last, as_of=last, log=False,
                     explain=True)
    assert [h.explain is not None and h.explain["dated"] for h in hits] == [True, False]
    day = 86_400 * 1_000_000
    start = (date(9999, 12, 30) - date(1970, 1, 1)).days * day  # the day, a day of grace before and after
    assert windows("yesterday", 253_402_300_799_999_999) == [(start - day, start + 2 * day)]


@pytest.mark.parametrize(("now", "expected"), [
    (datetime(2023, 10, 20, tzinfo=UTC), date(2020, 2, 29)),  # not 2023-02-28: that is not a February 29
    (datetime(2024, 2, 28, tzinfo=UTC), date(2020, 2, 29)),
    (datetime(2024, 2, 29, tzinfo=UTC), date(2024, 2, 29)),
    (datetime(2100, 3, 1, tzinfo=UTC), date(2096, 2, 29)),  # 2100 is not a leap year
])
def test_february_29_without_a_year_is_the_latest_february_29(now: datetime, expected: date) -> None:
    assert _days("What did we do on February 29?", int(now.timestamp() * 1_000_000)) == [(expected, expected)]
    assert _days("the 29th of Feb", int(now.timestamp() * 1_000_000)) == [(expected, expected)]


def test_a_kept_search_is_not_reused_once_the_day_it_read_its_dates_on_has_passed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept (cached) search reads "yesterday" on the day it ran; ten seconds later, past
    midnight, "yesterday" is another day and the kept answer's order is stale."""
    db = engramdb.open()
    db.add("I baked a mocha cake.", namespace="u", valid_from=datetime(2023, 10, 10, 12, tzinfo=UTC))
    db.add("I baked a lemon cake.", namespace="u", valid_from=datetime(2023, 10, 17, 12, tzinfo=UTC))
    query = "What cake did I bake yesterday?"
    before, after = datetime(2023, 10, 19, 23, 59, 55, tzinfo=UTC), datetime(2023, 10, 20, 0, 0, 5, tzinfo=UTC)
    expected = {t: [h.id for h in db.search(query, namespace="u", k=2, now=t, log=False)] for t in (before, after)}
    assert expected[before] != expected[after]  # the day names another window
    for t in (before, after):  # the store's own clock at t, no `now`: each search reads the clock's day
        monkeypatch.setattr(time, "time_ns", lambda t=t: int(t.timestamp()) * 1_000_000_000)
        assert [h.id for h in db.search(query, namespace="u", k=2, log=False)] == expected[t], t


def test_last_month_name_said_in_that_month_is_the_year_before() -> None:
    """"last June" said on June 20 is the June a year back (the current one is "this June")."""
    june = int(datetime(2023, 6, 20, tzinfo=UTC).timestamp() * 1_000_000)
    assert _days("What did we plant last June?", june) == [(date(2022, 6, 1), date(2022, 6, 30))]
    assert _days("What did we plant in June?", june) == [(date(2023, 6, 1), date(2023, 6, 30))]
    assert _days("What did we plant last May?", june) == [(date(2023, 5, 1), date(2023, 5, 31))]


@pytest.mark.parametrize("text", ["Which of the 2 may help?", "the 1 may be wrong", "all 3 may come"])
def test_may_the_verb_after_a_number_is_no_date(text: str) -> None:
    assert windows(text, NOW_US) == []


def test_a_search_as_of_a_past_time_reads_its_dates_and_ages_there_unless_now_says_otherwise() -> None:
    """`as_of` without `now`: the question is asked then ("yesterday" is the day before it, as
    the recency ages already were); `now` given: both are read against it."""
    db = engramdb.open()
    db.add("I baked a lemon cake.", namespace="u", valid_from=datetime(2023, 6, 12, tzinfo=UTC))
    db.add("I baked a mocha cake.", namespace="u", valid_from=datetime(2023, 6, 2, tzinfo=UTC))
    query = "What cake did I bake yesterday?"
    hits = db.search(query, namespace="u", k=2, as_of=datetime(2023, 6, 13, 9, tzinfo=UTC), log=False, explain=True)
    assert [h.explain is not None and h.explain["dated"] for h in hits] == [True, False]
    assert "lemon" in hits[0].memory.content
    later = datetime(2023, 6, 3, 9, tzinfo=UTC)
    hits = db.search(query, namespace="u", k=2, as_of=datetime(2023, 6, 13, 9, tzinfo=UTC), now=later, log=False,
                     explain=True, strategy="multi_space", recency=True)
    assert "mocha" in hits[0].memory.content and hits[0].explain is not None and hits[0].explain["dated"]
    # the recency ages are read at `now` too: the mocha cake is a day old then (1.1 of the top
    # 1.3), the lemon one not yet made (a future memory counts as new); as of June 13 they were
    # 1.1 and 1.0
    assert {h.memory.content: h.explain["recency"] for h in hits if h.explain is not None} == pytest.approx(
        {"I baked a lemon cake.": 1.0, "I baked a mocha cake.": 1.1 / 1.3})


def test_context_reads_the_dates_against_now(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    flavours = ["mocha", "carrot", "banana", "walnut", "orange", "ginger", "cherry", "almond", "coffee", "apple",
                "plum", "pear"]
    with engramdb.open(path) as db:
        db.add("I baked a lemon cake.", namespace="u", valid_from=datetime(2023, 6, 12, tzinfo=UTC))
        for i, f in enumerate(flavours):  # as good a match each, all in September
            db.add(f"I baked a {f} cake.", namespace="u", valid_from=datetime(2023, 9, 1 + i, tzinfo=UTC))
        held = {}
        for now in (datetime(2023, 7, 3, tzinfo=UTC), datetime(2023, 10, 3, tzinfo=UTC)):
            ctx = db.context("What cake did I bake last month?", namespace="u", max_tokens=50, now=now, log=False)
            held[now.month] = "lemon" in ctx.text
        assert held == {7: True, 10: False}  # a tight budget keeps what was said in the month named
        with pytest.raises(ValueError, match="now"):
            db.context("cake", namespace="u", now="2023-07-03", log=False)  # type: ignore[arg-type]
    out = subprocess.run([sys.executable, "-m", "engramdb", "context", "What cake did I bake last month?", "--path",
                          path, "--namespace", "u", "--max-tokens", "50", "--now", "2023-07-03T00:00:00+00:00",
                          "--json"], capture_output=True, text=True, check=True).stdout
    assert "lemon" in json.loads(out)["text"]


@pytest.mark.parametrize(("text", "expected"), [
    ("Where was Calvin in the last week of October 2023?", [(date(2023, 10, 1), date(2023, 10, 31))]),
    ("the last year of college", []),
    ("What did I cook the day before yesterday?", [(date(2023, 10, 18), date(2023, 10, 18))]),
])
def test_a_unit_of_a_named_period_and_the_day_before_yesterday(text: str, expected: list[tuple[date, date]]) -> None:
    assert _days(text) == expected


def test_without_relative_blanks_only_what_is_counted_from_now() -> None:
    text = "What did I do Yesterday, two days ago and on May 3, 2023, last Friday and this week? İstanbul"
    out = without_relative(text)
    assert len(out) == len(text)  # read on the text as written: no lower-casing changes its length
    assert out.split() == ["What", "did", "I", "do", ",", "and", "on", "May", "3,", "2023,", "and", "?", "İstanbul"]
    assert without_relative("the last week of August") == "the last week of August"


def _diary() -> engramdb.Store:
    """A day a week of September and October 2023 (NOW is Friday October 20), and one line that
    says "last week" about its own week, in September."""
    db = engramdb.open()
    for i in range(8):
        day = datetime(2023, 9, 1, 18, tzinfo=UTC) + timedelta(days=7 * i)
        db.add(f"Spent the evening on chore number {i}.", namespace="u", valid_from=day)
    db.add("We moved flats last week, what a mess.", namespace="u", valid_from=datetime(2023, 9, 4, tzinfo=UTC))
    db.add("A note in another namespace.", namespace="v", valid_from=datetime(2023, 10, 19, tzinfo=UTC))
    return db


def test_what_was_said_in_a_named_period_is_found_without_a_shared_word() -> None:
    db = _diary()
    hits = db.search("What did I do last week?", namespace="u", k=3, now=NOW, log=False, explain=True)
    # last week is Monday 9 to Sunday 15 October: the chore of Friday 13th, then the grace's
    assert hits[0].memory.valid_from == datetime(2023, 10, 13, 18, tzinfo=UTC), [h.memory.content for h in hits]
    assert hits[0].explain is not None and hits[0].explain["dated"] is True
    assert 0 < hits[0].score < 0.2  # a weak match: the date only
    assert hits[1].memory.valid_from == datetime(2023, 10, 20, 18, tzinfo=UTC)  # today: in the grace
    # "last week" was not matched as words: the September line that says it matches nothing
    assert all(h.score == 0 for h in hits if "moved" in h.memory.content)
    # another namespace's memory of the period is never among them, nor one of a time the query may not see
    assert all(h.memory.namespace == "u" for h in hits)
    past = db.search("What did I do last week?", namespace="u", k=3, now=NOW, as_of=datetime(2023, 9, 20, tzinfo=UTC),
                     log=False)
    assert all(h.memory.valid_from <= datetime(2023, 9, 20, tzinfo=UTC) for h in past)


def test_relative_words_stay_words_when_their_period_holds_nothing() -> None:
    db = _diary()
    later = datetime(2025, 3, 1, tzinfo=UTC)  # last week then holds no memory: the history is asked in its own words
    hits = db.search("When did we move flats last week?", namespace="u", k=1, now=later, log=False)
    assert "moved flats" in hits[0].memory.content
    hits = db.search("What happened last week?", namespace="u", k=1, now=later, log=False)
    assert "last week" in hits[0].memory.content

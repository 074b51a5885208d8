"""Stop 50 newcomer pass: a question that names only a date ("What did I do yesterday?").

docs/guides/search.md ("Dates in the question") lists "yesterday" among the dates a question may
name, and docs/guides/conversations.md says: "Import a history with each turn's session date as its
`valid_from` and those questions find their turns". When the question has no other content word,
every candidate scores 0 and the date's boost (a factor on the match) leaves it at 0: the turns of
the day the question names are not put first (explain shows them dated, ranked 0.0).
Public API only.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import engramdb
import pytest

START = datetime(2024, 5, 1, 18, tzinfo=timezone.utc)
DONE = ["painted the kitchen", "visited grandma in Braga", "fixed the bike's brakes",
        "read a novel by Saramago", "planted tomatoes on the balcony",
        "went to a concert at Casa da Musica", "cleaned the garage", "baked a lemon tart",
        "swam at Matosinhos beach", "watched a football match", "repaired the fence",
        "learned three Portuguese verbs", "called the bank about a loan",
        "walked the dog along the Douro"]


def _store() -> engramdb.Store:
    db = engramdb.open()
    for i, what in enumerate(DONE):
        day = START + timedelta(days=i)
        db.add_messages([
            {"role": "user", "content": f"Today I {what}.", "valid_from": day},
            {"role": "assistant", "content": "Sounds nice! Anything else?",
             "valid_from": day + timedelta(minutes=1)},
        ], namespace="u", session_id=f"s{i}")
    return db


@pytest.mark.parametrize("question", ["What did I do yesterday?", "What did I do two days ago?"])
def test_a_question_naming_only_a_relative_day_finds_that_days_turns(question: str) -> None:
    db = _store()
    now = START + timedelta(days=len(DONE) - 1, hours=2)       # the evening of the last session
    back = 1 if "yesterday" in question else 2
    day = (now - timedelta(days=back)).date()
    hits = db.search(question, namespace="u", k=3, now=now)
    # the dates module widens a period by a day before: accept the named day or one day either side
    near = {day - timedelta(days=1), day, day + timedelta(days=1)}
    got = [h.memory.valid_from.date() for h in hits]
    assert got[0] in near, (question, day, [(d.isoformat(), h.memory.content) for d, h in zip(got, hits)])
    db.close()


def test_context_for_a_question_naming_only_yesterday_is_not_empty() -> None:
    db = _store()
    now = START + timedelta(days=len(DONE) - 1, hours=2)
    ctx = db.context("What did I do yesterday?", namespace="u", max_tokens=300, now=now)
    assert "called the bank" in ctx.text, ctx.text
    db.close()


def test_the_words_of_the_named_date_do_not_outrank_the_named_week() -> None:
    """"last week" in the question is a date; an old turn that *says* "last week" matched those two
    words and stayed first (0.75) over the turn of the week the question means (0.34, ranked 0.51)."""
    db = engramdb.open()
    db.add_messages([{"role": "user", "content": "We moved to Porto last week! Our new flat is in Bonfim.",
                      "valid_from": datetime(2023, 9, 1, 19, tzinfo=timezone.utc)}],
                    namespace="u", session_id="s09")
    db.add_messages([{"role": "user", "content": "This week I went hiking in Peneda-Geres with the dog.",
                      "valid_from": datetime(2024, 6, 5, 18, tzinfo=timezone.utc)}],
                    namespace="u", session_id="s19")
    for i in range(30):
        db.add_messages([{"role": "user", "content": f"Filler note {i} about groceries and the weather.",
                          "valid_from": datetime(2024, 1, 1, tzinfo=timezone.utc)}],
                        namespace="u", session_id=f"f{i}")
    hits = db.search("What did I do last week?", namespace="u", k=3,
                     now=datetime(2024, 6, 14, 12, tzinfo=timezone.utc))
    assert hits[0].memory.session_id == "s19", [h.memory.content for h in hits]
    db.close()


def test_a_context_as_of_a_time_with_nothing_to_show_is_empty() -> None:
    """Its time note ("Facts as of ...") was the whole block when no memory matched."""
    db = engramdb.open()
    db.add("I baked a lemon cake.", namespace="a", valid_from=datetime(2023, 6, 12, tzinfo=timezone.utc))
    assert db.context("zebra quantum", namespace="a", as_of=datetime(2023, 1, 1, tzinfo=timezone.utc)).text == ""
    block = db.context("lemon cake", namespace="a", as_of=datetime(2023, 7, 1, tzinfo=timezone.utc)).text
    assert "lemon cake" in block and "Facts as of 2023-07-01" in block
    db.close()

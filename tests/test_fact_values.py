"""A short fact's named value (residence, employer, occupation, spouse, fiance: lifecycle/facts.py)
ends where its clause says when or opens a new clause, and nowhere else (stop 50).

Found by stop 50's newcomer pass: `contradictions="supersede"` ended "We moved to Porto last
week!" when a later turn said "Now that we live in Porto I want to bake bread": the value read
as the rest of the clause made one city two values. Then by its second adversary: a first fix that
also cut at prepositions made "a flat in Porto" and "a flat in Lisbon" one value (moves lost), and,
keeping the clause's amounts, read "I live in Porto with my 2 kids" / "I have lived in Porto for 3
years" as a number change of the same city. Public API only.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import engramdb
import pytest

T0 = datetime(2023, 9, 1, 19, tzinfo=timezone.utc)


def _cues(old: str, new: str) -> list[str]:
    """The contradictions `new` (said 40 days after `old`) proposes, by cue."""
    db = engramdb.open(None, contradictions="detect")
    try:
        db.add_messages([{"role": "user", "content": old, "valid_from": T0}], namespace="u", session_id="a")
        added = db.add_messages([{"role": "user", "content": new, "valid_from": T0 + timedelta(days=40)}],
                                namespace="u", session_id="b")
        return [p.reason.split(":")[0] for p in added.contradictions]
    finally:
        db.close()


def _current_after_supersede(turns: list[str]) -> list[bool]:
    """Each turn (said 40 days apart, in its own session) still current after all were added."""
    db = engramdb.open(None, contradictions="supersede")
    try:
        ids = [db.add_messages([{"role": "user", "content": text, "valid_from": T0 + timedelta(days=40 * i)}],
                               namespace="u", session_id=f"s{i}")[0] for i, text in enumerate(turns)]
        current = {m.id for m in db.list("u", limit=100)}
        return [i in current for i in ids]
    finally:
        db.close()


@pytest.mark.parametrize(("old", "new"), [
    ("We moved to Porto last week!", "Now that we live in Porto I want to bake bread."),
    ("I live in Porto.", "I live in Porto and I want to learn surfing."),
    ("We moved to Porto last week!", "We live in Porto with our dog."),
    ("I live in Porto with my 2 kids.", "I have lived in Porto for 3 years."),
    ("We live in Lisbon with our 2 dogs.", "We have lived in Lisbon for 5 years."),
    ("I live in Porto with my 2 kids.", "I live in Porto since 2019."),
])
def test_the_same_place_said_twice_is_not_a_contradiction(old: str, new: str) -> None:
    assert _cues(old, new) == []


@pytest.mark.parametrize(("old", "new", "cue"), [
    ("We live in Porto with our dog.", "We live in Lisbon with our dog.", "update"),
    ("We moved to Porto last week!", "We moved to Lisbon I want to bake bread.", "update"),
    ("I work at the University of Porto.", "I work at the University of Lisbon.", "update"),
    ("Fatima has lived in Dubai for 6 years.", "Fatima has lived in Dubai for 7 years.", "number"),
    ("I live in a flat in Porto.", "I live in a flat in Lisbon.", "update"),
    ("We live in an apartment in Brooklyn.", "We live in an apartment in Queens.", "update"),
    ("We moved to a new flat in Porto.", "We moved to a new flat in Lisbon.", "update"),
    ("I live in a small house near Porto.", "I live in a small house near Lisbon.", "update"),
    ("I work at a bakery in Porto.", "I work at a bakery in Lisbon.", "update"),
    ("I work for a startup in Berlin.", "I work for a startup in Munich.", "update"),
    ("I live in Newcastle upon Tyne.", "I live in Newcastle under Lyme.", "update"),
])
def test_a_value_said_with_more_around_it_still_tells_a_change(old: str, new: str, cue: str) -> None:
    assert _cues(old, new) == [cue], (old, new)


def test_supersede_keeps_what_a_later_turn_confirms_and_ends_what_it_changes() -> None:
    lyon, porto, again = _current_after_supersede(["I live in Lyon.", "We moved to Porto last week!",
                                                   "Now that we live in Porto I want to bake bread."])
    assert (lyon, porto, again) == (False, True, True), "the move to Porto was ended by the same city said again"
    assert _current_after_supersede(["I live in Porto with my 2 kids.", "I have lived in Porto for 3 years."]) \
        == [True, True], "a true fact was ended by an amount about something else"
    assert _current_after_supersede(["I live in a flat in Porto.", "I live in a flat in Lisbon."]) == [False, True]

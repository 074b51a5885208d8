"""Stop 50 newcomer pass: contradictions="supersede" ends a turn that says the SAME city.

docs/guides/conversations.md: `engramdb.open(path, contradictions="supersede")`: "each write ends
the older memories it contradicts (a moved city, ...)". Importing a chat history with it on,
"We moved to Porto last week!" was ended by a later "Now that we live in Porto I want to bake ...":
the detector reads the residence's value as the rest of the clause ("Porto last week" against
"Porto I want to bake bread") and calls the same city another value, so a true fact leaves
`search()` and is marked superseded in `context()`. Public API only.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import engramdb
import pytest

T0 = datetime(2023, 9, 1, 19, tzinfo=timezone.utc)

SAME_CITY = [
    ("We moved to Porto last week!", "Now that we live in Porto I want to bake bread."),
    ("I live in Porto.", "I live in Porto and I want to learn surfing."),
    ("We moved to Porto last week!", "We live in Porto with our dog."),
]


@pytest.mark.parametrize(("old", "new"), SAME_CITY)
def test_the_same_city_said_twice_is_not_a_contradiction(old: str, new: str) -> None:
    db = engramdb.open(None, contradictions="detect")
    db.add_messages([{"role": "user", "content": old, "valid_from": T0}], namespace="u", session_id="a")
    added = db.add_messages([{"role": "user", "content": new, "valid_from": T0 + timedelta(days=40)}],
                            namespace="u", session_id="b")
    assert [p.reason for p in added.contradictions] == []
    db.close()


def test_supersede_keeps_a_move_that_a_later_turn_confirms() -> None:
    db = engramdb.open(None, contradictions="supersede")
    db.add_messages([{"role": "user", "content": "I live in Lyon.", "valid_from": T0 - timedelta(days=200)}],
                    namespace="u", session_id="a")
    moved = db.add_messages([{"role": "user", "content": "We moved to Porto last week!", "valid_from": T0}],
                            namespace="u", session_id="b")
    db.add_messages([{"role": "user", "content": "Now that we live in Porto I want to bake bread.",
                      "valid_from": T0 + timedelta(days=40)}], namespace="u", session_id="c")
    current = {m.id for m in db.list("u", limit=100)}
    assert moved[0] in current, "the move to Porto was ended by a turn that says the same city"
    db.close()


@pytest.mark.parametrize(("old", "new", "cue"), [
    ("We live in Porto with our dog.", "We live in Lisbon with our dog.", "update"),
    ("We moved to Porto last week!", "We moved to Lisbon I want to bake bread.", "update"),
    ("I work at the University of Porto.", "I work at the University of Lisbon.", "update"),
    ("Fatima has lived in Dubai for 6 years.", "Fatima has lived in Dubai for 7 years.", "number"),
])
def test_a_value_cut_where_the_clause_goes_on_still_tells_a_change(old: str, new: str, cue: str) -> None:
    db = engramdb.open(None, contradictions="detect")
    db.add_messages([{"role": "user", "content": old, "valid_from": T0}], namespace="u", session_id="a")
    added = db.add_messages([{"role": "user", "content": new, "valid_from": T0 + timedelta(days=40)}],
                            namespace="u", session_id="b")
    assert [p.reason.split(":")[0] for p in added.contradictions] == [cue], [p.reason for p in added.contradictions]
    db.close()

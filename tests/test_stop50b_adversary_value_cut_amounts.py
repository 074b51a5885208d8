"""Stop 50b adversary: the cut value keeps the whole clause's amounts, so the same city is a "number" change.

Stop 50's `_named_value` cuts a residence's value at "with" ("I live in Porto with my 2 kids" ->
"Porto") but keeps the clause's amounts ("2", about the kids). A later "I have lived in Porto for 3
years" (or "I live in Porto since 2019") now says the same value with another amount, so it is read
as "number: the same fact with another number or date (residence: 2 -> 3)", and with
`contradictions="supersede"` (docs/guides/conversations.md) the true "I live in Porto with my 2
kids" is ended and leaves `list()` and `search()`. Before stop 50 (0e59f7b) none of these pairs
was a contradiction. Public API only.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import engramdb
import pytest

T0 = datetime(2023, 9, 1, 19, tzinfo=timezone.utc)

SAME_PLACE = [
    ("I live in Porto with my 2 kids.", "I have lived in Porto for 3 years."),
    ("We live in Lisbon with our 2 dogs.", "We have lived in Lisbon for 5 years."),
    ("I live in Porto with my 2 kids.", "I live in Porto since 2019."),
]


@pytest.mark.parametrize(("old", "new"), SAME_PLACE)
def test_an_amount_about_something_else_is_no_change_of_the_place(old: str, new: str) -> None:
    db = engramdb.open(None, contradictions="detect")
    db.add_messages([{"role": "user", "content": old, "valid_from": T0}], namespace="u", session_id="a")
    added = db.add_messages([{"role": "user", "content": new, "valid_from": T0 + timedelta(days=40)}],
                            namespace="u", session_id="b")
    assert [p.reason for p in added.contradictions] == []
    db.close()


def test_supersede_keeps_the_kids_in_porto() -> None:
    db = engramdb.open(None, contradictions="supersede")
    first = db.add_messages([{"role": "user", "content": "I live in Porto with my 2 kids.", "valid_from": T0}],
                            namespace="u", session_id="a")
    db.add_messages([{"role": "user", "content": "I have lived in Porto for 3 years.",
                      "valid_from": T0 + timedelta(days=40)}], namespace="u", session_id="b")
    current = {m.id for m in db.list("u", limit=100)}
    assert first[0] in current, "a true fact was ended by a turn that says the same city"
    db.close()

"""Stop 50b adversary: the named value's cut (stop 50) loses real moves and job changes.

`_named_value` ends a residence's / employer's value at the first preposition after its first word,
so the value of "I live in a flat in Porto" is "a flat", and of "I work at a bakery in Porto" is
"a bakery". A later "I live in a flat in Lisbon" then says the same value, and neither
`contradictions="detect"` nor `"supersede"` sees the move: the Porto flat stays current beside the
Lisbon one. Before stop 50 (0e59f7b) each of these pairs was an "update"; the labelled set of
bench/eval_contradictions.py has no such pair, so it did not move. Same for a place whose name
holds a preposition ("Newcastle upon Tyne" -> "Newcastle under Lyme": both "Newcastle").
Public API only.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import engramdb
import pytest

T0 = datetime(2023, 9, 1, 19, tzinfo=timezone.utc)

MOVED = [
    ("I live in a flat in Porto.", "I live in a flat in Lisbon."),
    ("We live in an apartment in Brooklyn.", "We live in an apartment in Queens."),
    ("We moved to a new flat in Porto.", "We moved to a new flat in Lisbon."),
    ("I live in a small house near Porto.", "I live in a small house near Lisbon."),
    ("I work at a bakery in Porto.", "I work at a bakery in Lisbon."),
    ("I work for a startup in Berlin.", "I work for a startup in Munich."),
    ("I live in Newcastle upon Tyne.", "I live in Newcastle under Lyme."),
]


@pytest.mark.parametrize(("old", "new"), MOVED)
def test_a_move_said_with_a_place_after_a_preposition_is_an_update(old: str, new: str) -> None:
    db = engramdb.open(None, contradictions="detect")
    db.add_messages([{"role": "user", "content": old, "valid_from": T0}], namespace="u", session_id="a")
    added = db.add_messages([{"role": "user", "content": new, "valid_from": T0 + timedelta(days=40)}],
                            namespace="u", session_id="b")
    assert [p.reason.split(":")[0] for p in added.contradictions] == ["update"], (old, new)
    db.close()


def test_supersede_ends_the_flat_left_behind() -> None:
    db = engramdb.open(None, contradictions="supersede")
    old = db.add_messages([{"role": "user", "content": "I live in a flat in Porto.", "valid_from": T0}],
                          namespace="u", session_id="a")
    db.add_messages([{"role": "user", "content": "I live in a flat in Lisbon.", "valid_from": T0 + timedelta(days=40)}],
                    namespace="u", session_id="b")
    current = {m.id for m in db.list("u", limit=100)}
    assert old[0] not in current, "the Porto flat is still current after the move to Lisbon"
    db.close()

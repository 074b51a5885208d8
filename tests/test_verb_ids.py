"""The verbs that change one memory by id (forget, restore, delete, update, supersede) name a
wrong id's type, as `get` does, before anything is written: a list or set given to forget raised
Python's bare "unhashable type", an int read as an unknown id."""

from __future__ import annotations

from typing import Any

import engramdb
import pytest


@pytest.mark.parametrize("bad", [["a", "b"], {"a"}, 5, None, b"abc"])
def test_a_verb_given_an_id_that_is_not_a_str_names_it(bad: Any) -> None:
    with engramdb.open(None) as db:
        m = db.add("I live in Paris.", namespace="n")
        calls = {"forget": lambda: db.forget(bad), "restore": lambda: db.restore(bad), "delete": lambda: db.delete(bad),
                 "update": lambda: db.update(bad, content="x"), "supersede old": lambda: db.supersede(bad, m.id),
                 "supersede new": lambda: db.supersede(m.id, bad)}
        for call in calls.values():
            with pytest.raises(TypeError, match=rf"id must be a str, got {type(bad).__name__}"):
                call()
        assert db.get(m.id) is not None and db.get(m.id).version == 1  # type: ignore[union-attr]

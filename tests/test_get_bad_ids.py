"""`get` with an id that is not a str: a clear TypeError naming the id, nothing stored lost."""

from __future__ import annotations

import engramdb
import pytest


@pytest.mark.parametrize("bad", [["a"], {"a": 1}, 3, None, b"x"])
def test_an_id_that_is_not_a_str_is_refused_by_name(bad: object) -> None:
    db = engramdb.open()
    kept = db.add("a fact", namespace="n")
    with pytest.raises(TypeError, match="id must be a str"):
        db.get(bad)  # type: ignore[arg-type]
    assert db.get(kept.id) is not None and len(db) == 1

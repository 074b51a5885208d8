"""Stop 50b adversary: a schema refused for its spaces' order is said to differ in "none".

Stop 50 replaced the two reprs of a schema mismatch with `Schema.differences` ("dense.embedder 'a',
given 'b'"). Schemas compare by `to_dict()`, which keeps the spaces' order, but `differences`
compares space by space by name: a store opened with its own spaces in another order is refused
with "the store at ... has another schema: none" — an error that says nothing differs. (Before,
the two reprs at least showed the two orders.) Either the order is no difference (the store
opens) or the error names it. Public API only.
"""

from __future__ import annotations

from pathlib import Path

import engramdb
from engramdb.spaces.schema import Schema, SpaceError, default_schema


def test_a_schema_in_another_order_opens_or_says_what_differs(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with engramdb.open(path) as db:
        db.add("a memory", namespace="u")
    own = default_schema()
    reordered = Schema(list(reversed(list(own.spaces.values()))), main=own.main)
    try:
        db = engramdb.open(path, schema=reordered)
    except SpaceError as exc:
        assert not str(exc).endswith(": none"), f"refused, saying nothing differs: {exc}"
        assert "order" in str(exc), str(exc)
    else:
        db.close()
    assert own.differences(reordered) != "none" or own == reordered

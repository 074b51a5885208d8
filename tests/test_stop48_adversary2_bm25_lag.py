"""Stop 48, second adversary: the LEXICAL_LAG rule at a writer's close (index/registry.py).

`_lexical_made` leaves a saved BM25 file that lacks at most 2,048 rows "as it is: a short writer's
close (a command that adds a few memories) would otherwise rewrite the whole file (20 MB and 0.13 s
at 100,000 memories)". That holds only for a writer whose BM25 was never made in its process. A
writer with a background worker (the default: `engramdb add`, any script) has it made by the
open's warm job (store/background.py `warm`), so `sync` at close brings it up by the few rows added
and `save` rewrites the whole file: `engramdb add` on a store of 100,000 memories rewrote the 20 MB
file each time (close 0.14-0.24 s instead of 0.01 s with background=False).
"""

from __future__ import annotations

import json
from pathlib import Path

import engramdb


def _covered(p: Path) -> int:
    return int(json.loads((p / "index" / "bm25-lexical.json").read_text())["covered"])


def test_a_short_default_writer_leaves_a_bm25_file_a_few_rows_behind_as_it_is(tmp_path: Path) -> None:
    p = tmp_path / "store"
    with engramdb.open(p) as db:
        db.add_many([{"content": f"note {i} about apples and pears", "namespace": "n"} for i in range(3000)])
    saved = _covered(p)
    assert saved == 3000
    data = (p / "index" / "bm25-lexical.arrow").read_bytes()
    db = engramdb.open(p)  # as `engramdb add` does: the default writer
    assert db.admin.settle(30)  # its warm job ran, as it does in a command that takes a few ms
    db.add_many([{"content": f"a short note {i}", "namespace": "n"} for i in range(3)])
    db.close()
    # 3 rows behind (<= LEXICAL_LAG): left as it is, as with background=False
    assert _covered(p) == saved and (p / "index" / "bm25-lexical.arrow").read_bytes() == data

"""seq under attack (stop 38): the store's automatic positions above MAX_SEQ kept by every new
version and by an import, a caller's own seq held to MAX_SEQ on every path, and each refusal
naming the field, the limit that applies and the value, with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import engramdb
import pytest

TOP = 2**62 - 1  # the highest seq a caller may give
INT64_MAX = 2**63 - 1  # the column's


def _export_with_seq(tmp_path: Path, seq: object) -> Path:
    with engramdb.open(tmp_path / "src") as db:
        db.add("hello", namespace="n", session_id="s", seq=5, id="aaaa")
        db.admin.export(tmp_path / "e.jsonl")
    lines = (tmp_path / "e.jsonl").read_text().splitlines()
    rec = json.loads(lines[1])
    rec["seq"] = seq
    for h in rec.get("history") or []:
        h["seq"] = seq
    out = tmp_path / "hand.jsonl"
    out.write_text("\n".join([lines[0], json.dumps(rec), lines[2]]) + "\n")
    return out


def test_an_imports_seq_past_the_column_names_the_columns_limit(tmp_path: Path) -> None:
    """An export's record may hold an automatic seq up to INT64_MAX; one past it was refused with
    'at most 4,611,686,018,427,387,903' while a seq of 9.2e18 is taken: the message named a limit
    that does not apply to an import."""
    path = _export_with_seq(tmp_path, INT64_MAX + 1)
    with engramdb.open(tmp_path / "dst") as db:
        with pytest.raises(engramdb.InvalidMemory, match=r"line 2: seq must be at most 9,223,372,036,854,775,807 "
                                                         r".*got 9,223,372,036,854,775,808"):
            db.admin.import_(path)
        assert db.get("aaaa") is None


def test_an_import_at_the_columns_end_is_kept_and_the_next_turn_refused_by_name(tmp_path: Path) -> None:
    path = _export_with_seq(tmp_path, INT64_MAX)
    with engramdb.open(tmp_path / "dst") as db:
        db.admin.import_(path)
        assert db.get("aaaa").seq == INT64_MAX  # type: ignore[union-attr]
        with pytest.raises(engramdb.InvalidMemory, match="has used every position up to 9,223,372,036,854,775,807"):
            db.add("next", namespace="n", session_id="s")
        assert db.update("aaaa", content="edited").seq == INT64_MAX
        assert len(db.list("n")) == 1


@pytest.mark.parametrize("bad", [TOP + 1, INT64_MAX, 2**64, True, 5.0, -1, "7"])
def test_a_callers_seq_stays_within_max_seq_on_every_path(tmp_path: Path, bad: object) -> None:
    with engramdb.open(tmp_path / "a") as db:
        db.add("first", namespace="n", session_id="s", seq=TOP)
        auto = db.add("second", namespace="n", session_id="s").id  # an automatic TOP + 1
        with pytest.raises(engramdb.InvalidMemory, match="seq must be"):
            db.add("x", namespace="n", session_id="s", seq=bad)  # type: ignore[arg-type]
        with pytest.raises(engramdb.InvalidMemory, match="seq must be"):
            db.add_many([{"content": "x", "namespace": "n", "session_id": "s", "seq": bad}])
        if bad != TOP + 1:  # its own seq, unchanged, it keeps
            with pytest.raises(engramdb.InvalidMemory, match="seq must be"):
                db.update(auto, seq=bad)
        later = db.add("third", namespace="n", session_id="s").id  # an automatic TOP + 2
        with pytest.raises(engramdb.InvalidMemory, match="seq must be"):
            db.update(later, seq=bad if bad != TOP + 1 else TOP + 5)  # another's automatic seq is a caller's here
        assert db.get(auto).seq == TOP + 1  # type: ignore[union-attr]
        assert [m.seq for m in db.list("n")] == [TOP, TOP + 1, TOP + 2]

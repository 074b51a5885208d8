"""seq is assigned per (namespace, session) when the caller gives none (issue 13): neighbour
expansion works for a caller who only stores turns in order."""

from __future__ import annotations

from pathlib import Path

import engramdb
import pytest


def _seqs(db: engramdb.Store, ids: list[str]) -> list[int | None]:
    return [db.get(i).seq for i in ids]  # type: ignore[union-attr]


def test_positions_follow_the_add_order_per_session() -> None:
    with engramdb.open(None) as db:
        a = db.add_many([{"content": f"turn {i}", "namespace": "n", "session_id": "s1"} for i in range(3)])
        b = db.add("other session", namespace="n", session_id="s2").id
        c = db.add("same session name, other namespace", namespace="m", session_id="s1").id
        d = db.add("later turn", namespace="n", session_id="s1").id
        e = db.add("no session", namespace="n").id
        assert _seqs(db, a) == [0, 1, 2]
        assert _seqs(db, [b, c, d]) == [0, 0, 3]
        assert db.get(e).seq is None  # type: ignore[union-attr]


def test_a_given_seq_is_kept_and_counting_goes_on_after_it() -> None:
    with engramdb.open(None) as db:
        x = db.add("first", namespace="n", session_id="s").id
        y = db.add("jump", namespace="n", session_id="s", seq=10).id
        z = db.add("after the jump", namespace="n", session_id="s").id
        mixed = db.add_many([{"content": "a", "namespace": "n", "session_id": "s", "seq": 20},
                             {"content": "b", "namespace": "n", "session_id": "s"}])
        assert _seqs(db, [x, y, z, *mixed]) == [0, 10, 11, 20, 21]


def test_counting_resumes_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with engramdb.open(path) as db:
        db.add_many([{"content": f"t{i}", "namespace": "n", "session_id": "s"} for i in range(4)])
    with engramdb.open(path) as db:
        nxt = db.add("t4", namespace="n", session_id="s").id
        assert db.get(nxt).seq == 4  # type: ignore[union-attr]


def test_update_keeps_the_position_and_never_reuses_it() -> None:
    with engramdb.open(None) as db:
        ids = db.add_many([{"content": f"t{i}", "namespace": "n", "session_id": "s"} for i in range(2)])
        db.update(ids[1], content="t1, edited")
        assert db.get(ids[1]).seq == 1  # type: ignore[union-attr]
        db.update(ids[0], seq=7)  # a caller moving a turn: the count re-reads the store
        nxt = db.add("t2", namespace="n", session_id="s").id
        assert db.get(nxt).seq == 8  # type: ignore[union-attr]


def test_neighbours_expand_without_a_given_seq() -> None:
    """The turn after the one that matched the question's words is found with no seq given."""
    with engramdb.open(None) as db:
        db.add_many([
            {"content": "Do you remember the name of the restaurant from the anniversary?", "namespace": "n",
             "session_id": "s", "role": "user"},
            {"content": "Yes, Chez Panisse in Berkeley.", "namespace": "n", "session_id": "s", "role": "assistant"},
            {"content": "We should plan a hiking trip this summer.", "namespace": "n", "session_id": "s2"},
            {"content": "The garage door is broken again.", "namespace": "n", "session_id": "s3"},
        ])
        hits = db.search("the anniversary restaurant name", namespace="n", k=2, strategy="hybrid", explain=True)
        contents = [h.memory.content for h in hits]
        assert contents[1] == "Yes, Chez Panisse in Berkeley."
        assert "neighbours" in hits[1].explain["methods"]  # type: ignore[index]


def test_an_automatic_position_above_the_callers_limit_is_kept_by_every_new_version(tmp_path: Path) -> None:
    """A session whose last turn had the highest seq a caller may give (2**62 - 1), then a turn
    without one: the automatic position (2**62) is the store's, so updating, forgetting, restoring
    it and importing the store's own export keep it; a caller still cannot give it."""
    top = 2**62 - 1
    with engramdb.open(tmp_path / "a") as db:
        db.add("first", namespace="n", session_id="s", seq=top)
        auto = db.add("second", namespace="n", session_id="s").id
        assert _seqs(db, [auto]) == [top + 1]
        db.update(auto, content="second, edited")
        assert db.get(auto).content == "second, edited"  # type: ignore[union-attr]
        assert _seqs(db, [auto]) == [top + 1]
        db.admin.export(tmp_path / "out.jsonl")
        db.forget(auto)
        assert db.get(auto) is None
        with pytest.raises(engramdb.InvalidMemory, match="seq must be at most"):
            db.add("a caller's seq past the limit", namespace="n", session_id="s", seq=top + 1)
        later = db.add("third", namespace="n", session_id="s").id
        with pytest.raises(engramdb.InvalidMemory, match="seq must be at most"):
            db.update(later, seq=top + 5)  # a new seq is a caller's, whatever the old one was
    with engramdb.open(tmp_path / "b") as db:
        report = db.admin.import_(tmp_path / "out.jsonl")
        assert db.get(auto).seq == top + 1, report  # type: ignore[union-attr]

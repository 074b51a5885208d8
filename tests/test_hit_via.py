"""Scores that say what matched (issue 26): in the default (hybrid) search, a neighbouring turn or
an edge hop that is in the results because of another hit says so (`hit.via`, the id of that hit)
and scores its OWN match, never the share it inherited; the order stays the one the shares made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import engramdb
import pytest
from engramdb.agents.mcp_tools import MemoryTools

MANAGER = "Sam told me his new manager is Priya, she started last week."
BISCUIT = "Biscuit found a sunny window to sleep in all day."
QUERY = "Who is Sam's new manager?"


def conversation(path: Path | None = None) -> tuple[engramdb.Store, dict[str, str]]:
    db = engramdb.open(path, dedup="off")
    turns = [MANAGER, BISCUIT, "We should plan the garden for spring."]
    ids = db.add_many([{"content": t, "namespace": "c", "session_id": "s1", "role": "user"} for t in turns])
    db.add_many([{"content": f"unrelated chatter {i} about tomatoes and the weather", "namespace": "c",
                  "session_id": "s2"} for i in range(20)])
    return db, dict(zip(turns, ids))


def test_a_neighbouring_turn_says_which_hit_it_came_with_and_scores_its_own_match() -> None:
    db, ids = conversation()
    hits = db.search(QUERY, namespace="c", k=5, explain=True)
    by = {h.memory.content: h for h in hits}
    seed, turn = by[MANAGER], by[BISCUIT]
    assert seed.via is None and seed.score > 0.5  # a real match
    assert turn.via == ids[MANAGER]
    assert turn.score == pytest.approx(turn.explain["own"], abs=1e-4)  # type: ignore[index]
    assert turn.score < 0.05  # it shares nothing with the question: it does not read as a match
    assert turn.explain["via"] == ids[MANAGER]  # type: ignore[index]
    assert turn.explain["expanded"]["inherited"] > 0.2  # type: ignore[index]  # what placed it
    # the order is the one the shares made: the turn right after its seed, above the chatter
    assert [h.memory.content for h in hits[:2]] == [MANAGER, BISCUIT]
    ranked = [h.explain["ranked"] for h in hits]  # type: ignore[index]
    assert ranked == sorted(ranked, reverse=True)
    plain = db.search(QUERY, namespace="c", k=5)  # the same without explain
    assert [(h.id, h.via, round(h.score, 6)) for h in plain] == [(h.id, h.via, round(h.score, 6)) for h in hits]


def test_an_edge_hop_says_via_and_a_memory_matching_on_its_own_does_not() -> None:
    db, ids = conversation()
    far = db.add("Priya is the new manager Sam reports to.", namespace="c")
    db.link(ids[MANAGER], far.id, "RELATED_TO", confidence=0.9)
    lonely = db.add("The vet appointment for Biscuit is on Friday.", namespace="c")
    db.link(ids[MANAGER], lonely.id, "RELATED_TO", confidence=0.9)
    hits = {h.id: h for h in db.search("Sam's new manager Priya", namespace="c", k=8, explain=True)}
    assert far.id in hits and hits[far.id].via is None  # its own match beats its share
    assert hits[far.id].explain["expanded"]["from_key"] is not None  # type: ignore[index]  # though offered one
    assert hits[far.id].score == pytest.approx(hits[far.id].explain["own"], abs=1e-4)  # type: ignore[index]
    assert lonely.id in hits and hits[lonely.id].via == ids[MANAGER]
    assert hits[lonely.id].score < 0.05


def test_min_score_reads_the_score_the_hit_shows() -> None:
    db, _ = conversation()
    hits = db.search(QUERY, namespace="c", k=5, min_score=0.3)
    assert [h.memory.content for h in hits] == [MANAGER]
    assert all(h.score >= 0.3 for h in hits)


def test_the_mcp_tool_and_the_cli_show_via(tmp_path: Path) -> None:
    db, ids = conversation(tmp_path / "s")
    tools = MemoryTools(lambda: db, lambda record: {}, "c")
    got = tools.search_graph(QUERY, topK=3)
    rows = {h["content"]: h for h in got["hits"]}
    assert rows[BISCUIT]["via"] == ids[MANAGER] and rows[MANAGER]["via"] is None
    assert rows[BISCUIT]["score"] < 0.05
    db.close()
    out = subprocess.run([sys.executable, "-m", "engramdb", "search", QUERY, "--path", str(tmp_path / "s"),
                          "--namespace", "c", "-k", "2"], capture_output=True, text=True, check=True, timeout=120)
    lines = out.stdout.splitlines()
    assert lines[1].endswith(f"(via {ids[MANAGER]})") and BISCUIT in lines[1]
    assert "via" not in lines[0]
    out = subprocess.run([sys.executable, "-m", "engramdb", "search", QUERY, "--path", str(tmp_path / "s"),
                          "--namespace", "c", "-k", "2", "--json"], capture_output=True, text=True, check=True,
                         timeout=120)
    rows2 = json.loads(out.stdout)["hits"]
    assert [r["via"] for r in rows2] == [None, ids[MANAGER]]

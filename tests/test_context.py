"""Context assembly (C6, K2, K3) through the public API: the budget is a hard bound, sections come in
priority order with a session's date line, ended facts marked, the curator leaves out repeats,
provenance on every item, the injection is logged, and the command line. What an agent's
conversations need of the block is in tests/test_context_scenarios.py."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import engramdb
import numpy as np
import pytest
from clock_helpers import Clock
from engramdb.context.curator import Candidate, curate
from engramdb.context.tokens import counter, estimate

T1 = datetime(2025, 3, 1, tzinfo=timezone.utc)
T2 = datetime(2025, 5, 1, tzinfo=timezone.utc)


def make(path: Path | None = None) -> engramdb.Store:
    db = engramdb.open(path)
    db.add_many([
        {"id": "job1", "content": "Maya: I got the bakery job near the river.", "namespace": "n", "valid_from": T1,
         "session_id": "s1"},
        {"id": "cat", "content": "Maya: my cat Biscuit sleeps in the bakery window.", "namespace": "n",
         "valid_from": T1, "session_id": "s1"},
        {"id": "job2", "content": "Maya: I now run my own sourdough stall at the market.", "namespace": "n",
         "valid_from": T2, "session_id": "s2", "provenance": {"uri": "chat://maya/42", "verified": True}},
        {"id": "job2-copy", "content": "Maya: I now run my own sourdough stall at the market.", "namespace": "n",
         "valid_from": T2, "session_id": "s2", "provenance": {"uri": "chat://maya/42", "verified": True}},
        *({"id": f"f{i}", "content": f"Sam: the weather on day {i} was fine for a walk.", "namespace": "n",
           "valid_from": T2, "session_id": "s2"} for i in range(30)),
    ])
    db.supersede("job1", "job2")
    return db


@pytest.mark.parametrize("tokenizer", ["cl100k_base", "estimate", None])
@pytest.mark.parametrize("budget", [60, 150, 400])
def test_the_budget_is_a_hard_bound(tokenizer: str | None, budget: int) -> None:
    db = make()
    ctx = db.context("Where does Maya work?", namespace="n", max_tokens=budget, session_id="s2", tokenizer=tokenizer)
    count, name = counter(tokenizer)
    assert count(ctx.text) <= budget and ctx.stats["tokens"] == count(ctx.text) and ctx.stats["tokenizer"] == name
    assert sum(i.tokens for i in ctx.items) <= budget


def test_sections_dates_and_the_past() -> None:
    db = make()
    now = db.context("Where does Maya work?", namespace="n", max_tokens=400)
    assert "sourdough stall" in now.text and "2025-05-01, s2:" in now.text  # its session's date line
    assert "(valid" not in now.text and "## Time" not in now.text  # nothing ended, no past asked: no note
    assert "bakery job" not in now.text  # superseded: not true now
    then = db.context("Where does Maya work?", namespace="n", max_tokens=400, as_of=datetime(2025, 4, 1,
                                                                                              tzinfo=timezone.utc))
    assert "- Maya: I got the bakery job near the river. (superseded 2025-05-01)" in then.text
    assert "## Time\n- Facts as of 2025-04-01; 1 of them no longer holds (marked)." in then.text
    order = [i.section for i in now.items]
    assert order == sorted(order, key=["divergence", "topics", "related", "recent", "badges"].index)


def test_the_curator_leaves_out_a_repeat_and_prefers_the_shorter() -> None:
    v = np.array([1.0, 0.0])
    w = np.array([0.0, 1.0])
    picks = curate([Candidate("a", 0.8, 10, v), Candidate("a-copy", 0.8, 10, v), Candidate("b", 0.52, 10, w)], 100)
    assert [p.id for p in picks][:2] == ["a", "b"]  # the copy pays 0.3 for repeating "a": b is worth more
    long = curate([Candidate("long", 0.6, 300, v), Candidate("short", 0.6, 20, w)], 1000)
    assert long[0].id == "short"
    assert curate([Candidate("big", 0.9, 500, v)], 100) == []  # nothing fits
    db = make()
    ctx = db.context("sourdough stall market", namespace="n", max_tokens=400)
    assert len({"job2", "job2-copy"} & {i.id for i in ctx.items}) == 1  # the fact is in, once
    assert ctx.text.count("sourdough stall at the market") == 1


def test_every_item_carries_provenance_and_the_injection_is_logged() -> None:
    db = make()
    ctx = db.context("sourdough stall market", namespace="n", max_tokens=400, session_id="s2")
    item = next(i for i in ctx.items if i.id in ("job2", "job2-copy"))  # one line for the two
    p = item.provenance
    assert p["uri"] == "chat://maya/42" and p["verified"] and p["snippet"].startswith("Maya: I now run")
    assert p["source"] == "turn" and p["extracted_at"] and p["trust"]["confidence"] == 1.0
    assert item.why.startswith(("search", "in the topic")) and item.tokens > 0
    db.importance.refresh()
    assert db.importance(item.id).used == 1  # the injection counts as a use
    assert ctx.stats["query_id"] and set(ctx.stats["ms"]) >= {"search", "related", "render"}


def test_a_session_gets_its_recent_turns_and_a_divergence_note() -> None:
    db = engramdb.open(None)
    said = ["We booked the trip to Lisbon for June.", "ok", "sure thing", "thanks a lot", "noted, will do",
            "fine by me", "great", "The hotel in Lisbon is the Pestana, near the old town."]
    db.add_messages([{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(said)],
                    namespace="n", session_id="trip")
    ctx = db.context("Which hotel in Lisbon?", namespace="n", max_tokens=600, session_id="trip")
    by = {s: [i.text for i in ctx.items if i.section == s] for s in ("divergence", "related", "recent")}
    assert not by["divergence"] and "- assistant: The hotel in Lisbon is the Pestana, near the old town." in by["related"]
    assert "- assistant: thanks a lot" in by["recent"] and "## Earlier in this session" in ctx.text
    far = db.context("quantum chromodynamics lattice gauge", namespace="n", max_tokens=600, session_id="trip")
    sections = {i.section for i in far.items}
    assert "divergence" in sections and far.text.startswith("## Note")
    assert "recent" not in sections  # the session was about something else: its turns are no context for this


def test_bad_arguments_and_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from engramdb import cli

    db = make(tmp_path / "s")
    with pytest.raises(ValueError, match="max_tokens must be an int >= 50, got 10"):
        db.context("x", namespace="n", max_tokens=10)
    with pytest.raises(ValueError, match="tokenizer must be"):
        db.context("x", namespace="n", tokenizer="gpt9")
    db.close()
    assert cli.main(["context", str(tmp_path / "s"), "Where does Maya work?", "--namespace", "n",
                     "--max-tokens", "200"]) == 0
    captured = capsys.readouterr()
    assert "sourdough stall" in captured.out and "of 200 tokens" in captured.err


def test_the_estimate_is_close_to_cl100k() -> None:
    count, name = counter("cl100k_base")
    texts = [f"Maya: I got the bakery job near the river on day {i}, and Sam said congratulations!" for i in range(50)]
    errors = [abs(estimate(t) - count(t)) / count(t) for t in texts]
    assert name == "cl100k_base" and np.mean(errors) < 0.35


def test_the_lite_pack_follows_the_elo_tiers() -> None:
    db = engramdb.open(None)
    db.add_many([{"id": f"m{i}", "content": f"Violin lessons on day {i}. The teacher was strict. We practised scales.",
                  "namespace": "n"} for i in range(6)])
    fresh = db.importance.pack("n", max_tokens=400)  # nobody rated: every memory MEDIUM, a summary each
    assert [i.provenance["form"] for i in fresh.items] == ["summary"] * 6
    for _ in range(40):  # m0 is used every time, the others shown and never used
        hits = db.search("violin lessons", namespace="n", k=6)
        db.feedback(hits.query_id or "", used=["m0"])
    db.importance.refresh()
    pack = db.importance.pack("n", max_tokens=400)
    forms = {i.id: (i.provenance["tier"], i.provenance["form"]) for i in pack.items}
    assert pack.items[0].id == "m0" and forms["m0"][1] in ("summary", "full")
    assert all(forms[f"m{i}"] == ("LOW", "pointer") for i in range(1, 6))
    assert pack.stats["tokens_saved"] > 0 and pack.stats["tokens"] <= 400
    small = db.importance.pack("n", max_tokens=50)
    assert small.stats["tokens"] <= 50 and small.stats["memories"] < 6


def test_the_lite_pack_orders_rated_and_unrated_memories_by_elo_then_newest() -> None:
    """The pack's order is (elo now as shown, to one decimal, highest first; then newest first)
    over rated and never-rated memories alike: a stable sort by `db.importance(id).elo` of the
    memories newest first (`db.list(newest_first=True)`) gives the same list."""
    db = engramdb.open(None)
    order = np.random.default_rng(4).permutation(40).tolist()  # stored shuffled: ids say nothing of the store's order
    db.add_many([{"id": f"m{i:02d}", "content": f"Cello practice note {i}: bowing and scales.", "namespace": "n"}
                 for i in order])
    for r in range(30):  # some used (rising), some shown and never used (falling), most never rated
        hits = db.search("cello practice bowing", namespace="n", k=5)
        db.feedback(hits.query_id or "", used=[h.id for h in hits if int(h.id[1:]) % 4 == r % 2])
    db.importance.refresh()
    pack = db.importance.pack("n", max_tokens=5_000)
    elo = {f"m{i:02d}": db.importance(f"m{i:02d}").elo for i in range(40)}
    newest = [m.id for m in db.list("n", limit=100, newest_first=True)]
    want = [m for m in sorted(newest, key=lambda m: -round(elo[m], 1)) if db.importance(m).tier != "VERY_LOW"]
    assert len({round(e, 6) for e in elo.values()}) > 2  # rated above and below the unrated start
    assert [i.id for i in pack.items] == want
    assert pack.stats["left_out"] == 40 - len(want)


def test_repeated_searches_and_query_vectors_are_cached_until_a_write() -> None:
    from engramdb.spaces.query import cached_queries

    db = make()
    first = db.search("sourdough stall", namespace="n", k=3)
    again = db.search("sourdough stall", namespace="n", k=3)
    assert not first.stats.cached and again.stats.cached
    assert [h.id for h in again] == [h.id for h in first] and again.query_id != first.query_id  # each is logged
    again[0].memory.metadata["x"] = 1  # a caller's edit never reaches the next answer
    assert "x" not in db.search("sourdough stall", namespace="n", k=3)[0].memory.metadata
    assert not db.search("sourdough stall", namespace="n", k=4).stats.cached  # another plan
    assert cached_queries() >= 1
    db.add("Maya: the sourdough stall moved next to the fish market.", namespace="n", id="new", valid_from=T2)
    after = db.search("sourdough stall", namespace="n", k=3)
    assert not after.stats.cached and "new" in [h.id for h in after]  # the write made a new snapshot


def test_the_search_cache_can_be_turned_off_and_follows_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import timedelta

    db = engramdb.open(None, tuning=engramdb.Tuning(search_cache=0))
    db.add("Maya runs a sourdough stall", namespace="n")
    db.search("sourdough", namespace="n")
    assert not db.search("sourdough", namespace="n").stats.cached
    live = engramdb.open(None)
    # the clock is moved past the boundary: with one 0.3 s ahead of the real clock, the write and the
    # first search had to fit in the 0.3 s (0.55 s here when nothing had searched before in the process)
    clock = Clock(monkeypatch)
    soon = clock.now() + timedelta(minutes=10)
    live.add_many([{"id": "now", "content": "the stall opens at six", "namespace": "n"},
                   {"id": "later", "content": "the stall opens at seven", "namespace": "n", "valid_from": soon}])
    assert [h.id for h in live.search("stall opens", namespace="n")] == ["now"]
    clock.forward(11 * 60)
    after = live.search("stall opens", namespace="n")  # the clock passed a validity boundary: not reused
    assert not after.stats.cached and {h.id for h in after} == {"now", "later"}

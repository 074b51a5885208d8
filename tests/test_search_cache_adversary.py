"""The search cache under attack (stop 41's adversary): a kept search is the answer an uncached
engine gives for the same snapshot, clock and arguments. Each test failed before its fix:
- a clock stepped back (NTP, a restored VM) reused a search made at a later clock (a memory that
  did not hold yet was served, by search and by context, until made-at + 60 s);
- a kept search outlived an edge's validity (the graph stage walks edges valid now);
- a slow search of an older snapshot, ending after a newer snapshot's searches were kept, threw
  the newer ones away (a repeat missed the cache).

The OS clock is simulated by offsetting time.time_ns and the datetime that engramdb.model.memory's
utc_now reads: the engine's two clock reads (clock_helpers.Clock)."""
from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Sequence
from pathlib import Path

import engramdb
import numpy as np
import pytest
from clock_helpers import Clock


@pytest.mark.parametrize("cache", [256, 0])
def test_clock_stepped_back_does_not_reuse_a_later_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          cache: int) -> None:
    clock = Clock(monkeypatch)
    now = clock.now()
    with engramdb.open(tmp_path / "s", dedup="off", tuning=engramdb.Tuning(search_cache=cache)) as db:
        db.add("The parking permit for level two is valid always", namespace="n", id="always")
        db.add("The parking permit for level three starts in ten minutes", namespace="n", id="later",
               valid_from=now + dt.timedelta(minutes=10))
        before = {h.id for h in db.search("parking permit", namespace="n")}
        assert before == {"always"}
        clock.forward(11 * 60)  # the clock jumps 11 minutes ahead (past valid_from)
        ahead = db.search("parking permit", namespace="n")
        assert {h.id for h in ahead} == {"always", "later"}
        clock.forward(-11 * 60)  # ... and NTP steps it back: "later" does not hold yet
        back = db.search("parking permit", namespace="n")
        assert {h.id for h in back} == {"always"}, (back.stats.cached, [h.id for h in back])


def test_context_after_a_clock_step_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """context() searches through the same cache: it shows a memory that does not hold yet."""
    clock = Clock(monkeypatch)
    now = clock.now()
    with engramdb.open(tmp_path / "s", dedup="off") as db:
        db.add("The parking permit for level two is valid always", namespace="n", id="always")
        db.add("The parking permit for level three starts in ten minutes", namespace="n", id="later",
               valid_from=now + dt.timedelta(minutes=10))
        clock.forward(11 * 60)
        assert "level three" in str(db.context("parking permit", namespace="n", max_tokens=500, log=False))
        clock.forward(-11 * 60)
        back = str(db.context("parking permit", namespace="n", max_tokens=500, log=False))
        assert "level three" not in back, back



@pytest.mark.parametrize("cache", [256, 0])
def test_an_edge_that_stops_holding_ends_the_kept_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        cache: int) -> None:
    # the clock is moved past the edge's end: with an end 1.5 s ahead of the real one, the open, ten
    # adds and the first search had to fit in the 1.5 s (0.3 s of it with two busy loops here)
    clock = Clock(monkeypatch)
    now = clock.now()
    with engramdb.open(tmp_path / "s", dedup="off", tuning=engramdb.Tuning(search_cache=cache)) as db:
        a = db.add("The boiler in the basement broke down on Monday", namespace="n", id="a")
        b = db.add("We called Mario the plumber about it", namespace="n", id="b")
        for i in range(8):
            db.add(f"Unrelated note number {i} about gardening", namespace="n")
        db.link(a.id, b.id, "CAUSED_BY", valid_until=now + dt.timedelta(minutes=10))
        first = db.search("boiler basement broke", namespace="n", k=5, log=False)
        assert "b" in {h.id for h in first}, [(h.id, h.via) for h in first]  # reached over the edge
        clock.forward(11 * 60)  # past the edge's end
        fresh = db.admin.snapshot().search("boiler basement broke", namespace="n", k=5, log=False)
        after = db.search("boiler basement broke", namespace="n", k=5, log=False)
        assert [(h.id, h.via) for h in after] == [(h.id, h.via) for h in fresh], after.stats.cached




def test_a_slow_search_of_an_older_snapshot_keeps_the_newer_searches() -> None:
    db = engramdb.open(None, dedup="off")
    for i in range(50):
        db.add(f"note {i} about the garden hose and the tap", namespace="n")
    main = db.schema.main
    inner = db.embedders[main]
    gate, entered = threading.Event(), threading.Event()

    class Slow:
        """The main embedder, but a query with 'SLOW' in it waits for the gate (a long search)."""
        name, version, kind, dim = inner.name, inner.version, inner.kind, inner.dim

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            if any("SLOW" in t for t in texts):
                entered.set()
                gate.wait(60)
            return np.asarray(inner.embed(texts))

    db.embedders[main] = Slow()  # type: ignore[assignment]
    slow = threading.Thread(target=lambda: db.search("SLOW garden hose", namespace="n", log=False))
    slow.start()
    assert entered.wait(60)
    db.add("a write: the next snapshot", namespace="n")
    db.search("garden tap", namespace="n", log=False)
    assert db.search("garden tap", namespace="n", log=False).stats.cached
    gate.set()
    slow.join()
    assert db.search("garden tap", namespace="n", log=False).stats.cached
    db.close()

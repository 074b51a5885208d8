"""A search frees what it made by reference counting: no cycle is left for Python's garbage
collector (its full collections, triggered by what survives, were tens of milliseconds: a small
namespace's p95, bench/RESULTS.md), and the search cache keeps its answers in a form the collector
stops tracking, while each caller still gets its own copies."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import engramdb
import pytest

NS = "n"
TURNS = ["I moved to Lisbon in March for the new job.", "How do you like the city so far?",
         "The tram up to the castle is my favourite ride.", "Did you find a flat near the river?",
         "Yes, a small one in Alfama with a view of the water.", "My sister visits in May with her kids.",
         "We plan a trip to Sintra and the beaches of Cascais.", "The job is at a startup building maps.",
         "I lead a team of four engineers there.", "Pasteis de nata every morning is a risk."]


@pytest.fixture
def db() -> Iterator[engramdb.Store]:
    with engramdb.open() as store:
        for i in range(0, len(TURNS), 2):
            store.add_messages([{"role": "user", "content": TURNS[i]}, {"role": "assistant", "content": TURNS[i + 1]}],
                               namespace=NS, session_id=f"s{i}")
        store.add("Team offsite notes: budget approved.", namespace=NS, metadata={"tags": ["work", "plan"]})
        yield store


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.garbage.clear()
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize("kwargs", [{}, {"explain": True}, {"strategy": "bm25"}, {"strategy": "rrf"},
                                    {"strategy": "pipeline"}, {"k": 3, "min_score": 0.2}])
def test_a_search_leaves_no_cycle_for_the_garbage_collector(db: engramdb.Store, saved_garbage: list[object],
                                                            kwargs: dict[str, object]) -> None:
    for q in ["Where do I live in Lisbon?", "Who visits in May?", "What is my job at the startup?"]:
        assert len(db.search(q, namespace=NS, **kwargs))  # type: ignore[arg-type]
    gc.collect()
    kinds = sorted({type(o).__qualname__ for o in saved_garbage})
    assert saved_garbage == [], kinds


def test_a_context_leaves_no_cycle_for_the_garbage_collector(db: engramdb.Store, saved_garbage: list[object]) -> None:
    for q in ["Where do I live in Lisbon?", "Who visits in May?"]:
        assert db.context(q, namespace=NS, session_id="s0", max_tokens=200).text
    gc.collect()
    kinds = sorted({type(o).__qualname__ for o in saved_garbage})
    assert saved_garbage == [], kinds


def test_the_search_cache_gives_equal_hits_as_each_callers_own_copies(db: engramdb.Store) -> None:
    first = db.search("team offsite budget", namespace=NS)
    again = db.search("team offsite budget", namespace=NS)
    assert again.stats.cached and not first.stats.cached
    assert [(h.id, h.score, h.passage, h.via, h.memory) for h in again] == \
        [(h.id, h.score, h.passage, h.via, h.memory) for h in first]
    noted = next(h for h in again if h.memory.metadata)
    noted.memory.metadata["tags"].append("edited by the caller")
    third = db.search("team offsite budget", namespace=NS)
    assert next(h for h in third if h.id == noted.id).memory.metadata == {"tags": ["work", "plan"]}
    assert all(not m.memory.provenance or m.memory.provenance is not n.memory.provenance
               for m, n in zip(third, again))

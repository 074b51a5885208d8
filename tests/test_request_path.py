"""Nothing slow on the request path (issue "[3 of 7] The agent loop"): `search()` and `context()`
never cluster topics and never build an index on the caller's thread; a writer's background worker
does (paced), and `Tuning(background=False)` leaves it to explicit calls. Seams patched: the topics
layer's clustering and the hierarchy's tree build (each records the thread that ran it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import engramdb
import pytest
from clock_helpers import Clock
from engramdb.hierarchy.tree import CentroidTree
from engramdb.topics import clustering

TOPICS = {
    "cooking": ["Simmer the tomato sauce with garlic and basil for twenty minutes.",
                "Knead the bread dough and let it rise in a warm kitchen.",
                "Roast the chicken with rosemary, lemon and garlic.",
                "Whisk eggs, flour and milk into a smooth pancake batter.",
                "Season the soup with salt, pepper and fresh thyme."],
    "cars": ["The car's brake pads squeal and the rotors need replacing.",
             "Change the engine oil and the oil filter every ten thousand kilometres.",
             "The mechanic says the car battery and alternator are worn.",
             "Rotate the car tyres and check their pressure before the trip.",
             "The engine coolant leaks from the radiator hose of the car."],
    "music": ["She practises the violin concerto every evening before the concert.",
              "The band rehearses the new song with drums, bass and guitar.",
              "Tune the guitar strings before the concert starts.",
              "The orchestra plays the symphony's slow movement beautifully.",
              "He writes the song lyrics and the melody on the piano."],
}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[str]]]:
    """The thread names each patched seam ran on: "cluster" (topics) and "build" (a tree)."""
    seen: dict[str, list[str]] = {"cluster": [], "build": []}
    real_cluster = clustering.cluster_spaces
    real_build = CentroidTree.build.__func__  # type: ignore[attr-defined]

    def cluster(*a: Any, **k: Any) -> Any:
        seen["cluster"].append(threading.current_thread().name)
        return real_cluster(*a, **k)

    def build(cls: type, *a: Any, **k: Any) -> Any:
        seen["build"].append(threading.current_thread().name)
        return real_build(cls, *a, **k)

    monkeypatch.setattr(clustering, "cluster_spaces", cluster)
    monkeypatch.setattr(CentroidTree, "build", classmethod(build))
    yield seen


def _fill(db: engramdb.Store, times: int = 3) -> None:
    db.add_many([{"content": f"{t} ({i})", "namespace": "n"} for i in range(times)
                 for texts in TOPICS.values() for t in texts])


def _upkeep_threads(store: Path) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"engramdb-upkeep:{store}"]


def test_context_reads_topics_and_the_worker_computes_them(tmp_path: Path, calls: dict[str, list[str]]) -> None:
    with engramdb.open(tmp_path / "s", dedup="off") as db:
        _fill(db)
        c = db.context("how long do I roast the chicken?", namespace="n", max_tokens=300)
        assert "chicken" in c.text
        assert threading.current_thread().name not in calls["cluster"]  # the request did not cluster
        assert db.admin.settle(timeout=60)
        assert calls["cluster"], "the background worker computed the topics"
        assert all(name.startswith("engramdb-upkeep") for name in calls["cluster"])
        assert "topics:n" in db.stats()["upkeep"]["runs"]
        assert db.stats()["upkeep"]["runs"]["topics:n"]["error"] is None
        # what it computed is what topics() gives, without clustering again
        before = len(calls["cluster"])
        found = db.topics("n")
        assert len(calls["cluster"]) == before
        assert found and sum(t.size for t in found) <= 45
        assert _upkeep_threads(tmp_path / "s"), "the worker's thread runs until close()"
    assert not _upkeep_threads(tmp_path / "s"), "close() stopped the worker"


def test_without_the_background_nothing_runs_on_its_own(tmp_path: Path, calls: dict[str, list[str]]) -> None:
    tuning = engramdb.Tuning(background=False)
    with engramdb.open(tmp_path / "s", dedup="off", tuning=tuning) as db:
        _fill(db)
        db.context("how long do I roast the chicken?", namespace="n", max_tokens=300)
        db.search("engine oil", namespace="n")
        assert db.admin.settle(timeout=1)
        assert calls["cluster"] == []
        assert db.stats()["upkeep"] == {"background": False, "pending": [], "runs": {}}
        assert not _upkeep_threads(tmp_path / "s")
        first = db.topics("n")  # asked: computed here, on this thread
        assert calls["cluster"] == [threading.current_thread().name]
        db.add("Bake the sourdough loaf at a high heat with steam.", namespace="n")
        c = db.context("sourdough", namespace="n", max_tokens=300)  # the older topics serve, none computed
        assert "sourdough" in c.text
        assert len(calls["cluster"]) == 1
        assert first


def test_no_search_builds_a_tree_on_the_callers_thread(tmp_path: Path, calls: dict[str, list[str]]) -> None:
    tuning = engramdb.Tuning(tree_min_rows=200, checkpoint_rows=64)
    with engramdb.open(tmp_path / "s", dedup="off", tuning=tuning) as db:
        _fill(db, times=16)  # 240 memories: the namespace crosses tree_min_rows at a checkpoint
        hits = db.search("engine oil filter", namespace="n", k=5)
        assert hits and "oil" in hits[0].memory.content
        dense = db.search("engine oil filter", namespace="n", strategy="dense_only", k=5)
        assert "oil" in dense[0].memory.content  # answered by an exact scan of what no tree covers yet
        assert threading.current_thread().name not in calls["build"]
        assert db.admin.settle(timeout=60)
        assert calls["build"] and all(n.startswith("engramdb-upkeep") for n in calls["build"])
        assert db.stats()["trees"][db.schema.main]["n"]["memories"] == 240
    with engramdb.open(tmp_path / "s", read_only=True) as r:  # the worker's tree was saved: a reader adopts it
        assert r.search("engine oil filter", namespace="n", strategy="dense_only", k=5)[0].memory.content == \
            dense[0].memory.content


def test_a_reader_lists_the_writers_last_topics_without_clustering(tmp_path: Path,
                                                                   calls: dict[str, list[str]]) -> None:
    tuning = engramdb.Tuning(background=False)
    with engramdb.open(tmp_path / "s", dedup="off", tuning=tuning) as db:
        _fill(db)
        stored = [(t.id, t.members) for t in db.topics("n")]
    with engramdb.open(tmp_path / "s", dedup="off", tuning=tuning) as db:
        db.add("Grill the salmon with dill and lemon butter.", namespace="n")  # the namespace moves on
    calls["cluster"].clear()
    with engramdb.open(tmp_path / "s", read_only=True) as r:
        listed = [(t.id, t.members) for t in r.topics("n")]
        c = r.context("salmon with dill", namespace="n", max_tokens=300)
    assert listed == stored
    assert "salmon" in c.text
    assert calls["cluster"] == []


def test_background_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="background must be True or False, got 'yes'"):
        engramdb.Tuning(background="yes")  # type: ignore[arg-type]


def test_settle_on_a_read_only_store_is_true_at_once(tmp_path: Path) -> None:
    with engramdb.open(tmp_path / "s") as db:
        db.add("one memory", namespace="n")
    with engramdb.open(tmp_path / "s", read_only=True) as r:
        assert r.admin.settle(timeout=0) is True
        assert r.stats()["upkeep"]["background"] is False


def test_a_kept_search_ends_when_the_clock_passes_a_memorys_validity(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The search cache keeps a search about "now" until the namespace's next validity boundary
    after it ran (found when the search is reused): a fact that stops holding, and one that starts,
    change the same search on the same snapshot. The clock is moved past the boundary
    (clock_helpers): with one 1.5 s ahead of the real clock, the open, three writes and two searches
    had to fit in the 1.5 s on any machine."""
    import datetime as dt

    clock = Clock(monkeypatch)
    now = clock.now()
    with engramdb.open(tmp_path / "s", dedup="off") as db:
        ending = db.add("The parking permit for level two is valid this week", namespace="n")
        db.update(ending.id, valid_until=now + dt.timedelta(minutes=10))
        later = db.add("The parking permit for level three starts soon", namespace="n",
                       valid_from=now + dt.timedelta(minutes=10))
        first = {h.id for h in db.search("parking permit", namespace="n")}
        assert first == {ending.id}
        again = db.search("parking permit", namespace="n")
        assert {h.id for h in again} == first and again.stats.cached  # reused
        clock.forward(11 * 60)
        after = db.search("parking permit", namespace="n")
        assert {h.id for h in after} == {later.id} and not after.stats.cached


def test_a_writer_opening_a_folder_warms_its_derived_files_on_the_worker(tmp_path: Path) -> None:
    """Opening a folder with a worker asks it at once (no delay) to load what a first search and
    context read (the indexes, ratings, stored topics): it runs on the worker's thread, a request
    meanwhile answers as without it, and a damaged derived file is the warm job's error (kept in
    `stats()["upkeep"]`), not the open's or a request's."""
    with engramdb.open(tmp_path / "s", dedup="off") as db:
        _fill(db)
        db.topics("n")
    with engramdb.open(tmp_path / "s") as db:
        hits = db.search("engine oil filter", namespace="n", k=3)  # while the warm job may run
        assert "oil" in hits[0].memory.content
        assert db.admin.settle(timeout=60)
        run = db.stats()["upkeep"]["runs"]["warm"]
        assert run["error"] is None
        assert [h.id for h in db.search("engine oil filter", namespace="n", k=3)] == [h.id for h in hits]
        assert [t.label for t in db.topics("n")]
    with engramdb.open(tmp_path / "s", tuning=engramdb.Tuning(background=False)) as db:
        assert db.stats()["upkeep"]["runs"] == {}  # no worker: nothing warms (a hook's short writer)
    bm25 = tmp_path / "s" / "index" / "bm25-lexical.arrow"
    bm25.write_bytes(b"not arrow at all")  # a damaged derived file: neither the open's nor a request's error
    with engramdb.open(tmp_path / "s") as db:
        assert [h.id for h in db.search("engine oil filter", namespace="n", k=3)] == [h.id for h in hits]
        assert db.admin.settle(timeout=60)
        assert [h.id for h in db.search("engine oil filter", namespace="n", k=3)] == [h.id for h in hits]


def test_the_gil_switches_faster_while_a_job_runs_and_as_before_after(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """While the worker runs a job (here a topics run) the interpreter's switch interval is the
    worker's short one, so a request releasing the GIL gets it back sooner; after it, the
    caller's own interval is back (a value the application set is kept, not the default)."""
    import sys

    seen: list[float] = []
    real = clustering.cluster_spaces

    def cluster(*a: Any, **k: Any) -> Any:
        seen.append(sys.getswitchinterval())
        return real(*a, **k)

    monkeypatch.setattr(clustering, "cluster_spaces", cluster)
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.003)
    try:
        with engramdb.open(tmp_path / "s", dedup="off") as db:
            _fill(db)
            db.context("engine oil", namespace="n")  # no topics yet: the worker is asked for them
            assert db.admin.settle(timeout=60)
            assert seen and all(s < 0.003 for s in seen)
            assert sys.getswitchinterval() == pytest.approx(0.003)
    finally:
        sys.setswitchinterval(before)


def test_after_a_writers_warm_up_the_first_context_reads_nothing_more_from_its_segments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm job also makes each segment's row reader, reads the vectors the search and the
    context read and indexes every id (what a session's turns are found with), so a service's
    first context after it builds none of them (a store without a worker, a hook's short writer,
    does: the check can fail)."""
    from engramdb.storage import segment
    from engramdb.storage.ids import IdIndex

    with engramdb.open(tmp_path / "s", dedup="off") as db:
        for part in range(2):  # two segment files
            for s in range(3):
                db.add_messages([{"role": "user" if i % 2 == 0 else "assistant", "content": text}
                                 for i, text in enumerate(TOPICS[sorted(TOPICS)[(part + s) % len(TOPICS)]])],
                                namespace="n", session_id=f"p{part}s{s}")
            db.admin.checkpoint()
    built: list[str] = []
    real_reader, real_vectors = segment.RowReader, segment.from_arrow

    def reader(table: Any) -> Any:
        built.append("row reader")
        return real_reader(table)

    def vectors(*a: Any, **k: Any) -> Any:
        built.append("vectors")
        return real_vectors(*a, **k)

    real_extend = IdIndex.extend

    def extend(self: IdIndex, *a: Any, **k: Any) -> Any:
        built.append("id index")
        return real_extend(self, *a, **k)

    monkeypatch.setattr(segment, "RowReader", reader)
    monkeypatch.setattr(segment, "from_arrow", vectors)
    monkeypatch.setattr(IdIndex, "extend", extend)
    for background, expected in ((True, []), (False, ["id index", "row reader", "vectors"])):
        with engramdb.open(tmp_path / "s", tuning=engramdb.Tuning(background=background)) as db:
            assert db.admin.settle(timeout=60)
            built.clear()
            c = db.context("how long do I roast the chicken?", namespace="n", max_tokens=300, session_id="p1s1")
            assert "chicken" in c.text
            assert sorted(set(built)) == expected, (background, built)


def test_a_warm_up_beside_requests_that_never_end_waits_for_them_once_in_all(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm job's reads wait for running requests at most WARM_WAIT_S over all their steps, not
    per step: a wait per step made a close or a fork wait ~14 s at 100,000 memories while other
    threads searched (56 steps x 0.25 s). Here the requests never end (each wait runs out), and
    the job still reads everything, having waited once."""
    from engramdb.store import background

    with engramdb.open(tmp_path / "s", dedup="off") as db:
        for part in range(3):
            _fill(db, times=1)
            db.admin.checkpoint()
    waits: list[float] = []

    def never_quiet(limit: float) -> bool:
        waits.append(limit)
        time.sleep(limit)
        return False

    monkeypatch.setattr(background, "wait_until_quiet", never_quiet)
    with engramdb.open(tmp_path / "s") as db:
        assert db.admin.settle(timeout=60)
        assert db.stats()["upkeep"]["runs"]["warm"]["error"] is None
    assert waits == [background.WARM_WAIT_S]
    waits.clear()
    db = engramdb.open(tmp_path / "s")
    db.close()  # at once: the job stops at its next step (or never started)
    assert len(waits) <= 1

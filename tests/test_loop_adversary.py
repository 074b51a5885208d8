"""The agent loop's machinery under an adversary (issue 26): the background worker, topics read
from the last run, index versions advanced off the request path, the WAL's merged segments and
the turn maps, met with forks, races, kills, faults and hostile values. Each test failed on the
code before its fix (the commit that adds it says what it saw)."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from pathlib import Path

import engramdb
import pytest
from engramdb.index import lexical_index
from engramdb.store import background
from engramdb.topics import state as topic_state


def test_a_forked_child_of_a_writer_with_a_waiting_job_neither_waits_nor_lists_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's settle() waited for its parent's job, which no thread of the child ever runs
    (settle() with no timeout hung for ever), and stats() listed it as pending."""
    monkeypatch.setattr(background, "DELAY", 3600.0)  # the job still waits when the child looks
    db = engramdb.open(tmp_path / "s")
    for i in range(30):
        db.add(f"the violin concerto rehearsal number {i}", namespace="n")
    db.context("violin", namespace="n", max_tokens=300)  # asks the worker for the topics
    assert db.stats()["upkeep"]["pending"] == ["topics:n"]
    note = tmp_path / "child"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        signal.alarm(60)  # a child that hangs (a lock held at the fork) dies, and the test fails, not waits for ever
        try:
            settled = db.admin.settle(timeout=2)
            pending = db.stats()["upkeep"]["pending"]
            hits = len(db.search("violin", namespace="n"))
            db.close()
            note.write_text(f"{settled} {pending} {hits}")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert note.read_text() == "True [] 10"
    assert db.stats()["upkeep"]["pending"] == ["topics:n"], "the parent's job is its own still"
    db.close()


PIXEL = ["I adopted a grey cat named Pixel last spring.", "What food does she like?",
         "Pixel only eats salmon pate, never dry food.", "Does she go outside?",
         "No, she is an indoor cat but loves the balcony.", "Let's talk about my car now.",
         "The brake pads squeal every morning.", "You should replace the rotors too."]


def _pixel_hits(folder: Path, first_seq: int) -> list[str]:
    with engramdb.open(folder, tuning=engramdb.Tuning(background=False), access_log=False) as db:
        for i, text in enumerate(PIXEL):
            db.add(text, namespace="n", session_id="chat", seq=first_seq + i, id=f"t{i}")
        db.add_many([{"content": "unrelated filler about gardening and tomatoes", "namespace": "n",
                      "session_id": "other"} for _ in range(30)])
        return [h.memory.id for h in db.search("what does Pixel eat?", namespace="n", k=5)]


@pytest.mark.parametrize("first_seq", [2**32 - 1, 1_700_000_000_000, 2**40, 2**62 - 100])
def test_turns_numbered_past_32_bits_keep_their_neighbours(tmp_path: Path, first_seq: int) -> None:
    """A seq is any integer up to 2**62 - 1 (epoch milliseconds are a common choice); the turn
    maps packed seq into 32 bits and left out every turn at 2**32 or more, so a search found no
    neighbouring turn of a hit there (t3 after t2 was missing)."""
    small = _pixel_hits(tmp_path / "small", 0)
    assert "t3" in small, "the turn after the best hit joins as its neighbour"
    assert _pixel_hits(tmp_path / "big", first_seq) == small


class _Job:
    """A job that counts its runs and fails (or not)."""

    def __init__(self, fail: bool = True) -> None:
        self.calls = 0
        self.fail = fail

    def __call__(self) -> None:
        self.calls += 1
        if self.fail:
            raise OSError(28, "No space left on device")


def _ran(worker: background.Worker, key: str, job: _Job, calls: int) -> None:
    """Wait until `job` ran `calls` times and the worker recorded the last run."""
    while job.calls < calls or key in worker.pending():
        time.sleep(0.001)


def test_a_job_that_keeps_failing_backs_off_and_warns_at_powers_of_two(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A job failing every time (a full disk for the topics file) ran again every second an
    agent asked, with a warning each time (3,600 an hour). Now each failure in a row doubles the
    gap and only the 1st, 2nd, 4th, 8th... warn; a success resets both."""
    monkeypatch.setattr(background, "DELAY", 0.0)
    monkeypatch.setattr(background, "PACE", 0.0)
    monkeypatch.setattr(background, "MIN_GAP", 0.0005)  # gaps of 1, 2, 4... ms here
    w = background.Worker("failing")
    job = _Job()
    with caplog.at_level(logging.DEBUG, logger="engramdb"):
        for n in range(1, 9):
            w.ask("topics:n", job)
            _ran(w, "topics:n", job, n)
        job.fail = False
        w.ask("topics:n", job)
        _ran(w, "topics:n", job, 9)
    w.close()
    mine = [r for r in caplog.records if "topics:n" in r.getMessage()]
    assert [r.levelno == logging.WARNING for r in mine] == [True, True, False, True, False, False, False, True]
    assert "8 in a row" in mine[-1].getMessage() and "No space left on device" in mine[-1].getMessage()
    assert w.runs["topics:n"]["error"] is None


def test_settle_does_not_wait_out_a_failed_jobs_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request asking again for a job that just failed put it back in the queue behind its
    gap, and settle() waited for it (with the backoff, up to minutes)."""
    monkeypatch.setattr(background, "DELAY", 0.0)
    monkeypatch.setattr(background, "MIN_GAP", 3600.0)
    w = background.Worker("failing")
    job = _Job()
    w.ask("topics:n", job)
    _ran(w, "topics:n", job, 1)
    w.ask("topics:n", job)  # the next request asks again: it waits an hour or more
    assert w.pending() == ["topics:n"]
    assert w.wait(timeout=0) is True
    w.close()


def _files_naming(folder: Path, needles: list[str]) -> list[str]:
    return sorted({str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()
                   for n in needles if n.encode() in p.read_bytes()})


def test_a_purge_while_a_request_loads_the_stored_topics_leaves_no_purged_id_in_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request reads the stored topics without the topic lock; a purge landing after it read the
    file and before it kept what it read left the pre-purge topics in memory (purged ids as
    members, labels made from their text), and the next topics run of any namespace wrote them
    back into index/topics.arrow."""
    folder = tmp_path / "s"
    texts = ["She practises the violin concerto every evening before the concert.",
             "Tune the guitar strings before the concert starts.",
             "The orchestra plays the symphony's slow movement beautifully."]
    tuning = engramdb.Tuning(background=False)
    with engramdb.open(folder, tuning=tuning) as db:
        for ns in ("a", "b"):
            db.add_many([{"content": f"{t} ({i})", "namespace": ns} for i in range(4) for t in texts])
            db.topics(ns)
        gone = [m.id for m in db.list("a", limit=100)]
    assert _files_naming(folder, gone)  # the segments and the stored topics of 'a'
    db = engramdb.open(folder, tuning=tuning, access_log=False)
    real = topic_state.load_results
    caller = threading.current_thread()
    purges: list[threading.Thread] = []

    def load(files: object) -> object:
        out = real(files)  # type: ignore[arg-type]
        if threading.current_thread() is caller and not purges:  # a purge lands between the read and its use
            purge = threading.Thread(target=db.purge, args=(gone,))
            purges.append(purge)
            purge.start()
            purge.join()
        return out

    monkeypatch.setattr(topic_state, "load_results", load)
    db.search("violin", namespace="b", k=3, strategy="pipeline", topics=True)  # the first request reads them
    monkeypatch.setattr(topic_state, "load_results", real)
    db.topics("b", refresh=True)  # a run of another namespace writes every namespace's topics
    db.close()
    assert len(purges) == 1
    assert _files_naming(folder, gone) == []


def test_build_index_saves_nothing_a_purge_took_out_while_it_built(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """build_index() builds without the writer's lock; a purge landing between its sync and its
    save had it write the trees and passages of before the purge (the purged memory's key and
    vector in their centroids, row epoch 0) into index/ after the purge had removed them."""
    folder = tmp_path / "s"
    db = engramdb.open(folder, tuning=engramdb.Tuning(background=False, tree_min_rows=20), access_log=False)
    db.add_many([{"content": f"ordinary note about gardening {i}", "namespace": "n"} for i in range(30)])
    gone = db.add("the secret word is xylophonequartz", namespace="n").id
    real = lexical_index.StoreBm25.sync
    caller = threading.current_thread()
    purges: list[threading.Thread] = []

    def sync(self: lexical_index.StoreBm25, view: object, **kw: object) -> object:
        out = real(self, view, **kw)  # type: ignore[arg-type]
        if threading.current_thread() is caller and not purges:  # the purge lands after the build's sync
            purge = threading.Thread(target=db.purge, args=([gone],))
            purges.append(purge)
            purge.start()
            purge.join()
        return out

    monkeypatch.setattr(lexical_index.StoreBm25, "sync", sync)
    db.admin.build_index()
    monkeypatch.setattr(lexical_index.StoreBm25, "sync", real)
    assert len(purges) == 1 and db.get(gone) is None
    epoch = json.loads((folder / "manifest.json").read_text())["row_epoch"]
    written = {p.name: json.loads(p.read_text()).get("epoch") for p in (folder / "index").glob("*.json")
               if p.name.startswith(("tree-", "passages-", "bm25-"))}
    assert all(e == epoch for e in written.values()), written
    db.close()


def test_the_runs_kept_for_stats_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One topics key per namespace: a service with many namespaces kept the last run of every
    one for ever, and stats()["upkeep"]["runs"] listed them all."""
    monkeypatch.setattr(background, "DELAY", 0.0)
    monkeypatch.setattr(background, "MIN_GAP", 0.0)
    monkeypatch.setattr(background, "PACE", 0.0)
    many = 300
    with engramdb.open(tmp_path / "s") as db:
        db.add_many([{"content": f"note {i}", "namespace": f"user{i}"} for i in range(many)])
        for i in range(many):
            db.context("note", namespace=f"user{i}", max_tokens=100)  # each asks for its namespace's topics
        assert db.admin.settle(timeout=300)
        runs = db.stats()["upkeep"]["runs"]
    assert len(runs) < many
    assert len(runs) == background.RUNS_KEPT and f"topics:user{many - 1}" in runs


class _SlowOnTheWorker:
    """The store's own lexical embedder, slowed on the background worker's thread (where BM25 is
    brought up to a checkpoint) until the test lets it go: a fork lands while it is inside."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self.inside = threading.Event()
        self.go = threading.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def embed(self, texts: list[str]) -> object:
        if threading.current_thread().name.startswith("engramdb-upkeep") and not self.go.is_set():
            self.inside.set()
            self.go.wait(timeout=1.0)  # released by the test (or after a second: then forks wait for it)
        return self._inner.embed(texts)  # type: ignore[attr-defined]


def test_a_child_forked_while_the_worker_syncs_bm25_can_search(tmp_path: Path) -> None:
    """The worker holds a BM25 index's lock while it brings it up to a checkpoint; a child forked
    then inherited the lock held by a thread it does not have, and its first search (BM25 is behind
    after every write) waited for it for ever. A fork now waits for the sync to end."""
    with engramdb.open(None) as plain:
        lexical_embedder = _SlowOnTheWorker(plain.embedders["lexical"])
        embedders = {**plain.embedders, "lexical": lexical_embedder}
    db = engramdb.open(tmp_path / "s", embedders=embedders,  # type: ignore[arg-type]
                       tuning=engramdb.Tuning(checkpoint_rows=100))
    db.search("warm up", namespace="n", k=3)  # BM25 made
    long = " ".join(f"word{i} violins" for i in range(400))  # longer than a passage: BM25 embeds its passages
    db.add(long, namespace="n")
    db.admin.checkpoint()  # the worker brings BM25 up to it
    assert lexical_embedder.inside.wait(timeout=60)
    note = tmp_path / "child"
    threading.Timer(0.2, lexical_embedder.go.set).start()  # the sync ends soon: the fork waits for it
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        signal.alarm(60)  # a child that hangs dies, and the test fails, not waits for ever
        try:
            note.write_text(str(len(db.search("violins", namespace="n", k=3, log=False))))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert note.exists() and note.read_text() == "1"
    db.close()


def test_a_purge_between_a_contexts_search_and_its_snapshot_leaves_the_hit_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """context() raised a bare KeyError (a purged hit's vector) when a purge landed between its
    search and the snapshot it assembles from."""
    db = engramdb.open(tmp_path / "s", access_log=False)
    for i in range(5):
        db.add(f"the violin concerto rehearsal number {i}", namespace="n")
    real = db.search
    gone: list[str] = []

    def search(*a: object, **k: object) -> engramdb.Hits:
        hits = real(*a, **k)  # type: ignore[arg-type]
        gone.append(hits[0].id)
        t = threading.Thread(target=db.purge, args=([hits[0].id],))
        t.start()
        t.join()
        return hits

    monkeypatch.setattr(db, "search", search)
    c = db.context("violin concerto", namespace="n", max_tokens=500)
    assert gone and all(i.id != gone[0] for i in c.items) and "rehearsal number" in c.text
    db.close()


def test_a_purge_between_a_contexts_search_and_its_injection_log_is_not_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """context() raised ValueError('no logged search with query_id ...') when a purge of one of its
    hits took the search's log rows before the injection was logged."""
    from engramdb.context import assemble as asm

    db = engramdb.open(tmp_path / "s")
    for i in range(5):
        db.add(f"the violin concerto rehearsal number {i}", namespace="n")
    real = asm.assemble

    def assemble(req: object, snap: object, hits: list[engramdb.Hit], **kw: object) -> object:
        t = threading.Thread(target=db.purge, args=([h.id for h in hits][:1],))
        t.start()
        t.join()
        return real(req, snap, hits, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(asm, "assemble", assemble)
    c = db.context("violin concerto", namespace="n", max_tokens=500)
    assert c.items
    db.close()


def test_settle_waits_for_what_was_asked_before_it_not_for_what_keeps_coming(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """settle() waited while anything waited: under steady writes something always does (a key
    asked for again while it runs, paced a second apart), so settle(timeout=None) never returned."""
    monkeypatch.setattr(background, "DELAY", 0.0)
    monkeypatch.setattr(background, "MIN_GAP", 0.2)
    w = background.Worker("test")
    ran: list[str] = []

    def steady() -> None:  # what an agent's steady writes do: ask again before the last run ends
        ran.append("steady")
        w.ask("steady", steady)

    w.ask("first", lambda: (time.sleep(0.3), ran.append("first")))
    w.ask("steady", steady)
    try:
        assert w.wait(timeout=5) is True
        assert "first" in ran and "steady" in ran
    finally:
        w.close()

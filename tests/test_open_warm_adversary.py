"""Open-time warming under an adversary (issue 26): a store opened, then forked, purged or closed
at once while its worker loads what a first request reads. Each test failed on the code before
its fix (the commit that adds it says what it saw)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import engramdb
import pytest
import store_helpers
from engramdb.importance.ratings import Ratings
from engramdb.storage import disk
from engramdb.storage.curiosity_log import CuriosityLog

GRANT = "grant proposal deadline"


_child = store_helpers.fork_child


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_after_a_store_read_its_vectors_can_open_and_search_a_store(tmp_path: Path) -> None:
    """A segment's vector columns are checked on a process-wide thread pool; a child forked after
    the parent used it inherited the pool without its thread, so the child's first search of any
    store (its own, opened after the fork) waited for a check no thread would ever run."""
    texts = [f"note {i}: the violin concerto rehearsal, bar {i} of movement {i % 7}" for i in range(1500)]
    with engramdb.open(tmp_path / "s", dedup="off") as db:  # vectors past the deferred check's 1 MiB
        db.add_many([{"content": t, "namespace": "n"} for t in texts])
    parent = engramdb.open(tmp_path / "s", read_only=True)
    assert parent.search("violin concerto", namespace="n", k=3, log=False)  # the pool ran a check
    note = tmp_path / "child"

    def work() -> int:
        with engramdb.open(tmp_path / "s", read_only=True) as mine:
            return len(mine.search("violin concerto rehearsal", namespace="n", k=3, log=False))

    assert _child(note, work) == 0
    assert note.exists() and note.read_text() == "3"
    parent.close()


def _fill_curiosity(db: engramdb.Store) -> None:
    """Notes matching GRANT, and a link that promises more than its target holds (tests/test_curiosity.py):
    a context of GRANT queues a curiosity item."""
    db.add_many([
        *({"id": f"s{i}", "content": f"Grant proposal deadline note {i}: the grant proposal deadline is close, "
                                     f"proposal draft {i}.", "namespace": "n"} for i in range(8)),
        {"id": "seed", "content": "The grant proposal deadline moved to Friday.", "namespace": "n"},
        {"id": "target", "content": "The funding office wants a signed budget sheet.", "namespace": "n"},
        *({"id": f"w{i}", "content": f"Bird watching trip {i} by the lake.", "namespace": "n"} for i in range(60)),
    ])
    db.link("seed", "target", "REQUIRES")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_a_thread_holds_the_curiosity_queue_can_use_its_own_store(tmp_path: Path) -> None:
    """The curiosity queues share one process-wide lock, which the writer's worker takes at open
    (the warm job reads the queue) and a context takes while it queues an item; a child forked
    meanwhile inherited it held by a thread it does not have, and its own store's first context
    (or `curiosity()`) waited for it for ever. Here the writer holds it, stopped at the queue file's
    write of a context's items (the disk seam), while the main thread forks."""
    with engramdb.open(tmp_path / "own") as own:
        _fill_curiosity(own)
    db = engramdb.open(tmp_path / "s")
    _fill_curiosity(db)
    inside, go = threading.Event(), threading.Event()
    holder = threading.Thread(target=lambda: db.context(GRANT, namespace="n", max_tokens=1000), name="holder")

    def hook(op: str, path: str, detail: object) -> None:
        # the context's items are written by the writer's worker (store/curiosity_verbs.py), under the lock
        writer = threading.current_thread() is holder or threading.current_thread().name.startswith("engramdb-upkeep")
        if writer and "curiosity" in path and not go.is_set():
            inside.set()
            go.wait(timeout=30)

    note = tmp_path / "child"

    def work() -> int:
        with engramdb.open(tmp_path / "own") as mine:
            mine.context(GRANT, namespace="n", max_tokens=1000)
            return len(mine.curiosity("n"))

    with disk.inject(hook):
        holder.start()
        assert inside.wait(timeout=60)
        threading.Timer(0.5, go.set).start()  # a fork that waits for the holder is let through
        code = _child(note, work)
        holder.join(timeout=60)
    assert code == 0 and note.exists() and int(note.read_text()) >= 1
    assert db.curiosity("n")  # the holder's item was queued
    db.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_the_warm_job_loads_the_ratings_can_search_through_its_parents_handle(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm job a writer's worker runs at open loads the ratings, the stored topics and the
    curiosity queue each under its store's lock; a child forked meanwhile (a service forking its
    workers right after open) inherited that lock held by a thread it does not have, and its
    first search through the parent's handle waited for it for ever. A fork now waits for the
    warm job to end. The seam: the importance layer's `Ratings.load`, stopped on the worker."""
    with engramdb.open(tmp_path / "s") as db:
        db.add_many([{"content": f"the violin concerto rehearsal number {i}", "namespace": "n"} for i in range(20)])
        db.search("violin", namespace="n")
    inside, go = threading.Event(), threading.Event()
    real = Ratings.load

    def load(files: Any) -> Any:
        if threading.current_thread().name.startswith("engramdb-upkeep") and not go.is_set():
            inside.set()
            go.wait(timeout=30)
        return real(files)

    monkeypatch.setattr(Ratings, "load", staticmethod(load))
    db = engramdb.open(tmp_path / "s")
    assert inside.wait(timeout=60)  # the warm job is inside the ratings' load, holding their lock
    threading.Timer(0.5, go.set).start()  # it ends soon: a fork that waits for it is let through
    note = tmp_path / "child"
    code = _child(note, lambda: len(db.search("violin concerto", namespace="n", k=3, log=False)))
    assert code == 0 and note.exists() and note.read_text() == "3"
    assert db.admin.settle(timeout=60) and db.stats()["upkeep"]["runs"]["warm"]["error"] is None
    db.close()


@pytest.mark.parametrize("read_only", [False, True])
def test_a_derived_files_sidecar_nested_past_the_parsers_depth_is_a_damaged_file_not_an_error(
        tmp_path: Path, read_only: bool) -> None:
    """A sidecar (index/*.json) of nested brackets made json.loads raise RecursionError, which the
    reader did not catch: the warm job at open failed with it, and every search and context raised
    it. It is a damaged derived file like any other now: rebuilt from the segments, same answers."""
    with engramdb.open(tmp_path / "s", dedup="off") as db:
        db.add_many([{"content": f"the violin concerto rehearsal number {i}", "namespace": "n"} for i in range(30)]
                    + [{"content": "the tuba needs a new valve", "namespace": "n", "id": "tuba"}])
        before = [h.id for h in db.search("tuba valve", namespace="n", k=3)]
    sidecars = sorted((tmp_path / "s" / "index").glob("*.json"))
    assert sidecars
    for side in sidecars:
        side.write_text("[" * 100_000 + "]" * 100_000)
    with engramdb.open(tmp_path / "s", read_only=read_only) as db:
        assert [h.id for h in db.search("tuba valve", namespace="n", k=3)] == before
        assert "tuba" in db.context("tuba valve", namespace="n", max_tokens=300).text
        assert db.admin.settle(timeout=60)
        assert db.stats()["upkeep"]["runs"].get("warm", {"error": None})["error"] is None
        assert [h.id for h in db.search("tuba valve", namespace="n", k=3)] == before


_CONTEXT_AFTER_OPEN = """
import sys, engramdb
with engramdb.open(sys.argv[1]) as db:
    db.add("the violin concerto rehearsal", namespace="n")
for read_only in (False, True):
    with engramdb.open(sys.argv[1], read_only=read_only) as db:
        first = db.context("violin", namespace="n", max_tokens=200)
        again = db.context("violin", namespace="n", max_tokens=200)
        assert "violin" in first.text and again.text == first.text
        print(first.stats["tokenizer"], again.stats["tokenizer"])
"""


@pytest.mark.parametrize("broken", ["its import raises", "its finder raises"])
def test_a_broken_bpe_openai_is_the_estimate_not_an_error_of_open_or_context(tmp_path: Path, broken: str) -> None:
    """The default tokenizer (None: cl100k_base when bpe-openai is installed, else the estimate)
    is loaded at open now, on a thread. A bpe-openai whose import raised (a broken build: a
    RuntimeError, not an ImportError) failed every context of the process; a finder that raised
    looking for it (an import hook hiding it) failed the open itself. Both are the estimate now
    (a warning logged), as when it is not installed; the child process is the seam."""
    site = tmp_path / "site"
    (site / "bpe_openai").mkdir(parents=True)
    if broken == "its import raises":
        (site / "bpe_openai" / "__init__.py").write_text('raise RuntimeError("this build is broken")\n')
    else:
        (site / "sitecustomize.py").write_text(
            "import sys\n"
            "class Hide:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.partition('.')[0] == 'bpe_openai':\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Hide())\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", _CONTEXT_AFTER_OPEN, str(tmp_path / "s")], check=False,
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["estimate"] * 4
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("messages", [bytearray(b"hello"), memoryview(b"hello"), "numpy 0-d"])
def test_add_messages_refuses_bytes_like_and_a_numpy_scalar_as_the_messages(tmp_path: Path, messages: Any) -> None:
    """bytearray and memoryview were read byte by byte ("message 0: must be a dict, got int",
    naming neither what was given nor the list it wants), and a 0-d numpy array of one message
    raised numpy's bare TypeError ("iteration over a 0-d array"). Each is the messages' own
    refusal now, naming the type, and nothing is stored."""
    if messages == "numpy 0-d":
        np = pytest.importorskip("numpy")
        messages = np.array({"role": "user", "content": "hi"}, dtype=object)
    with engramdb.open(tmp_path / "s") as db:
        with pytest.raises(engramdb.InvalidMemory, match=rf"messages must be a list of dicts .*got {type(messages).__name__}"):
            db.add_messages(messages, namespace="n")
        assert list(db.list(namespace="n")) == []


def test_a_context_queuing_while_the_warm_job_reads_the_queue_is_not_queued_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm job read the curiosity queue's waiting links without the queue's lock, then kept
    what it read: a context that queued an item meanwhile had its item dropped from the waiting
    links, and the next context queued the same link again (a duplicate item for an explorer).
    The seam: the storage layer's `CuriosityLog.links` (what the load reads), stopped on the
    worker after reading."""
    with engramdb.open(tmp_path / "s") as db:
        _fill_curiosity(db)
    inside, go = threading.Event(), threading.Event()
    real = CuriosityLog.links

    def links(self: CuriosityLog) -> list[tuple[str, str, str, str, str]]:
        got = real(self)
        if threading.current_thread().name.startswith("engramdb-upkeep") and not go.is_set():
            inside.set()
            go.wait(timeout=30)
        return got

    monkeypatch.setattr(CuriosityLog, "links", links)
    with engramdb.open(tmp_path / "s") as db:
        assert inside.wait(timeout=60)  # the warm job has read the (empty) queue
        threading.Timer(0.5, go.set).start()  # it goes on soon (a context that waits for it is let through)
        first = db.context(GRANT, namespace="n", max_tokens=1000)
        assert first.stats["curiosity"]["queued"] >= 1
        assert db.admin.settle(timeout=60)
        again = db.context(GRANT, namespace="n", max_tokens=1000)
        assert again.stats["curiosity"]["queued"] == 0  # the same link is not queued twice
        items = db.curiosity("n", limit=None)
        assert len({(i.parent_id, i.memory_id, i.via) for i in items}) == len(items)

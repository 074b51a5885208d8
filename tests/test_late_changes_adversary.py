"""The adversary's pass over the session's late changes (issues 26 and 28, stop 37): the WAL tail's
merge cap (storage/versions.py), the joined segment and each segment's newest learning time
(storage/segment.py), the spool's one-listing check (storage/spool.py `quiet`), the contexts'
topic maps (store/context_verbs.py) and a session's turns in a context. bench/RELIABILITY.md,
"Late changes under attack (issues 26 and 28, stop 37)", lists what held and what was fixed; each
test named for a fix failed before it."""

from __future__ import annotations

import gc
import random
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import engramdb
import pytest
from engramdb import Tuning
from engramdb.context import assemble as asm
from engramdb.model.memory import Memory
from engramdb.storage import spool
from engramdb.storage.columns import memories_to_table
from engramdb.storage.segment import Segment
from engramdb.storage.versions import TAIL_SEGMENTS, merged_tail

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
WORDS = ["apple", "banana", "cherry", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]


def _segment(n: int, start: int, namespace: str = "a") -> Segment:
    mems = [Memory(id=f"m{start + i}", namespace=namespace, content=f"text {start + i}", version=1,
                   learned_at=T0 + timedelta(seconds=start + i)) for i in range(n)]
    return Segment(memories_to_table(mems))


# ------------------------------------------------------------------------------ the WAL tail
@pytest.mark.parametrize("sizes", [list(range(120, 0, -1)), [random.Random(7).randint(1, 60) for _ in range(400)]])
def test_writes_of_falling_sizes_keep_the_tail_short(sizes: list[int]) -> None:
    """The counter merges an older part only when it is no larger than the newer: batches of
    falling sizes (a conversation's, 120 rows then 119...) never merged, and every one stayed a
    segment of its own that each search scans (the tail's limit says TAIL_SEGMENTS). Was: 120
    in-memory segments for 120 batches (random small ones held: 46 at most)."""
    tail: tuple[Segment, ...] = ()
    start = 0
    for n in sizes:
        seg = _segment(n, start, namespace="ab"[start % 2])
        tail = merged_tail((*tail, seg))
        start += n
        assert len(tail) <= 2 * TAIL_SEGMENTS, [len(s) for s in tail]
    assert [i for s in tail for i in s.ids] == [f"m{i}" for i in range(start)]  # every row once, in order
    assert sum(s.ns_count("a") + s.ns_count("b") for s in tail) == start


def _state(db: Any, namespaces: list[str], queries: list[str], known_at: datetime) -> dict[Any, Any]:
    """What a reader sees: every namespace's memories, and searches now and as known at a time."""
    out: dict[Any, Any] = {}
    for ns in namespaces:
        out["list", ns] = sorted((m.id, m.version, m.content, m.forgotten_at is not None)
                                 for m in db.list(ns, limit=100_000))
        for q in queries:
            for strategy in ("bm25", "hybrid"):
                out[strategy, ns, q] = [(h.memory.id, round(h.score, 9))
                                        for h in db.search(q, namespace=ns, k=12, strategy=strategy, log=False)]
            out["known", ns, q] = [(h.memory.id, round(h.score, 9)) for h in
                                   db.search(q, namespace=ns, k=12, strategy="bm25", known_at=known_at, log=False)]
    return out


@pytest.mark.parametrize("checkpoint_rows", [4_096, 1_000_000])
def test_a_long_tail_reads_as_its_replay_and_its_checkpoint(tmp_path: Path, checkpoint_rows: int) -> None:
    """Batches of every size around the cap (falling ones too), updates, forgets, restores and
    supersedes between them, in three namespaces: the store on its WAL tail, the same store
    reopened from its WAL (replay), and after a checkpoint list and search the same (held)."""
    rnd = random.Random(checkpoint_rows)
    namespaces = ["a", "b", "c"]
    tuning = Tuning(checkpoint_rows=checkpoint_rows, background=False)
    db = engramdb.open(tmp_path / "s", tuning=tuning)
    ids: list[str] = []
    sizes = [1, 2, 511, 512, 513, 300, 299, 298, 1, 257, 256, 255, 1, 1, 700, 40, 39, 38, 1]
    middle = T0
    for step, n in enumerate(sizes):
        ids += db.add_many([{"content": " ".join(rnd.choices(WORDS, k=5)) + f" s{step} r{i}",
                             "namespace": rnd.choice(namespaces), "session_id": f"sess{rnd.randrange(3)}"}
                            for i in range(n)])
        target = rnd.choice(ids)
        verb = step % 4
        if verb == 0:
            db.update(target, content=" ".join(rnd.choices(WORDS, k=4)) + " updated")
        elif verb == 1:
            db.forget(target)
        elif verb == 2:
            db.restore(target) if db.get(target, include_forgotten=True).forgotten_at else db.forget(target)
        else:
            (new,) = db.add_many([{"content": "replacement " + rnd.choice(WORDS),
                                   "namespace": db.get(target, include_forgotten=True).namespace}])
            db.supersede(target, new)
        if step == len(sizes) // 2:
            middle = datetime.now(timezone.utc)
    queries = ["apple banana", "golf hotel kilo", "replacement", "updated cherry"]
    on_tail = _state(db, namespaces, queries, middle)
    db.close(checkpoint=False)
    db = engramdb.open(tmp_path / "s", tuning=tuning)
    assert _state(db, namespaces, queries, middle) == on_tail
    db.admin.checkpoint()
    assert _state(db, namespaces, queries, middle) == on_tail
    db.close()


# ------------------------------------------------------------------------------ the spool
@pytest.mark.parametrize("name", ["..json", "..access", "..taking"])
def test_quiet_never_hides_a_file_the_checks_take_in(tmp_path: Path, name: str) -> None:
    """`quiet` took a name's extension by `os.path.splitext`, the three checks by `Path.suffix`:
    they differ on names that start with dots (`..json` has none for the first, `.json` for the
    second), so quiet said 'nothing waits' beside a capture the writer takes in. Was: quiet True."""
    store = tmp_path / "s"
    (store / spool.FOLDER).mkdir(parents=True)
    (store / spool.FOLDER / name).write_text("{}")
    assert spool.pending(store) or spool.access_pending(store)
    assert not spool.quiet(store)


# ------------------------------------------------------------------------------ topic maps
GARDEN = ["roses in the garden need water", "the garden roses bloom in june", "water the garden roses daily",
          "garden roses and tulips", "prune the garden roses", "the roses of the garden are red"]
ENGINE = ["the car engine needs oil", "change the engine oil of the car", "car engine oil filter",
          "the engine of the car overheats", "car engine repair", "oil for the car engine"]


def test_a_purge_during_a_context_keeps_no_topic_map_of_the_purged(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A context read the namespace's topics before a purge and made their map after it: the map
    (every member's id) was kept per store after the purge had dropped the maps, holding the
    purged id until the next context of that namespace (K7, S7: a purge leaves no trace). Was:
    a kept map naming the purged memory."""
    db = engramdb.open(tmp_path / "s", tuning=Tuning(background=False))
    db.add_many([{"content": t, "namespace": "n", "id": f"g{i}"} for i, t in enumerate(GARDEN * 2)]
                + [{"content": t, "namespace": "n", "id": f"e{i}"} for i, t in enumerate(ENGINE * 2)])
    found = db.topics("n")
    assert any("g0" in t.members for t in found)
    purged = threading.Event()
    making = threading.Event()

    class Slow(asm.TopicMap):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if threading.current_thread() is not threading.main_thread():
                making.set()
                purged.wait(10)  # the purge runs between the topics read and the map made
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(asm, "TopicMap", Slow)
    errors: list[BaseException] = []

    def context() -> None:
        try:
            db.context("garden roses", namespace="n", max_tokens=500, log=False)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=context)
    t.start()
    assert making.wait(10)
    db.purge(["g0"])
    purged.set()
    t.join()
    assert errors == []
    gc.collect()
    kept = [m for m in gc.get_objects() if isinstance(m, asm.TopicMap) and any("g0" in ms for ms in m.members)]
    assert kept == []
    db.close()


def test_a_spool_folder_replaced_by_a_file_during_the_check_fails_no_add(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The spool folder replaced by a file (or removed) between quiet's check that it is a folder
    and its listing: the add raised a raw NotADirectoryError out of `quiet`, though the three
    checks it stands for find nothing there. Was: NotADirectoryError from db.add."""
    import os
    import shutil

    db = engramdb.open(tmp_path / "s")
    db.add("first", namespace="n")
    folder = tmp_path / "s" / spool.FOLDER
    folder.mkdir(exist_ok=True)
    real = os.scandir

    def swapped(path: Any = ".") -> Any:
        if isinstance(path, (str, Path)) and Path(path) == folder and folder.is_dir():
            shutil.rmtree(folder)
            folder.write_text("not a folder")
        return real(path)

    monkeypatch.setattr(os, "scandir", swapped)
    m = db.add("second", namespace="n")
    monkeypatch.undo()
    assert db.get(m.id) is not None and len(db) == 2
    db.close()


CAPTURER = """
import sys, engramdb
for i in range(int(sys.argv[2])):
    engramdb.capture(sys.argv[1], [{"id": f"cap{i}", "content": f"captured turn {i}", "namespace": "n"}])
"""


def test_captures_spooled_while_a_writer_adds_are_taken_in_once(tmp_path: Path) -> None:
    """Another process captures one record at a time while this store's writer adds: each add asks
    `quiet` first; every capture is in the store once, none lost, none twice (held)."""
    import subprocess
    import sys

    db = engramdb.open(tmp_path / "s")
    db.add("opening", namespace="n")
    proc = subprocess.Popen([sys.executable, "-c", CAPTURER, str(tmp_path / "s"), "30"])
    added = 0
    while proc.poll() is None:
        db.add(f"writer turn {added}", namespace="n")
        added += 1
    assert proc.wait() == 0
    db.add("closing", namespace="n")  # takes in what waits
    contents = [m.content for m in db.list("n", limit=10_000)]
    assert sorted(c for c in contents if c.startswith("captured")) == sorted(f"captured turn {i}" for i in range(30))
    assert len(contents) == len(set(contents)) == added + 32
    db.close()


def test_readers_on_threads_while_the_tail_merges_back_down(tmp_path: Path) -> None:
    """Two threads search and list while a writer adds batches of falling sizes (the tail past twice
    its limit merges neighbours, not only the newest two): no error, every search sees whole
    batches (its snapshot's), and the end reads as after a checkpoint (held)."""
    db = engramdb.open(tmp_path / "s", tuning=Tuning(checkpoint_rows=1_000_000, background=False))
    stop = threading.Event()
    errors: list[BaseException] = []
    torn: list[int] = []

    def read() -> None:
        while not stop.is_set():
            try:
                counts: dict[str, int] = {}
                for m in db.list("n", limit=100_000):
                    batch = m.content.split()[1]
                    counts[batch] = counts.get(batch, 0) + 1
                torn.extend(n for b, n in counts.items() if n != 60 - int(b[1:]))
                db.search("apple golf", namespace="n", k=5, strategy="bm25", log=False)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for b in range(59):
        db.add_many([{"content": f"{WORDS[(b + i) % len(WORDS)]} b{b} row {i}", "namespace": "n"}
                     for i in range(60 - b)])
    stop.set()
    for t in threads:
        t.join()
    assert errors == [] and torn == []
    before = [(h.memory.id, h.score) for h in db.search("apple golf b3", namespace="n", k=20, strategy="bm25", log=False)]
    db.admin.checkpoint()
    after = [(h.memory.id, h.score) for h in db.search("apple golf b3", namespace="n", k=20, strategy="bm25", log=False)]
    assert before == after and len(db) == sum(60 - b for b in range(59))
    db.close()

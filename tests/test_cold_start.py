"""store/cold_start.py: what an open does for a new process's first calls, and what it must not
do (found by the stop 44 adversary pass): collect a store's own objects into the old generation
(closed stores then lived until a full collection), collect when the program switched the
collector off, or call a caller's embedder's method because of its name. And the fork hooks'
copy of their live sets while other threads open stores (spaces/forking.py `members`)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import engramdb
from engramdb.spaces.forking import members
from engramdb.spaces.hashing import HashingEmbedder
from engramdb.spaces.profiles import embedders_for, profile_schema


def test_closed_stores_are_freed_by_the_young_collections() -> None:
    refs = []
    for _ in range(30):
        db = engramdb.open()
        db.add("a memory about coffee", namespace="n")
        db.close()
        refs.append(weakref.ref(db))
        del db
    gc.collect(1)  # not a full collection: the stores must not have been made old by their opens
    alive = sum(r() is not None for r in refs)
    assert alive <= 10, f"{alive} of 30 closed stores still alive after a middle-generation collection"


CHILD = """
import gc, json, time
gc.disable()
young = [{} for _ in range(200_000)]  # the program's own young objects
seen = []
gc.callbacks.append(lambda phase, info: seen.append(info["generation"]) if phase == "start" else None)
import engramdb
t = time.perf_counter()
db = engramdb.open()
db.add("first", namespace="n")
db.close()
print(json.dumps({"collections": seen, "enabled": gc.isenabled()}))
"""


def test_an_open_never_collects_when_the_program_switched_the_collector_off() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout) == {"collections": [], "enabled": False}


class _Own(HashingEmbedder):
    """A caller's embedder with a method named like the package's hook, meaning something else."""

    def prepare(self, texts: list[str]) -> None:
        raise RuntimeError("a caller's method, not the store's to call")


def test_a_callers_embedder_named_prepare_is_left_alone() -> None:
    embedders = dict(embedders_for(profile_schema("default")))
    main = profile_schema("default").main
    embedders[main] = _Own(dim=embedders[main].dim)
    with engramdb.open(schema=profile_schema("default"), embedders=embedders) as db:
        assert db.add("kept", namespace="n").content == "kept"


class _Changing:
    """A set whose first copy is interrupted, as a WeakSet's is when another thread adds to it."""

    def __init__(self, items: list[int]) -> None:
        self.items, self.tries = items, 0

    def __iter__(self) -> Iterator[int]:
        self.tries += 1
        if self.tries == 1:
            yield self.items[0]
            raise RuntimeError("Set changed size during iteration")
        yield from self.items


def test_a_fork_hook_copies_a_set_that_changed_while_it_was_copied() -> None:
    live: Any = _Changing([1, 2, 3])
    assert members(live) == [1, 2, 3] and live.tries == 2


def test_a_writer_that_only_added_leaves_a_bm25_index_its_readers_adopt(tmp_path: Path) -> None:
    """A bulk import (no search in the writer's process) closed: its readers adopt the saved BM25
    instead of indexing the namespace in memory at their first search (375 ms at 100,000 in each
    hook process). A later writer that adds a few rows leaves the file (a reader indexes them in
    memory); one that adds more than LEXICAL_LAG brings it up to them."""
    from engramdb.index.registry import LEXICAL_LAG

    path = tmp_path / "m"
    side = path / "index" / "bm25-lexical.json"

    def covered() -> int:
        return int(json.loads(side.read_text())["covered"])

    with engramdb.open(path) as db:
        db.add_many([{"content": f"note {i} about apples and pears", "namespace": "n"} for i in range(300)])
    assert covered() == 300
    with engramdb.open(path, read_only=True) as reader:
        assert [h.memory.content for h in reader.search("note 7 apples", namespace="n", k=1, log=False)] == \
            ["note 7 about apples and pears"]
        assert reader.stats()["index_files"].get("bm25-lexical") == "adopted", reader.stats()["index_files"]
    quiet = engramdb.Tuning(background=False)  # no warm job: only the close's own rule acts
    with engramdb.open(path, tuning=quiet) as db:
        db.add_many([{"content": f"later {i} about plums", "namespace": "n"} for i in range(40)])
    assert covered() == 300  # 40 rows behind: left for the readers
    with engramdb.open(path, read_only=True) as reader:
        assert [h.memory.content for h in reader.search("later 3 plums", namespace="n", k=1, log=False)] == \
            ["later 3 about plums"]
        assert reader.stats()["index_files"].get("bm25-lexical") == "adopted", reader.stats()["index_files"]
    with engramdb.open(path, tuning=quiet) as db:
        db.add_many([{"content": f"batch {i} about figs", "namespace": "n"} for i in range(LEXICAL_LAG + 1)])
    assert covered() == 340 + LEXICAL_LAG + 1

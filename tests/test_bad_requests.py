"""Bad requests are refused with an error naming the argument and the value, and change nothing;
sizes follow the store, never the caller's k."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb import InvalidMemory, StoreError
from engramdb.retrieval import strategies

STRATEGIES = [None, "exact", "bm25", "hybrid", "multi_space", "pipeline"]


@pytest.mark.parametrize("k", [2.7, "3", True, 0, -1, None])
def test_k_must_be_an_int_of_at_least_one(k: object) -> None:
    db = engramdb.open()
    db.add("cats sleep in boxes", namespace="n")
    with pytest.raises(ValueError, match=r"k must be an int >= 1, got " + repr(k).replace("(", r"\(")):
        db.search("cats", namespace="n", k=k)  # type: ignore[arg-type]
    assert [h.memory.content for h in db.search("cats", namespace="n", k=np.int64(1))] == ["cats sleep in boxes"]


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")
def test_a_huge_k_returns_what_exists_with_memory_bounded_by_the_store() -> None:
    # the peak of this process's own memory: /proc's VmHWM (ru_maxrss keeps the parent's peak across
    # the fork and exec that started it, so a test process grown to a GB would read as one here)
    code = """
import resource, engramdb
db = engramdb.open()
db.add_many([{"content": f"memory {i} about cats", "namespace": "n"} for i in range(5)])
for s in [None, "exact", "bm25", "hybrid", "multi_space", "pipeline"]:
    hits = db.search("cats", namespace="n", k=10**9, strategy=s, stages={"sparse": 10**9, "dense": 10**9} if s == "pipeline" else None)
    assert len(hits) == 5, (s, len(hits))
try:
    with open("/proc/self/status") as f:
        print(next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")))
except OSError:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(got.stdout) < 1_000_000  # KiB: well under a GB (k = 10**9 took 22 GB before)


def test_a_method_that_fails_is_named_and_an_empty_answer_from_failures_raises(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    db = engramdb.open()
    db.add("cats sleep in boxes", namespace="n")

    def broken(*a: object, **kw: object) -> None:
        raise MemoryError("std::bad_alloc")

    monkeypatch.setattr(strategies, "bm25_found", broken)  # fault injection at the retrieval seam
    with caplog.at_level(logging.WARNING, logger="engramdb.search"), \
            pytest.raises(StoreError, match=r"the search failed: bm25: MemoryError: std::bad_alloc"):
        db.search("cats", namespace="n", strategy="bm25")
    hits = db.search("cats", namespace="n", strategy="rrf")  # the vector method still answers
    assert hits and hits.stats.failed == {"bm25": "MemoryError: std::bad_alloc"}
    assert "bm25" in caplog.text


def test_records_are_refused_whole_with_the_field_named() -> None:
    db = engramdb.open(tuning=engramdb.Tuning(max_content_bytes=1_000))
    db.add("kept", namespace="n", id="keep")
    cases = [
        ({"content": None, "namespace": "n"}, r"records\[0\]: content is required \(a non-empty string\), got None"),
        ({"content": "x", "namespace": None}, r"records\[0\]: namespace is required"),
        ({"content": "a\udcff b", "namespace": "n"}, r"records\[0\]: content holds a character UTF-8 cannot encode"),
        ({"content": "x", "namespace": "n", "role": "r\udc80"}, r"records\[0\]: role holds a character"),
        ({"content": "x" * 1_001, "namespace": "n"}, r"records\[0\]: content is 1,001 bytes of UTF-8; the limit is 1,000"),
        ({"content": "x", "namespace": "n", "vectors": {"dnese": np.ones(384)}},
         r"records\[0\]: vectors has unknown space\(s\) \['dnese'\]; this store's spaces are \['dense'"),
    ]
    for bad, match in cases:
        with pytest.raises(InvalidMemory, match=match):
            db.add_many([{"content": "fine", "namespace": "n"}, bad][1:])
        with pytest.raises(InvalidMemory):
            db.add_many([{"content": "fine", "namespace": "n"}, bad])  # all or nothing
    with pytest.raises(InvalidMemory, match=r"^vectors has unknown space\(s\) \['nope'\]"):
        db.update("keep", vectors={"nope": np.ones(4)})
    with pytest.raises(InvalidMemory, match="content holds a character"):
        db.update("keep", content="\udcff")
    assert len(db) == 1 and db.get("keep").version == 1  # type: ignore[union-attr]


def test_opening_a_plain_file_names_it(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("mine")
    with pytest.raises(StoreError, match=f"{f} is a file, not a store folder"):
        engramdb.open(f)
    assert f.read_text() == "mine"


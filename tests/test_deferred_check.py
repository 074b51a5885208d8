"""The deferred check of a segment's vector columns (storage/checksum.py): a store opens after
checking every byte but the vectors, the vectors are checked on a background thread, and nothing
reads a vector before that check passed. A damaged vector byte is an error naming the file at
the first search (never scores), and every path that copies vectors (compaction, purge, export,
backup) refuses them too; `get` of the intact records still answers."""

from __future__ import annotations

import json
from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb.spaces.schema import Schema, Space

SCHEMA = Schema([Space("dense", "dense", 384, "cosine")])
N = 2_000  # 2,000 x 384 float32 = 3 MB of vectors: above the 1 MiB worth deferring


def open_store(path: Path, **kw: object) -> engramdb.Store:
    return engramdb.open(path, schema=SCHEMA, embedders={}, **kw)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, np.ndarray, dict[str, object]]:
    path = tmp_path / "s"
    x = np.random.default_rng(0).standard_normal((N, 384)).astype(np.float32)
    with open_store(path) as db:
        db.add_many([{"content": f"memory {i}", "namespace": "n", "id": f"m{i}", "vectors": {"dense": x[i]}}
                     for i in range(N)])
    entry = json.loads((path / "manifest.json").read_text())["segments"][0]
    assert "deferred" in entry and entry["deferred"]["ranges"]
    return path, x, entry


def flip(path: Path, at: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0x10
    path.write_bytes(bytes(raw))


def test_an_intact_store_answers_as_an_eagerly_checked_one(store: tuple[Path, np.ndarray, dict[str, object]]) -> None:
    path, x, _ = store
    with open_store(path, read_only=True) as db:
        hits = db.search(x[7], namespace="n", k=3, strategy="exact")
        assert hits[0].id == "m7" and hits[0].score > 0.999
        assert engramdb.verify(path)["ok"]


def test_a_damaged_vector_byte_fails_the_first_search_never_scores(store: tuple[Path, np.ndarray, dict[str, object]]) -> None:
    path, x, entry = store
    start, size = entry["deferred"]["ranges"][0]  # type: ignore[index]
    flip(path / entry["file"], start + size // 2)  # type: ignore[operator]
    with open_store(path, read_only=True) as db:  # opens: everything a get reads is intact
        m = db.get("m5")
        assert m is not None and m.content == "memory 5"
        for _ in range(2):  # and stays refused
            with pytest.raises(engramdb.CorruptFile, match=f"{entry['file']} is damaged: its vector columns"):
                db.search(x[5], namespace="n", k=3, strategy="exact")
    assert not engramdb.verify(path)["ok"]
    with open_store(path, read_only=True, salvage=True) as db:  # salvage checks every byte at open
        assert db.stats()["salvage"] and len(db) == 0
    db = open_store(path)
    db.add("one more", namespace="n", id="extra", vectors={"dense": x[0]})
    db.admin.checkpoint()  # two segments: compaction has something to merge
    files = sorted(p.name for p in path.iterdir())
    with pytest.raises(engramdb.CorruptFile):
        db.admin.compact()  # a rewrite never copies damaged vectors into a fresh file
    with pytest.raises(engramdb.CorruptFile):
        db.purge("m3")
    assert sorted(p.name for p in path.iterdir()) == files and db.get("m3") is not None  # nothing changed
    with pytest.raises(engramdb.CorruptFile):
        db.admin.export(path.parent / "out.arrow")
    with pytest.raises(engramdb.StoreError):
        db.admin.backup(path.parent / "copy")
    db.close()


def test_a_damaged_byte_outside_the_vectors_is_refused_at_open(store: tuple[Path, np.ndarray, dict[str, object]]) -> None:
    path, _, entry = store
    start, _ = entry["deferred"]["ranges"][0]  # type: ignore[index]
    flip(path / entry["file"], start - 1)  # the byte before the vectors: other columns' data or metadata
    with pytest.raises(engramdb.CorruptFile, match="all but the vector columns"):
        open_store(path, read_only=True)


FUZZ = """
import json, shutil, sys
from pathlib import Path
import numpy as np
import engramdb
from engramdb.spaces.schema import Schema, Space
src, work, victim, positions = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
schema = Schema([Space("dense", "dense", 384, "cosine")])
x = np.random.default_rng(0).standard_normal((2000, 384)).astype(np.float32)
out = []
for pos in positions:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    raw = bytearray((work / victim).read_bytes())
    raw[pos] ^= 0x04
    (work / victim).write_bytes(bytes(raw))
    try:
        db = engramdb.open(work, schema=schema, embedders={}, read_only=True)
    except engramdb.StoreError as exc:
        out.append([pos, "refused at open" if victim in str(exc) else "unnamed: " + str(exc)]); continue
    try:
        got = [db.get(f"m{i}") for i in range(0, 2000, 97)]
        same = all(m is not None and m.content == f"memory {i}" for m, i in zip(got, range(0, 2000, 97)))
        hits = db.search(x[11], namespace="n", k=3, strategy="exact")
        out.append([pos, "served" if same and hits[0].id == "m11" and hits[0].score > 0.999 else "ALTERED"])
    except engramdb.CorruptFile as exc:
        out.append([pos, ("refused at first use" if same else "ALTERED") if victim in str(exc) else "unnamed"])
    except Exception as exc:
        out.append([pos, "RAISED " + type(exc).__name__ + ": " + str(exc)])
print(json.dumps(out))
"""


def test_flipped_bytes_anywhere_are_refused_at_open_or_at_first_use(store: tuple[Path, np.ndarray, dict[str, object]],
                                                                    tmp_path: Path) -> None:
    """60 one-byte flips over the whole segment, each opened in a child process (a crash would
    show as its death): refused at open (outside the vectors), or the records served intact and
    the first search refused (inside them); never altered rows or scores."""
    import subprocess
    import sys

    path, _, entry = store
    size = (path / str(entry["file"])).stat().st_size
    positions = sorted(set(np.random.default_rng(1).integers(0, size, 60).tolist()))
    done = subprocess.run([sys.executable, "-c", FUZZ, str(path), str(tmp_path / "work"), str(entry["file"]),
                           json.dumps(positions)], check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = {p: r for p, r in json.loads(done.stdout)}
    assert sorted(outcomes) == positions
    bad = {p: r for p, r in outcomes.items() if r not in ("refused at open", "refused at first use")}
    assert not bad, bad
    assert "refused at first use" in outcomes.values() and "refused at open" in outcomes.values()


def test_a_writer_closes_whole_when_its_warmed_index_meets_damaged_vectors(
        store: tuple[Path, np.ndarray, dict[str, object]]) -> None:
    """The worker warms the writer's indexes at open; at close they are brought up to the segments,
    whose vectors are damaged: close still folds the WAL and releases the folder (the indexes are
    derived: not saved, with a warning), and the next writer opens."""
    path, x, entry = store
    start, size = entry["deferred"]["ranges"][0]  # type: ignore[index]
    flip(path / entry["file"], start + size // 2)  # type: ignore[operator]
    db = open_store(path)
    db.add("one more", namespace="n", id="extra", vectors={"dense": x[0]})
    assert db.admin.settle(timeout=60)
    db.close()  # raised CorruptFile from the index save before
    again = open_store(path)
    assert again.get("extra") is not None
    again.close()

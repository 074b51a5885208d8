"""backup: a full-fidelity copy (every version, edge, archived text, the known_at history) taken
while a writer goes on, checked file by file; opening the copy is the restore."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pyarrow as pa
import pytest
from engramdb import StoreError, Tuning
from engramdb.cli import main as cli_main
from engramdb.storage import Engine


def every_row(folder: Path, namespace: str) -> pa.Table:
    """All rows of a namespace (every version, every column) and nothing else, through storage's seam."""
    engine = Engine(folder, schema=None, read_only=True, tuning=Tuning())
    parts = [seg.table.filter(pa.array(np.asarray(seg.ns_index) == seg.ns_codes.get(namespace, -1)))
             for seg in engine.view.segments]
    engine.close()
    return pa.concat_tables(parts).combine_chunks().sort_by([("id", "ascending"), ("version", "ascending")])


def history(db: engramdb.Store, t: datetime) -> Any:
    edges = sorted((e.src, e.dst, e.type) for i in range(30) for e in db.edges(f"n{i}", direction="both",
                                                                                include_forgotten=True))
    then = [h.id for h in db.search("memory 3", namespace="n", k=30, known_at=t, strategy="exact")]
    return edges, then, {f"n{i}": db.lifecycle.is_archived(f"n{i}") for i in range(30)}


def test_a_backup_taken_while_a_writer_runs_restores_equal(tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "copy"
    db = engramdb.open(src, tuning=Tuning(checkpoint_rows=64))
    db.add_many([{"content": f"memory {i}", "namespace": "n", "id": f"n{i}"} for i in range(30)])
    time.sleep(0.01)
    cut = datetime.now(timezone.utc)
    time.sleep(0.01)
    db.update("n1", content="memory 1, edited")
    db.forget("n2")
    db.supersede("n3", "n4")
    db.link("n5", "n6", "CAUSED_BY", confidence=0.9)
    db.unlink("n5", "n6", "CAUSED_BY")
    db.link("n7", "n8", "RELATED_TO", confidence=0.8)
    db.admin.checkpoint()
    db.lifecycle.archive(cut, namespace="n")
    db.purge("n9")
    db.update("n1", content="memory 1, in the WAL")  # acknowledged, not yet in a file
    stop = threading.Event()

    def writer() -> None:  # another namespace, through the same handle, throughout the backup
        i = 0
        while not stop.is_set():
            db.add_many([{"content": f"w {i + j}", "namespace": "w"} for j in range(50)])
            i += 50

    w = threading.Thread(target=writer)
    w.start()
    try:
        time.sleep(0.05)
        report = db.admin.backup(dest)
    finally:
        stop.set()
        w.join()
    assert report["files"] >= 4 and report["bytes"] > 0
    db.close()
    assert engramdb.verify(dest)["ok"]
    assert every_row(dest, "n").equals(every_row(src, "n"))  # every version of every memory, every column
    restored = engramdb.open(dest)
    original = engramdb.open(src, read_only=True)
    assert history(restored, cut) == history(original, cut)  # edges (unlinked too), known_at, archive marks
    assert restored.get("n1").content == "memory 1, in the WAL"  # type: ignore[union-attr]
    w_copy = {r["content"] for r in every_row(dest, "w").to_pylist()}
    assert w_copy and w_copy <= {r["content"] for r in every_row(src, "w").to_pylist()}  # a moment of the writer
    restored.add("after the restore", namespace="n")  # and the copy takes writes
    restored.close()
    original.close()


def test_backup_refuses_a_used_destination_and_a_damaged_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "src"
    with engramdb.open(src) as db:
        db.add("one", namespace="n")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "photo.jpg").write_bytes(b"x")
    with pytest.raises(StoreError, match="is not an engramdb store"):
        engramdb.backup(src, tmp_path / "used")
    assert cli_main(["backup", "--path", str(src), str(tmp_path / "copy"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["committed_rows"] == 1
    assert cli_main(["verify", "--path", str(tmp_path / "copy")]) == 0
    seg = next(src.glob("seg-*.arrow"))
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 1
    seg.write_bytes(bytes(data))
    with pytest.raises(engramdb.CorruptFile, match=seg.name):
        engramdb.backup(src, tmp_path / "copy2")
    capsys.readouterr()
    assert cli_main(["verify", "--path", str(src), "--json"]) == 1
    assert "damaged" in json.loads(capsys.readouterr().out)["files"][seg.name]


def test_a_backup_carries_the_access_log_and_leaves_a_damaged_log_file_out(tmp_path: Path) -> None:
    src = tmp_path / "src"
    with engramdb.open(src) as db:
        db.add_many([{"id": f"m{i}", "content": f"violin lessons {i}", "namespace": "n"} for i in range(4)])
        hits = db.search("violin lessons", namespace="n", k=2)
        db.feedback(hits.query_id or "", used=[hits[0].id])
        db.importance.refresh()
        db.admin.checkpoint()
        extra = db.search("violin", namespace="n", k=1)  # a second log file
        db.admin.checkpoint()
        before = db.importance(hits[0].id)
    files = sorted((src / "access").iterdir())
    damaged = next(p for p in files if p.name.startswith("access-") and "000000000001" not in p.name[7:19])
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    report = engramdb.backup(src, tmp_path / "copy")
    assert report["damaged_logs_left_out"] == [damaged.name] and report["logs"] == len(files) - 1
    with engramdb.open(tmp_path / "copy") as copy:
        copy.importance.refresh()  # the ratings are derived: replayed from the copied log
        assert copy.importance(hits[0].id).used == before.used == 1
        with pytest.raises(ValueError, match="no logged search"):
            copy.feedback(extra.query_id or "", used=["m0"])  # its rows were in the damaged file

"""Issue 24, the adversary's pass over the hardened store: 16 ways it still lost, leaked or
mis-served acknowledged memories once the first fixes were in (bench/RELIABILITY.md lists them).
Each test is the attack, reduced; each failed before its fix."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import warnings
from pathlib import Path

import engramdb
import pytest
from engramdb import StoreError
from engramdb.storage.wal import HEADER_MAX, read_header


def live_wal(folder: Path) -> Path:
    return folder / json.loads((folder / "manifest.json").read_text())["wal"]


def in_the_wal(folder: Path, texts: list[str]) -> list[str]:
    db = engramdb.open(folder)
    ids = [db.add(t, namespace="n").id for t in texts]
    db.close(checkpoint=False)  # acknowledged, in the WAL only
    return ids


def flip_manifest(folder: Path) -> None:
    data = bytearray((folder / "manifest.json").read_bytes())
    data[len(data) // 2] ^= 0x20
    (folder / "manifest.json").write_bytes(bytes(data))


def test_a_wal_whose_header_length_changed_is_refused_then_salvaged(tmp_path: Path) -> None:
    """One flipped bit in the header's length field read as 'a header cut short' reset the log."""
    folder = tmp_path / "s"
    ids = in_the_wal(folder, [f"acknowledged memory {i}" for i in range(5)])
    wal = live_wal(folder)
    data = bytearray(wal.read_bytes())
    length = struct.unpack_from("<I", data, 8)[0]
    struct.pack_into("<I", data, 8, next(length | 1 << b for b in range(8, 16) if (length | 1 << b) + 16 > len(data)))
    wal.write_bytes(bytes(data))
    for read_only in (False, True):
        with pytest.raises(StoreError, match="length field is damaged"):
            engramdb.open(folder, read_only=read_only)
    assert wal.read_bytes() == bytes(data)  # nothing reset
    assert not engramdb.verify(folder)["ok"]
    engramdb.repair(folder, accept_loss=True)  # the frames after the damaged header are salvaged
    with engramdb.open(folder) as db:
        assert all(db.get(i) is not None for i in ids)


def test_a_torn_last_frame_of_zeros_is_cut_at_open(tmp_path: Path) -> None:
    """A file system that extends the file before the data lands leaves a frame header then zeros."""
    folder = tmp_path / "s"
    ids = in_the_wal(folder, ["one", "two"])
    size = live_wal(folder).stat().st_size
    in_the_wal(folder, ["the write a crash tore"])
    data = bytearray(live_wal(folder).read_bytes())
    data[size + 12:] = bytes(len(data) - size - 12)
    live_wal(folder).write_bytes(bytes(data))
    with engramdb.open(folder) as db:
        assert all(db.get(i) is not None for i in ids) and len(db) == 2


def test_an_edited_journal_deletes_no_file_but_data_debris(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    with engramdb.open(folder) as db:
        mid = db.add("a memory that must stay", namespace="n").id
    before = {p.name for p in folder.iterdir()}
    with open(folder / "journal.log", "a") as fh:
        fh.write("engramdb.store\nmanifest.prev.json\nmanifest.json\n")
    with engramdb.open(folder) as db:
        assert db.get(mid) is not None
    assert before - {p.name for p in folder.iterdir()} <= {"journal.log"}


@pytest.mark.parametrize("how", ["cp -r", "cp -al"])
def test_a_copied_store_takes_an_id_of_its_own(tmp_path: Path, how: str) -> None:
    """`cp -r` made two stores with one id, so a log copied from one to the other was taken;
    `cp -al` shared the live log's inode, so each served the other's writes."""
    a, b = tmp_path / "A", tmp_path / "B"
    with engramdb.open(a) as db:
        db.add("shared base memory", namespace="n")
    subprocess.run(["cp", "-r" if how == "cp -r" else "-al", str(a), str(b)], check=True)
    only_a = in_the_wal(a, ["store A's alone"])[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        only_b = in_the_wal(b, ["store B's alone"])[0]
    assert json.loads((a / "engramdb.store").read_text())["store_id"] != \
        json.loads((b / "engramdb.store").read_text())["store_id"]
    with engramdb.open(a, read_only=True) as db:
        assert db.get(only_b) is None and db.get(only_a) is not None
    shutil.copyfile(live_wal(a), b / live_wal(b).name)  # A's live log put in place of B's
    with pytest.raises(StoreError, match="another store's write-ahead log|holds the header of"):
        engramdb.open(b)


def test_a_forked_child_cannot_write_through_its_parents_handle(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    db = engramdb.open(folder)
    db.add("before the fork", namespace="n")
    note = tmp_path / "child"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            db.add("by the child", namespace="n")
            note.write_text("WROTE")
        except StoreError as exc:
            note.write_text(f"REFUSED {exc}")
        db.close()  # writes nothing of the parent's
        os._exit(0)
    os.waitpid(pid, 0)
    assert note.read_text().startswith("REFUSED") and "forked" in note.read_text()
    mine = db.add("by the parent", namespace="n").id
    db.close()
    with engramdb.open(folder, read_only=True) as again:
        assert again.get(mine) is not None and len(again) == 2


def test_a_reader_refuses_a_rolled_back_manifest(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    with engramdb.open(folder, tuning=engramdb.Tuning(checkpoint_rows=8)) as db:
        db.add("first", namespace="n")
        db.admin.checkpoint()
        db.add_many([{"content": f"bulk {i}", "namespace": "n"} for i in range(10)])  # straight to a segment
    shutil.copyfile(folder / "manifest.prev.json", folder / "manifest.json")
    with pytest.raises(StoreError, match="older than files beside it"):
        engramdb.open(folder, read_only=True)


def test_a_backup_whose_marker_was_lost_keeps_its_files_through_a_repair(tmp_path: Path) -> None:
    """The copy's files carry the source's id; a marker made again had no lineage, and the repair
    of a damaged manifest then left every segment out as another store's."""
    a, b = tmp_path / "A", tmp_path / "B"
    with engramdb.open(a) as db:
        ids = db.add_many([{"content": f"committed {i}", "namespace": "n"} for i in range(20)])
    engramdb.backup(a, b)
    (b / "engramdb.store").unlink()
    with engramdb.open(b) as db:  # makes the marker again
        assert db.get(ids[0]) is not None
    flip_manifest(b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with engramdb.open(b) as db:
            assert all(db.get(i) is not None for i in ids)


def test_a_swapped_in_marker_never_decides_whose_store_it_is(tmp_path: Path) -> None:
    a, x = tmp_path / "A", tmp_path / "X"
    with engramdb.open(a) as db:
        ids = db.add_many([{"content": f"committed {i}", "namespace": "n"} for i in range(20)])
    with engramdb.open(x) as db:
        db.add("another store", namespace="n")
    own = json.loads((a / "manifest.json").read_text())["store_id"]
    shutil.copyfile(x / "engramdb.store", a / "engramdb.store")
    with pytest.raises(StoreError, match="engramdb.store says store"):
        engramdb.open(a)
    engramdb.repair(a)
    assert json.loads((a / "manifest.json").read_text())["store_id"] == own
    assert json.loads((a / "engramdb.store").read_text())["store_id"] == own
    flip_manifest(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with engramdb.open(a) as db:
            assert all(db.get(i) is not None for i in ids)


def test_a_repair_stops_before_leaving_out_another_ids_sound_files(tmp_path: Path) -> None:
    a, x = tmp_path / "A", tmp_path / "X"
    with engramdb.open(a) as db:
        db.add("mine", namespace="n")
    with engramdb.open(x, tuning=engramdb.Tuning(checkpoint_rows=8)) as db:
        db.add_many([{"content": f"theirs {i}", "namespace": "n"} for i in range(10)])
    theirs = max(x.glob("seg-*.arrow"))
    shutil.copyfile(theirs, a / "seg-000090.arrow")
    (a / "manifest.json").unlink()
    with pytest.raises(StoreError, match="seg-000090.arrow says it is store"):
        engramdb.repair(a)
    assert (a / "seg-000090.arrow").exists()


def test_verify_judges_the_data_not_the_derived_indexes(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    with engramdb.open(folder) as db:
        db.add_many([{"content": f"memory {i} about apples", "namespace": "n"} for i in range(50)])
        db.search("apples", namespace="n")
    side = next((folder / "index").glob("bm25-*.json"))
    data = side.with_suffix(".arrow")
    data.write_bytes(data.read_bytes()[:-10])  # what a kill between the data file and its sidecar leaves
    report = engramdb.verify(folder)
    assert report["ok"] and "damaged" in report["derived"][f"index/{side.name}"]


def test_a_lock_that_is_a_link_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    with engramdb.open(folder) as db:
        db.add("x", namespace="n")
    victim = tmp_path / "notes.txt"
    victim.write_text("ten years of notes\n")
    (folder / "LOCK").unlink()
    (folder / "LOCK").symlink_to(victim)
    with pytest.raises(StoreError, match="LOCK is a symbolic link|is a symbolic link"):
        engramdb.open(folder)
    assert victim.read_text() == "ten years of notes\n"


def test_a_bare_header_log_in_place_of_the_stores_own_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "A", tmp_path / "B"
    with engramdb.open(a) as db:
        db.add("a base", namespace="n")
        db.admin.checkpoint()
    in_the_wal(a, ["acknowledged in A's log"])
    in_the_wal(b, ["B's memory"])
    raw = live_wal(b).read_bytes()
    live_wal(a).write_bytes(b"EGWAL001" + raw[read_header(raw[:HEADER_MAX], "b")[1]:])  # an older engramdb's log
    with pytest.raises(StoreError, match="bare header"):
        engramdb.open(a)


def test_a_purge_deletes_set_aside_files_that_hold_what_it_purged(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    with engramdb.open(folder) as db:
        db.add("keep me", namespace="other")
        db.add("victim's first", namespace="victim", id="victim-1")
    (folder / "spool").mkdir(exist_ok=True)
    damaged = folder / "spool" / "00000000000000000001-1-deadbeef.damaged"
    damaged.write_text(json.dumps({"records": json.dumps([{"id": "victim-1", "namespace": "victim",
                                                            "content": "the victim's secret"}])}) + "garbage")
    unrelated = folder / "spool" / "00000000000000000002-1-deadbeef.damaged"
    unrelated.write_text('{"records": "[{\\"namespace\\": \\"other\\"}]"}garbage')
    with engramdb.open(folder) as db:
        db.purge(namespace="victim")
    assert not damaged.exists() and unrelated.exists()


def test_tools_and_verbs_refuse_another_namespace_or_bad_arguments_by_name(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    m = db.add("base memory about apples", namespace="n", session_id="s")
    bad = "\ud800"
    for call, field in ((lambda: db.purge(namespace=bad), "namespace"), (lambda: db.topics(bad), "namespace"),
                        (lambda: db.topics.themes(bad), "namespace"), (lambda: db.lifecycle.dream(bad), "namespace"),
                        (lambda: db.curiosity(bad), "namespace"), (lambda: db.importance.log(bad), "id"),
                        (lambda: db.feedback(bad, used=[]), "query_id"),
                        (lambda: engramdb.open(str(tmp_path / "x") + bad), "path"),
                        (lambda: db.admin.backup(str(tmp_path / "y") + bad), "dest"),
                        (lambda: engramdb.capture(str(tmp_path / "z") + bad, [{"content": "x", "namespace": "n"}]),
                         "path"),
                        (lambda: engramdb.capture(tmp_path / "c", "abc"), "records")):  # type: ignore[arg-type]
        with pytest.raises((ValueError, TypeError), match=field):
            call()
    db.update(m.id, content="v2")
    with pytest.raises(TypeError, match="merge must be"):
        db.update(m.id, content="v3", expected_version=1, merge=5)  # type: ignore[arg-type]
    for v in ("1", -5, 0, True, 1.5):
        with pytest.raises(TypeError, match="expected_version"):
            db.update(m.id, content="v3", expected_version=v)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no later version was ever written"):
        db.update(m.id, content="v3", expected_version=9)
    assert db.get(m.id).version == 2  # type: ignore[union-attr]
    db.close()

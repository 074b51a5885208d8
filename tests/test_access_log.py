"""The append-only Arrow log under the access log (E1): batching, seq order across reopens, crashes,
damaged files, rotation and purge."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from engramdb.storage.access_log import ACCESS_SCHEMA, access_log
from engramdb.storage.arrow_log import LOG_DIR, ArrowLog

AT = datetime(2026, 1, 2, tzinfo=timezone.utc)


def row(q: str, mid: str | None, kind: str = "search", ns: str = "n") -> dict[str, object]:
    return {"kind": kind, "query_id": q, "namespace": ns, "session_id": None, "at": AT, "query": f"about {q}",
            "strategy": "hybrid", "memory_id": mid, "rank": 1, "score": 0.5, "used": kind != "search"}


def test_rows_are_buffered_written_in_batches_and_read_in_seq_order(tmp_path: Path) -> None:
    log = access_log(tmp_path, writable=True, flush_rows=4)
    assert log.append([row("q1", "a"), row("q1", "b"), row("q1", "c")]) == [1, 2, 3]
    assert not (tmp_path / LOG_DIR).exists()  # three rows wait in the buffer
    assert log.read().column("memory_id").to_pylist() == ["a", "b", "c"]  # and are read from it
    log.append([row("q2", "d")])  # the fourth: one file
    assert len(list((tmp_path / LOG_DIR).iterdir())) == 1
    log.append([row("q3", "e")])
    log.flush()
    again = access_log(tmp_path, writable=True)
    assert again.next_seq == 6  # seq goes on after a reopen
    assert again.read().column("seq").to_pylist() == [1, 2, 3, 4, 5]
    assert again.read(since=4).column("memory_id").to_pylist() == ["d", "e"]


def test_a_read_only_log_refuses_appends(tmp_path: Path) -> None:
    with pytest.raises(PermissionError):
        access_log(tmp_path, writable=False).append([row("q", "a")])


def test_a_damaged_file_is_left_out_and_named_never_served(tmp_path: Path) -> None:
    log = access_log(tmp_path, writable=True, flush_rows=2)
    log.append([row("q1", "a"), row("q1", "b")])
    log.append([row("q2", "c"), row("q2", "d")])
    first = min((tmp_path / LOG_DIR).iterdir())
    data = bytearray(first.read_bytes())
    data[len(data) // 2] ^= 0xFF
    first.write_bytes(bytes(data))
    again = access_log(tmp_path, writable=True)
    assert again.read().column("memory_id").to_pylist() == ["c", "d"]
    assert again.describe()["damaged"] == {first.name: "corrupt (CRC-32 mismatch)"}
    assert first.exists()  # kept for whoever wants to look at it


def test_rotation_merges_files_and_a_crash_between_never_doubles_a_row(tmp_path: Path) -> None:
    log = ArrowLog(tmp_path, "access", ACCESS_SCHEMA, writable=True, flush_rows=1, max_files=3)
    for i in range(3):
        log.append([row(f"q{i}", f"m{i}")])
    first = min((tmp_path / LOG_DIR).iterdir())
    kept = first.read_bytes()
    for i in range(3, 7):
        log.append([row(f"q{i}", f"m{i}")])
    assert not first.exists() and len(list((tmp_path / LOG_DIR).iterdir())) <= 4  # merged when more than three
    assert log.read().column("memory_id").to_pylist() == [f"m{i}" for i in range(7)]
    first.write_bytes(kept)  # a rotation cut short after writing the merged file: row 1 is in two files
    again = ArrowLog(tmp_path, "access", ACCESS_SCHEMA, writable=True)
    assert again.read().column("seq").to_pylist() == list(range(1, 8))  # each seq once


def test_purge_rewrites_only_the_files_holding_the_ids(tmp_path: Path) -> None:
    log = access_log(tmp_path, writable=True, flush_rows=2)
    log.append([row("q1", "secret"), row("q1", "b")])
    log.append([row("q2", "c"), row("q2", "d")])
    untouched = sorted((tmp_path / LOG_DIR).iterdir())[1]
    log.append([row("q3", "secret", kind="feedback")])  # buffered
    assert log.purge("memory_id", {"secret"}) == 2
    assert untouched.exists()
    assert log.read().column("memory_id").to_pylist() == ["b", "c", "d"]
    for p in (tmp_path / LOG_DIR).iterdir():
        assert b"secret" not in p.read_bytes()


def test_a_killed_writer_leaves_whole_files_only(tmp_path: Path) -> None:
    """A process appending as fast as it can is killed: every file left reads whole, and the
    rows it holds are a gapless run from seq 1."""
    script = textwrap.dedent(f"""
        import sys
        from datetime import datetime, timezone
        from pathlib import Path
        from engramdb.storage.access_log import access_log
        log = access_log(Path({str(tmp_path)!r}), writable=True, flush_rows=50)
        at = datetime(2026, 1, 2, tzinfo=timezone.utc)
        i = 0
        while True:
            log.append([{{"kind": "search", "query_id": f"q{{i}}", "namespace": "n", "session_id": None, "at": at,
                          "query": "x", "strategy": "hybrid", "memory_id": f"m{{i}}", "rank": 1, "score": 0.5,
                          "used": False}}])
            i += 1
            if i == 500:
                print("ready", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    log = access_log(tmp_path, writable=True)
    seqs = log.read().column("seq").to_pylist()
    assert len(seqs) >= 450 and seqs == list(range(1, len(seqs) + 1))
    assert log.describe()["damaged"] == {}
    assert log.next_seq == len(seqs) + 1


def test_flipped_bytes_in_a_log_file_never_crash_the_reader(tmp_path: Path) -> None:
    """Every byte position of a log file flipped in turn (sampled), each read in a child process:
    the reader returns the intact rows or leaves the file out, never crashes."""
    (tmp_path / "src").mkdir()
    log = access_log(tmp_path / "src", writable=True, flush_rows=3)
    log.append([row("q1", "a"), row("q1", "b"), row("q1", "c")])
    name = next((tmp_path / "src" / LOG_DIR).iterdir()).name
    raw = (tmp_path / "src" / LOG_DIR / name).read_bytes()
    positions = list(range(0, len(raw), max(1, len(raw) // 40)))
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        from engramdb.storage.access_log import access_log
        for folder in sys.argv[1:]:
            log = access_log(Path(folder), writable=False)
            t = log.read()
            print(t.num_rows, len(log.describe()["damaged"]))
    """)
    folders = []
    for pos in positions:
        d = tmp_path / f"f{pos}" / LOG_DIR
        d.mkdir(parents=True)
        data = bytearray(raw)
        data[pos] ^= 0x5A
        (d / name).write_bytes(bytes(data))
        folders.append(str(d.parent))
    out = subprocess.run([sys.executable, "-c", script, *folders], check=False, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")[: len(folders)]
    assert all(line == "0 1" for line in lines), lines  # every flip caught by the CRC, nothing served


def test_a_log_kept_in_memory_purges_too() -> None:
    log = access_log(None, writable=True, flush_rows=1)
    log.append([row("q1", "a"), row("q1", "b")])
    assert log.purge("memory_id", {"a"}) == 1
    assert log.read().column("memory_id").to_pylist() == ["b"]
    assert isinstance(log.read(), pa.Table)


def test_purge_any_takes_rows_matching_any_column_files_and_buffer_alike(tmp_path: Path) -> None:
    log = access_log(tmp_path, writable=True, flush_rows=2)
    log.append([row("q1", "secret"), row("q1", "b")])  # a file: q1 showed the secret
    log.append([row("q2", None, ns="gone"), row("q3", "c")])  # a file: a search of "gone" that found nothing
    log.append([row("q4", "d"), row("q5", "e")])  # a file holding none of them
    first, second, third = sorted((tmp_path / LOG_DIR).iterdir())
    log.append([row("q6", "f", ns="gone")])  # buffered
    assert log.purge_any({"query_id": {"q1"}, "memory_id": {"secret"}, "namespace": {"gone"}}) == 4
    assert log.read().column("query_id").to_pylist() == ["q3", "q4", "q5"]
    assert not first.exists() and not second.exists() and third.exists()  # only files holding them are rewritten
    for p in (tmp_path / LOG_DIR).iterdir():
        raw = p.read_bytes()
        assert b"secret" not in raw and b"about q2" not in raw and b"gone" not in raw
    with pytest.raises(ValueError, match="no column 'nope'"):
        log.purge_any({"nope": {"x"}})
    assert log.purge_any({"memory_id": set()}) == 0


def test_a_crowded_log_hands_its_merge_to_on_crowded_and_appends_go_on_beside_it(tmp_path: Path) -> None:
    """With `on_crowded` set (a store's worker), a flush that leaves too many files hands `rotate`
    to it instead of merging on the appender's thread; a rotation on another thread while rows
    are appended and read loses none and doubles none; a purge waits for it and no purged row
    survives in the merged file."""
    import threading

    handed: list[object] = []
    log = ArrowLog(tmp_path, "access", ACCESS_SCHEMA, writable=True, flush_rows=1, max_files=3)
    log.on_crowded = handed.append
    for i in range(6):
        log.append([row(f"q{i}", f"m{i}")])
    assert len(handed) >= 1 and len(list((tmp_path / LOG_DIR).iterdir())) == 6  # nothing merged inline
    errors: list[BaseException] = []

    def rotate_many() -> None:
        try:
            for _ in range(20):
                log.rotate()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    th = threading.Thread(target=rotate_many)
    th.start()
    for i in range(6, 200):
        log.append([row(f"q{i}", f"m{i}")])
        if i % 37 == 0:
            got = log.read().column("seq").to_pylist()
            assert got == list(range(1, len(got) + 1))  # every row once, in order, mid-rotation too
    th.join()
    assert not errors
    assert log.read().column("memory_id").to_pylist() == [f"m{i}" for i in range(200)]
    th = threading.Thread(target=rotate_many)
    th.start()
    assert log.purge("memory_id", {"m7", "m150"}) == 2
    th.join()
    log.rotate()
    again = ArrowLog(tmp_path, "access", ACCESS_SCHEMA, writable=True)
    ids = again.read().column("memory_id").to_pylist()
    assert "m7" not in ids and "m150" not in ids and len(ids) == 198


def test_a_due_flush_is_handed_to_on_due_and_the_appender_flushes_past_its_bound(tmp_path: Path) -> None:
    from engramdb.storage.arrow_log import HANDED_ROWS

    log = access_log(tmp_path, writable=True, flush_rows=4)
    handed: list[object] = []
    log.on_due = handed.append
    log.append([row("q1", f"m{i}") for i in range(3)])
    assert handed == [] and log.read().num_rows == 3  # not due yet
    log.append([row("q2", "m9")])
    assert handed == [log.flush] and not list((tmp_path / LOG_DIR).glob("access-*.arrow"))  # handed, not written
    assert log.read().num_rows == 4  # the buffered rows read as they always did
    log.append([row("q3", f"x{i}") for i in range(4 * HANDED_ROWS)])  # the worker never came: the appender writes
    assert len(list((tmp_path / LOG_DIR).glob("access-*.arrow"))) == 1 and log.describe()["buffered"] == 0
    handed[0]()  # a late flush by the worker finds nothing left
    again = access_log(tmp_path, writable=True)
    assert again.read().column("seq").to_pylist() == list(range(1, 5 + 4 * HANDED_ROWS))


def test_a_store_s_worker_writes_the_access_log_and_close_writes_the_rest(tmp_path: Path) -> None:
    import engramdb

    folder = tmp_path / "s"
    with engramdb.open(folder) as db:
        for i in range(60):
            db.add(f"note {i} about the garden and the budget", namespace="n")
        for i in range(40):  # 40 searches of up to 50 hits: past the access log's 1,024 rows
            db.search(f"garden budget {i}", namespace="n", k=50)
        assert db.admin.settle(30)
        written = list((folder / LOG_DIR).glob("access-*.arrow"))
        assert written  # the worker wrote the due rows before the close
    table = access_log(folder, writable=False).read()  # and the close wrote the rest
    assert len(set(table.column("query_id").to_pylist())) == 40
    assert table.column("seq").to_pylist() == list(range(1, table.num_rows + 1))


def test_a_flush_writes_outside_the_buffers_lock_and_loses_no_row_when_its_write_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a flush writes its file (held here on a slow disk), another thread's appends and
    reads go on: the rows being written read once each, in seq order. A write that fails puts
    its rows back before those appended meanwhile, and the next flush writes them all. A purge
    waits for a flush under way: no purged row reaches the disk through it."""
    import threading

    from engramdb.storage import arrow_log

    real_write = arrow_log.write_atomically
    started, release = threading.Event(), threading.Event()
    fail = {"next": False}

    def slow_write(path: Path, raw: bytes) -> None:
        started.set()
        assert release.wait(10), "the test never released the write"
        if fail["next"]:
            fail["next"] = False
            raise OSError(28, "No space left on device")
        real_write(path, raw)

    monkeypatch.setattr(arrow_log, "write_atomically", slow_write)
    log = access_log(tmp_path, writable=True, flush_rows=1_000)
    log.append([row("q0", f"m{i}") for i in range(5)])
    for failing in (False, True):
        started.clear()
        release.clear()
        fail["next"] = failing
        errors: list[BaseException] = []

        def flush(errors: list[BaseException] = errors) -> None:
            try:
                log.flush()
            except OSError as exc:
                errors.append(exc)

        th = threading.Thread(target=flush)
        th.start()
        assert started.wait(10)
        n = log.read().num_rows
        log.append([row("q1", f"during{n}")])  # the flush holds its file's write, not the buffer
        seqs = log.read().column("seq").to_pylist()
        assert seqs == list(range(1, n + 2))  # the rows being written, once each, then the new one
        release.set()
        th.join(10)
        assert not th.is_alive()
        assert [type(e) for e in errors] == ([OSError] if failing else [])
        assert log.read().column("seq").to_pylist() == list(range(1, n + 2))
    assert log.describe()["buffered"] == 7 - 5  # the failed file's row and the one appended beside it
    started.clear()
    release.clear()
    th = threading.Thread(target=log.flush)
    th.start()
    assert started.wait(10)
    purged: list[int] = []
    purger = threading.Thread(target=lambda: purged.append(log.purge("memory_id", {"during5"})))
    purger.start()
    purger.join(0.3)
    assert purger.is_alive()  # the purge waits for the flush under way
    release.set()
    th.join(10)
    purger.join(10)
    assert purged == [1]
    ids = access_log(tmp_path, writable=True).read().column("memory_id").to_pylist()
    assert ids == [f"m{i}" for i in range(5)] + ["during6"]


def _held_disk(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """A log file's write held until the test releases it: (the write started, release it)."""
    from engramdb.storage import arrow_log

    real_write = arrow_log.write_atomically
    started, release = threading.Event(), threading.Event()

    def slow_write(path: Path, raw: bytes) -> None:
        started.set()
        assert release.wait(10), "the test never released the write"
        real_write(path, raw)

    monkeypatch.setattr(arrow_log, "write_atomically", slow_write)
    return started, release


def test_an_append_past_the_bound_never_waits_for_a_flush_under_way(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's flush gives way to the requests beside it; a request whose append finds the buffer
    past its bound must not wait for that flush (it would wait for a job that waits for it): the
    rows stay buffered, and the append after the flush writes them."""
    import threading

    from engramdb.storage import arrow_log

    started, release = _held_disk(monkeypatch)
    log = access_log(tmp_path, writable=True, flush_rows=10)
    log.on_due = lambda flush: None  # a worker that never comes: the appender flushes past the bound
    log.append([row("q0", f"m{i}") for i in range(5)])
    th = threading.Thread(target=log.flush)  # a flush under way (a worker's, held on a slow disk)
    th.start()
    assert started.wait(10)
    log.append([row("q1", f"n{i}") for i in range(10 * arrow_log.HANDED_ROWS)])  # returns: no wait
    assert not release.is_set() and log.describe()["buffered"] == 5 + 10 * arrow_log.HANDED_ROWS
    release.set()
    th.join(10)
    log.append([row("q2", "last")])  # past the bound, no flush under way: written here
    assert log.describe()["buffered"] == 0
    ids = access_log(tmp_path, writable=True).read().column("memory_id").to_pylist()
    assert ids == [f"m{i}" for i in range(5)] + [f"n{i}" for i in range(10 * arrow_log.HANDED_ROWS)] + ["last"]


def test_appends_past_twice_the_bound_wait_for_the_flush_under_way(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Appends past the bound leave the file to a flush under way, but not without end: past twice
    the bound the appender waits for it (an adversary grew a buffer to 490,710 rows, and one file
    to 440,630, with appends faster than files were made)."""
    import threading

    from engramdb.storage import arrow_log

    started, release = _held_disk(monkeypatch)
    log = access_log(tmp_path, writable=True, flush_rows=10)
    cap = 2 * arrow_log.HANDED_ROWS * 10
    log.append([row("q0", "m0")])
    flusher = threading.Thread(target=log.flush)
    flusher.start()
    assert started.wait(10)
    appender = threading.Thread(target=lambda: [log.append([row("q1", f"n{i}")]) for i in range(3 * cap)])
    appender.start()
    appender.join(1.0)
    assert appender.is_alive()  # it waits for the flush under way
    assert log.describe()["buffered"] <= 1 + cap + 1
    release.set()
    flusher.join(10)
    appender.join(10)
    assert not appender.is_alive()
    log.flush()
    got = access_log(tmp_path, writable=True).read().column("memory_id").to_pylist()
    assert got == ["m0"] + [f"n{i}" for i in range(3 * cap)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_never_writes_its_parents_log(tmp_path: Path) -> None:
    """A child forked from the process that made a log drops its own rows at a flush: the files are
    the parent's, whose seqs the child's repeat (a read keeps one row per seq, so one of each pair
    was lost)."""
    log = access_log(tmp_path, writable=True, flush_rows=1_000)
    log.append([row("q0", f"parent{i}") for i in range(3)])
    log.flush()
    log.append([row("q1", "parent-buffered")])
    pid = os.fork()
    if pid == 0:  # the child: append, flush, leave at once
        code = 1
        try:
            log.append([row("q2", f"child{i}") for i in range(5)])
            log.flush()
            code = 0 if log.describe()["buffered"] == 0 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    log.flush()
    ids = access_log(tmp_path, writable=True).read().column("memory_id").to_pylist()
    assert ids == ["parent0", "parent1", "parent2", "parent-buffered"]


def test_a_purge_removes_the_temporary_file_a_killed_flush_left(tmp_path: Path) -> None:
    """A flush killed before its rename leaves `<file>.tmp` holding its rows; a purge removes the
    log's own temporary files (what they hold may be what the purge is for), and no other file."""
    log = access_log(tmp_path, writable=True, flush_rows=1_000)
    log.append([row("q0", "keep"), row("q0", "secret")])
    log.flush()
    folder = tmp_path / LOG_DIR
    debris = folder / "access-000000000003-000000000004-0badf00d.arrow.tmp"
    debris.write_bytes(b"...secret...")
    other = folder / "notes.arrow.tmp"
    other.write_bytes(b"not the log's")
    assert log.purge("memory_id", {"secret"}) == 1
    assert not debris.exists() and other.exists()
    assert log.read().column("memory_id").to_pylist() == ["keep"]

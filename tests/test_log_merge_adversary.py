"""Log merges off the request path under attack (issue 26): a rotation on the worker beside
reads, forks and closes (storage/arrow_log.py)."""

from __future__ import annotations

import os
import pathlib
import signal
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from engramdb.storage import disk
from engramdb.storage.access_log import ACCESS_SCHEMA
from engramdb.storage.arrow_log import ArrowLog

AT = datetime(2026, 1, 2, tzinfo=timezone.utc)


def row(i: int) -> dict[str, object]:
    return {"kind": "search", "query_id": f"q{i}", "namespace": "n", "session_id": None, "at": AT,
            "query": "about", "strategy": "hybrid", "memory_id": f"m{i}", "rank": 1, "score": 0.5, "used": False}


def filled(tmp_path: Path, n: int) -> ArrowLog:
    log = ArrowLog(tmp_path, "access", ACCESS_SCHEMA, writable=True, flush_rows=1, max_files=100)
    for i in range(n):
        log.append([row(i)])
    return log


def test_a_read_whose_files_a_rotation_replaces_meanwhile_reads_every_row_and_calls_none_damaged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """read() lists the files, then a rotation on another thread (the worker) merges them before
    the first is read: the inputs vanished. Was: the read returned no row at all and named every
    input damaged; now it lists the folder again and reads the merged file."""
    log = filled(tmp_path, 10)
    original = pathlib.Path.read_bytes
    fired: list[int] = []

    def read_bytes(self: pathlib.Path) -> bytes:
        if not fired and threading.current_thread() is threading.main_thread() and self.suffix == ".arrow":
            fired.append(1)
            merge = threading.Thread(target=log.rotate)  # the worker's merge, at just this moment
            merge.start()
            merge.join()
        return original(self)

    monkeypatch.setattr(pathlib.Path, "read_bytes", read_bytes)
    got = log.read().column("seq").to_pylist()
    monkeypatch.setattr(pathlib.Path, "read_bytes", original)
    assert fired
    assert got == list(range(1, 11))
    assert log.describe()["damaged"] == {}
    assert log.describe()["files"] == 1  # the rotation did merge them


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_child_forked_mid_merge_can_purge_the_log_it_inherited(tmp_path: Path) -> None:
    """A child forked while a thread of its parent merges the log's files inherits the rewrite lock
    held by a thread it does not have: its purge of that log waited for ever (like the other fork
    hooks: the child gets a new lock; the half-done merge leaves at most rows a read keeps once).
    And the child's purge leaves the log's temporary files: one is the parent's merge in flight,
    whose rename then failed in the parent's thread (stop 47's purge of `.tmp` debris)."""
    log = filled(tmp_path, 5)
    inside, go = threading.Event(), threading.Event()

    def hook(op: str, path: str, detail: object) -> None:
        if threading.current_thread().name == "merge" and op == "rename":
            inside.set()
            go.wait()

    with disk.inject(hook):
        merge = threading.Thread(target=log.rotate, name="merge")
        merge.start()
        inside.wait()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            signal.alarm(20)  # a wait for ever ends the child by SIGALRM
            os._exit(0 if log.purge("memory_id", {"m1"}) == 1 else 3)
        _, status = os.waitpid(pid, 0)
        go.set()
        merge.join()
    assert os.WIFEXITED(status), f"the child was killed by signal {os.WTERMSIG(status)} (it waited for ever)"
    assert os.WEXITSTATUS(status) == 0


def test_a_log_whose_merges_the_worker_never_runs_merges_them_itself_at_twice_its_files(tmp_path: Path) -> None:
    """`on_crowded` hands the merge to a store's worker; a worker stopped by close() drops it (the
    close flush of every short session: a writer opened for one search and closed added an access
    file each time and none was merged, 80 sessions 80 files). Beyond twice `max_files` the
    appender merges them itself."""
    log = ArrowLog(tmp_path, "access", ACCESS_SCHEMA, writable=True, flush_rows=1, max_files=4)
    handed: list[object] = []
    log.on_crowded = handed.append  # a worker that never runs what it is handed
    for i in range(40):
        log.append([row(i)])
    assert handed  # the worker was asked first
    assert log.describe()["files"] <= 2 * 4 + 1
    assert log.read().column("seq").to_pylist() == list(range(1, 41))


def test_a_merge_after_one_cut_short_keeps_each_seq_once_in_its_file(tmp_path: Path) -> None:
    """A rotation that failed after writing the merged file (EIO at removing its first input; a
    crash there is the same) leaves the merged file beside its inputs; the next rotation merged
    them all, rows twice over, into one file (each such fault doubled more rows on disk)."""
    import errno

    import pyarrow as pa

    log = filled(tmp_path, 8)

    def hook(op: str, path: str, detail: object) -> None:
        if op == "unlink":
            raise OSError(errno.EIO, "injected")

    with disk.inject(hook), pytest.raises(OSError):
        log.rotate()
    assert log.describe()["files"] == 9  # the merged file beside its eight inputs
    log.rotate()
    files = list((tmp_path / "access").glob("access-*.arrow"))
    assert len(files) == 1
    on_disk = pa.ipc.open_file(pa.py_buffer(files[0].read_bytes())).read_all()
    assert on_disk.column("seq").to_pylist() == list(range(1, 9))
    assert log.read().column("seq").to_pylist() == list(range(1, 9))


def test_a_merge_that_fails_on_the_appenders_thread_loses_no_row_and_raises_nothing(tmp_path: Path) -> None:
    """A flush past the crowd merges on the appender's thread (no worker, or twice too many
    files); a full disk failed that merge after the flushed file was written, and the append
    raised although its rows were stored (a context queueing curiosity items then failed and
    its queue's cache missed them: queued twice next time). Now the merge's failure is logged
    and tried again at the next crowded flush."""
    import errno
    import re

    log = ArrowLog(tmp_path, "access", ACCESS_SCHEMA, writable=True, flush_rows=1, max_files=3)
    merged = re.compile(r"access-(\d{12})-(?!\1)\d{12}-")  # a file of more than one seq: a merge

    def hook(op: str, path: str, detail: object) -> None:
        if op == "open" and merged.search(os.path.basename(path)):
            raise OSError(errno.ENOSPC, "No space left on device")

    with disk.inject(hook):
        for i in range(6):
            assert log.append([row(i)]) == [i + 1]
    assert log.describe()["files"] == 6  # nothing merged while the disk was full
    log.append([row(6)])
    assert log.describe()["files"] == 1  # the next crowded flush merged them
    assert log.read().column("memory_id").to_pylist() == [f"m{i}" for i in range(7)]

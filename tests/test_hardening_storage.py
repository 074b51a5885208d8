"""Issue 24, the storage findings: faults, file mix-ups and crashes that lost, resurrected or
hid acknowledged memories. Each test reproduces what an adversary did to the store as it was
and checks what must hold instead; each failed on the code before the fix.

Faults come from the operating system (a file size limit makes writes fail part-way, as a full
disk does), from files moved by hand, or from killing a process at each I/O call in turn through
the storage layer's I/O seam (`engramdb.storage.disk`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import engramdb
import pytest
from engramdb import StoreError, Tuning
from store_helpers import toy_embedders, toy_schema

HERE = Path(__file__).resolve().parent


def open_store(path: Path, **kw: object) -> engramdb.Store:
    return engramdb.open(path, schema=toy_schema(), embedders=toy_embedders(), **kw)  # type: ignore[arg-type]


def run_child(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter with the test helpers importable."""
    prelude = f"import sys\nsys.path.insert(0, {str(HERE)!r})\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code), *args], check=False, capture_output=True,
                          text=True, timeout=timeout)


# ------------------------------------------------------------------------------ 1. a failed write
FAILED_WRITE = """
import os, resource, signal, engramdb
from store_helpers import toy_embedders, toy_schema
folder, op = sys.argv[1], sys.argv[2]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG, as on a full disk
db = engramdb.open(folder, schema=toy_schema(), embedders=toy_embedders())
wal = max(p for p in os.listdir(folder) if p.startswith("wal-"))
size = os.path.getsize(os.path.join(folder, wal))
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)

def attempt(text):
    if op == "add":
        db.add(text, namespace="n", id="x")
    elif op == "add_many":
        db.add_many([{"content": f"{text} {i}", "namespace": "n", "id": f"x{i}"} for i in range(60)])
    else:
        db.update("u", content=text)

resource.setrlimit(resource.RLIMIT_FSIZE, (size + 40, hard))  # the frame starts, then the disk is full
try:
    attempt("attempt 1")
    print("NOT RAISED")
except OSError as exc:
    print("RAISED", exc.errno)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
attempt("attempt 2")
print("ACK", flush=True)
os._exit(0)  # a crash: no close, no checkpoint
"""


@pytest.mark.parametrize("op", ["add", "add_many", "update"])
def test_a_write_that_failed_never_becomes_durable(tmp_path: Path, op: str) -> None:
    folder = tmp_path / "s"
    db = open_store(folder)
    db.add("the one to update", namespace="n", id="u")
    db.close()
    out = run_child(FAILED_WRITE, str(folder), op)
    assert "RAISED" in out.stdout and "ACK" in out.stdout, out.stdout + out.stderr
    again = open_store(folder)
    if op == "add":
        rows = again.history("x")
        assert [(m.version, m.content) for m in rows] == [(1, "attempt 2")]
        assert [h.id for h in again.search("attempt", namespace="n", k=10)].count("x") == 1
    elif op == "add_many":
        assert len(again) == 61
        for i in range(60):
            assert [(m.version, m.content) for m in again.history(f"x{i}")] == [(1, f"attempt 2 {i}")]
    else:
        assert [(m.version, m.content) for m in again.history("u")] == [(1, "the one to update"), (2, "attempt 2")]
    again.close()
    assert engramdb.verify(folder)["ok"]


# ------------------------------------------------------------------------------ 2. an older manifest
def two_batches(folder: Path) -> list[str]:
    db = open_store(folder, tuning=Tuning(checkpoint_rows=100))
    ids = db.add_many([{"content": f"first batch {i}", "namespace": "n"} for i in range(300)])
    ids += db.add_many([{"content": f"second batch {i}", "namespace": "n"} for i in range(300)])
    db.close()
    return ids


def test_an_older_manifest_is_refused_not_served_and_its_files_never_overwritten(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    ids = two_batches(folder)
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.name.startswith("seg-")}
    shutil.copyfile(folder / "manifest.prev.json", folder / "manifest.json")  # a generation rolled back
    with pytest.raises(StoreError, match=r"older than files beside it.*seg-\d+\.arrow"):
        open_store(folder)
    report = engramdb.verify(folder)
    assert not report["ok"] and "older than files" in report["folder"]
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name.startswith("seg-")} == files  # untouched
    done = engramdb.repair(folder)
    assert done["needed"] and done["ok"]
    db = open_store(folder)
    assert len(db) == 600 and all(db.get(i) is not None for i in ids)
    db.add_many([{"content": f"third batch {i}", "namespace": "n"} for i in range(300)])
    db.close()
    db = open_store(folder, read_only=True)
    assert len(db) == 900
    db.close()
    assert engramdb.verify(folder)["ok"]


# ------------------------------------------------------------------------------ 3. a deleted WAL
def rows_in_the_wal(folder: Path, n: int = 20) -> list[str]:
    db = open_store(folder)
    ids = db.add_many([{"content": f"in the log {i}", "namespace": "n"} for i in range(n)])
    db.close(checkpoint=False)  # acknowledged, in the WAL only
    return ids


def test_a_deleted_wal_is_named_never_silently_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    rows_in_the_wal(folder)
    wal = json.loads((folder / "manifest.json").read_text())["wal"]
    (folder / wal).unlink()
    with pytest.raises(StoreError, match=f"{wal}, which is missing"):
        open_store(folder)
    with pytest.raises(StoreError, match=f"{wal}, which is missing"):
        open_store(folder, read_only=True)
    assert not (folder / wal).exists()  # nothing made in its place
    report = engramdb.verify(folder)
    assert not report["ok"] and report["files"][wal] == "missing"
    with pytest.raises(StoreError, match=f"{wal}, listed by the manifest.*is gone"):
        engramdb.repair(folder)
    engramdb.repair(folder, accept_loss=True)  # the user accepts the loss: the store opens, empty
    db = open_store(folder)
    assert len(db) == 0
    db.close()


# ------------------------------------------------------------------------------ 4. a foreign WAL
def test_another_stores_wal_is_refused(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    own = rows_in_the_wal(mine, 5)
    rows_in_the_wal(theirs, 7)
    wal = json.loads((mine / "manifest.json").read_text())["wal"]
    assert wal == json.loads((theirs / "manifest.json").read_text())["wal"]
    kept = (mine / wal).read_bytes()
    shutil.copyfile(theirs / wal, mine / wal)
    for read_only in (False, True):
        with pytest.raises(StoreError, match="another store's write-ahead log"):
            open_store(mine, read_only=read_only)
    assert not engramdb.verify(mine)["ok"]
    (mine / wal).write_bytes(kept)  # put back, the store is whole again
    db = open_store(mine)
    assert sorted(m.id for m in db.list(namespace="n")) == sorted(own)
    db.close()


def test_an_older_wal_of_the_same_store_put_in_place_of_the_live_one_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    db = open_store(folder)
    db.add("first", namespace="n")
    first = json.loads((folder / "manifest.json").read_text())["wal"]
    shutil.copyfile(folder / first, tmp_path / "old.log")  # a copy of the first log, with its frame
    db.admin.checkpoint()  # the rows move to a segment and a new log begins
    db.add("second", namespace="n")
    db.close(checkpoint=False)
    live = json.loads((folder / "manifest.json").read_text())["wal"]
    assert live != first
    kept = (folder / live).read_bytes()
    shutil.copyfile(tmp_path / "old.log", folder / live)  # "first" would be replayed twice, "second" lost
    for read_only in (False, True):
        with pytest.raises(StoreError, match=f"{live} holds the header of {first}"):
            open_store(folder, read_only=read_only)
    (folder / live).write_bytes(kept)
    db = open_store(folder)
    assert sorted(m.content for m in db.list(namespace="n")) == ["first", "second"]
    db.close()


# ------------------------------------------------------------------------------ 5. repair, killed
CRASHING = """
import os
from engramdb.storage import disk
folder, at = sys.argv[1], int(sys.argv[2])
calls = 0

def crash(op, path, detail):
    global calls
    calls += 1
    if calls == at:
        if op == "write":
            disk.torn_write(path, detail)  # half of it reached the file
        os._exit(9)

import engramdb
with disk.inject(crash):
    {call}
print("FINISHED", calls, flush=True)
"""


# The kill tests below run CRASHING once per I/O call. Each case is a fork of one server process
# (per module) that imported engramdb and ran a backup and a repair to the end on a scratch store
# of its own (closed and removed, no thread left: a fork inherits none), not a new interpreter:
# the same code, killed at the same call, without paying the start and first-use work each time.
FORK_SERVER = """
import json, os, shutil, sys, tempfile, textwrap, threading
sys.path.insert(0, {here!r})
import engramdb
from store_helpers import toy_embedders, toy_schema
scratch = tempfile.mkdtemp(prefix="engramdb-kill-warm-")
db = engramdb.open(os.path.join(scratch, "s"), schema=toy_schema(), embedders=toy_embedders(),
                   tuning=engramdb.Tuning(checkpoint_rows=100))
db.add_many([{{"content": f"memory {{i}}", "namespace": "n"}} for i in range(150)])
db.add("in the log", namespace="n")
db.close(checkpoint=False)
engramdb.backup(os.path.join(scratch, "s"), os.path.join(scratch, "copy"))
engramdb.repair(os.path.join(scratch, "s"), accept_loss=True)
shutil.rmtree(scratch)
assert threading.active_count() == 1, threading.enumerate()
print("READY", flush=True)
for line in sys.stdin:
    case = json.loads(line)
    out, err = case["out"] + ".stdout", case["out"] + ".stderr"
    pid = os.fork()
    if pid == 0:  # the child: the case's code as a script of its own, its output in two files
        try:
            os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
            os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            sys.argv = ["-c", *case["args"]]
            exec(compile(textwrap.dedent(case["code"]), "<case>", "exec"), {{"__name__": "__main__", "sys": sys}})
            sys.stdout.flush()
            os._exit(0)
        except BaseException:
            import traceback
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({{"returncode": os.waitstatus_to_exitcode(status)}}), flush=True)
"""


class Forks:
    """The fork server: `run(code, *args)` answers as `run_child(code, *args)` does."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.cases = 0
        self.proc = subprocess.Popen([sys.executable, "-c", FORK_SERVER.format(here=str(HERE))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "READY"

    def run(self, code: str, *args: str) -> subprocess.CompletedProcess[str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.cases += 1
        out = self.scratch / f"case-{self.cases}"
        self.proc.stdin.write(json.dumps({"code": code, "args": list(args), "out": str(out)}) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply, "the fork server died"
        stdout, stderr = Path(f"{out}.stdout"), Path(f"{out}.stderr")
        return subprocess.CompletedProcess(["<fork>", *args], json.loads(reply)["returncode"],
                                           stdout.read_text() if stdout.exists() else "",
                                           stderr.read_text() if stderr.exists() else "")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Forks]:
    server = Forks(tmp_path_factory.mktemp("forks"))
    yield server
    server.close()


def damaged_wal_store(folder: Path) -> tuple[list[str], list[str]]:
    """A store whose WAL holds 40 intact frames, then a damaged one, then one more intact one:
    (the 40 frames' ids, the last one's)."""
    db = open_store(folder)
    ids = [db.add(f"frame {i}", namespace="n").id for i in range(40)]
    db.close(checkpoint=False)
    wal = folder / json.loads((folder / "manifest.json").read_text())["wal"]
    data = bytearray(wal.read_bytes())
    size = len(data)
    db = open_store(folder)
    late = [db.add("damaged one", namespace="n").id, db.add("after the damage", namespace="n").id]
    db.close(checkpoint=False)
    data = bytearray(wal.read_bytes())
    data[size + 40] ^= 0xFF  # inside the first frame after the 40
    wal.write_bytes(bytes(data))
    return ids, late


def test_repair_is_idempotent_when_killed_at_any_io_call(tmp_path: Path, forks: Forks) -> None:
    """Killed at its first calls, then at every fifth and its last (bench/fault_matrix.py: all)."""
    from engramdb.storage import disk

    base = tmp_path / "base"
    ids, _ = damaged_wal_store(base)
    calls = [0]

    def count(op: str, path: str, detail: object) -> None:
        calls[0] += 1

    shutil.copytree(base, tmp_path / "count")
    with disk.inject(count):
        engramdb.repair(tmp_path / "count", accept_loss=True)
    total = calls[0]
    assert total >= 8  # the repair made that many I/O calls, each a crash point
    for at in sorted({*range(1, 9), *range(1, total + 1, 5), total}):
        folder = tmp_path / f"at-{at}"
        shutil.copytree(base, folder)
        out = forks.run(CRASHING.format(call="engramdb.repair(folder, accept_loss=True)"), str(folder), str(at))
        assert out.returncode == 9, out.stdout + out.stderr
        engramdb.repair(folder, accept_loss=True)  # run again, to the end
        db = open_store(folder)
        got = {m.id for m in db.list(namespace="n")}
        assert set(ids) <= got, f"killed at I/O call {at}: {len(set(ids) - got)} intact frames lost"
        db.close()
        assert engramdb.verify(folder)["ok"], (at, engramdb.verify(folder))


# ------------------------------------------------------------------------------ 6. a backup, killed
def test_a_backup_killed_at_any_io_call_never_opens_as_a_smaller_store(tmp_path: Path, forks: Forks) -> None:
    src = tmp_path / "src"
    db = open_store(src, tuning=Tuning(checkpoint_rows=100))
    db.add_many([{"content": f"memory {i}", "namespace": "n"} for i in range(320)])
    db.add("in the log", namespace="n")
    db.close(checkpoint=False)
    total = None
    at = 1
    while total is None or at <= total:
        dest = tmp_path / f"copy-{at}"
        out = forks.run(CRASHING.format(call=f"engramdb.backup({str(src)!r}, folder)"), str(dest), str(at))
        if "FINISHED" in out.stdout:
            total = int(out.stdout.split()[1])
        else:
            assert out.returncode == 9, out.stderr
            try:  # killed before the rename: no store there; after it: the whole copy
                open_store(dest, read_only=True).close()
            except StoreError as exc:
                assert "no engramdb store" in str(exc)  # a half copy is never a store
                engramdb.backup(src, dest)  # and a second backup into it goes through
        copy = open_store(dest, read_only=True)
        assert len(copy) == 321, at
        copy.close()
        assert not [p for p in tmp_path.iterdir() if "partial" in p.name]  # nothing left behind
        at += 1
    assert total is not None and total >= 10


def test_a_backup_into_the_store_itself_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    db = open_store(src)
    db.add("x", namespace="n")
    for dest in (src / "backup", src / "index" / "b", src):
        with pytest.raises(StoreError, match="inside the store"):
            db.admin.backup(dest)
        assert not dest.exists() or dest == src
    db.close()
    assert engramdb.verify(src)["ok"]


def test_a_backup_is_a_store_of_its_own(tmp_path: Path) -> None:
    """The copy gets its own id: the original's live WAL copied over the copy's is refused."""
    src, dest = tmp_path / "src", tmp_path / "copy"
    rows_in_the_wal(src, 3)
    engramdb.backup(src, dest)
    db = open_store(src)
    db.add("after the backup", namespace="n")
    db.close(checkpoint=False)
    wal = json.loads((dest / "manifest.json").read_text())["wal"]
    shutil.copyfile(src / wal, dest / wal)
    with pytest.raises(StoreError, match="another store's write-ahead log"):
        open_store(dest)


# ------------------------------------------------------------------------------ 7. the lock
SECOND_WRITER = """
import engramdb
from store_helpers import toy_embedders, toy_schema
try:
    engramdb.open(sys.argv[1], schema=toy_schema(), embedders=toy_embedders())
    print("OPENED")
except engramdb.StoreLocked as exc:
    print("LOCKED", exc)
"""


def test_deleting_lock_does_not_admit_a_second_writer(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    db = open_store(folder)
    db.add("the first writer's", namespace="n")
    (folder / "LOCK").unlink()
    out = run_child(SECOND_WRITER, str(folder))
    assert "LOCKED" in out.stdout, out.stdout + out.stderr
    (folder / "LOCK").write_text("pid 1")  # replaced by another program: still held
    assert "LOCKED" in run_child(SECOND_WRITER, str(folder)).stdout
    db.add("still the only writer", namespace="n")
    db.close()
    again = open_store(folder)
    assert len(again) == 2
    again.close()


# ------------------------------------------------------------------------------ 14. lock leaks
def test_a_close_that_fails_releases_the_lock_and_keeps_the_rows(tmp_path: Path) -> None:
    from engramdb.storage import disk

    folder = tmp_path / "s"
    db = open_store(folder)
    ids = db.add_many([{"content": f"row {i}", "namespace": "n"} for i in range(10)])

    def full_disk(op: str, path: str, detail: object) -> None:
        if op == "write" and path.endswith(".arrow.tmp"):
            raise OSError(28, "No space left on device")

    with disk.inject(full_disk), pytest.raises(OSError):
        db.close()  # its checkpoint fails
    again = open_store(folder)  # not StoreLocked
    assert all(again.get(i) is not None for i in ids)
    again.close()


def test_a_failed_open_releases_the_lock(tmp_path: Path) -> None:
    from engramdb.storage import disk

    folder = tmp_path / "s"
    shutil.copytree(HERE / "golden" / "store-v5", folder)  # opening upgrades it: a manifest write

    def full_disk(op: str, path: str, detail: object) -> None:
        if op == "write" and "manifest" in path:
            raise OSError(28, "No space left on device")

    from store_helpers import golden_schema
    for _ in range(2):
        with disk.inject(full_disk), pytest.raises(OSError):
            engramdb.open(folder, schema=golden_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    db = engramdb.open(folder, schema=golden_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    assert len(db) > 0
    db.close()


def test_an_index_path_that_is_a_file_does_not_fail_close(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    db = open_store(folder)
    db.add("x", namespace="n")
    db.close()
    shutil.rmtree(folder / "index", ignore_errors=True)
    (folder / "index").write_text("not a folder")
    db = open_store(folder)
    db.add("y", namespace="n")
    db.search("x", namespace="n")
    db.close()  # the derived indexes are not saved; the rows are
    db = open_store(folder, read_only=True)
    assert len(db) == 2
    db.close()


def test_a_wal_or_segment_path_that_is_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    db = open_store(folder)
    db.add("x", namespace="n")
    db.admin.checkpoint()
    db.add("y", namespace="n")
    db.close(checkpoint=False)
    m = json.loads((folder / "manifest.json").read_text())
    for name in (m["wal"], m["segments"][0]["file"]):
        (folder / name).rename(tmp_path / "aside")
        (folder / name).mkdir()
        for read_only in (False, True):
            with pytest.raises(StoreError, match=name):
                open_store(folder, read_only=read_only)
        (folder / name).rmdir()
        (tmp_path / "aside").rename(folder / name)
    db = open_store(folder)
    assert len(db) == 2
    db.close()


# ------------------------------------------------------------------------------ 17. verify, live
LIVE_WRITER = """
import time, engramdb
from store_helpers import toy_embedders, toy_schema
db = engramdb.open(sys.argv[1], schema=toy_schema(), embedders=toy_embedders(),
                   tuning=engramdb.Tuning(checkpoint_rows=20))
print("READY", flush=True)
i = 0
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    db.add_many([{"content": f"row {i} {j}", "namespace": "n"} for j in range(25)])  # a checkpoint each time
    i += 1
    if i % 10 == 0:
        db.admin.compact()
db.close()
"""


def test_verify_beside_a_live_writer_never_reports_files_missing(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    open_store(folder).close()
    prelude = f"import sys\nsys.path.insert(0, {str(HERE)!r})\n"
    # 3 s of writing: measured here, 310 checkpoints and 31 compactions with 3,889 verify runs
    # beside them, the floor below 20; the 6 s this ran doubled those figures and found nothing more
    proc = subprocess.Popen([sys.executable, "-c", prelude + textwrap.dedent(LIVE_WRITER), str(folder), "3"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().startswith("READY")
    runs = bad = 0
    try:
        while proc.poll() is None:
            report = engramdb.verify(folder)
            runs += 1
            if not report["ok"]:
                bad += 1
                print(report)
    finally:
        proc.wait(timeout=60)
    assert runs >= 20 and bad == 0, f"{bad} of {runs} reports not ok"
    time.sleep(0)

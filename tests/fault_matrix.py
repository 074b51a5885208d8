"""The fault-injection matrix (issue 24): every public operation that writes, failed at each of
its I/O calls in turn, by an error (ENOSPC, EIO), by a crash (the process killed there) and by a
power cut (the process killed, and every byte written since its file's last fsync lost).

Every file operation of engramdb's storage layer goes through one seam (`engramdb.storage.disk`);
a hook installed there counts an operation's calls, then fails the k-th. After each case:

- the store opens without manual steps (a plain `engramdb.open`; a repair the open does by itself
  is allowed, a StoreError is not), and `engramdb.verify` says ok;
- every memory acknowledged before the operation is there exactly once (its whole history, each
  version once), and the operation is all or nothing: what is stored equals the state before it or
  the state after it; after an error, the state before it when it raised, after it when it did not
  (a fault past the commit point is logged, not raised);
- after an error the same handle keeps working: a follow-up write succeeds and is there after a
  reopen (no byte of the failed call becomes durable behind it);
- operations whose recovery finishes them (spool ingest: the next writer takes the spool in;
  repair: run again) end in the state after.

Crashes run in processes forked from a small server that imported engramdb and ran every
operation once on a scratch store of its own, closed and removed before the first fork (no thread,
no open store to inherit), so a case costs a fork, not an interpreter start nor the first-use work
of each code path (a cold fork paid ~0.2 s of it per case, most of the test's time). The suite runs a
bounded sample (tests/test_fault_matrix.py); `python bench/fault_matrix.py` runs every case and
prints the counts for bench/RELIABILITY.md.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import engramdb
from engramdb.storage import disk
from engramdb.storage import folder as folder_seam
from store_helpers import toy_embedders, toy_schema

TUNING = engramdb.Tuning(checkpoint_rows=40)
FAULTS = ("ENOSPC", "EIO", "crash", "powerloss")
CRASH_EXIT = 86


def open_store(folder: Path, **kw: Any) -> engramdb.Store:
    return engramdb.open(folder, schema=toy_schema(), embedders=toy_embedders(), tuning=TUNING,  # type: ignore[arg-type]
                         **kw)


# ------------------------------------------------------------------------------ the operations
def _base(folder: Path) -> None:
    """The store every operation starts from: committed segments, edges, an archive, a forgotten
    and a superseded memory, rows waiting in the WAL, two namespaces."""
    db = open_store(folder)
    old = datetime.now(timezone.utc) - timedelta(days=400)
    db.add_many([{"content": f"memory {i} about topic {i % 5}", "namespace": "a", "id": f"a{i}",
                  "valid_from": old} for i in range(60)])
    db.add_many([{"content": f"bob's note {i}", "namespace": "b", "id": f"b{i}"} for i in range(30)])
    db.link("a1", "a2", "CAUSED_BY", confidence=0.9)
    db.update("a3", content="memory 3, edited")
    db.forget("a4")
    db.supersede("a5", "a6")
    db.lifecycle.archive(ids=["a7", "a8"])
    db.admin.checkpoint()
    db.add_many([{"content": f"in the log {i}", "namespace": "a", "id": f"w{i}"} for i in range(5)])
    db.link("a10", "a11", "RELATED_TO", confidence=0.8)
    db.close(checkpoint=False)


@dataclass
class Op:
    """One operation of the matrix: `run(db)` on a store opened from a copy of the base (or, with
    `whole`, `run(None, folder)` on the folder itself: open, backup, repair)."""

    name: str
    run: Callable[..., Any]
    prepare: Callable[[Path], None] | None = None  # more state before the operation
    whole: bool = False  # the operation is on the folder (it opens the store itself, or none)
    settles: bool = False  # recovery (a reopen, a second run) finishes it: only "after" is allowed
    stepwise: bool = False  # a sequence of atomic steps (consolidation): each memory as before or as after


def _add(db: engramdb.Store) -> None:
    db.add("a new memory", namespace="a", id="new")


def _add_many(db: engramdb.Store) -> None:
    db.add_many([{"content": f"batch row {i}", "namespace": "a", "id": f"n{i}"} for i in range(12)])


def _add_many_big(db: engramdb.Store) -> None:  # at least checkpoint_rows: written straight to a segment
    db.add_many([{"content": f"big batch row {i}", "namespace": "b", "id": f"g{i}"} for i in range(45)])


def _update(db: engramdb.Store) -> None:
    db.update("a12", content="memory 12, changed")


def _supersede(db: engramdb.Store) -> None:
    db.supersede("a13", "a14")


def _link(db: engramdb.Store) -> None:
    db.link("a15", "a16", "PART_OF", confidence=0.95)


def _forget(db: engramdb.Store) -> None:
    db.forget("a17")


def _checkpoint(db: engramdb.Store) -> None:
    db.admin.checkpoint()


def _compact(db: engramdb.Store) -> None:
    db.admin.compact()


def _purge(db: engramdb.Store) -> None:
    db.purge(["a20", "a7"])


def _purge_namespace(db: engramdb.Store) -> None:
    db.purge(namespace="b")


def _archive(db: engramdb.Store) -> None:
    db.lifecycle.archive(ids=["a21", "a22"])


def _unarchive(db: engramdb.Store) -> None:
    db.lifecycle.unarchive(["a7"])


def _consolidate(db: engramdb.Store) -> None:
    # a year on: old memories are archived or compressed, the forgotten one is purged
    db.lifecycle.consolidate(dry_run=False, now=datetime.now(timezone.utc) + timedelta(days=400), protect_days=0)


def _topics(db: engramdb.Store) -> None:
    db.topics("a", refresh=True)


def _ratings(db: engramdb.Store) -> None:
    hits = db.search("memory about topic 2", namespace="a", k=5)
    db.feedback(hits.query_id, used=[h.id for h in hits[:2]])
    db.importance.refresh()


def _access_log(db: engramdb.Store) -> None:
    for i in range(6):
        db.search(f"memory {i}", namespace="a", k=3)
    db.admin.checkpoint()  # writes the access log's waiting rows


def _many_log_files(folder: Path) -> None:
    db = open_store(folder)
    for i in range(ROTATE_AT):
        db.search(f"memory {i}", namespace="a", k=2)
        db.admin.checkpoint()  # one access-log file each
    db.close(checkpoint=False)


ROTATE_AT = 64  # the access log merges its files when it holds more than this many (ArrowLog.max_files)


def _rotation(db: engramdb.Store) -> None:
    db.search("memory about topic 1", namespace="a", k=3)
    db.admin.checkpoint()  # one file more than the log keeps: it merges them into one


def _open(db: None, folder: Path) -> None:
    engramdb_open = open_store(folder)  # replays the WAL; takes the spool in
    engramdb_open.close(checkpoint=False)


def _spooled(folder: Path) -> None:
    from engramdb.storage import spool

    spool.put(folder, [{"content": f"captured {i}", "namespace": "a", "id": f"c{i}"} for i in range(4)])
    spool.put(folder, [{"content": "captured later", "namespace": "b", "id": "c9"}])


def _backup(db: None, folder: Path) -> None:
    engramdb.backup(folder, folder.parent / (folder.name + "-backup"))


def _manifest_lost(folder: Path) -> None:
    (folder / "manifest.json").unlink()


def _wal_damaged(folder: Path) -> None:
    wal = folder / json.loads((folder / "manifest.json").read_text())["wal"]
    data = bytearray(wal.read_bytes())
    data[-40] ^= 0xFF  # inside the last frame: acknowledged, then damaged (a repair salvages the rest)
    wal.write_bytes(bytes(data))


def _repair(db: None, folder: Path) -> None:
    engramdb.repair(folder, accept_loss=True)


OPS: dict[str, Op] = {op.name: op for op in (
    Op("add", _add), Op("add_many", _add_many), Op("add_many_segment", _add_many_big), Op("update", _update),
    Op("supersede", _supersede), Op("link", _link), Op("forget", _forget), Op("checkpoint", _checkpoint),
    Op("compact", _compact), Op("purge", _purge), Op("purge_namespace", _purge_namespace),
    Op("archive", _archive), Op("unarchive", _unarchive), Op("consolidate", _consolidate, stepwise=True),
    Op("topics", _topics), Op("ratings", _ratings), Op("access_log", _access_log),
    Op("access_log_rotation", _rotation, prepare=_many_log_files),
    Op("open_replay", _open, whole=True, settles=True),
    Op("spool_ingest", _open, prepare=_spooled, whole=True, settles=True),
    Op("backup", _backup, whole=True),
    Op("repair", _repair, prepare=_manifest_lost, whole=True, settles=True),
    Op("repair_salvage", _repair, prepare=_wal_damaged, whole=True, settles=True),
)}


# ------------------------------------------------------------------------------ what is stored
def state(folder: Path) -> dict[str, Any]:
    """Everything a user can read back: per memory its whole history (version, content, valid
    until, forgotten, archived), the live edges, reopened read-only."""
    db = open_store(folder, read_only=True)
    dump = folder.parent / (folder.name + "-state.jsonl")
    try:
        db.admin.export(dump)  # every current memory, forgotten ones too, of every namespace
        ids = sorted(rec["id"] for rec in map(json.loads, dump.read_text().splitlines()) if "id" in rec)
        out: dict[str, Any] = {}
        for mid in ids:
            out[mid] = [(h.version, h.content if not db.lifecycle.is_archived(mid) else "<archived>",
                         str(h.valid_until), h.forgotten_at is not None) for h in db.history(mid)]
        edges = sorted((e.src, e.dst, e.type) for mid in out for e in db.edges(mid, direction="out",
                                                                                  include_forgotten=True))
        return {"memories": out, "edges": edges}
    finally:
        db.close()
        dump.unlink(missing_ok=True)


def backup_state(folder: Path) -> dict[str, Any] | None:
    dest = folder.parent / (folder.name + "-backup")
    try:
        return state(dest)
    except engramdb.StoreError:
        return None


# ------------------------------------------------------------------------------ one case
class Counter:
    """A hook that counts calls and fails the `at`-th (0: never): raises ENOSPC or EIO, or ends the
    process ("crash": what was written stays, as after a kill; "powerloss": every byte written
    since its file's last fsync is lost first, as after a power cut). A write call it fails is
    torn: half of its bytes reach the file."""

    def __init__(self, at: int = 0, fault: str = "EIO") -> None:
        self.at, self.fault, self.calls, self.fired = at, fault, 0, ""
        self.durable: dict[str, int] = {}  # powerloss: path -> bytes known on disk (its size at the last fsync)
        self.written: set[str] = set()  # paths written since their last fsync

    def __call__(self, op: str, path: str, detail: Any) -> None:
        self.calls += 1
        if self.fault == "powerloss" and self.calls < self.at:
            self._track(op, path, detail)
        if self.calls != self.at:
            return
        self.fired = f"{op} {os.path.basename(path)}"
        if op == "write":  # half of it reached the file: a torn write
            disk.torn_write(path, detail)
        if self.fault == "powerloss":
            self._lose_unsynced()
        if self.fault in ("crash", "powerloss"):
            os._exit(CRASH_EXIT)
        code = errno.ENOSPC if self.fault == "ENOSPC" else errno.EIO
        raise OSError(code, os.strerror(code), path)

    def _track(self, op: str, path: str, detail: Any) -> None:
        if op in ("open", "write") and path not in self.durable:  # what was there before this process wrote
            self.durable[path] = os.path.getsize(path) if os.path.isfile(path) else 0
        if op == "write":
            self.written.add(path)
        elif op == "fsync" and os.path.isfile(path):
            self.durable[path] = os.path.getsize(path)
            self.written.discard(path)
        elif op == "rename" and detail is not None:
            src = str(detail)
            if src in self.durable:
                self.durable[path] = self.durable.pop(src)
            if src in self.written:
                self.written.discard(src)
                self.written.add(path)

    def _lose_unsynced(self) -> None:
        for path in self.written:
            if os.path.isfile(path) and os.path.getsize(path) > self.durable.get(path, 0):
                os.truncate(path, self.durable.get(path, 0))


def run_op(op: Op, folder: Path, hook: Counter) -> BaseException | None:
    """Run `op` on `folder` with `hook` installed around the operation only; the error it raised."""
    db = None if op.whole else open_store(folder)
    raised: BaseException | None = None
    try:
        with disk.inject(hook):
            try:
                op.run(db, folder) if op.whole else op.run(db)
            except (OSError, engramdb.StoreError) as exc:
                raised = exc
        if db is not None and raised is not None:  # the handle keeps working after a failed call
            db.add("a follow-up write", namespace="a", id="follow-up")
    finally:
        if db is not None:
            db.close()  # idempotent
    return raised


def count_calls(op: Op, template: Path, scratch: Path) -> int:
    folder = fresh(template, scratch / f"count-{op.name}")
    hook = Counter()
    raised = run_op(op, folder, hook)
    assert raised is None, f"{op.name} failed without a fault: {raised!r}"
    return hook.calls


def fresh(template: Path, folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    backup = folder.parent / (folder.name + "-backup")
    if backup.exists():
        shutil.rmtree(backup)
    shutil.copytree(template, folder)
    # the same store in a new folder, not a copy of it: a copied store takes an id of its own at
    # its first writable open (storage/identity.py), which would fold its WAL before each operation
    folder_seam.update_marker(folder, home=folder_seam.folder_inode(folder))
    return folder


@dataclass
class Expect:
    before: dict[str, Any]
    after: dict[str, Any]
    backup: dict[str, Any] | None = None


def templates(root: Path, ops: list[str] | None = None) -> dict[str, tuple[Path, Expect]]:
    """Per operation (of `ops`, default all): its starting folder and the states before and after
    it (no fault)."""
    base = root / "base"
    _base(base)
    out = {}
    for name in ops or list(OPS):
        op = OPS[name]
        template = root / f"template-{name}"
        shutil.copytree(base, template)
        if op.prepare is not None:
            op.prepare(template)
        before = state(base) if name.startswith("repair") else None
        if before is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                before = state(fresh(template, root / "probe")) if name not in ("spool_ingest",) else state(base)
        done = fresh(template, root / f"after-{name}")
        assert run_op(op, done, Counter()) is None
        out[name] = (template, Expect(before=before, after=state(done), backup=backup_state(done)))
    return out


def check(op: Op, folder: Path, expect: Expect, fault: str, raised: BaseException | None, finished: bool) -> str:
    """"" when the case holds, else what went wrong."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a RepairWarning from an open that repaired by itself is allowed
        if op.name.startswith("repair"):
            try:
                engramdb.repair(folder, accept_loss=True)  # what the user runs again
            except engramdb.StoreError as exc:
                return f"the second repair failed: {exc}"
        try:
            open_store(folder).close()  # opens without manual steps
        except (engramdb.StoreError, OSError) as exc:
            return f"does not open: {exc}"
    report = engramdb.verify(folder)
    if not report["ok"]:
        return f"verify: {report}"
    got = state(folder)
    follow = got["memories"].pop("follow-up", None)
    wanted = [(1, "a follow-up write", "None", False)] if raised is not None and not op.whole else None
    if fault not in ("crash", "powerloss") and follow != wanted:
        return f"the follow-up write after the failed call is {follow!r}, expected {wanted!r}"
    if op.settles:
        allowed = {"after": expect.after}
    elif fault in ("crash", "powerloss"):
        allowed = {"before": expect.before, "after": expect.after}
    else:
        allowed = {"before": expect.before} if raised is not None else {"after": expect.after}
    if op.stepwise and (raised is not None or fault in ("crash", "powerloss")):
        # stopped between its steps: each memory's whole history is as before or as after it
        for mid in set(expect.before["memories"]) | set(expect.after["memories"]):
            mine = got["memories"].get(mid)
            if mine != expect.before["memories"].get(mid) and mine != expect.after["memories"].get(mid):
                return f"{mid} is neither as before nor as after the operation: {mine!r}"
        if set(got["memories"]) - set(expect.before["memories"]) - set(expect.after["memories"]):
            return "memories appeared that are in neither state"
    elif not any(got == want for want in allowed.values()):
        return f"state is neither {' nor '.join(allowed)}: {_diff(got, allowed)}"
    if op.name == "backup":
        copy = backup_state(folder)
        if copy is not None and copy != expect.backup:
            return "the backup opens as a store that differs from the source"
    return ""


def _diff(got: dict[str, Any], allowed: dict[str, dict[str, Any]]) -> str:
    out = []
    for name, want in allowed.items():
        gm, wm = got["memories"], want["memories"]
        missing = sorted(set(wm) - set(gm))[:3]
        extra = sorted(set(gm) - set(wm))[:3]
        changed = sorted(k for k in set(gm) & set(wm) if gm[k] != wm[k])[:3]
        out.append(f"vs {name}: missing {missing}, extra {extra}, changed {[(k, gm[k], wm[k]) for k in changed]}, "
                   f"edges {'same' if got['edges'] == want['edges'] else 'differ'}")
    return "; ".join(out)


# ------------------------------------------------------------------------------ crashes, forked
class Forker:
    """A server process that forks one child per crash case (see the module docstring)."""

    def __init__(self, ops: list[str] | None = None) -> None:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__)), "serve", ",".join(ops or OPS)],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        self.ready = False  # READY is read at the first case: the server warms up meanwhile

    def crash(self, op: str, folder: Path, at: int, fault: str = "crash") -> tuple[bool, int]:
        """(finished: the call count was below `at`, calls made) of `op` crashed at call `at`."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if not self.ready:
            assert self.proc.stdout.readline().strip() == "READY", "the fork server did not start"
            self.ready = True
        self.proc.stdin.write(json.dumps({"op": op, "folder": str(folder), "at": at, "fault": fault}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        return reply["finished"], reply["calls"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def warm_up(scratch: Path, ops: list[str]) -> None:
    """Run each of `ops` once, without a fault, on a scratch store, then remove it: what a case's
    first call of a code path costs (imports done lazily, first-use setup) is paid here, once, not
    in every forked child. Nothing of it stays open: the store is closed, the folder gone."""
    base = scratch / "base"
    _base(base)
    for name in ops:
        op = OPS[name]
        folder = fresh(base, scratch / op.name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a repair of a healthy store may say so
            run_op(op, folder, Counter())
    shutil.rmtree(scratch)


def serve(ops: list[str]) -> None:
    # everything a case runs is imported here, once: each child is a fork of this process, and
    # never imports a module of another version than the rest (or pays for the import itself)
    engramdb.open().close()
    importlib.import_module("engramdb.agents.hooks")
    warm_up(Path(tempfile.mkdtemp(prefix="engramdb-fault-warm-")), ops)
    assert threading.active_count() == 1, threading.enumerate()  # a fork would inherit none of them
    print("READY", flush=True)
    for line in sys.stdin:
        case = json.loads(line)
        result = Path(case["folder"] + ".result")
        result.unlink(missing_ok=True)
        pid = os.fork()
        if pid == 0:  # the child: run the operation, crash at the chosen call
            code = 0
            try:
                hook = Counter(case["at"], case.get("fault", "crash"))
                run_op(OPS[case["op"]], Path(case["folder"]), hook)
                result.write_text(json.dumps({"calls": hook.calls}))
            except BaseException as exc:  # noqa: BLE001 - reported to the parent as a failure
                result.write_text(json.dumps({"error": repr(exc)}))
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        done = json.loads(result.read_text()) if result.exists() else None
        if done is not None and "error" in done:
            raise SystemExit(f"case {case} failed in the child: {done['error']}")
        exit_code = os.waitstatus_to_exitcode(status)
        if done is None and exit_code != CRASH_EXIT:
            raise SystemExit(f"case {case}: the child exited {exit_code}")
        print(json.dumps({"finished": done is not None, "calls": (done or {}).get("calls", case["at"])}), flush=True)


# ------------------------------------------------------------------------------ the matrix
def run_matrix(root: Path, points: Callable[[str, int], list[int] | dict[str, list[int]]],
               faults: tuple[str, ...] = FAULTS, ops: list[str] | None = None) -> dict[str, Any]:
    """Run the cases `points(op, calls)` chooses for each operation: the same calls for every
    fault, or per fault (a dict fault -> calls); returns counts and the failures (op, fault, call,
    what)."""
    root.mkdir(parents=True, exist_ok=True)
    forker = Forker(ops) if {"crash", "powerloss"} & set(faults) else None  # warms up while the templates are built
    try:
        plans = templates(root, ops)
    except BaseException:
        if forker is not None:
            forker.close()
        raise
    counts: dict[str, dict[str, int]] = {}
    failures: list[tuple[str, str, int, str]] = []
    try:
        for name in ops or list(OPS):
            op = OPS[name]
            template, expect = plans[name]
            total = count_calls(op, template, root)
            counts[name] = {"calls": total, "cases": 0}
            chosen = points(name, total)
            for fault in faults:
                for at in chosen[fault] if isinstance(chosen, dict) else chosen:
                    folder = fresh(template, root / "case")
                    if fault in ("crash", "powerloss"):
                        assert forker is not None
                        finished, _ = forker.crash(name, folder, at, fault)
                        raised = None
                    else:
                        hook = Counter(at, fault)
                        raised = run_op(op, folder, hook)
                        finished = not hook.fired
                    why = check(op, folder, expect, fault, raised, finished)
                    counts[name]["cases"] += 1
                    if why:
                        failures.append((name, fault, at, why))
    finally:
        if forker is not None:
            forker.close()
    return {"counts": counts, "failures": failures}


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve(sys.argv[2].split(","))

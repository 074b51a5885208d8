"""The resident reader of a store's hooks: one process that holds the store open read-only and answers
the hooks' reads (agents/resident_link.py says why, which events, and where the socket is).

`python -m engramdb.agents.resident STORE` (what a hook starts, detached): it takes a lock beside
its socket (a second resident of the same store leaves at once), opens the store read-only, binds
the socket (mode 0600, in a folder only the user may enter), and answers each connection on a thread
of its own (a client that sends slowly, or nothing, delays no other hook; MAX_CLIENTS at once),
reading the store for one request at a time: a JSON object with the event, the hook's stdin, the
store folder, the namespace and max_chars, and the time left in the hook's budget; the answer is a
JSON object with the text to print (or null), notes for stderr, and its pid. Before each request it
looks at the store folder (storage.folder.fingerprint); when a writer changed it, it reopens the
store on a thread and answers from the snapshot it has until the new one is ready, so a request
never waits for an open (650 ms at 100,000 memories). It leaves after the idle time without a
request, when the store folder goes, when a reopen fails or the folder was replaced by another (a
restored backup: the snapshot in hand is not its store's); the hooks asking meanwhile are told to
answer in their own process ("fallback"), which says what is wrong. It leaves on SIGTERM too; it
removes its socket when it leaves (a socket left by a killed resident is replaced by the next one).
It writes nothing to the store: captures are spooled by the hook processes.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import socket
import stat
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from .hook_process import without_unused_imports

if __name__ == "__main__":  # a resident process runs hooks' reads only: pyarrow would import pandas for nothing
    without_unused_imports()

import engramdb

from ..storage import spool
from ..storage.folder import MARKER, fingerprint, row_epoch
from .hook_events import HookInputError
from .hooks import served_read
from .resident_link import REFUSED, REQUEST_BYTES, RESIDENT_EVENTS, idle_seconds, socket_for

POLL_S = 2.0  # how often a resident holding a store it could not open looks at the folder again
WATCH_S = 0.25  # how often a serving resident looks at its store folder between requests
QUIET_S = 0.3  # a change to the folder this old, and none since, starts a reopen (a writer at work is let finish)
MAX_LAG_S = 5.0  # ... or one this old, however busy the writer (a folder that never stays still)
READ_TIMEOUT_S = 5.0  # a request must arrive whole within this (all of it, however it is sent)
HOLD_S = 60.0  # a store that cannot be opened: how long no other resident is started for it, unchanged
WARM_SESSION = "engramdb-resident-warm-up"  # the session a reopen's warm-up context names (none has turns)
MAX_CLIENTS = 32  # connections served at once; one more is closed at once (its hook answers alone)


class Replaced(RuntimeError):
    """The store folder was replaced or removed while the resident served it."""


def _identity(store: Path, seen: tuple[tuple[str, int, int], ...]) -> tuple[int, int, tuple[tuple[str, int, int], ...]]:
    """What makes the folder at `store` the store a snapshot was opened from: the folder itself
    (device, inode) and its marker's entry (written once, never changed by a writer)."""
    try:
        st = os.stat(store)
    except OSError:
        return (-1, -1, ())
    return (st.st_dev, st.st_ino, tuple(e for e in seen if e[0] == MARKER))


def _readable(store: Path) -> tuple[tuple[str, int, int], ...]:
    """The store folder's fingerprint less its spool: a read-only open never reads the spool, so a
    capture a hook spools changes nothing a reader sees until a writer takes it in (the log and the
    segments change then); and a snapshot's close spools its access rows (access_log="spool"), so
    each swap changed the spool and started the next reopen: one write, then a prompt every 0.5 s,
    made 20 reopens in 15 s."""
    return tuple(e for e in fingerprint(store) if e[0] != spool.FOLDER)


class Resident:
    """A store opened read-only, reopened in the background when a writer changed its folder."""

    def __init__(self, store: Path) -> None:
        self.store = Path(os.path.realpath(store))
        self.seen = _readable(self.store)
        self.identity = _identity(self.store, self.seen)
        self.epoch = row_epoch(self.store)  # before the open: a purge during it makes the next reopen
        self.db = engramdb.open(self.store, read_only=True, access_log="spool")
        self._fresh: tuple[engramdb.Store, tuple[tuple[str, int, int], ...], int | None] | None = None
        self._failed: BaseException | None = None
        self._reopening: threading.Thread | None = None
        self.namespace: str | None = None  # the last request's: a reopened snapshot is warmed on it
        # the folder as last looked at, when it was first seen so, and when it first differed from
        # the snapshot's (None: it does not)
        self._looked, self._looked_since = self.seen, 0.0
        self._differs_since: float | None = None

    def refresh(self) -> None:
        """Swap in a snapshot reopened in the background, and start a reopen when the folder changed
        since the snapshot in use was opened and has been still for QUIET_S (or changing for
        MAX_LAG_S). Called before each request and between requests (`_loop`): a capture's take-in
        writes for a second or more (its rounds), and a reopen started at its first change would be
        followed by another, each taking the GIL from the requests served meanwhile; started when the
        writer is done, there is one, mostly between requests. A purge since the snapshot was opened
        is the exception: what it removed must not be answered once purge() returned, so the
        request waits for a snapshot opened after it. Raises what a failed reopen raised."""
        if self._reopening is not None and not self._reopening.is_alive():
            self._swap()
        now = _readable(self.store)
        if _identity(self.store, now) != self.identity:
            # another folder (or another store's marker) now at this path: a restored backup, a
            # store moved in. The snapshot in hand is not its store's: never answer from it
            raise Replaced(f"{self.store} is no longer the store this resident reader opened")
        if now != self.seen and (epoch := row_epoch(self.store)) is not None and epoch != self.epoch:
            if self._reopening is not None:
                self._reopening.join()
                self._swap()
            if self.epoch != epoch:  # no reopen under way, or one opened before the purge
                self._reopen()
                self._swap()
            now = _readable(self.store)
        t = time.monotonic()
        if now != self._looked:
            self._looked, self._looked_since = now, t
        if now == self.seen:
            self._differs_since = None
            return
        if self._differs_since is None:
            self._differs_since = t
        if self._reopening is None and (t - self._looked_since >= QUIET_S or t - self._differs_since >= MAX_LAG_S):
            self._differs_since = None
            self._reopening = threading.Thread(target=self._reopen, name="engramdb-resident-reopen", daemon=True)
            self._reopening.start()

    def _swap(self) -> None:
        """Take the snapshot a finished reopen made (raises what a failed one raised)."""
        self._reopening = None
        if self._failed is not None:
            raise self._failed
        if self._fresh is not None:
            old, (self.db, self.seen, self.epoch), self._fresh = self.db, self._fresh, None
            old.close()

    def _reopen(self) -> None:
        seen = _readable(self.store)  # before the open: a write during it makes the next reopen
        epoch = row_epoch(self.store)
        try:
            fresh = engramdb.open(self.store, read_only=True, access_log="spool")
        except BaseException as exc:  # noqa: BLE001 - raised on the serving thread by refresh()
            self._failed = exc
            return
        if self.namespace is not None:
            # what a first search loads (the id index, the tree, BM25's pages: ~100 ms at 100,000
            # memories) is loaded here, off the request, before the snapshot is swapped in; and
            # what a first context with a session loads besides (the whole id index a session's
            # turns are found with, the row readers, the turn maps: a prompt's first context after
            # a reopen took 130-140 ms at 100,000 memories, the next ones ~50), as UserPromptSubmit
            # asks one after every take-in the store's writers made
            try:
                fresh.search(self.namespace, namespace=self.namespace, k=1, log=False)
                fresh.context(self.namespace, namespace=self.namespace, session_id=WARM_SESSION, max_tokens=1000,
                              log=False)
            except Exception:  # noqa: BLE001, S110 - a warm-up only: the request says what fails
                pass
        self._fresh = (fresh, seen, epoch)

    def answer(self, request: Any) -> dict[str, Any]:
        """The answer to one request (see the module docstring)."""
        if not isinstance(request, dict):
            return {"text": None, "notes": ["the request is not a JSON object"], "pid": os.getpid()}
        event, raw, store = request.get("event"), request.get("stdin"), request.get("store")
        namespace, max_chars, budget = request.get("namespace"), request.get("max_chars"), request.get("budget_s")
        problems = [name for name, ok in (
            ("event", event in RESIDENT_EVENTS), ("stdin", isinstance(raw, str)),
            ("store", isinstance(store, str) and os.path.realpath(store) == str(self.store)),
            ("namespace", namespace is None or isinstance(namespace, str)),
            ("max_chars", isinstance(max_chars, int) and not isinstance(max_chars, bool)),
            ("budget_s", isinstance(budget, (int, float)) and not isinstance(budget, bool))) if not ok]
        if problems:
            return {"text": None, "notes": [f"{REFUSED}: bad {', '.join(problems)}"],
                    "pid": os.getpid()}
        assert isinstance(event, str) and isinstance(raw, str) and isinstance(max_chars, int)
        assert isinstance(budget, (int, float))
        try:
            text, self.namespace = served_read(self.db, event, raw, self.store, namespace, max_chars, float(budget))
        except HookInputError as exc:
            return {"text": None, "notes": [str(exc)], "pid": os.getpid()}
        except (RecursionError, MemoryError) as exc:  # stdin nested past Python's parser, or too big
            return {"text": None, "notes": [f"stdin cannot be read ({type(exc).__name__})"], "pid": os.getpid()}
        except Exception as exc:  # noqa: BLE001 - one request's failure (a hook answering alone says it too) is not the resident's end
            return {"text": None, "notes": [f"{type(exc).__name__}: {exc}"], "pid": os.getpid()}
        return {"text": text, "notes": [], "pid": os.getpid()}

    def close(self) -> None:
        if self._reopening is not None:
            self._reopening.join()
            if self._fresh is not None:
                self._fresh[0].close()
        self.db.close()


def _receive(conn: socket.socket, deadline: float) -> Any:
    """The request on `conn` (read until the client shuts its side), parsed; ValueError when it is
    too long, not whole by `deadline` (a client that sends a byte at a time included), or not JSON."""
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ValueError(f"the request was not whole within {READ_TIMEOUT_S:g} s")
        conn.settimeout(left)
        try:
            chunk = conn.recv(1 << 20)
        except TimeoutError:
            raise ValueError(f"the request was not whole within {READ_TIMEOUT_S:g} s") from None
        if not chunk:
            break
        size += len(chunk)
        if size > REQUEST_BYTES:
            raise ValueError(f"a request over {REQUEST_BYTES:,} bytes")
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks).decode("utf-8", "surrogatepass"))
    except RecursionError:
        raise ValueError("the request is nested too deeply") from None


def _reply(conn: socket.socket, answer: dict[str, Any]) -> None:
    try:
        conn.settimeout(READ_TIMEOUT_S)  # a client that never reads does not hold a thread longer
        conn.sendall(json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except OSError:
        pass  # the hook left (its budget ran out): nothing to do


class _Server:
    """Each connection on a thread of its own (a slow or silent client delays no other hook), the
    store read by one request at a time (`lock`); `ended` once the store cannot be served."""

    def __init__(self, resident: Resident) -> None:
        self.resident = resident
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(MAX_CLIENTS)
        self.ended = threading.Event()

    def handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                try:
                    request = _receive(conn, time.monotonic() + READ_TIMEOUT_S)
                except (OSError, ValueError) as exc:
                    _reply(conn, {"text": None, "notes": [f"{REFUSED}: {exc}"],
                                  "pid": os.getpid()})
                    return
                with self.lock:
                    answer = self._answer(request)
                _reply(conn, answer)
        finally:
            self.slots.release()

    def watch(self) -> None:
        """Between requests: the resident's refresh (a finished reopen swapped in, a quiet change
        reopened), when no request is reading the store; a store that cannot be served ends it."""
        if self.ended.is_set() or not self.lock.acquire(blocking=False):
            return
        try:
            self.resident.refresh()
        except Exception:  # noqa: BLE001 - a failed reopen, a replaced folder: the next hooks answer alone
            self.ended.set()
        finally:
            self.lock.release()

    def _answer(self, request: Any) -> dict[str, Any]:
        if not self.ended.is_set():
            try:
                self.resident.refresh()
                return self.resident.answer(request)
            except Exception as exc:  # noqa: BLE001 - the store cannot be reopened, or was replaced
                self.ended.set()
                why = str(exc) if isinstance(exc, Replaced) else f"its store cannot be reopened ({type(exc).__name__})"
        else:
            why = "it is leaving"
        # the hook answers in its own process, from the store as it is now (and says what is wrong)
        return {"text": None, "notes": [], "fallback": f"the resident reader cannot answer: {why}", "pid": os.getpid()}


def serve(store: Path, idle_s: float, lock_fd: int | None = None) -> int:
    """Serve `store`'s hooks until idle for `idle_s` seconds (see the module docstring): the exit
    code. `lock_fd`: the lock beside the socket, already taken by the hook that started this process
    (resident_link.spawn), so a storm of hooks starts one resident, not one each."""
    sock_path = socket_for(store)
    if sock_path is None or not Path(store).is_dir():
        return 1
    if lock_fd is None:
        lock_fd = os.open(f"{sock_path}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            return 0  # another resident serves this store
    try:
        try:
            resident = Resident(store)
        except Exception:
            _hold(Path(store), idle_s)
            raise
        server = _Server(resident)
        try:
            return _loop(server, sock_path, idle_s)
        finally:
            with server.lock:  # no request is reading the store it closes
                server.resident.close()
    finally:
        os.close(lock_fd)


def _hold(store: Path, idle_s: float) -> None:
    """Keep the lock, serving nothing, while the store that could not be opened (damaged, refused)
    stays as it is: the hooks answer in their own process (and say what is wrong) without starting
    a resident each, one more process importing the engine only to fail again. Ends when the folder
    changes (repaired, written) or after HOLD_S."""
    seen, end = fingerprint(store), time.monotonic() + min(idle_s, HOLD_S)
    while time.monotonic() < end and fingerprint(store) == seen:
        time.sleep(POLL_S)


def _loop(server: _Server, sock_path: Path, idle_s: float) -> int:
    try:
        if not stat.S_ISSOCK(os.lstat(sock_path).st_mode):
            return 1  # not a socket a resident left: not ours to delete (the hooks answer without us)
        sock_path.unlink()  # a killed resident's (we hold the lock: no live one listens there)
    except FileNotFoundError:
        pass
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(str(sock_path))
        ours = os.stat(sock_path).st_ino
        try:
            os.chmod(sock_path, 0o600)
            srv.listen(64)
            last = time.monotonic()
            while (not server.ended.is_set() and server.resident.store.is_dir()
                   and time.monotonic() - last < idle_s):
                srv.settimeout(max(0.01, min(WATCH_S, idle_s - (time.monotonic() - last))))
                try:
                    conn, _ = srv.accept()
                except TimeoutError:
                    server.watch()
                    continue
                last = time.monotonic()
                if not server.slots.acquire(blocking=False):
                    conn.close()  # too many clients at once: this hook answers in its own process
                    continue
                try:
                    threading.Thread(target=server.handle, args=(conn,), name="engramdb-resident-request",
                                     daemon=True).start()
                except RuntimeError:  # no thread to be had
                    server.slots.release()
                    conn.close()
            return 1 if server.ended.is_set() else 0
        finally:
            try:
                if os.stat(sock_path).st_ino == ours:
                    sock_path.unlink()
            except OSError:
                pass


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m engramdb.agents.resident STORE [--idle SECONDS]`: the exit code."""
    parser = argparse.ArgumentParser(prog="python -m engramdb.agents.resident",
                                     description="serve a store's hooks' reads from one process (started by the hooks)")
    parser.add_argument("store", help="the store folder")
    parser.add_argument("--idle", type=float, default=None,
                        help="leave after this many seconds without a request (default: "
                             "$ENGRAMDB_HOOK_RESIDENT_IDLE_S, else 600)")
    parser.add_argument("--lock-fd", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    idle = args.idle if args.idle is not None and args.idle > 0 else idle_seconds()
    # the environment of the hook that started it is not the next hook's: each request says its
    # namespace, or none (then the session's folder names it, as a hook answering alone does)
    for name in ("ENGRAMDB_NAMESPACE", "ENGRAMDB_PATH"):
        os.environ.pop(name, None)
    try:
        return serve(Path(args.store), idle, args.lock_fd)
    except Exception:  # noqa: BLE001 - no store to serve (damaged, refused, gone): the hooks answer without us
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

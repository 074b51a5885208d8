"""Upkeep off the request path: one background thread per writable store.

A request (search, context) reads what is already made: the topics last computed, the index
versions last built (and scans exactly what they do not cover yet). When it finds them behind the
namespace, it asks this worker to catch up and returns at once; the worker runs one job at a time,
each under its own key (a namespace's topics, a space's tree): a job asked for again while it
waits is run once.

Pacing: a job starts `DELAY` after it is first asked for; after a job, the same key is not run again before `PACE` times what it took (at least
`MIN_GAP` seconds), so upkeep takes at most about a `1 / (PACE + 1)` share of one core however
fast an agent writes, and topics lag their namespace by at most about `PACE + 1` runs' time (a
second or two at 10,000 memories, half a minute at 100,000: bench/RESULTS.md "The agent loop").
A log's flush is not paced (`ask(..., paced=False)`): it is asked only when rows are due, and
rows not written by the worker are written by the request that finds too many waiting. While a
`wait` (`db.admin.settle()`) watches a key, that key runs without its delay or pace (but for the
backoff of its failures): the caller asked to catch up now.
The heavy parts of a job (clustering, tree builds) run in the C++ core with the GIL released, so a
request on another thread goes on meanwhile.

`close()` stops the thread and waits for the running job (a job writes derived files, which only
an open writer may do); a job that fails is asked again on the next request, each failure in a
row doubling its key's gap (up to `MAX_BACKOFF`): a job that fails every time (a full disk, data
its clustering cannot take) runs about a dozen times an hour, not every second an agent asks, and
is logged as a warning at its 1st, 2nd, 4th, 8th... failure in a row (the rest at debug level).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import sys
import threading
import time
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._requests_first import background_job, wait_until_quiet
from ..index import registry  # noqa: F401 - its fork hook registered first, so ours runs before it
from ..model.errors import CorruptFile
from ..spaces.forking import members
from ..spaces.query import lexical_space
from ..spaces.schema import Schema
from ..storage.segment import Segment
from ..storage.view import View

if TYPE_CHECKING:
    from .facade import Store

log = logging.getLogger("engramdb")

PACE = 9.0  # a key waits this many times its last run's duration before it runs again
MIN_GAP = 1.0  # seconds, at least, between two runs of one key
WARM_NAMESPACES = 4  # the newest segment's namespaces whose turn maps the warm-up builds
FLUSH_WAIT_S = 0.25  # seconds, at most, a log's flush on the worker waits for running requests
WARM_WAIT_S = 0.25  # seconds, at most, the warm job's reads wait for running requests, over all their steps
RUNS_KEPT = 256  # keys whose last run stats() reports (a service with 100,000 namespaces has as many topic keys)
MAX_BACKOFF = 600.0  # seconds, at most, between two runs of a key that keeps failing
DELAY = 0.5  # seconds a job waits after it is asked for: a burst of writes asks once, and a short
# script (open, add, context, close) ends before any job starts, so its close() waits for none


JOB_SWITCH = 0.0005  # seconds: the interpreter's GIL switch interval while a job runs (default 0.005)
_switch_lock = threading.Lock()
_switch_jobs = 0  # jobs running now, in every store of the process
_switch_saved = 0.005  # the interval before the first of them


@contextlib.contextmanager
def _switching_faster() -> Iterator[None]:
    """The GIL's switch interval lowered to `JOB_SWITCH` while any store's job runs, then put back.
    Why: a job's Python holds the GIL between the releases of its numpy and C++ calls, and each
    time a request's own thread releases the GIL (a kernel, a read) it waits up to the interval
    to take it back: a search making 40 such calls beside a topics run waited 200 ms in the
    interpreter's 5 ms turns (issue 26's 1,000-turn replay); at 0.5 ms, a fifth of that."""
    global _switch_jobs, _switch_saved
    with _switch_lock:
        if _switch_jobs == 0:
            _switch_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_saved, JOB_SWITCH))
        _switch_jobs += 1
    try:
        yield
    finally:
        with _switch_lock:
            _switch_jobs -= 1
            if _switch_jobs == 0:
                sys.setswitchinterval(_switch_saved)


class Worker:
    """The store's background upkeep: `ask(key, job)` queues, the worker thread runs (see the
    module docstring). Made per store; the thread starts on the first job."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._pid = os.getpid()  # a forked child never runs its parent's jobs (it does not own the writer)
        self._cv = threading.Condition()
        self._waiting: dict[str, Callable[[], Any]] = {}
        self._next: dict[str, float] = {}  # key -> monotonic time it may run again
        self._running: str | None = None
        self._done: dict[str, int] = {}  # key -> runs finished (what settle() waits to see move)
        self._unpaced: set[str] = set()  # keys asked with paced=False (a log's flush: see `ask`)
        self._watched: Counter[str] = Counter()  # keys the `wait`s under way count runs of (never forgotten meanwhile)
        self._thread: threading.Thread | None = None
        self._closed = False
        # key -> {"ms", "at", "error", "failures"} of its last run, for the `RUNS_KEPT` keys run last
        self.runs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        _LIVE.add(self)

    def ask(self, key: str, job: Callable[[], Any], delay: float = DELAY, *, paced: bool = True) -> None:
        """Run `job` soon on the worker thread (once, however often it is asked before it runs),
        `delay` seconds after it is first asked for at the earliest. `paced` False: the key may run
        again as soon as it is asked (a log's flush: see the module docstring), but for the backoff of its failures."""
        if self._forked():
            return
        with self._cv:
            if self._closed:
                return
            if not paced:
                self._unpaced.add(key)
            if key not in self._waiting:
                self._next[key] = max(self._next.get(key, 0.0), time.monotonic() + delay)
            self._waiting[key] = job
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=f"engramdb-upkeep:{self._name}",
                                                daemon=True)
                self._thread.start()
            self._cv.notify_all()

    @property
    def closing(self) -> bool:
        """Whether `close` was called: a long job stops at its next step (`Background.warm`)."""
        return self._closed

    def _forked(self) -> bool:
        """True in a child forked from the process that made this worker: the parent's jobs and
        thread are not here (and its lock may have been held at the fork), so nothing waits."""
        return os.getpid() != self._pid

    def pending(self) -> list[str]:
        """The keys waiting or running now (none in a forked child: they are its parent's)."""
        if self._forked():
            return []
        with self._cv:
            return sorted({*self._waiting, *([self._running] if self._running else [])})

    def last_runs(self) -> dict[str, dict[str, Any]]:
        """A copy of `runs`, oldest first (taken under the lock: the worker changes it; in a forked
        child without it: the lock may have been held at the fork, and no thread here changes it)."""
        if self._forked():
            return {k: dict(v) for k, v in self.runs.items()}
        with self._cv:
            return {k: dict(v) for k, v in self.runs.items()}

    def wait(self, timeout: float | None = None) -> bool:
        """Block until what waits or runs now has run (True), or `timeout` seconds pass (False). A job whose
        last run failed and that waits out its backoff is not waited for (`runs` says why). True
        at once in a forked child: what waits is its parent's, which no thread here will run."""
        if self._forked():
            return True
        end = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            # what is waiting or running now, and the runs each must have finished for that: one
            # more for the run under way, one more for the job waiting (a key running and asked
            # again meanwhile owes two: its job asked before this call has not run when the run
            # under way ends). A job asked for after this call is not waited for (under steady
            # writes something is always asked for)
            # (`_forget_old` keeps these keys' counts while this call watches them)
            need = {k: self._done.get(k, 0) + (k == self._running) + (k in self._waiting)
                    for k in [*self._waiting, *([self._running] if self._running else [])]}
            self._watched.update(need)
            self._cv.notify_all()  # the worker runs what this call watches without its delay or pace

            def owed() -> bool:
                if self._thread is None or not self._thread.is_alive():
                    return False  # no thread runs them (never started, or died): nothing to wait for
                return any(self._done.get(k, 0) < n and (k == self._running or (
                    k in self._waiting and not self.runs.get(k, {}).get("failures"))) for k, n in need.items())

            try:
                while owed():
                    left = None if end is None else end - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._cv.wait(left if left is None else min(left, 0.5))
                return True
            finally:
                self._watched.subtract(need)
                for k in [k for k in need if self._watched[k] <= 0]:
                    del self._watched[k]

    def close(self) -> None:
        """Stop: drop what waits, let the running job finish, join the thread (in a forked child,
        nothing: the thread and the jobs are the parent's)."""
        if self._forked():
            self._closed = True
            return
        with self._cv:
            self._closed = True
            self._waiting.clear()
            self._cv.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _forget_old(self) -> None:
        """Keep `runs` to the `RUNS_KEPT` keys run last, and `_next` to the keys whose gap has not
        passed yet: one key per namespace, and a namespace asked once must not stay for ever.
        A key that keeps failing keeps its count of failures while its backoff runs."""
        while len(self.runs) > RUNS_KEPT:
            old, _ = self.runs.popitem(last=False)
            if old not in self._waiting:
                self._next.pop(old, None)
                if not self._watched[old]:  # a `wait` under way counts this key's runs on from its count
                    self._done.pop(old, None)
        if len(self._next) > 2 * RUNS_KEPT:
            now = time.monotonic()
            for k in [k for k, t in self._next.items() if t <= now and k not in self._waiting]:
                del self._next[k]

    def _loop(self) -> None:
        while True:
            with self._cv:
                key = job = None
                while not self._closed:
                    now = time.monotonic()
                    # a key a `wait` (settle) watches runs now: its delay and pace are for writes
                    # that keep coming, and the caller asked to catch up (a failing key keeps its backoff)
                    ready = [k for k in self._waiting if self._next.get(k, 0.0) <= now or (
                        self._watched[k] and not self.runs.get(k, {}).get("failures"))]
                    if ready:
                        key = ready[0]
                        job = self._waiting.pop(key)
                        self._running = key
                        break
                    soonest = min((self._next.get(k, 0.0) for k in self._waiting), default=None)
                    self._cv.wait(None if soonest is None else max(0.01, soonest - now))
                if self._closed:
                    self._running = None
                    self._cv.notify_all()
                    return
            t0 = time.monotonic()
            error = None
            try:
                assert job is not None
                with _switching_faster(), background_job(lambda: self._closed):  # its long parts give way to requests
                    job()
            except Exception as e:  # noqa: BLE001 - upkeep is best effort: no request depends on it
                error = f"{type(e).__name__}: {e}"
            except BaseException:  # the thread ends (SystemExit, ...): leave nothing marked running
                with self._cv:
                    self._running = None
                    self._cv.notify_all()
                raise
            took = time.monotonic() - t0
            with self._cv:
                assert key is not None
                failures = self.runs.get(key, {}).get("failures", 0) + 1 if error else 0
                paced = key not in self._unpaced
                gap = max(MIN_GAP, PACE * took) if paced else 0.0
                if failures:
                    gap = min(MAX_BACKOFF, max(gap, MIN_GAP) * 2.0 ** min(failures, 30))
                self._next[key] = time.monotonic() + gap
                self.runs[key] = {"ms": round(took * 1e3, 1), "at": time.time(), "error": error,
                                  "failures": failures}
                self.runs.move_to_end(key)
                self._done[key] = self._done.get(key, 0) + 1
                self._forget_old()
                self._running = None
                self._cv.notify_all()
            if error is not None:
                # a warning at the 1st, 2nd, 4th, 8th... failure in a row: a job failing every
                # time does not fill the log
                level = logging.WARNING if failures & (failures - 1) == 0 else logging.DEBUG
                log.log(level, "background upkeep %s of %s failed (%d in a row; next try in %.0f s): %s", key,
                        self._name, failures, gap, error)


_LIVE: weakref.WeakSet[Worker] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """At interpreter exit, before its finalisation: stop every worker still running, letting a
    running job finish (a store a script never closed; a daemon thread still inside numpy or
    Arrow while the interpreter tears down can crash the process's exit)."""
    for w in members(_LIVE):
        w.close()


_WARMING: weakref.WeakSet[Background] = weakref.WeakSet()  # every store's, for the fork hook below
_HELD: list[threading.Lock] = []  # the warm locks a fork holds from just before it until just after


def _before_fork() -> None:
    """A fork waits for a warm job under way (`Background.warm`): it holds, one after another,
    the store's id, ratings, topics and curiosity locks, and a child forked meanwhile inherited
    the one held then by a thread it does not have: its first search or context through its
    parent's handle waited for ever. Registered after the index registry's hook, so it runs
    before it (hooks run in reverse): the warm job may still need an index's lock."""
    for b in members(_WARMING):
        b._warming.acquire()
        _HELD.append(b._warming)


def _after_fork() -> None:
    while _HELD:
        _HELD.pop().release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)


def _segment_vectors(seg: Segment, schema: Schema, spaces: list[str]) -> None:
    """A segment's vectors of `spaces` read (and checked) ahead of a request. Damaged ones are
    left for the request that reads them, which raises CorruptFile naming the file (the warm job
    is not run again, so its error would say nothing more)."""
    for space in spaces:
        try:
            seg.vectors(schema, space)
        except CorruptFile:
            return


class Background:
    """The store's use of its background worker (`db.admin.settle`, the indexes after a checkpoint)."""

    def __init__(self, db: Store) -> None:
        self._db = db
        self._warming = threading.Lock()  # held while `warm` runs (a fork waits for it)
        _WARMING.add(self)

    def settle(self, timeout: float | None = None) -> bool:
        """`AdminVerbs.settle`."""
        return self._db._upkeep.wait(timeout) if self._db._upkeep is not None else True

    def after_commit(self, view: View) -> None:
        """A checkpoint folded the WAL into a segment file: bring the indexes up to it and save
        them, on the worker when there is one (a tree built at 100,000 memories takes seconds:
        not inside the `add` that happened to fill the WAL), else now."""
        if self._db._upkeep is None:
            self._db._indexes.save(view)
        else:
            self._db._upkeep.ask("indexes", self.catch_up_indexes)

    def rotating(self, log: str) -> Callable[[Callable[[], int]], None] | None:
        """What a log (storage/arrow_log.py `on_crowded`) hands its file merge to: this store's
        worker, under the key `<log>:rotate` (a request's append never merges); None without a
        worker (the log merges on the appender's thread)."""
        upkeep = self._db._upkeep
        if upkeep is None:
            return None
        return lambda rotate: upkeep.ask(f"{log}:rotate", rotate)

    def log_upkeep(self, log: str) -> tuple[Callable[[Callable[[], int]], None] | None,
                                            Callable[[Callable[[], None]], None] | None]:
        """A log's (`on_crowded`, `on_due`): its merges and its flushes by the worker, if any, so a
        request never writes the log's files (`rotating`, `flushing`)."""
        return self.rotating(log), self.flushing(log)

    def flushing(self, log: str) -> Callable[[Callable[[], None]], None] | None:
        """What a log (storage/arrow_log.py `on_due`) hands a due flush to: this store's worker,
        under the key `<log>:flush`, at once; the job first waits for the running requests to end
        (FLUSH_WAIT_S at most: making and writing a file of ~1,000 rows is 13-40 ms of the interpreter
        beside them; their appends no longer wait for it, storage/arrow_log.py). None
        without a worker (the appender flushes, as a reader's store does)."""
        upkeep = self._db._upkeep
        if upkeep is None:
            return None

        def flush_when_quiet(flush: Callable[[], None]) -> None:
            wait_until_quiet(FLUSH_WAIT_S)
            flush()

        # unpaced: a flush is asked only when rows are due, and a paced one (9 x its 0.3-0.4 s, its
        # wait for quiet included) let an agent loop's ~80 access rows a turn pass the bound, so
        # the request that crossed it wrote 4,100 rows itself, 30-48 ms, every ~50 turns
        return lambda flush: upkeep.ask(f"{log}:flush", functools.partial(flush_when_quiet, flush), delay=0.0,
                                        paced=False)

    def warm(self) -> None:
        """The worker's first job, asked at open with no delay: load what a new process's first
        search and context read from the folder (the dense and lexical indexes, the id probe, each
        segment's namespace counts and session keys, the ratings, the stored topics, the curiosity
        queue; then, step by step after the running requests, each segment's row reader and
        vectors, and the turn maps of the namespaces written last: `_warm_reads`), each under its
        own lock, so a request
        that comes meanwhile waits for the part it needs rather than loading it again. Why: these
        loads were ~90 ms of the first context after opening a folder of 100,000 memories (issue
        26); a service opens long before its first request."""
        with self._warming:  # a fork waits for the whole job (see `_before_fork`)
            db = self._db
            view = db._engine.view
            # the dense index first: a request that comes at once loads the lexical index itself
            # (its search reads that first), meanwhile, under the other kind's lock (index/registry.py)
            main = db.schema[db.schema.main]
            if main.kind == "dense" and db._indexes.kind != "none":
                db._indexes.dense(main, view)
            lex = lexical_space(db.schema, db.embedders)
            if lex is not None:
                db._indexes.bm25(lex, view)
            view.key_of("")  # the id index's probe runs of this snapshot (no id is empty)
            for seg in view.segments:  # what the search's session support and neighbours read of each
                seg.ns_count("")
                seg.session_keys()
            db._usage.ratings  # noqa: B018 - the property loads them
            db.topics._stored_topics()
            db.curiosity._keys()
        self._warm_reads(view, [sp.name for sp in (main, lex) if sp is not None])

    def _warm_reads(self, view: View, spaces: list[str]) -> None:
        """The warm job's second part: what reading the hits takes, step by step. Each segment's
        row reader; the turn maps of the conversations an agent goes on with first (those of the
        newest rows: ~10 ms a namespace at 100,000 turns); each segment's vectors of `spaces` (the
        dense rescore's and the context's own match); the whole id index (the first write's, and
        a session's first context's). Before each step it waits for the running requests to end
        (engramdb/_requests_first.py), WARM_WAIT_S at most over the whole part, and holds the fork
        lock only for the step itself; it stops when the store closes. Why: a
        request that comes at once after the open runs beside these steps otherwise, and a wait per
        step made a close or a fork wait ~14 s at 100,000 memories while other threads searched."""
        db, upkeep = self._db, self._db._upkeep
        steps: list[Callable[[], object]] = [seg.row_reader for seg in view.segments]
        steps += [functools.partial(db._indexes.turns.get, view, ns)
                  for ns in view.newest_namespaces()[:WARM_NAMESPACES]]
        steps += [functools.partial(_segment_vectors, seg, db.schema, spaces) for seg in view.segments]
        steps.append(view.index_ids)
        patience = WARM_WAIT_S
        for step in steps:
            if upkeep is None or upkeep.closing:
                return
            if patience > 0:
                began = time.monotonic()
                wait_until_quiet(patience)
                patience -= time.monotonic() - began
            with self._warming:
                step()

    def catch_up_indexes(self) -> None:
        """The worker's job: advance the indexes in memory to the newest snapshot without the
        writer's lock (searches and writes go on; searches scan exactly what an index does not
        cover yet), then write the changed ones under it (a purge must not race their files)."""
        view = self._db._engine.view
        lex = lexical_space(self._db.schema, self._db.embedders)
        if lex is not None:  # what the default search reads first: made here, not by the first search after a reopen
            self._db._indexes.bm25(lex, view)
        main = self._db.schema[self._db.schema.main]
        if main.kind == "dense" and self._db._indexes.kind != "none":  # the trees of namespaces past tree_min_rows
            self._db._indexes.dense(main, view)
        self._db._indexes.sync(view)
        with self._db._engine.writing() as view:
            self._db._indexes.save(view)

    def stats(self) -> dict[str, Any]:
        """What `stats()["upkeep"]` says: whether the worker runs, what waits, each job's last run."""
        w = self._db._upkeep
        return {"background": w is not None, "pending": w.pending() if w is not None else [],
                "runs": w.last_runs() if w is not None else {}}


__all__ = ["DELAY", "FLUSH_WAIT_S", "MAX_BACKOFF", "MIN_GAP", "PACE", "RUNS_KEPT", "WARM_NAMESPACES", "WARM_WAIT_S", "Background", "Worker"]

"""Stop 48, second adversary: settle() (Worker.wait) and the run counts `_forget_old` forgets.

`wait` now needs each key's `_done` count to reach `done + running + waiting` as counted at the call.
When more than RUNS_KEPT other keys run during the wait, a key already waited for (it ran) is
forgotten and its count reset to 0; asked again (a namespace written again) it is owed once more,
for as many paced runs as it ever had. Before stop 48 (`== n`) a reset count was never owed.
RUNS_KEPT is lowered here only to keep the test short: a service has a topics key per namespace.
A second case (found after the first fix, which counted a count under its value at the call as
paid): the forgotten count climbs back from 0 as the key runs again, and once it reached that value
while the settle still waited on another key, the key was owed again. Both are fixed by keeping the
counts of the keys a wait watches (`Worker._watched`). The bounds below are the waits' timeouts:
liveness, sized well past what is owed.
"""

from __future__ import annotations

import threading
import time

import pytest
from engramdb.store import background
from engramdb.store.background import Worker


def _forgotten_then_written(w: Worker, job_s: float, last: tuple[str, float, float], timeout: float) -> bool:
    """With "topics:ns0" running, more than RUNS_KEPT other keys run (its count forgotten) and one
    more, `last` (key, delay, run s), is owed; meanwhile ns0 is written again and again (each run
    `job_s`). Whether the settle called then returned within `timeout`."""
    started = threading.Event()
    w.ask("topics:ns0", lambda: (started.set(), time.sleep(0.3)), delay=0.0)
    assert started.wait(5)  # running when settle is called: owed one more run
    for i in range(6):
        w.ask(f"topics:other{i}", lambda: None, delay=0.0)
    key, delay, run_s = last
    w.ask(key, lambda: time.sleep(run_s), delay=delay)
    stop = threading.Event()

    def writes() -> None:  # ns0 written again once the others ran
        while not stop.is_set() and "topics:other5" not in w.last_runs():
            time.sleep(0.01)
        while not stop.is_set():
            w.ask("topics:ns0", lambda: time.sleep(job_s), delay=0.0)
            time.sleep(0.05)

    th = threading.Thread(target=writes)
    th.start()
    try:
        return w.wait(timeout=timeout)
    finally:
        stop.set()
        th.join()


def test_settle_does_not_wait_again_for_a_key_it_saw_run_and_then_forgot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "RUNS_KEPT", 4)
    w = Worker("adversary2")
    try:
        monkeypatch.setattr(background, "MIN_GAP", 0.0)  # the key's past runs, unpaced to get there fast
        monkeypatch.setattr(background, "PACE", 0.0)
        for _ in range(20):
            w.ask("topics:ns0", lambda: None, delay=0.0)
            assert w.wait(5)
        monkeypatch.setattr(background, "MIN_GAP", 1.0)  # from now on paced as in a store
        monkeypatch.setattr(background, "PACE", 9.0)
        # owed at the call: ns0's run under way, the six keys and "last" (~1.3 s)
        assert _forgotten_then_written(w, 0.2, ("last", 0.0, 1.0), timeout=6.0), "it waited again for 'topics:ns0'"
    finally:
        w.close()


def test_settle_does_not_wait_again_for_a_forgotten_key_whose_count_climbed_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "RUNS_KEPT", 4)
    w = Worker("adversary2-rerun")
    try:
        monkeypatch.setattr(background, "MIN_GAP", 0.0)
        w.ask("topics:ns0", lambda: None, delay=0.0)  # it ran once before
        assert w.wait(5)
        monkeypatch.setattr(background, "MIN_GAP", 1.0)
        # owed at the call: ns0's run under way, six short keys, one asked with a delay of 2 s
        assert _forgotten_then_written(w, 0.6, ("curiosity:write", 2.0, 0.0), timeout=8.0), \
            "it waited again for 'topics:ns0'"
    finally:
        w.close()


def test_settle_runs_a_job_asked_again_during_its_run_without_its_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job asked again while its key ran waited out the key's pace (9 x its run) before a settle
    could return (a 0.5 s job, a 5.45 s settle; a topics run of 4 s at 100,000 memories, 36 s). A
    settle asks to catch up now: what it watches runs at once. With a pace no test could wait out,
    the settle returns only if so."""
    monkeypatch.setattr(background, "PACE", 1e6)
    w = Worker("adversary2-pace")
    running, release, ran = threading.Event(), threading.Event(), []
    try:
        def first() -> None:
            running.set()
            release.wait(5)

        w.ask("topics:n", first, delay=0.0)
        assert running.wait(5)
        w.ask("topics:n", lambda: ran.append(1), delay=0.0)  # asked again during its run
        release.set()
        assert w.wait(20) and ran == [1]
    finally:
        release.set()
        w.close()

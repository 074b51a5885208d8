"""Stop 48, second adversary (after 62f1e89): settle() and a forgotten run count that climbs back.

62f1e89 counts a key as paid when its `_done` count is under where it was at the call (`base <=
done < n`): `_forget_old` reset it. But the key runs again (a namespace written again), its count
climbs back from 0, and once it reaches `base` while settle still waits on another key (here one
asked with a delay, as curiosity's write is) the key is owed again, for paced runs (9 x its run
apart). RUNS_KEPT is lowered only to keep the test short.
"""

from __future__ import annotations

import threading
import time

import pytest
from engramdb.store import background
from engramdb.store.background import Worker


def test_settle_does_not_wait_again_for_a_forgotten_key_whose_count_climbed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "RUNS_KEPT", 4)
    w = Worker("adversary2-rerun")
    try:
        monkeypatch.setattr(background, "MIN_GAP", 0.0)
        w.ask("topics:ns0", lambda: None, delay=0.0)  # it ran once before
        assert w.wait(5)
        started = threading.Event()
        w.ask("topics:ns0", lambda: (started.set(), time.sleep(0.3)), delay=0.0)
        assert started.wait(5)  # running when settle is called: base 1, owed one run
        monkeypatch.setattr(background, "MIN_GAP", 1.0)
        for i in range(6):  # more than RUNS_KEPT keys run after it: its count is forgotten
            w.ask(f"topics:other{i}", lambda: None, delay=0.0)
        w.ask("curiosity:write", lambda: None, delay=2.0)  # owed too, not ready for 2 s
        stop = threading.Event()

        def writes() -> None:  # ns0 written again once the others ran: its count climbs back to 1
            while not stop.is_set() and "topics:other5" not in w.last_runs():
                time.sleep(0.01)
            while not stop.is_set():
                w.ask("topics:ns0", lambda: time.sleep(0.6), delay=0.0)  # paced: 5.4 s between runs
                time.sleep(0.05)

        th = threading.Thread(target=writes)
        th.start()
        try:
            t0 = time.monotonic()
            settled = w.wait(timeout=8.0)
            took = time.monotonic() - t0
        finally:
            stop.set()
            th.join()
        # what it owed at the call: ns0's run under way (done), six short keys, one ready at 2 s
        assert settled and took < 4.0, f"settle -> {settled} after {took:.1f} s: it waited again for 'topics:ns0'"
    finally:
        w.close()

"""Stop 48 adversary: settle() returns while a flush asked before it still waits.

`Worker.wait` (what `db.admin.settle` runs) notes each key's finished runs when called and returns
once each moved; a key that was running AND asked again meanwhile moves once, when the run under
way ends: the job asked again (before the wait) has not run, against settle's "caught up with
what was asked of it so far". Stop 48's unpaced `<log>:flush` makes this the usual state under
load (an append asks the flush again while it runs): settle() returned with 1,700-6,800 due access
rows buffered in 6 of 30 trials (/tmp/adv48/settle_check.py; 0 of 30 before stop 48).
Script: /tmp/adv48/settle_worker.py. Failed on d2ba664; fixed in the same stop.
"""

from __future__ import annotations

import threading
import time

from engramdb.store.background import Worker


def test_wait_waits_for_a_job_asked_again_while_its_key_ran() -> None:
    w = Worker("t")
    first_running, release, second_ran = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        first_running.set()
        release.wait(5)

    def second() -> None:
        time.sleep(0.3)
        second_ran.set()

    try:
        w.ask("access:flush", first, delay=0.0, paced=False)
        assert first_running.wait(5)
        w.ask("access:flush", second, delay=0.0, paced=False)  # asked while the first runs
        got: dict[str, bool] = {}
        waiter = threading.Thread(target=lambda: got.setdefault("ok", w.wait(10)))
        waiter.start()
        time.sleep(0.1)
        release.set()
        waiter.join()
        assert got["ok"] and second_ran.is_set(), "settle returned before the job asked before it had run"
    finally:
        release.set()
        w.close()

"""A process forked while another thread works out a snapshot's layout (stop 39 adversary).

`functools.cached_property` on Python 3.10-3.11 holds ONE lock per property for every instance
while any computes: View.bases (what every read asks first) was one. A process forked while a
writer's or a search's thread was inside it inherited that lock held by a thread that no longer
exists, and every read of every store in the child (its own store opened anew included) waited
for ever: 2 of 150 children forked beside a writing thread hung in the attack. The layout is now
worked out without a lock (a value of the frozen snapshot: two threads racing compute the same).

The thread is held inside the computation (Segment.__len__, which it calls, waits for the test),
so the fork meets the held lock every time, not by chance."""

from __future__ import annotations

import inspect
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import engramdb
import pytest
from engramdb import Tuning
from engramdb.storage.segment import Segment

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def in_layout() -> bool:
    """Is the caller inside View.bases (the snapshot's layout)?"""
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_code.co_name == "bases" and frame.f_code.co_filename.endswith("view.py"):
            return True
        frame = frame.f_back
    return False


def test_a_child_forked_while_a_thread_lays_out_a_snapshot_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entered, release = threading.Event(), threading.Event()
    holder: dict[str, Any] = {}
    real_len = Segment.__len__

    def held_len(self: Segment) -> int:
        if threading.get_ident() == holder.get("ident") and in_layout() and not release.is_set():
            entered.set()
            release.wait()
        return real_len(self)

    monkeypatch.setattr(Segment, "__len__", held_len)

    def work() -> None:
        holder["ident"] = threading.get_ident()
        db = engramdb.open(tmp_path / "parent", tuning=Tuning(background=False))
        db.add("apples by the river", namespace="n")
        db.search("apples", namespace="n", log=False)
        db.close()

    t = threading.Thread(target=work)
    t.start()
    try:
        assert entered.wait(120), "the thread never laid out a snapshot"
        pid = os.fork()
        if pid == 0:  # the child: a store of its own, a write and a read
            code = 1
            try:
                signal.alarm(60)  # a child that waits for ever is the failure: end it
                child = engramdb.open(tmp_path / "child", tuning=Tuning(background=False))
                child.add("pears in the orchard", namespace="n")
                code = 0 if [h.memory.content for h in child.search("pears", namespace="n", log=False)] == \
                    ["pears in the orchard"] else 2
                child.close()
            finally:
                sys.stdout.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        t.join()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status} (killed by its alarm: hung)"

"""kernels.blas_threads under attack: BLAS's thread count is one setting for the whole process,
so windows that overlap (two threads ingesting at once), a fork while a window is open and a
threadpoolctl that cannot scan the process must each leave the caller's setting as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
from engramdb.kernels.blas_threads import one_blas_thread

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads() -> list[int]:
    return [int(i["num_threads"]) for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads() -> list[int]:
    """The process's own setting, when it is more than one thread (a setting a window's 1 cannot
    be mistaken for). Not set by threadpool_limits here: threadpoolctl lets only the thread that
    set OpenBLAS's count change it while that setting holds, so no other thread's window could."""
    before = _blas_threads()
    if not before or min(before) < 2:
        pytest.skip(f"BLAS runs {before or 'no'} threads here: a window's 1 would not show")
    return before


def test_two_threads_whose_windows_overlap_put_the_callers_setting_back(two_blas_threads: list[int]) -> None:
    """A enters, B enters, A leaves, B leaves (two stores ingesting at once): each window set and
    put back its own, B put back A's 1, and BLAS stayed on one thread for the rest of the process."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    inside: list[list[int]] = []

    def a() -> None:
        with one_blas_thread():
            a_in.set()
            b_in.wait()
            inside.append(_blas_threads())
        a_out.set()

    def b() -> None:
        a_in.wait()
        with one_blas_thread():
            b_in.set()
            a_out.wait()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert inside == [[1] * len(two_blas_threads)]
    assert _blas_threads() == two_blas_threads


def test_a_nested_window_keeps_one_thread_until_the_outer_one_ends(two_blas_threads: list[int]) -> None:
    with one_blas_thread():
        with one_blas_thread():
            pass
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == two_blas_threads


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_fork_while_another_thread_holds_the_limit_gives_the_child_the_callers_setting(
        two_blas_threads: list[int]) -> None:
    """Nothing in the child would ever leave the other thread's window: its BLAS stayed on one
    thread for good. The child gets the caller's setting and can open its own windows."""
    entered, done = threading.Event(), threading.Event()

    def hold() -> None:
        with one_blas_thread():
            entered.set()
            done.wait()

    t = threading.Thread(target=hold)
    t.start()
    entered.wait()
    try:
        assert set(_blas_threads()) == {1}
        pid = os.fork()
        if pid == 0:  # the child: report by exit code only
            code = 1
            try:
                signal.alarm(60)  # a child stuck on a lock ends, failing the test, rather than hang it
                after_fork = _blas_threads()
                with one_blas_thread():
                    inside = _blas_threads()
                code = 0 if (after_fork, inside, _blas_threads()) == (
                    two_blas_threads, [1] * len(two_blas_threads), two_blas_threads) else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        done.set()
        t.join()
    assert _blas_threads() == two_blas_threads


def test_a_threadpoolctl_that_cannot_scan_the_process_leaves_the_products_as_numpy_runs_them() -> None:
    """threadpoolctl's scan of the loaded libraries raising (a platform it does not know) made
    every ingest of more than 8 memories fail with its error; the projection now runs as numpy
    runs it."""
    script = textwrap.dedent("""
        import sys, types
        fake = types.ModuleType("threadpoolctl")
        class ThreadpoolController:
            def __init__(self):
                raise RuntimeError("cannot scan this process")
        fake.ThreadpoolController = ThreadpoolController
        sys.modules["threadpoolctl"] = fake
        import engramdb
        db = engramdb.open(None)
        ids = db.add_many([{"content": f"note {i} about the cello", "namespace": "n"} for i in range(40)])
        print(len(ids), db.search("cello", namespace="n", k=3)[0].memory.content.startswith("note"))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["40", "True"]

"""engramdb/_requests_first.py: the count of running requests the worker's warm-up waits on (its
seam: the `request` decorator and `wait_until_quiet`), and through a store: a search or a context
counts while it runs, and the count comes down after an error and in a forked child."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import engramdb
import pytest
from engramdb._requests_first import (
    FIRST_WAYS_S,
    GIVE_WAY_S,
    background_job,
    give_way,
    request,
    requesting,
    wait_until_quiet,
)


def test_a_running_request_keeps_the_worker_waiting_until_it_ends_and_errors_end_it_too() -> None:
    entered, release = threading.Event(), threading.Event()

    @request
    def slow(x: int) -> int:
        """doc"""
        entered.set()
        release.wait(10)
        return x + 1

    @request
    def failing() -> None:
        raise ValueError("bad")

    assert slow.__doc__ == "doc" and slow.__name__ == "slow"
    out: list[int] = []
    t = threading.Thread(target=lambda: out.append(slow(1)))
    t.start()
    assert entered.wait(10)
    assert wait_until_quiet(0.05) is False  # bounded: it gives up, it does not hang
    release.set()
    t.join(10)
    assert out == [2] and wait_until_quiet(5) is True
    with pytest.raises(ValueError, match="bad"):
        failing()
    assert wait_until_quiet(0.05) is True


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_while_a_request_runs_is_quiet() -> None:
    release, t = _request_held()
    try:
        pid = os.fork()
        if pid == 0:  # the child: the thread that ran the request is not here
            os._exit(0 if wait_until_quiet(1.0) else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        release.set()
        t.join(10)


def test_searches_and_contexts_count_while_they_run(tmp_path: Path) -> None:
    seen: list[bool] = []
    with engramdb.open(tmp_path / "s") as db:
        db.add("The deploy script needs AWS_PROFILE set.", namespace="n")
        real = db.embedders[db.schema.main].embed

        def embed(texts: list[str]) -> object:  # runs inside the request
            seen.append(wait_until_quiet(0.01))
            return real(texts)

        db.embedders[db.schema.main].embed = embed  # type: ignore[method-assign]
        try:
            db.search("deploy", namespace="n")
            db.context("deploy", namespace="n", max_tokens=200)
        finally:
            del db.embedders[db.schema.main].embed  # the class's again
    assert seen and not any(seen)
    assert wait_until_quiet(0.05)


def test_a_store_s_writes_count_as_requests_but_a_background_job_s_own_do_not(tmp_path: Path) -> None:
    """A write the caller waits for (add, add_messages, update: `Engine.writing`) counts while it
    runs, so a worker's job gives way to it (an agent adds a turn, then asks); a write made
    inside a background job does not (it would wait for itself)."""
    seen: list[bool] = []
    with engramdb.open(tmp_path / "s") as db:
        real = db.embedders[db.schema.main].embed

        def embed(texts: list[str]) -> object:  # runs inside the write, under the writer's lock
            seen.append(wait_until_quiet(0.01))
            return real(texts)

        db.embedders[db.schema.main].embed = embed  # type: ignore[method-assign]
        try:
            db.add("The deploy script needs AWS_PROFILE set.", namespace="n")
            db.add_messages([{"role": "user", "content": "Where is the deploy script?"}], namespace="n",
                            session_id="s1")
        finally:
            del db.embedders[db.schema.main].embed  # the class's again
    assert seen == [False, False]
    assert wait_until_quiet(0.05)
    with background_job(), requesting():
        assert wait_until_quiet(0.01)  # the job's own write: not counted
    with requesting():
        assert not wait_until_quiet(0.01)


def _busy(cpu_s: float) -> None:
    """Work on this thread until it has used `cpu_s` more seconds of CPU."""
    end = time.thread_time() + cpu_s
    while time.thread_time() < end:
        sum(range(1000))


def _request_held() -> tuple[threading.Event, threading.Thread]:
    """A request running on another thread until the returned event is set."""
    entered, release = threading.Event(), threading.Event()

    @request
    def held() -> None:
        entered.set()
        release.wait(30)

    t = threading.Thread(target=held)
    t.start()
    assert entered.wait(10)
    return release, t


def test_give_way_waits_only_in_a_background_job_and_only_as_long_as_the_job_has_worked() -> None:
    assert give_way() is False  # no request runs
    release, t = _request_held()
    try:
        assert give_way() is False  # a user's own thread (no job): never waits
        with background_job():
            waits = 0
            t0 = time.monotonic()
            while give_way():  # a job that has not worked yet may still wait FIRST_WAYS_S in all
                waits += 1
                assert waits <= 2 + int(FIRST_WAYS_S / GIVE_WAY_S)
            assert FIRST_WAYS_S * 0.9 <= time.monotonic() - t0 <= FIRST_WAYS_S + 5 * GIVE_WAY_S
            _busy(FIRST_WAYS_S + 0.03)
            waits = 0
            while give_way():  # past that, all its waits at most the time it has worked
                waits += 1
                assert waits <= 2 + int(0.03 / GIVE_WAY_S)
            assert waits >= 1
            _busy(0.01)
            assert give_way() is True  # more work, more it may give
        assert give_way() is False  # the job ended
    finally:
        release.set()
        t.join(10)
    with background_job():
        _busy(0.01)
        assert give_way() is False  # quiet: no wait


def test_a_worker_job_gives_way_to_a_request_and_a_store_topics_run_beside_requests_is_whole(tmp_path: Path) -> None:
    from engramdb.store import background

    seen: list[bool] = []
    release, t = _request_held()
    w = background.Worker("give-way")
    try:
        def job() -> None:
            _busy(0.02)
            seen.append(give_way())

        w.ask("job", job, delay=0.0)
        assert w.wait(10)
    finally:
        release.set()
        t.join(10)
        w.close()
    assert seen == [True]
    # a topics run that gave way between its chunks finds what one at full pace finds
    texts = [f"{a} {b} notes about the {c} plan" for a in ("garden", "budget", "trip") for b in ("soil", "tax", "flight")
             for c in ("spring", "summer", "autumn", "winter")] * 3
    with engramdb.open(tmp_path / "a") as db:
        for i, text in enumerate(texts):
            db.add(f"{text} {i}", namespace="n", role="user" if i % 2 else "assistant")
        plain = [(sorted(x.members), x.label) for x in db.topics("n", refresh=True)]
        stop = threading.Event()

        def searching() -> None:
            while not stop.is_set():
                db.search("garden soil", namespace="n")

        s = threading.Thread(target=searching)
        s.start()
        try:
            with background_job():
                _busy(0.05)
                beside = [(sorted(x.members), x.label) for x in db.topics("n", refresh=True)]
        finally:
            stop.set()
            s.join(10)
    assert plain and beside == plain


def test_a_closing_worker_never_waits_and_stops_a_stoppable_job_at_its_next_chance() -> None:
    from engramdb._requests_first import Stopped, stoppable
    from engramdb.store import background

    closing = [False]
    release, t = _request_held()
    try:
        with background_job(lambda: closing[0]):
            _busy(0.03)
            closing[0] = True
            assert give_way() is False  # closing: no wait, though a request runs and the job has worked
            with stoppable(), pytest.raises(Stopped):
                give_way()
            assert give_way() is False  # outside `stoppable` again: only no wait
    finally:
        release.set()
        t.join(10)

    started = threading.Event()

    def endless() -> None:  # a job that would run for ever but for the close
        started.set()
        with stoppable():
            while True:
                _busy(0.001)
                give_way()

    w = background.Worker("stoppable")
    w.ask("endless", endless, delay=0.0)
    assert started.wait(10)
    closer = threading.Thread(target=w.close)
    closer.start()
    closer.join(60)
    assert not closer.is_alive()  # close returned: the job stopped at its next give_way
    assert (w.last_runs()["endless"]["error"] or "").startswith("Stopped")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_request_that_forks_ends_in_the_child_without_hiding_the_child_s_own_requests() -> None:
    @request
    def forking() -> int:
        return os.fork()

    pid = forking()
    if pid == 0:  # the child: the request began in the parent, so its end must not take the count below 0
        release, t = _request_held()
        quiet = wait_until_quiet(0.05)  # the child's own running request is seen
        release.set()
        t.join(10)
        os._exit(0 if not quiet and wait_until_quiet(5) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert wait_until_quiet(5)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_children_forked_beside_searching_threads_search_and_exit(tmp_path: Path) -> None:
    with engramdb.open(tmp_path / "s") as db:
        db.add_many([{"content": f"note {i} about deploys and builds", "namespace": "c"} for i in range(200)])
        stop = threading.Event()

        def searching() -> None:
            while not stop.is_set():
                db.search("deploy build", namespace="c")

        threads = [threading.Thread(target=searching) for _ in range(2)]
        for th in threads:
            th.start()
        hung = 0
        try:
            for _ in range(12):
                time.sleep(0.02)
                pid = os.fork()
                if pid == 0:  # a lock a parent's thread held at the fork (the usage log's) must not hold the child
                    code = 0 if db.search("deploy", namespace="c") else 1
                    os._exit(code)
                for _ in range(600):  # 30 s: a hang, not a slow child
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        assert os.waitstatus_to_exitcode(status) == 0
                        break
                    time.sleep(0.05)
                else:
                    hung += 1
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
        finally:
            stop.set()
            for th in threads:
                th.join(10)
    assert hung == 0

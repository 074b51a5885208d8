"""store/requests_running.py: the count of running requests the worker's warm-up waits on (its
seam: the `request` decorator and `wait_until_quiet`), and through a store: a search or a context
counts while it runs, and the count comes down after an error and in a forked child."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import engramdb
import pytest
from engramdb.store.requests_running import request, wait_until_quiet


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
    entered, release = threading.Event(), threading.Event()

    @request
    def slow() -> None:
        entered.set()
        release.wait(10)

    t = threading.Thread(target=slow)
    t.start()
    assert entered.wait(10)
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

"""`db.topics(ns, compute=False)` (store/topic_verbs.py) under attack (stop 39's adversary pass):
what is already computed, never a clustering here, and never a wait for a run under way."""

from __future__ import annotations

import threading
from pathlib import Path

import engramdb
import pytest
from test_topics import SUBJECTS

LIVENESS_S = 60  # a bound for a deadlock, not a measure of speed: the call returns at once


def test_listing_without_computing_does_not_wait_for_a_run_under_way(tmp_path: Path) -> None:
    """A run (the background worker's, or a service thread's) holds the topic lock for seconds; a
    hook asking with compute=False gets what was computed meanwhile, not after the run."""
    rows = [{"id": f"{k}{i}", "content": t, "namespace": "n"} for k, v in SUBJECTS.items() for i, t in enumerate(v)]
    with engramdb.open(tmp_path / "s", tuning=engramdb.Tuning(background=False)) as db:
        db.add_many(rows)
        first = [t.id for t in db.topics("n")]
        inside, release = threading.Event(), threading.Event()

        def slow_labeler(members: list[str], texts: list[str]) -> str:
            inside.set()
            release.wait(LIVENESS_S)
            return "slow"

        run = threading.Thread(target=lambda: db.topics("n", refresh=True, labeler=slow_labeler))
        run.start()
        try:
            assert inside.wait(LIVENESS_S)
            got: list[list[str]] = []
            asker = threading.Thread(target=lambda: got.append([t.id for t in db.topics("n", compute=False)]))
            asker.start()
            asker.join(LIVENESS_S)
            listed_during_the_run = not asker.is_alive()
        finally:
            release.set()
            run.join()
        asker.join()
        assert listed_during_the_run and got == [first]


@pytest.mark.parametrize("bad", ["false", "no", 0, None, [False]])
def test_compute_is_true_or_false_and_nothing_else(tmp_path: Path, bad: object) -> None:
    """A config's "false" (truthy) would cluster where the caller asked for none: refused by name."""
    with engramdb.open(tmp_path / "s") as db:
        db.add("violin lessons every monday", namespace="n")
        with pytest.raises(TypeError, match="compute must be True or False"):
            db.topics("n", compute=bad)  # type: ignore[arg-type]

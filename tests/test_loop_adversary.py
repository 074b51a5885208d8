"""The agent loop's machinery under an adversary (issue 26): the background worker, topics read
from the last run, index versions advanced off the request path, the WAL's merged segments and
the turn maps, met with forks, races, kills, faults and hostile values. Each test failed on the
code before its fix (the commit that adds it says what it saw)."""

from __future__ import annotations

import os
from pathlib import Path

import engramdb
import pytest
from engramdb.store import background


def test_a_forked_child_of_a_writer_with_a_waiting_job_neither_waits_nor_lists_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's settle() waited for its parent's job, which no thread of the child ever runs
    (settle() with no timeout hung for ever), and stats() listed it as pending."""
    monkeypatch.setattr(background, "DELAY", 3600.0)  # the job still waits when the child looks
    db = engramdb.open(tmp_path / "s")
    for i in range(30):
        db.add(f"the violin concerto rehearsal number {i}", namespace="n")
    db.context("violin", namespace="n", max_tokens=300)  # asks the worker for the topics
    assert db.stats()["upkeep"]["pending"] == ["topics:n"]
    note = tmp_path / "child"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            settled = db.settle(timeout=2)
            pending = db.stats()["upkeep"]["pending"]
            hits = len(db.search("violin", namespace="n"))
            db.close()
            note.write_text(f"{settled} {pending} {hits}")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert note.read_text() == "True [] 10"
    assert db.stats()["upkeep"]["pending"] == ["topics:n"], "the parent's job is its own still"
    db.close()

"""A session's turns after a write (storage's seam, View.session_locs, through the public API):
the snapshot a write makes finds them from its new rows, not from every key (issue 26), and
always as the whole pass would: whatever the writes (turns, updates, forgets, restores, batches,
checkpoints, purges), each snapshot's turns are its current, not forgotten rows of the session
in the namespace, by seq (none first), learning time, then key."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb import Tuning
from engramdb.storage.view import View


def expected(view: View, namespace: str, session_id: str) -> list[tuple[int, int]]:
    """The whole pass, from the snapshot's public columns."""
    locs = view.current_locs(namespace, session_id=session_id)
    if not locs:
        return []
    order = np.lexsort((view.keys(locs), view.column_at("learned_at", locs), view.column_at("seq", locs)))
    return [locs[i] for i in order.tolist()]


def checking(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """View.session_locs, each answer checked against the whole pass (the turns' counts kept)."""
    seen: list[int] = []
    real = View.session_locs

    def session_locs(self: View, namespace: str, session_id: str) -> list[tuple[int, int]]:
        got = real(self, namespace, session_id)
        assert got == expected(self, namespace, session_id), (namespace, session_id, self.rows)
        seen.append(len(got))
        return got

    monkeypatch.setattr(View, "session_locs", session_locs)
    return seen


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_turns_after_any_write_are_the_whole_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    seen = checking(monkeypatch)
    rng = random.Random(seed)
    db = engramdb.open(tmp_path / "s", tuning=Tuning(background=False, checkpoint_rows=40))
    ids: list[str] = []
    sessions = [("a", "s0"), ("a", "s1"), ("b", "s0")]
    for step in range(120):
        ns, sid = rng.choice(sessions)
        op = rng.random()
        if op < 0.55 or not ids:
            seq = rng.choice([None, step, rng.randrange(200)])  # some said "earlier" than older turns
            ids.append(db.add(f"turn {step} about apples and trains {rng.randrange(9)}", namespace=ns,
                              session_id=sid, role="user", seq=seq).id)
        elif op < 0.65:
            mid = rng.choice(ids)
            if db.get(mid) is not None:
                db.update(mid, content=f"changed at {step}: apples")
        elif op < 0.72:
            mid = rng.choice(ids)
            if db.get(mid) is not None:
                db.forget(mid)
        elif op < 0.76:
            mid = rng.choice(ids)
            if db.get(mid) is None and db.get(mid, include_forgotten=True) is not None:
                db.restore(mid)
        elif op < 0.84:
            n = rng.choice([3, 30, 600])  # 600: more new rows than a snapshot checks one by one
            ids += db.add_many([{"content": f"batch {step} row {i} trains", "namespace": ns, "session_id": sid,
                                 "seq": rng.choice([None, i])} for i in range(n)])
        elif op < 0.88:
            db.admin.checkpoint()
        elif op < 0.9:
            mid = rng.choice(ids)
            db.purge(mid)
            ids.remove(mid)
        for ns2, sid2 in sessions:
            db.context("apples and trains", namespace=ns2, max_tokens=300, session_id=sid2, log=False)
    db.close()
    assert len(seen) >= 360 and max(seen) > 50


def test_a_write_does_not_make_the_next_context_read_every_key(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: each snapshot found its session's turns from View.current_rows (every memory's newest
    key, a pass over all of them: ~0.6 ms at 100,000 memories); now a write's snapshot brings the
    previous snapshot's turns up to date from its new rows."""
    db = engramdb.open(tmp_path / "s", tuning=Tuning(background=False))
    db.add_many([{"content": f"old fact {i} about the garden", "namespace": "n", "session_id": f"old{i % 7}"}
                 for i in range(300)])
    db.add("hello there", namespace="n", session_id="live", role="user")
    db.context("the garden", namespace="n", max_tokens=300, session_id="live", log=False)
    inside: list[int] = []  # current_rows calls made while session_locs runs
    seen: list[int] = []
    real_rows, real_locs = View.current_rows, View.session_locs
    depth = 0

    def current_rows(self: View) -> Any:
        if depth:
            inside.append(self.rows)
        return real_rows(self)

    def session_locs(self: View, namespace: str, session_id: str) -> list[tuple[int, int]]:
        nonlocal depth
        depth += 1
        try:
            got = real_locs(self, namespace, session_id)
        finally:
            depth -= 1
        assert got == expected(self, namespace, session_id)
        seen.append(len(got))
        return got

    monkeypatch.setattr(View, "current_rows", current_rows)
    monkeypatch.setattr(View, "session_locs", session_locs)
    for i in range(20):
        db.add(f"turn {i}: the garden needs water", namespace="n", session_id="live", role="user")
        c = db.context("the garden", namespace="n", max_tokens=300, session_id="live", log=False)
        assert f"turn {i}: the garden needs water" in c.text
    db.close()
    assert seen and max(seen) == 21
    assert inside == []

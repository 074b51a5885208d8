"""One-time loads done once when two threads ask at once (issue 26): the open's warm job and a new
process's first request ask for the same loads at the same moment, and the one that comes second
must use what the first made, not make it again (a segment's turn columns: storage/segment.py; the
stored topics: store/topic_verbs.py). Each test holds the first thread inside the load until the
second has asked (a barrier with a timeout: with one loader the second never arrives there, and
the first goes on after the timeout), then counts the loads."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb import _arrow_numpy as arrow_numpy
from engramdb.model.memory import Memory
from engramdb.storage.columns import memories_to_table
from engramdb.storage.segment import Segment
from engramdb.topics import state as topic_state

WAIT = 0.5  # how long the first loader waits for a second one inside the load


def _both(target: Any) -> list[Any]:
    """Run `target` on two threads at once; their results."""
    out: list[Any] = [None, None]

    def run(i: int) -> None:
        out[i] = target()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _held(real: Any, calls: list[int]) -> Any:
    """`real`, counting its calls, each held until a second call arrives or WAIT passes."""
    barrier = threading.Barrier(2)

    def held(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        try:
            barrier.wait(timeout=WAIT)
        except threading.BrokenBarrierError:
            pass
        return real(*args, **kwargs)

    return held


def test_a_segments_turns_are_derived_once_when_two_threads_ask_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # row 4 is no turn (no session, no seq): both columns have a value missing, filled with -1
    seg = Segment(memories_to_table([Memory(id=f"m{i}", namespace="n", content=f"turn {i}",
                                            session_id=None if i == 4 else f"s{i % 3}", seq=None if i == 4 else i)
                                     for i in range(9)]))
    calls: list[int] = []
    # the fill of a column's missing values reads its null mask (engramdb/_arrow_numpy.py)
    monkeypatch.setattr(arrow_numpy, "is_null_mask", _held(arrow_numpy.is_null_mask, calls))
    first, second = _both(seg.turns)
    monkeypatch.undo()
    assert first is second  # one derivation, read by both
    codes, names, seq = first
    assert [names[c] if c >= 0 else None for c in codes.tolist()] == [None if i == 4 else f"s{i % 3}" for i in range(9)]
    assert seq.tolist() == [-1 if i == 4 else i for i in range(9)]
    assert len(calls) == 2  # the one derivation's two fills (session codes, seqs)


def test_a_segments_turns_without_a_missing_value_read_as_stored() -> None:
    seg = Segment(memories_to_table([Memory(id=f"m{i}", namespace="n", content=f"turn {i}", session_id=f"s{i % 2}",
                                            seq=10 * i) for i in range(6)]))
    codes, names, seq = seg.turns()
    assert [names[c] for c in codes.tolist()] == [f"s{i % 2}" for i in range(6)]
    assert seq.tolist() == [10 * i for i in range(6)] and codes.dtype == np.int32 and seq.dtype == np.int64
    keys = seg.session_keys()
    assert keys[0] == keys[2] != keys[1] and 0 not in keys.tolist()


def test_the_stored_topics_are_read_once_when_two_requests_ask_at_once(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "s"
    texts = ["She practises the violin concerto every evening before the concert.",
             "Tune the guitar strings before the concert starts.",
             "The orchestra plays the symphony's slow movement beautifully."]
    tuning = engramdb.Tuning(background=False)
    with engramdb.open(folder, tuning=tuning) as db:
        db.add_many([{"content": f"{t} ({i})", "namespace": "a"} for i in range(4) for t in texts])
        want = [(t.id, t.label) for t in db.topics("a")]
    assert want
    db = engramdb.open(folder, tuning=tuning, access_log=False)
    calls: list[int] = []
    monkeypatch.setattr(topic_state, "load_results", _held(topic_state.load_results, calls))
    hits = _both(lambda: db.search("violin", namespace="a", k=3, strategy="pipeline", topics=True))
    monkeypatch.undo()
    assert len(calls) == 1  # the second request used what the first read
    assert [h.id for h in hits[0]] == [h.id for h in hits[1]] and hits[0]
    assert [(t.id, t.label) for t in db.topics("a")] == want  # the stored ones, as written
    db.close()


def test_a_segments_newest_learning_time_per_namespace() -> None:
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def seg(spaces: list[str]) -> Segment:
        return Segment(memories_to_table([Memory(id=f"m{i}", namespace=ns, content=f"note {i}",
                                                 learned_at=t0 + timedelta(seconds=[5, 9, 2, 7][i % 4]))
                                          for i, ns in enumerate(spaces)]))

    us = int((t0 - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds()) * 1_000_000
    one = seg(["a", "a", "a"])  # one namespace: seconds 5, 9, 2
    assert one.ns_newest("a") == us + 9_000_000 and one.ns_newest("b") == 0
    two = seg(["a", "b", "a", "b"])  # a: 5, 2; b: 9, 7
    assert (two.ns_newest("a"), two.ns_newest("b"), two.ns_newest("c")) == (us + 5_000_000, us + 9_000_000, 0)

"""The turn maps (index/turns.py, the index layer's seam): (session, seq) -> the newest row of that turn
in a namespace, checked against the plain definition over random stores, written turn by turn in
order (the map is then read as it lies, unsorted) or not (sessions interleaved, turns out of order,
a turn written again), committed segments under the WAL's."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from engramdb.index.turns import TurnMaps
from engramdb.model.memory import Memory
from engramdb.storage.columns import memories_to_table
from engramdb.storage.segment import Segment
from hypothesis import given, settings
from hypothesis import strategies as st


@dataclass
class _View:
    """What a turn map reads of a snapshot."""

    segments: tuple[Segment, ...]
    committed: int
    derived: dict[str, Any] = field(default_factory=dict)

    @property
    def committed_segments(self) -> tuple[Segment, ...]:
        return self.segments[: self.committed]


def _turns(rng: random.Random, in_order: bool) -> list[tuple[str, str | None, int | None]]:
    """(namespace, session, seq) of each row, in write order."""
    out: list[tuple[str, str | None, int | None]] = []
    if in_order:
        for s in range(rng.randint(1, 6)):
            for seq in range(rng.randint(1, 8)):
                out += [("a", f"s{s}", seq)] * (2 if rng.random() < 0.1 else 1)  # a turn written again at once
        return out
    for _ in range(rng.randint(1, 50)):
        kind = rng.random()
        ns = "a" if kind < 0.8 else "b"
        session = None if kind < 0.05 else f"s{rng.randint(0, 4)}"
        at = None if 0.05 <= kind < 0.1 else rng.choice([rng.randint(0, 9), 2**40 + rng.randint(0, 2)])
        out.append((ns, session, at))
    return out


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_each_turn_maps_to_its_newest_row(seed: int, in_order: bool) -> None:
    rng = random.Random(seed)
    rows = _turns(rng, in_order)
    cuts = sorted({rng.randint(1, len(rows)) for _ in range(rng.randint(0, 4))} | {0, len(rows)})
    segments = []
    want: dict[tuple[str, int], tuple[int, int]] = {}
    for si, (lo, hi) in enumerate(itertools.pairwise(cuts)):
        mems = [Memory(id=f"m{i}", namespace=ns, content=f"turn {i}", session_id=session, seq=seq)
                for i, (ns, session, seq) in enumerate(rows[lo:hi], lo)]
        segments.append(Segment(memories_to_table(mems)))
        for row, (ns, session, seq) in enumerate(rows[lo:hi]):
            if ns == "a" and session is not None and seq is not None:
                want[(session, seq)] = (si, row)  # a later row wins
    view = _View(tuple(segments), rng.randint(0, len(segments)))
    got = TurnMaps().get(view, "a")  # type: ignore[arg-type]
    assert {t: got[t] for t in want} == want
    assert len(got) == len(want) and set(got) == set(want)
    for absent in (("s9", 0), ("s0", 10), ("s0", -1), ("s0", 2**63)):
        assert absent not in got
    assert dict(TurnMaps().get(view, "nobody").items()) == {}  # type: ignore[arg-type]

"""The id index's probe by fingerprint (storage/ids.py, the storage layer's seam): segments whose id
column holds 32-byte ids are probed through one sorted array of 64-bit fingerprints read from the
column's bytes, the others through dicts. Checked against the plain definition (each id's newest
key below a snapshot's rows) over random histories: rewritten ids across and within segments,
segments of other ids, tables in several chunks, fingerprints made to collide (told apart by the
id itself) and made to crowd (the probe falls back to dicts), and non-ASCII ids of 32 bytes."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pyarrow as pa
import pytest
from engramdb.storage import ids as ids_mod
from engramdb.storage.ids import IdIndex
from hypothesis import given, settings
from hypothesis import strategies as st


class _Segment:
    """What the index reads of a segment: its ids, and its table (the id column's bytes)."""

    def __init__(self, ids: list[str], chunks: int = 1) -> None:
        self.ids = ids
        cut = sorted({0, len(ids), *(random.Random(len(ids)).randint(0, len(ids)) for _ in range(chunks - 1))})
        parts = [pa.array(ids[a:b], pa.string()) for a, b in itertools.pairwise(cut)] or [pa.array([], pa.string())]
        self.table = pa.table({"id": pa.chunked_array(parts, pa.string())})


def _reference(history: list[str], rows: int) -> dict[str, int]:
    latest: dict[str, int] = {}
    for key, mid in enumerate(history[:rows]):
        latest[mid] = key
    return latest


def _ids(rng: random.Random, pool: list[str], n: int, odd: bool) -> list[str]:
    """n ids: rewrites of earlier ones, new 32-hex ones, and (in an odd segment) ids of other lengths."""
    out = []
    for _ in range(n):
        r = rng.random()
        if pool and r < 0.35:
            out.append(rng.choice(pool))
        elif odd and r < 0.6:
            out.append(f"note-{rng.randint(0, 30)}")
        else:
            out.append(f"{rng.getrandbits(128):032x}")
        pool.append(out[-1])
    return out


def _check(segments: list[_Segment], history: list[str], rng: random.Random, extra: list[str]) -> None:
    bases = np.array([0, *np.cumsum([len(s.ids) for s in segments])], np.int64)
    ix = IdIndex()
    for rows in [rng.randint(0, len(history)) for _ in range(3)] + [len(history)]:
        want = _reference(history, rows)
        for mid in [*set(history), *extra]:
            assert ix.probe(segments, bases, rows, mid) == want.get(mid), (rows, mid)
    assert ix.rows == 0  # probing indexed nothing
    ix.extend(segments, bases, len(history))
    want = _reference(history, len(history))
    for mid in [*set(history), *extra]:
        assert ix.lookup(mid, len(history)) == want.get(mid) == ix.probe(segments, bases, len(history), mid)


_ABSENT = ["0" * 32, "f" * 31 + "g", "é" * 16, "x", "", "\ud800" * 32]


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_fingerprint_probe_answers_as_the_whole_index(seed: int) -> None:
    rng = random.Random(seed)
    pool: list[str] = []
    segments = [_Segment(_ids(rng, pool, rng.randint(0, 40), odd=rng.random() < 0.3), chunks=rng.randint(1, 3))
                for _ in range(rng.randint(0, 7))]
    history = [mid for s in segments for mid in s.ids]
    _check(segments, history, rng, _ABSENT)


@pytest.mark.parametrize("group", [3, ids_mod.FP_MAX_EQUAL + 5])
def test_ids_that_share_a_fingerprint_are_told_apart(monkeypatch: pytest.MonkeyPatch, group: int) -> None:
    """With a fingerprint of the last 8 bytes only, ids sharing them collide: a few per fingerprint
    are told apart by the id; more than FP_MAX_EQUAL rows under one and the probe uses dicts."""
    monkeypatch.setattr(ids_mod, "FP_MULTIPLIERS", (0, 0, 0, 1))
    rng = random.Random(group)
    tails = [f"{rng.getrandbits(32):08x}" for _ in range(6)]
    made = [f"{rng.getrandbits(96):024x}" + tails[i % len(tails)] for i in range(group * len(tails))]
    history = made + [rng.choice(made) for _ in range(40)]  # rewrites: the newest row wins
    rng.shuffle(history)
    segments = [_Segment(history[i : i + 25]) for i in range(0, len(history), 25)]
    _check(segments, history, rng, [f"{7:024x}" + tails[0], *_ABSENT])


def test_non_ascii_ids_of_32_bytes_are_found() -> None:
    """An id of 16 two-byte letters is 32 bytes in the column: probed by its fingerprint, not
    skipped for being 16 characters."""
    history = ["é" * 16, "ü" * 16, f"{5:032x}", "é" * 16]
    segments = [_Segment(history[:2]), _Segment(history[2:])]
    _check(segments, history, random.Random(0), _ABSENT)

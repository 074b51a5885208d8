"""BM25 (H1) grown one write at a time, as the store grows it: an append costs O(its documents)
(the per-document arrays are not copied, a lookup sorts no key), every version keeps reading its
own documents, and an index grown by appends scores bit for bit as one built at once."""

from __future__ import annotations

import numpy as np
import pytest
from engramdb.index.bm25 import Bm25Index
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bm25 import csr


def docs_of(rng: np.random.Generator, n: int, *, whole: bool = True, big: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for _ in range(n):
        t = np.unique(rng.integers(0, 60, rng.integers(0, 10))).astype(np.int32)
        c = rng.integers(1, 5, len(t)).astype(np.float32) if whole else (rng.random(len(t)) * 3 + 0.01).astype(np.float32)
        if big:  # lengths summing past 2^24: float32 no longer adds them exactly
            c *= np.float32(300_000)
        out.append((t, c))
    return out



def built(keys: np.ndarray, docs: list[tuple[np.ndarray, np.ndarray]], parts: np.ndarray) -> Bm25Index:
    ix = Bm25Index()
    ix.add(keys, *csr(docs), parts)
    return ix


def assert_same(a: Bm25Index, b: Bm25Index, rng: np.random.Generator) -> None:
    """Same documents, same norms and the same answers, bit for bit."""
    assert a.keys.tobytes() == b.keys.tobytes() and a.parts.tobytes() == b.parts.tobytes()
    assert a.lengths.tobytes() == b.lengths.tobytes()
    assert a.norm().tobytes() == b.norm().tobytes()
    for _ in range(4):
        q = np.unique(rng.integers(0, 60, rng.integers(1, 6))).astype(np.int32)
        qc = rng.integers(1, 3, len(q)).astype(np.float32)
        probe = np.concatenate([rng.choice(a.keys, min(len(a.keys), 20)), [-5, 10**9]]) if len(a.keys) else np.arange(3)
        for x, y in zip(a.score_keys(q, qc, probe), b.score_keys(q, qc, probe)):
            assert x.tobytes() == y.tobytes()
        for k in (1, 7, 1000):
            for x, y in zip(a.search_parts(q, qc, k), b.search_parts(q, qc, k)):
                assert x.tobytes() == y.tobytes()


def grown_case(seed: int, n: int, *, ascending: bool, passages: bool, whole: bool, big: bool) -> None:
    rng = np.random.default_rng(seed)
    docs = docs_of(rng, n, whole=whole, big=big)
    if passages:  # runs of one key's passages, numbered from 0
        keys, parts, key = [], [], 0
        while len(keys) < n:
            for j in range(min(int(rng.integers(1, 4)), n - len(keys))):
                keys.append(key)
                parts.append(j)
            key += int(rng.integers(1, 3))
        k_arr, p_arr = np.array(keys, np.int64), np.array(parts, np.int32)
    else:
        k_arr = np.cumsum(rng.integers(1, 3, n)).astype(np.int64) if ascending else rng.permutation(n * 2)[:n].astype(np.int64)
        p_arr = np.zeros(n, np.int32)
    whole_ix = built(k_arr, docs, p_arr)
    ix, at, versions = Bm25Index(), 0, []
    while at < n:  # batches as a store's writes come: mostly one row, now and then many
        m = 1 if rng.random() < 0.7 else int(rng.integers(1, 40))
        if passages:  # a key's passages arrive together
            while at + m < n and p_arr[at + m] != 0:
                m += 1
        m = min(m, n - at)
        versions.append((ix, at))
        ix = ix.added(k_arr[at:at + m], *csr(docs[at:at + m]), p_arr[at:at + m])
        at += m
    assert_same(ix, whole_ix, rng)
    # every older version still reads exactly its own documents (an append past it wrote only past it)
    for old, count in versions[:: max(1, len(versions) // 6)]:
        if count:
            assert_same(old, built(k_arr[:count], docs[:count], p_arr[:count]), rng)
    # a branch from an older version (it copies) and a prefix grown again
    if len(versions) > 2:
        old, count = versions[len(versions) // 2]
        branch = old.added(k_arr[count:], *csr(docs[count:]), p_arr[count:])
        assert_same(branch, whole_ix, rng)
        cut = int(np.searchsorted(k_arr, k_arr[count])) if ascending or passages else count
        again = ix.prefix(cut).added(k_arr[cut:], *csr(docs[cut:]), p_arr[cut:])
        assert_same(again, whole_ix, rng)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 300), ascending=st.booleans(), passages=st.booleans(),
       whole=st.booleans(), big=st.booleans())
def test_grown_by_appends_scores_as_built_at_once(seed: int, n: int, ascending: bool, passages: bool, whole: bool,
                                                   big: bool) -> None:
    grown_case(seed, n, ascending=ascending, passages=passages, whole=whole, big=big)


@pytest.mark.parametrize("big", [False, True])
def test_grown_at_scale_scores_as_built_at_once(big: bool) -> None:
    grown_case(7, 3_000, ascending=True, passages=False, whole=True, big=big)


def test_an_append_does_not_copy_every_document() -> None:
    """The new version's per-document arrays are the old ones' memory (grown in place), not a
    concatenated copy of all 20,000 documents per write."""
    rng = np.random.default_rng(1)
    docs = docs_of(rng, 20_000)
    ix = built(np.arange(20_000), docs, np.zeros(20_000, np.int32))
    first = ix
    ix = ix.added(np.array([20_000]), *csr(docs_of(rng, 1)))
    base = ix
    copies = 0
    for i in range(200):
        before = ix
        ix = ix.added(np.array([20_001 + i]), *csr(docs_of(rng, 1)))
        copies += not (np.shares_memory(ix.keys, before.keys) and np.shares_memory(ix.lengths, before.lengths)
                       and np.shares_memory(ix.parts, before.parts))
    assert copies <= 2  # the buffers double: at most a copy or two in 200 appends past 20,000 rows
    assert np.shares_memory(ix.keys, base.keys)
    assert len(first) == 20_000 and len(base) == 20_001 and len(ix) == 20_201
    assert first.keys[-1] == 19_999 and base.keys[-1] == 20_000


def test_a_lookup_after_an_append_sorts_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """score_keys on a version just grown finds its keys without an argsort of every key (the
    store's keys ascend): elements handed to numpy's argsort over 50 appends and lookups stay
    below one sort of the index."""
    rng = np.random.default_rng(2)
    n = 20_000
    ix = built(np.arange(n), docs_of(rng, n), np.zeros(n, np.int32))
    sorted_elements = 0
    real = np.argsort

    def counting(a: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
        nonlocal sorted_elements
        sorted_elements += np.size(a)
        return real(a, *args, **kwargs)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(np, "argsort", counting)
    q, qc = np.array([3, 5, 9], np.int32), np.ones(3, np.float32)
    for i in range(50):
        ix = ix.added(np.array([n + i]), *csr(docs_of(rng, 1)))
        scores, _ = ix.score_keys(q, qc, rng.integers(0, n + i, 30))
        assert len(scores) == 30
    assert sorted_elements < n


class CountingMask(np.ndarray):
    """A filter array counting the keys it is asked about by index arrays (the seam: `allowed`)."""

    asked = 0

    def __getitem__(self, idx: object) -> object:
        if isinstance(idx, np.ndarray) and idx.dtype.kind in "iu":
            CountingMask.asked += idx.size
        return super().__getitem__(idx)  # type: ignore[index]


def test_a_filtered_search_after_an_append_reads_the_filter_of_new_documents_only() -> None:
    """A store's filter grows by a key per write: the per-document filter of the version grown
    from is kept while the new filter starts with the old one's values (read again when a write
    changes an old key's value, as an update closing a version does); results as a fresh index's."""
    rng = np.random.default_rng(3)
    n = 5_000
    docs = docs_of(rng, n + 40)
    keys = np.arange(n + 40, dtype=np.int64)
    ix = built(keys[:n], docs[:n], np.zeros(n, np.int32))
    values = rng.random(n + 40) < 0.8
    q, qc = np.array([3, 5, 9, 11], np.int32), np.ones(4, np.float32)
    CountingMask.asked = 0
    for i in range(40):
        ix = ix.added(keys[n + i:n + i + 1], *csr(docs[n + i:n + i + 1]))
        if i == 20:
            values[17] = not values[17]  # an old key's value changes: everything is read again
        allowed = values[:n + i + 1].copy().view(CountingMask)
        got = ix.search_parts(q, qc, 50, allowed=allowed)
        fresh = built(keys[:n + i + 1], docs[:n + i + 1], np.zeros(n + i + 1, np.int32))
        want = fresh.search_parts(q, qc, 50, allowed=values[:n + i + 1].copy())
        for x, y in zip(got, want):
            assert x.tobytes() == y.tobytes()
    assert CountingMask.asked < 3 * n  # the first search, the one after the change, and 38 single rows (was 40 * n)

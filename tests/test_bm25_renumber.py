"""S7 + H1: BM25 carried over a purge (`Bm25Index.renumbered`): without the purged keys' documents
and with the others under their new keys, it is, bit for bit, the index made from the documents
kept (postings, lengths, norms, every answer), and no term of a purged document alone is left."""

from __future__ import annotations

import numpy as np
from engramdb.index.bm25 import Bm25Index
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bm25 import csr
from test_bm25_append import assert_same, built, docs_of


def _case(seed: int, n: int, passages: bool, whole: bool, big: bool, share: float) -> None:
    rng = np.random.default_rng(seed)
    docs = docs_of(rng, n, whole=whole, big=big)
    keys, parts, key = [], [], 0
    while len(keys) < n:  # ascending keys with gaps (other namespaces' rows), a key's passages together
        for j in range(min(int(rng.integers(1, 4)) if passages else 1, n - len(keys))):
            keys.append(key)
            parts.append(j)
        key += int(rng.integers(1, 3))
    k_arr, p_arr = np.array(keys, np.int64), np.array(parts, np.int32)
    ix, at = Bm25Index(), 0
    while at < n:  # grown as a store grows it: chunks of many sizes
        m = min(n - at, 1 if rng.random() < 0.6 else int(rng.integers(1, 40)))
        while at + m < n and p_arr[at + m] != 0:
            m += 1
        ix = ix.added(k_arr[at:at + m], *csr(docs[at:at + m]), p_arr[at:at + m])
        at += m
    rows = int(k_arr[-1]) + 1 + int(rng.integers(0, 3))  # the store's rows (the index may not hold the last)
    kept = rng.random(rows) >= share
    key_of = np.cumsum(kept, dtype=np.int64) - 1
    got = ix.renumbered(kept, key_of)
    stay = kept[k_arr]
    want = built(key_of[k_arr[stay]], [d for d, s in zip(docs, stay) if s], p_arr[stay])
    assert_same(got, want, rng)
    assert len(got.chunks) <= len(ix.chunks)
    left = set(np.concatenate([c.terms for c in got.chunks]).tolist()) if got.chunks else set()
    held = set(np.concatenate([d[0] for d, s in zip(docs, stay) if s]).tolist()) if stay.any() else set()
    assert left == held  # the vocabulary of the documents kept, nothing of the purged alone
    more = docs_of(rng, 3)  # it grows on as an index made from scratch does
    new_keys = np.arange(3, dtype=np.int64) + int(kept.sum())
    a = got.added(new_keys, *csr(more))
    b = built(np.concatenate([want.keys, new_keys]), [d for d, s in zip(docs, stay) if s] + more,
              np.concatenate([want.parts, np.zeros(3, np.int32)]))
    assert_same(a, b, rng)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 250), passages=st.booleans(), whole=st.booleans(),
       big=st.booleans(), share=st.sampled_from([0.0, 0.05, 0.5, 0.95, 1.0]))
def test_renumbered_is_the_index_of_the_documents_kept(seed: int, n: int, passages: bool, whole: bool, big: bool,
                                                       share: float) -> None:
    _case(seed, n, passages, whole, big, share)


def test_renumbered_at_scale() -> None:
    _case(7, 5_000, True, True, False, 0.01)

"""The topic refresh's distance matrices in buffers kept between refreshes (issue 29,
engramdb.topics.scratch): reused, bounded, and never leaking one run's figures into another's."""

from __future__ import annotations

import engramdb
import numpy as np
import pytest
from engramdb.spaces.protocol import SparseBatch, TokenBatch
from engramdb.spaces.schema import Space
from engramdb.topics import clustering, scratch

WORDS = ["violin", "bread", "cat", "garden", "train", "budget", "doctor", "rain", "piano", "coffee", "school", "tea"]


def _notes(n: int, seed: int) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    return [{"content": f"subject{i % 6} " + " ".join(rng.choice(WORDS, 4, replace=False)), "namespace": f"ns{seed}"}
            for i in range(n)]


def test_a_lease_reuses_the_pools_buffers_and_the_pool_keeps_a_bounded_amount() -> None:
    pool = scratch.Pool(held=1000)
    with pool.lease() as lease:
        first = lease.square(10)
        assert first.shape == (10, 10) and first.dtype == np.float32 and first.flags.c_contiguous
    assert pool.held() == 400
    with pool.lease() as lease:
        again = lease.square(8)  # a smaller matrix fits the kept buffer: no fresh one
        assert np.shares_memory(again, first)
        other = lease.square(8)  # the kept one is taken: a fresh one
        assert not np.shares_memory(other, again)
    with pool.lease() as lease:
        lease.square(10), lease.square(12), lease.square(20)  # 400, 576 and 1600 bytes
    assert pool.held() == 400 + 576  # the largest that fit in 1000 bytes together; 1600 let go


def test_a_refresh_leaves_its_buffers_in_the_process_pool() -> None:
    db = engramdb.open(None)
    db.add_many(_notes(60, 1))
    assert db.topics("ns1", refresh=True)
    assert 0 < scratch.POOL.held() <= scratch.HELD


def _batches() -> list[tuple[Space, object]]:
    rng = np.random.default_rng(5)
    n = 40
    dense = rng.normal(size=(n, 16)).astype(np.float32)
    dense[3] = 0.0  # a zero row: distance 1 to everything
    few = [rng.choice(12, 4, replace=False) for _ in range(n)]  # few widely shared terms: the dense product
    many = [np.r_[rng.choice(3, 1), 100 + 3 * i + np.arange(3)] for i in range(n)]  # rare terms: pairs counted
    sizes = rng.integers(0, 6, n)
    tokens = TokenBatch(rng.normal(size=(int(sizes.sum()), 8)).astype(np.float32),
                        np.r_[0, np.cumsum(sizes)].astype(np.int64))
    codes = rng.integers(0, 256, size=(n, 4)).astype(np.uint8)

    def sparse(sets: list[np.ndarray]) -> SparseBatch:
        return SparseBatch(np.r_[0, np.cumsum([len(s) for s in sets])].astype(np.int64),
                           np.concatenate(sets).astype(np.int32), np.ones(sum(map(len, sets)), np.float32))

    return [(Space("d", "dense", 16, "cosine"), dense), (Space("s", "sparse", 1 << 31, "jaccard"), sparse(few)),
            (Space("s", "sparse", 1 << 31, "jaccard"), sparse(many)), (Space("t", "multivector", 8, "maxsim"), tokens),
            (Space("b", "binary", 32, "hamming"), codes)]


@pytest.mark.parametrize("case", range(5))
def test_distances_into_a_used_buffer_are_the_fresh_ones_bit_for_bit(case: int) -> None:
    space, batch = _batches()[case]
    fresh = clustering.distances(space, batch)  # type: ignore[arg-type]
    used = np.full((40, 40), np.nan, np.float32)  # what an earlier refresh left in the buffer
    got = clustering.distances(space, batch, used)  # type: ignore[arg-type]
    assert np.shares_memory(got, used)
    assert np.array_equal(got, fresh)


def test_distances_refuse_an_out_of_the_wrong_shape_or_type() -> None:
    space, batch = _batches()[0]
    for bad in (np.empty((40, 39), np.float32), np.empty((40, 40), np.float64), np.empty((40, 80), np.float32)[:, ::2]):
        with pytest.raises(ValueError, match="out must be"):
            clustering.distances(space, batch, bad)  # type: ignore[arg-type]


def test_buffers_a_larger_namespace_left_do_not_change_a_smaller_ones_topics() -> None:
    db = engramdb.open(None)
    db.add_many(_notes(60, 2))
    db.add_many(_notes(150, 3))
    alone = [(t.members, t.label, t.confidence) for t in db.topics("ns2", refresh=True)]
    with scratch.POOL.lease() as lease:  # poison whatever the pool keeps: a run must write all it reads
        for _ in range(4):
            lease.square(150).fill(np.nan)
    db.topics("ns3", refresh=True)
    after = [(t.members, t.label, t.confidence) for t in db.topics("ns2", refresh=True)]
    assert after == alone and alone


@pytest.mark.parametrize("words", [12, 200])  # a topic's terms sorted (few) or through a heap (many)
def test_a_topics_best_terms_are_the_highest_scoring_either_way(words: int) -> None:
    from engramdb.topics.labels import SORT_TERMS, DistinctiveTerms

    rng = np.random.default_rng(words)
    vocab = [f"zq{chr(97 + i // 26)}{chr(97 + i % 26)}x" for i in range(words)]  # distinct stems, no stop words
    corpus = [" ".join(rng.choice(vocab, 6, replace=False)) for _ in range(300)]
    dt = DistinctiveTerms(corpus)
    members = list(range(0, 300, 2))
    held = [set(dt.content(i)) for i in range(300)]
    tf = {t: sum(t in held[i] for i in members) for t in set().union(*(held[i] for i in members))}
    df = {t: sum(t in h for h in held) for t in tf}
    idf = {t: np.log1p((300 - df[t] + 0.5) / (df[t] + 0.5)) for t in tf}
    assert (len(tf) > SORT_TERMS) == (words > SORT_TERMS)
    assert dt.top(members) == sorted(tf, key=lambda t: (-tf[t] * float(idf[t]), t))[:3]

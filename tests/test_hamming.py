"""N4: Hamming top-k over packed codes against the numpy bit-unpacking reference."""

from __future__ import annotations

import numpy as np
import pytest
import reference as ref
from engramdb import kernels
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.mark.parametrize("n", [0, 1, 7, 9, 1023])
@pytest.mark.parametrize("nbytes", [1, 7, 8, 9, 31, 32, 33, 128, 130, 1000])
def test_hamming_matches_reference(isa: str, rng: np.random.Generator, n: int, nbytes: int) -> None:
    codes = rng.integers(0, 256, size=(n, nbytes), dtype=np.uint8)
    q = rng.integers(0, 256, size=(3, nbytes), dtype=np.uint8)
    dist = ref.hamming(q, codes)
    np.testing.assert_array_equal(kernels.hamming_distances(q, codes), dist)
    idx, dd = kernels.hamming_topk(q, codes, 10)
    assert idx.shape == (3, min(10, n))
    np.testing.assert_array_equal(idx, ref.topk_order(-dist.astype(np.float64), 10))
    np.testing.assert_array_equal(dd, np.take_along_axis(dist, idx, 1))


def test_uint64_words_and_1024_bit_codes(isa: str, rng: np.random.Generator) -> None:
    codes = rng.integers(0, 2**63, size=(1023, 16), dtype=np.uint64)
    q = codes[17].copy()
    q[0] ^= np.uint64(0b1011)  # 3 bits away from row 17
    idx, dist = kernels.hamming_topk(q, codes, 3)
    assert idx.shape == (3,) and idx[0] == 17 and dist[0] == 3
    np.testing.assert_array_equal(dist, np.sort(ref.hamming(q.view(np.uint8), codes.view(np.uint8))[0])[:3])


def test_hamming_mask(isa: str, rng: np.random.Generator) -> None:
    codes = rng.integers(0, 256, size=(500, 16), dtype=np.uint8)
    mask = rng.random(500) < 0.2
    idx, _ = kernels.hamming_topk(codes[0], codes, 7, mask=mask)
    assert mask[idx].all()
    d = ref.hamming(codes[0], codes)[0].astype(np.float64)
    np.testing.assert_array_equal(idx, ref.topk_order(-d[None], 7, mask)[0])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 40), nbytes=st.integers(1, 3), k=st.integers(1, 50), seed=st.integers(0, 2**32 - 1))
def test_hamming_ties_break_by_index(n: int, nbytes: int, k: int, seed: int) -> None:
    r = np.random.default_rng(seed)
    codes = r.integers(0, 4, size=(n, nbytes), dtype=np.uint8)  # few distinct codes: many ties
    q = r.integers(0, 4, size=(1, nbytes), dtype=np.uint8)
    expected = ref.topk_order(-ref.hamming(q, codes).astype(np.float64), k)
    for backend in kernels.available_isas():
        with kernels.use_isa(backend):
            np.testing.assert_array_equal(kernels.hamming_topk(q, codes, k).indices, expected)

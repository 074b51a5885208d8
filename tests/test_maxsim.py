"""N5: MaxSim over ragged token matrices against the float64 reference."""

from __future__ import annotations

import numpy as np
import pytest
import reference as ref
from engramdb import kernels


def ragged(rng: np.random.Generator, n_docs: int, d: int, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    lengths = rng.integers(0, max_tokens + 1, size=n_docs)
    offsets = np.zeros(n_docs + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return rng.standard_normal((int(offsets[-1]), d)).astype(np.float32), offsets


@pytest.mark.parametrize("n_docs", [0, 1, 7, 9, 200])
@pytest.mark.parametrize("d", [1, 3, 128, 384])
@pytest.mark.parametrize("m", [1, 5, 32])
def test_maxsim_matches_reference(isa: str, rng: np.random.Generator, n_docs: int, d: int, m: int) -> None:
    tokens, offsets = ragged(rng, n_docs, d, 70)
    q = rng.standard_normal((m, d)).astype(np.float32)
    got = kernels.maxsim(q, tokens, offsets)
    expected = ref.maxsim(q, tokens, offsets)
    assert got.shape == (n_docs,) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.sqrt(d) * m)


def test_maxsim_shortlist_and_long_documents(isa: str, rng: np.random.Generator) -> None:
    tokens, offsets = ragged(rng, 20, 64, 3000)  # documents longer than one token block
    q = rng.standard_normal((8, 64)).astype(np.float32)
    docs = np.array([19, 3, 3, 0])
    got = kernels.maxsim(q, tokens, offsets, docs=docs, threads=2)
    np.testing.assert_allclose(got, ref.maxsim(q, tokens, offsets)[docs], rtol=1e-4, atol=1e-3)


def test_maxsim_rejects_bad_offsets(rng: np.random.Generator) -> None:
    tokens = rng.standard_normal((10, 4)).astype(np.float32)
    q = np.ones((2, 4), np.float32)
    for bad in ([0, 5, 3, 10], [1, 10], [0, 9]):
        with pytest.raises(ValueError, match="offsets"):
            kernels.maxsim(q, tokens, np.array(bad, np.int64))
    with pytest.raises(ValueError, match="docs"):
        kernels.maxsim(q, tokens, np.array([0, 10], np.int64), docs=[1])
    tokens[4, 2] = np.nan
    with pytest.raises(ValueError, match="document 0"):
        kernels.maxsim(q, tokens, np.array([0, 10], np.int64))


def test_maxsim_shortlist_checks_the_spans_it_reads(rng: np.random.Generator) -> None:
    """With `docs` only the shortlisted documents' offsets are read, so those are checked (a
    pass over every offset per call cost a search more than its scoring)."""
    tokens = rng.standard_normal((10, 4)).astype(np.float32)
    q = np.ones((2, 4), np.float32)
    for bad, docs in (([0, 6, 3, 10], [1]), ([0, 6, 11, 10], [1]), ([0, 6, 11, 10], [2])):
        with pytest.raises(ValueError, match="offsets"):
            kernels.maxsim(q, tokens, np.array(bad, np.int64), docs=docs)
    tokens[7, 1] = np.inf
    with pytest.raises(kernels.NonFiniteRow, match="document 2") as got:
        kernels.maxsim(q, tokens, np.array([0, 3, 6, 10], np.int64), docs=[0, 2])
    assert got.value.row == 2

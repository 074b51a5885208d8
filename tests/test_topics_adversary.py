"""Issue 29's topic / HDBSCAN / storage-read speed-ups under attack: each test here reproduces
something an adversary found (bench/RELIABILITY.md, "Topic and HDBSCAN speed-ups under attack")."""

from __future__ import annotations

import numpy as np
import pytest
from engramdb import kernels


def _aliased(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An n x n float32 matrix and a float64 `sums` of n made over the matrix's own first rows."""
    buf = np.zeros(n * n, np.float32)
    x = buf.reshape(n, n)
    rng = np.random.default_rng(0)
    x[:] = np.round(rng.uniform(0, 4, (n, n))).astype(np.float32)
    x[:] = np.minimum(x, x.T)
    return x, buf.view(np.float64)[:n], x.copy()


@pytest.mark.parametrize("kernel", ["cosines", "overlaps"])
def test_row_sums_sharing_the_matrix_memory_are_refused_and_change_nothing(kernel: str) -> None:
    """The kernel writes row i's sum after finishing row i, with the GIL released: a `sums` laid
    over the matrix's own bytes overwrote rows not finished yet (or finished: silently wrong
    distances and sums). Refused before anything is written."""
    x, sums, before = _aliased(32)
    with pytest.raises(ValueError, match="sums must not share memory with"):
        if kernel == "cosines":
            kernels.distances_from_cosines(x, sums)
        else:
            kernels.jaccard_from_overlaps(x, np.full(32, 4, np.float32), sums)
    np.testing.assert_array_equal(x, before)


def test_jaccard_sizes_sharing_the_matrix_memory_are_refused() -> None:
    """`sizes` is read row by row while the matrix is rewritten in place: sizes laid over the
    matrix read distances as sizes. Refused, the matrix unchanged."""
    x = np.full((8, 8), 2, np.float32)
    before = x.copy()
    with pytest.raises(ValueError, match="sizes must not share memory with"):
        kernels.jaccard_from_overlaps(x, x[0])
    np.testing.assert_array_equal(x, before)
    buf = np.full(16, 3, np.float32)  # sizes and sums over the same bytes
    with pytest.raises(ValueError, match="sums must not share memory with sizes"):
        kernels.jaccard_from_overlaps(x, buf[:8], buf.view(np.float64))
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(buf, np.full(16, 3, np.float32))

"""Issue 29's topic / HDBSCAN / storage-read speed-ups under attack: each test here reproduces
something an adversary found (bench/RELIABILITY.md, "Topic and HDBSCAN speed-ups under attack")."""

from __future__ import annotations

from pathlib import Path

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


@pytest.mark.parametrize("kind", ["binary", "dense", "sparse", "multivector"])
def test_distances_refuse_the_same_bad_sums_in_every_kind_of_space(kind: str) -> None:
    """`distances(..., sums=)` of a binary space summed with numpy into whatever it was given: an
    int64 array truncated every row's sum (4.75 -> 4), a float32 one rounded it, a strided one was
    written through; the dense, sparse and token spaces refused them. Every kind refuses them
    alike now, naming the field, before anything is written."""
    from engramdb.spaces.protocol import SparseBatch, TokenBatch
    from engramdb.spaces.schema import Space
    from engramdb.topics import clustering

    n = 10
    rng = np.random.default_rng(0)
    vectors: object
    if kind == "binary":
        sp, vectors = Space("b", "binary", 64, "hamming"), rng.integers(0, 256, (n, 8)).astype(np.uint8)
    elif kind == "dense":
        sp, vectors = Space("d", "dense", 8, "cosine"), rng.normal(size=(n, 8)).astype(np.float32)
    elif kind == "sparse":
        sp = Space("s", "sparse", 100, "jaccard")
        vectors = SparseBatch(np.arange(0, 3 * n + 1, 3, dtype=np.int64), rng.integers(0, 100, 3 * n).astype(np.int32),
                              np.ones(3 * n, np.float32))
    else:
        sp = Space("t", "multivector", 8, "maxsim")
        vectors = TokenBatch(rng.normal(size=(2 * n, 8)).astype(np.float32), np.arange(0, 2 * n + 1, 2, dtype=np.int64))
    good = np.full(n, -1.0)
    clustering.distances(sp, vectors, sums=good)  # type: ignore[arg-type]
    assert (good > 0).all()  # written: each row's sum of distances to the others
    frozen = np.zeros(n)
    frozen.flags.writeable = False
    for bad in (np.zeros(n, np.int64), np.zeros(n, np.float32), np.zeros(2 * n)[::2], np.zeros((n, 1)), frozen):
        keep = bad.copy()
        with pytest.raises(ValueError, match="sums must be a writable C-contiguous float64 array of shape"):
            clustering.distances(sp, vectors, sums=bad)  # type: ignore[arg-type]
        np.testing.assert_array_equal(bad, keep)


def test_token_means_take_any_well_formed_token_batch() -> None:
    """The token means moved onto the core's `cluster_sums`, which takes only C-contiguous float32
    rows numbered from 0: a token batch of float64 (or float16) tokens, Fortran-ordered ones, or
    offsets not starting at 0 (a window of a larger batch) was refused with a message about
    `vectors` or `labels`, none of which the caller passed. They give the distances of the same
    tokens as a plain float32 batch, as before."""
    from engramdb.spaces.protocol import TokenBatch
    from engramdb.spaces.schema import Space
    from engramdb.topics import clustering

    sp = Space("t", "multivector", 4, "maxsim")
    tok = np.random.default_rng(0).normal(size=(14, 4)).astype(np.float32)
    off = np.array([2, 5, 5, 8, 12], np.int64)  # a window: rows of 3, 0, 3 and 4 tokens
    plain = clustering.distances(sp, TokenBatch(np.ascontiguousarray(tok[2:12]), off - 2))
    assert plain[0, 1] == 1.0 and len(np.unique(plain)) > 3  # the empty row's mean is 0: distance 1
    for tokens in (tok, tok.astype(np.float64), np.asfortranarray(tok)):  # the same float32 values
        np.testing.assert_array_equal(clustering.distances(sp, TokenBatch(tokens, off)), plain)
    half = clustering.distances(sp, TokenBatch(tok.astype(np.float16), off))
    np.testing.assert_allclose(half, plain, atol=1e-2)


def test_topics_whose_files_cannot_be_written_are_returned_and_computed_again(tmp_path: Path,
                                                                             caplog: pytest.LogCaptureFixture) -> None:
    """A directory where a derived topic file goes (or a full disk) is the save's warning, not a raw
    IsADirectoryError out of `topics()`: the topics come back, and are computed again next time."""
    import engramdb

    db = engramdb.open(tmp_path / "s", tuning=engramdb.Tuning(background=False))
    db.add_many([{"content": f"{w} note {i} about the {w} and its {w} care", "namespace": "n"}
                 for w in ("garden", "violin", "bread") for i in range(8)])
    (tmp_path / "s" / "index").mkdir(exist_ok=True)
    blocked = [tmp_path / "s" / "index" / name for name in ("topics-state.arrow", "topics.arrow",
                                                             "themes.arrow")]
    for p in blocked:
        p.mkdir()
    with caplog.at_level("WARNING", logger="engramdb"):
        found = db.topics("n")
        themes = db.topics.themes("n")
    assert found and isinstance(themes, list)
    assert "were not saved" in caplog.text
    assert [t.label for t in db.topics("n", refresh=True)] == [t.label for t in found]
    db.close()

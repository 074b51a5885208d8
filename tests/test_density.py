"""HDBSCAN over a precomputed distance matrix (kernels.hdbscan, C4) against scikit-learn's.

The reference is scikit-learn's own `HDBSCAN(metric="precomputed")` with one thing pinned: the
order of its minimum spanning tree's edges of equal weight. numpy's sort leaves them in a
platform-dependent order, and mutual reachability makes many weights equal; the kernel takes the
pair whose plain distance is smaller first (then Prim's order), and so does the reference here.
With that, the labels must be identical, numbering included.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from engramdb import kernels
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sklearn")


_MATRIX: dict[str, np.ndarray] = {}  # the distances and min_samples of the fit under way


@pytest.fixture(scope="module")
def reference() -> Iterator[object]:
    """scikit-learn's HDBSCAN class, its tree's edges sorted stably by (weight, the plain distance
    of the pair that gave the weight) while the module's tests run."""
    import sklearn.cluster._hdbscan.hdbscan as module
    from sklearn.cluster import HDBSCAN
    from sklearn.cluster._hdbscan._linkage import make_single_linkage

    kept = module._process_mst

    def pinned(mst: np.ndarray) -> np.ndarray:
        d, ms = _MATRIX["d"], int(_MATRIX["ms"][0])
        core = np.partition(d, ms - 1, axis=1)[:, ms - 1]
        reach = np.maximum(np.maximum(core[:, None], core[None, :]), d)
        order = np.r_[0, mst["next_node"]]  # Prim's order of the nodes
        raw = np.empty(len(mst))
        for k, pick in enumerate(mst["next_node"]):  # the edge's true source: the first tree node at its weight
            tree = order[: k + 1]
            raw[k] = d[tree[int(np.argmin(reach[tree, pick]))], pick]
        return make_single_linkage(mst[np.lexsort((raw, mst["distance"]))])

    module._process_mst = pinned
    try:
        yield HDBSCAN
    finally:
        module._process_mst = kept


def expected(reference: object, d: np.ndarray, mcs: int, ms: int) -> np.ndarray:
    _MATRIX.update(d=d.astype(np.float64), ms=np.array([ms]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = reference(min_cluster_size=mcs, min_samples=ms, metric="precomputed", copy=True)  # type: ignore[operator]
        return np.asarray(est.fit(d.astype(np.float64)).labels_, np.int64)


def blobs(rng: np.random.Generator, n: int, dim: int, k: int, spread: float) -> np.ndarray:
    centres = rng.normal(size=(k, dim)) * 5
    out: np.ndarray = centres[rng.integers(0, k, n)] + rng.normal(size=(n, dim)) * spread
    return out


def euclidean(x: np.ndarray) -> np.ndarray:
    d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d, 0.0)
    out: np.ndarray = d
    return out


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 160), dim=st.integers(1, 6), k=st.integers(1, 6),
       spread=st.floats(0.05, 2.0), mcs=st.integers(2, 8), ms=st.integers(1, 8), decimals=st.sampled_from([None, 0, 1]))
def test_labels_equal_scikit_learns(reference: object, seed: int, n: int, dim: int, k: int, spread: float,
                                    mcs: int, ms: int, decimals: int | None) -> None:
    rng = np.random.default_rng(seed)
    x = blobs(rng, n, dim, k, spread)
    if decimals is not None:  # coarse coordinates: duplicates and many equal distances
        x = np.round(x, decimals)
    d = euclidean(x)
    ms = min(ms, n)
    np.testing.assert_array_equal(kernels.hdbscan(d, mcs, ms), expected(reference, d, mcs, ms))


@pytest.mark.parametrize("n", [500, 2000])
def test_cosine_distances_of_unit_vectors_in_float32(reference: object, n: int) -> None:
    """The topics' use: 1 - cosine of float32 vectors, min cluster 3."""
    rng = np.random.default_rng(n)
    x = blobs(rng, n, 24, 40, 0.8).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    d = np.clip(1.0 - x @ x.T, 0.0, None)
    np.fill_diagonal(d, 0.0)
    d = np.ascontiguousarray((d + d.T) / 2, np.float32)
    got = kernels.hdbscan(d, 3)
    np.testing.assert_array_equal(got, expected(reference, d, 3, 3))
    assert len(set(got.tolist()) - {-1}) >= 10  # it found the blobs, not one lump


def test_float32_and_float64_give_the_same_labels() -> None:
    rng = np.random.default_rng(3)
    d = euclidean(blobs(rng, 300, 3, 5, 0.5)).astype(np.float32)
    np.testing.assert_array_equal(kernels.hdbscan(d, 4), kernels.hdbscan(d.astype(np.float64), 4))


def test_identical_points_and_tiny_inputs(reference: object) -> None:
    for n in (2, 3, 5, 9):
        d = np.zeros((n, n))
        np.testing.assert_array_equal(kernels.hdbscan(d, 2, 2), expected(reference, d, 2, 2))
    two = np.zeros((6, 6))
    two[:3, 3:] = two[3:, :3] = 1.0  # two groups of three duplicates
    assert sorted(set(kernels.hdbscan(two, 3).tolist())) == [0, 1]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -0.5])
def test_bad_distances_name_their_row(bad: float) -> None:
    d = np.ones((6, 6))
    np.fill_diagonal(d, 0.0)
    d[4, 1] = bad
    with pytest.raises(ValueError, match="row 4"):
        kernels.hdbscan(d, 2)


def test_bad_arguments() -> None:
    d = np.zeros((4, 4))
    with pytest.raises(ValueError, match="square"):
        kernels.hdbscan(np.zeros((4, 3)), 2)
    with pytest.raises(TypeError, match="dtype"):
        kernels.hdbscan(d.astype(np.int64), 2)
    with pytest.raises(ValueError, match="C-contiguous"):
        kernels.hdbscan(np.zeros((8, 8))[::2, ::2], 2)
    with pytest.raises(ValueError, match="min_cluster_size must be >= 2"):
        kernels.hdbscan(d, 1)
    with pytest.raises(ValueError, match="min_samples \\(5\\) must be at most"):
        kernels.hdbscan(d, 2, 5)
    with pytest.raises(TypeError, match="min_samples must be an integer"):
        kernels.hdbscan(d, 2, 2.5)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), rows=st.integers(0, 11),
       sizes=st.lists(st.integers(0, 9), max_size=7), exact=st.booleans())
def test_group_sums_equal_a_float64_numpy_sum(seed: int, n: int, rows: int, sizes: list[int], exact: bool) -> None:
    """kernels.group_sums (C4's join) against numpy in float64: exactly on distances that are
    multiples of 2^-24 (as 1 - a float32 cosine or Jaccard is: any order of additions is exact),
    closely on any, in float32 and float64, empty groups summing to 0."""
    rng = np.random.default_rng(seed)
    d = rng.random((n, n)) * 2
    if exact:
        d = np.round(d * 2**24) / 2**24
    r = rng.integers(0, n, rows)
    cols = rng.integers(0, n, sum(sizes))
    starts = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64) if sizes else np.zeros(0, np.int64)
    for m in (d, d.astype(np.float32)):
        wide = m.astype(np.float64)
        want = np.array([[wide[i, cols[a:a + k]].sum() for a, k in zip(starts, sizes)] for i in r]).reshape(rows, len(sizes))
        got = kernels.group_sums(m, r, cols, starts)
        assert got.dtype == np.float64 and got.shape == (rows, len(sizes))
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), empty=st.booleans())
def test_distance_finishing_equals_numpys_float32_arithmetic(seed: int, n: int, empty: bool) -> None:
    """kernels.jaccard_from_overlaps and distances_from_cosines (C4's distances, in place) against
    the same float32 steps in numpy, bit for bit, an empty term set (0 over 0) included."""
    rng = np.random.default_rng(seed)
    sets = [set(rng.choice(30, rng.integers(0 if empty else 1, 9), replace=False).tolist()) for _ in range(n)]
    overlaps = np.array([[len(a & b) for b in sets] for a in sets], np.float32)
    sizes = np.array([len(a) for a in sets], np.float32)
    union = np.subtract(sizes[:, None], overlaps) + sizes[None, :]
    sim = np.divide(overlaps, union, out=overlaps.copy(), where=union > 0)
    want = np.float32(1.0) - sim
    got = overlaps.copy()
    kernels.jaccard_from_overlaps(got, sizes)
    np.testing.assert_array_equal(got, want)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    cos = (x / np.linalg.norm(x, axis=1, keepdims=True)) @ (x / np.linalg.norm(x, axis=1, keepdims=True)).T
    cos[0, 0] = np.nan
    got = cos.copy()
    kernels.distances_from_cosines(got)
    np.testing.assert_array_equal(got, np.maximum(np.float32(1.0) - cos, np.float32(0.0)))
    with pytest.raises(TypeError, match="dtype"):
        kernels.distances_from_cosines(cos.astype(np.float64))
    with pytest.raises(ValueError, match="sizes must be float32"):
        kernels.jaccard_from_overlaps(got, sizes.astype(np.float64))
    frozen = got.copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        kernels.distances_from_cosines(frozen)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 37), empty=st.booleans())
def test_row_sums_made_with_the_distances_are_each_rows_exact_sum_but_the_diagonal(seed: int, n: int,
                                                                                   empty: bool) -> None:
    """`sums=`: each row's sum (float64) of its finished distances, the diagonal entry left out
    (an empty set's or a zero row's is 1 until the caller zeroes it), against float64 sums of the
    matrix the same call finished, and the matrix as it is without `sums`."""
    rng = np.random.default_rng(seed)
    sets = [set(rng.choice(30, rng.integers(0 if empty else 1, 9), replace=False).tolist()) for _ in range(n)]
    overlaps = np.array([[len(a & b) for b in sets] for a in sets], np.float32)
    sizes = np.array([len(a) for a in sets], np.float32)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    if empty:
        x[0] = 0.0
    u = np.divide(x, np.linalg.norm(x, axis=1, keepdims=True), out=np.zeros_like(x),
                  where=np.linalg.norm(x, axis=1, keepdims=True) > 0)
    for finish, matrix in ((lambda m, s: kernels.jaccard_from_overlaps(m, sizes, s), overlaps),
                           (kernels.distances_from_cosines, u @ u.T)):
        plain, got, sums = matrix.copy(), matrix.copy(), np.full(n, -1.0)
        finish(plain, None)
        finish(got, sums)
        np.testing.assert_array_equal(got, plain)
        want = got.astype(np.float64).sum(axis=1) - np.diag(got).astype(np.float64)
        np.testing.assert_array_equal(sums, want)


def test_row_sums_must_be_a_writable_float64_row_per_row() -> None:
    d = np.zeros((3, 3), np.float32)
    sizes = np.ones(3, np.float32)
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    for bad in (np.zeros(3, np.float32), np.zeros(4), np.zeros((3, 1)), np.zeros(6)[::2], frozen, [0.0, 0.0, 0.0]):
        with pytest.raises(ValueError, match="sums must be a writable C-contiguous float64 array of shape"):
            kernels.distances_from_cosines(d, bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="sums must be a writable C-contiguous float64 array of shape"):
            kernels.jaccard_from_overlaps(d, sizes, bad)  # type: ignore[arg-type]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 70), levels=st.sampled_from([3, 6, 1000]))
def test_hdbscan_labels_are_the_same_under_every_instruction_set(seed: int, n: int, levels: int) -> None:
    """Prim's tree runs on the ISA's vector lanes where it has them (`prim_row`) and on a list of
    the nodes still out otherwise: the same labels either way, ties (few distinct distances) and
    duplicate points (zero distances) included."""
    rng = np.random.default_rng(seed)
    pts = rng.integers(0, levels, size=(n, 2)).astype(np.float64)
    d = np.round(np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(axis=2)), 1).astype(np.float32)
    runs = {}
    for isa in kernels.available_isas():
        with kernels.use_isa(isa):
            runs[isa] = kernels.hdbscan(d, 3).tolist()
    assert len({tuple(v) for v in runs.values()}) == 1, runs


def test_group_sums_refuse_bad_indices() -> None:
    d = np.zeros((4, 4), np.float32)
    ok = np.array([0, 1]), np.array([1, 2, 3]), np.array([0, 1])
    with pytest.raises(ValueError, match="rows holds 4, outside 0..3"):
        kernels.group_sums(d, np.array([4]), ok[1], ok[2])
    with pytest.raises(ValueError, match="cols holds -1"):
        kernels.group_sums(d, ok[0], np.array([1, -1]), ok[2])
    with pytest.raises(ValueError, match="starts must begin at 0"):
        kernels.group_sums(d, ok[0], ok[1], np.array([0, 2, 1]))
    with pytest.raises(ValueError, match="starts must begin at 0"):
        kernels.group_sums(d, ok[0], ok[1], np.array([0, 4]))
    with pytest.raises(ValueError, match="rows must be a 1-D array of integers"):
        kernels.group_sums(d, np.array([0.5]), ok[1], ok[2])
    with pytest.raises(ValueError, match="square"):
        kernels.group_sums(np.zeros((4, 3)), *ok)
    with pytest.raises(TypeError, match="dtype"):
        kernels.group_sums(d.astype(np.int64), *ok)


def test_threads_share_nothing() -> None:
    """The kernel runs without the GIL: threads clustering different matrices at once each get
    their own matrix's labels."""
    rng = np.random.default_rng(9)
    mats = [euclidean(blobs(rng, 400, 4, 6, 0.4)) for _ in range(4)]
    alone = [kernels.hdbscan(m, 3) for m in mats]
    together: list[np.ndarray | None] = [None] * 4

    def run(i: int) -> None:
        together[i] = kernels.hdbscan(mats[i], 3)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(alone, together):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), dim=st.integers(2, 12), k=st.integers(1, 6),
       spread=st.floats(0.05, 0.6), eps=st.floats(0.02, 0.4), ms=st.integers(1, 6), coarse=st.booleans())
def test_dbscan_and_silhouettes_equal_scikit_learns(seed: int, n: int, dim: int, k: int, spread: float, eps: float,
                                                    ms: int, coarse: bool) -> None:
    from sklearn.cluster import DBSCAN
    from sklearn.metrics import silhouette_samples

    rng = np.random.default_rng(seed)
    x = blobs(rng, n, dim, k, spread)
    if coarse:  # duplicates and ties at the border
        x = np.round(x, 1)
    want = DBSCAN(eps=eps, min_samples=ms, metric="cosine").fit(x).labels_
    got = kernels.dbscan_cosine(x, eps, ms)
    np.testing.assert_array_equal(got, want)
    inside = want >= 0
    if 2 <= len(set(want[inside].tolist())) < inside.sum():
        np.testing.assert_allclose(kernels.silhouette_cosine(x[inside], want[inside]),
                                   silhouette_samples(x[inside], want[inside], metric="cosine"), atol=1e-9)


def test_dbscan_and_silhouettes_work_in_row_blocks_and_refuse_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    from engramdb.kernels import density

    rng = np.random.default_rng(4)
    x = blobs(rng, 230, 6, 4, 0.2)
    whole, sil = kernels.dbscan_cosine(x, 0.1, 3), kernels.silhouette_cosine(x, np.arange(230) % 3)
    monkeypatch.setattr(density, "COSINE_BLOCK", 17)  # many blocks, a ragged last one
    np.testing.assert_array_equal(kernels.dbscan_cosine(x, 0.1, 3), whole)
    np.testing.assert_allclose(kernels.silhouette_cosine(x, np.arange(230) % 3), sil, atol=1e-12)
    bad = x.copy()
    bad[7, 2] = np.nan
    with pytest.raises(ValueError, match="vectors row 7 contains NaN"):
        kernels.dbscan_cosine(bad, 0.1, 3)
    with pytest.raises(ValueError, match="eps must be a number >= 0"):
        kernels.dbscan_cosine(x, -1, 3)
    with pytest.raises(ValueError, match="2 to 229 distinct labels, got 1"):
        kernels.silhouette_cosine(x, np.zeros(230))


def test_themes_and_memory_types_need_no_scikit_learn() -> None:
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys
        sys.modules["sklearn"] = sys.modules["scipy"] = None
        import engramdb
        db = engramdb.open(None)
        db.add_many([{"content": f"the build uses cmake and ninja {i % 2}", "namespace": "n",
                      "memory_type": t} for i, t in enumerate(["note", "notes", "noted", "fact", "facts", "factual"])])
        db.add_many([{"content": "rain falls on the grey city", "namespace": "n"} for _ in range(4)])
        db.admin.type_clusters()  # H6's DBSCAN runs too
        print(len(db.topics.themes("n", refresh=True)))
    """)
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert got.returncode == 0, got.stderr[-2000:]
    assert int(got.stdout) >= 1

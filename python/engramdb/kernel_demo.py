"""`engramdb demo`: the native kernels on real sizes, measured against numpy in the same run.

Until the store lands (issue "Store"), the demo exercises what exists: it builds a clustered set
of unit vectors like sentence embeddings (1,000 topics), then times each kernel family and checks
its answers against numpy. Every figure printed is measured here, now.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import kernels
from ._capabilities import capabilities


def _best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def clustered_unit_vectors(n: int, dim: int, clusters: int, rng: np.random.Generator) -> np.ndarray:
    """n unit vectors around `clusters` random topic centres (noise sized so clusters overlap a little)."""
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    labels = rng.integers(0, clusters, size=n)
    x = centres[labels] + rng.standard_normal((n, dim)).astype(np.float32) * np.float32(1.2 / np.sqrt(dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return np.asarray(x, dtype=np.float32)


def run_demo(rows: int = 100_000, dim: int = 384, repeat: int = 5, seed: int = 0, echo: Callable[[str], None] = print) -> dict[str, float]:
    """Run every kernel family on `rows` x `dim` data; print and return the measured figures."""
    rng = np.random.default_rng(seed)
    caps = capabilities()
    echo(f"engramdb {caps['version']} kernels on {caps['isa']} (available: {', '.join(caps['available'])})")
    t0 = time.perf_counter()
    x = clustered_unit_vectors(rows, dim, 1000, rng)
    queries = clustered_unit_vectors(64, dim, 1000, np.random.default_rng(seed + 1))
    echo(f"data: {rows:,} x {dim} float32 unit vectors in 1,000 clusters ({x.nbytes / 1e6:.0f} MB, made in {time.perf_counter() - t0:.1f}s)")
    results: dict[str, float] = {}
    lines: list[tuple[str, str, str, str]] = []

    def row(name: str, ours: float, theirs: float | None, note: str) -> None:
        ratio = f"{theirs / ours:6.2f}x" if theirs else "     -"
        lines.append((name, f"{ours * 1e3:9.2f} ms", ratio, note))
        results[name] = ours

    # The ceiling: a plain read of the same matrix with the same threads the scan may use.
    probe, _ = _best_of(lambda: kernels.read_bandwidth_probe(x, threads=None), repeat)
    bw = x.nbytes / probe / 1e9
    q = queries[0]
    t_one, (idx, _) = _best_of(lambda: kernels.topk(q, x, 10), repeat)
    t_np, np_idx = _best_of(lambda: np.argpartition(-(x @ q), 10)[:10], repeat)
    assert set(idx.tolist()) == set(np_idx.tolist()), "top-10 differs from numpy"
    row("dense top-10, 1 query", t_one, t_np, f"{x.nbytes / t_one / 1e9:.1f} GB/s = {100 * probe / t_one:.0f}% of a plain read ({bw:.1f} GB/s)")

    t_b, (bidx, _) = _best_of(lambda: kernels.topk(queries, x, 10), max(2, repeat // 2))
    def numpy_batch() -> np.ndarray:
        s = x @ queries.T
        return np.asarray(np.argpartition(-s, 10, axis=0)[:10].T)
    t_nb, nb_idx = _best_of(numpy_batch, max(2, repeat // 2))
    same = np.mean([set(a) == set(b) for a, b in zip(bidx.tolist(), nb_idx.tolist())])
    row("dense top-10, 64 queries", t_b, t_nb, f"numpy = BLAS matmul + argpartition; same top-10 for {same:.0%}")

    x8 = kernels.quantize_i8(x)
    t_8, _ = _best_of(lambda: kernels.topk(queries[:1], x8, 10, rescore=x), repeat)
    exact = kernels.topk(queries[:32], x, 10).indices
    approx = kernels.topk(queries[:32], x8, 10, rescore=x).indices
    recall = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact.tolist(), approx.tolist())]))
    row("int8 + f32 rescore, 1 query", t_8, t_np, f"recall@10 {recall:.3f} vs exact f32 ({x8.codes.nbytes / 1e6:.0f} MB scanned)")
    results["int8_recall_at_10"] = recall

    planes = np.random.default_rng(seed + 2).standard_normal((dim, 1024)).astype(np.float32)
    codes = np.packbits(x @ planes > 0, axis=1)  # 1024-bit sign projections (binary HDC codes)
    qcode = np.packbits(queries[:1] @ planes > 0, axis=1)
    t_h, (_, hd) = _best_of(lambda: kernels.hamming_topk(qcode, codes, 10), repeat)
    lut = np.array([i.bit_count() for i in range(256)], np.uint8)
    t_hn, hn = _best_of(lambda: lut[codes ^ qcode].sum(axis=1, dtype=np.int64), max(2, repeat // 2))
    assert np.array_equal(np.sort(hn)[:10], np.sort(hd[0])), "Hamming distances differ from numpy"
    row("hamming top-10, 1024-bit codes", t_h, t_hn, "numpy = XOR + byte popcount table")

    sets_rng = np.random.default_rng(seed + 3)
    sizes = sets_rng.integers(48, 81, size=rows)
    ids = (sets_rng.zipf(1.3, size=int(sizes.sum())) % 30_000).astype(np.int64)
    indptr = np.zeros(rows + 1, np.int64)
    np.cumsum(sizes, out=indptr[1:])
    indptr, indices = kernels.csr_from_sets(ids[indptr[i] : indptr[i + 1]] for i in range(rows))
    qset = indices[indptr[7] : indptr[8]]
    t_j, (jidx, _) = _best_of(lambda: kernels.jaccard_topk(qset, indptr, indices, 10), repeat)
    assert jidx[0] == 7
    row("jaccard top-10, 100K sets of ~64 ids", t_j, None, f"{indices.size / 1e6:.1f}M ids scanned; rank 1 is the query's own set")

    tokens = rng.standard_normal((1000 * 64, 128)).astype(np.float32)
    offsets = np.arange(0, 1000 * 64 + 1, 64, dtype=np.int64)
    qtok = rng.standard_normal((32, 128)).astype(np.float32)
    t_m, ms = _best_of(lambda: kernels.maxsim(qtok, tokens, offsets), repeat)
    def numpy_maxsim() -> np.ndarray:
        return np.array([(tokens[a:b] @ qtok.T).max(axis=0).sum() for a, b in itertools.pairwise(offsets)])
    t_mn, mn = _best_of(numpy_maxsim, max(2, repeat // 2))
    assert np.allclose(ms, mn, rtol=1e-4, atol=1e-3)
    row("maxsim, 32 x 1,000 docs x 64 tokens", t_m, t_mn, "numpy = per-document matmul + max + sum")

    sample = x[:20_000]
    cents = sample[np.random.default_rng(seed + 4).choice(sample.shape[0], 256, replace=False)].copy()
    def kmeans_step() -> np.ndarray:
        labels, _ = kernels.assign_nearest(sample, cents, "l2")
        sums, counts = kernels.cluster_sums(sample, labels, cents.shape[0])
        return np.asarray(sums / np.maximum(counts, 1)[:, None])
    t_k, _ = _best_of(kmeans_step, max(2, repeat // 2))
    row(f"k-means step, {sample.shape[0]:,} x 256 centroids", t_k, None, "assign_nearest + cluster_sums")

    updates = min(rows, 10_000)
    nodes = np.random.default_rng(seed + 5).integers(0, 1000, size=updates)
    cvec = np.zeros((1000, dim), np.float32)
    counts = np.zeros(1000, np.int64)
    t_c, _ = _best_of(lambda: kernels.centroid_update(cvec, counts, nodes, x[:updates]), repeat)
    row(f"{updates:,} running-mean centroid updates", t_c, None, f"{t_c / updates * 1e9:.0f} ns per update")

    width = max(len(n) for n, *_ in lines)
    echo("")
    echo(f"{'kernel'.ljust(width)}   {'engramdb':>12}  {'vs numpy':>8}  note")
    for name, ours, ratio, note in lines:
        echo(f"{name.ljust(width)}   {ours:>12}  {ratio:>8}  {note}")
    echo("")
    echo(
        f"ratios are numpy time / engramdb time, best of several runs; both sides at their defaults "
        f"(engramdb threads=None and numpy's BLAS may use all {caps['cpu_count']} cores)"
    )
    return results

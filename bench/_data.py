"""Seeded benchmark data, built once per process (module-level caches) and shared by every bench.

Dense sets: 100,000 x 384 float32 unit vectors, two kinds
  * "random":    isotropic Gaussian rows, normalised;
  * "clustered": 1,000 random unit centres, each row = centre + N(0, SIGMA^2) per dimension, normalised
                 (SIGMA = 0.05 at d = 384: the noise norm is ~0.98, so a row has cosine ~0.7 with its
                 centre and ~0.5 with a sibling: tight enough to make near-ties, loose enough to be real).
Queries are drawn the same way (fresh draws, never copies of rows).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

N = 100_000
D = 384
K = 10
N_QUERIES = 128  # single-query benches use query 0, batch benches the first 64, recall the first 100
N_CENTERS = 1_000
SIGMA = 0.05
SEED = 20240611

DATASETS = ("random", "clustered")


@dataclass(frozen=True)
class Dense:
    name: str
    X: np.ndarray  # (N, D) float32, C-contiguous, unit rows
    Q: np.ndarray  # (N_QUERIES, D) float32, unit rows


def _normalise(a: np.ndarray) -> np.ndarray:
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    return a


@functools.cache
def dense(name: str) -> Dense:
    if name == "random":
        rng = np.random.default_rng(SEED)
        X = _normalise(rng.standard_normal((N, D), dtype=np.float32))
        Q = _normalise(rng.standard_normal((N_QUERIES, D), dtype=np.float32))
    elif name == "clustered":
        rng = np.random.default_rng(SEED + 1)
        centers = _normalise(rng.standard_normal((N_CENTERS, D), dtype=np.float32))

        def draw(n: int) -> np.ndarray:
            labels = rng.integers(0, N_CENTERS, n)
            pts = centers[labels]
            pts += SIGMA * rng.standard_normal((n, D), dtype=np.float32)
            return _normalise(pts)

        X = draw(N)
        Q = draw(N_QUERIES)
    else:
        raise ValueError(name)
    return Dense(name, np.ascontiguousarray(X), np.ascontiguousarray(Q))


def exact_topk_numpy(X: np.ndarray, Q: np.ndarray, k: int) -> np.ndarray:
    """Ground truth: exact float32 top-k indices per query (rows sorted by descending score)."""
    S = Q @ X.T
    part = np.argpartition(-S, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(S, part, axis=1), axis=1)
    return np.take_along_axis(part, order, axis=1)


def numpy_topk_1(X: np.ndarray, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    s = X @ q
    part = np.argpartition(-s, k)[:k]
    order = np.argsort(-s[part])
    return part[order], s[part[order]]


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    hits = sum(len(set(f.tolist()) & set(t.tolist())) for f, t in zip(found, truth))
    return hits / truth.size


# ---------------------------------------------------------------------------------------------
# Hamming codes: 100,000 random 1024-bit codes (np.packbits layout, 128 bytes per code).
HAMMING_BITS = 1024


@functools.cache
def hamming_codes() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED + 2)
    bits = rng.integers(0, 2, (N, HAMMING_BITS), dtype=np.uint8)
    codes = np.packbits(bits, axis=1)
    qbits = rng.integers(0, 2, (N_QUERIES, HAMMING_BITS), dtype=np.uint8)
    return np.ascontiguousarray(codes), np.ascontiguousarray(np.packbits(qbits, axis=1))


# ---------------------------------------------------------------------------------------------
# Sets for Jaccard: 100,000 sets over a 30,000-id vocabulary. Set sizes uniform in [48, 80] (mean 64);
# ids drawn without replacement from a Zipf-like law p(id) ~ 1 / (id + 10) ** 0.8, then shuffled
# through a fixed random permutation so popular ids are spread over the id range.
VOCAB = 30_000
SET_MIN, SET_MAX = 48, 80
ZIPF_S, ZIPF_OFFSET = 0.8, 10.0


def _draw_sets(rng: np.random.Generator, n: int, cdf: np.ndarray, perm: np.ndarray) -> list[np.ndarray]:
    sizes = rng.integers(SET_MIN, SET_MAX + 1, n)
    out: list[np.ndarray] = []
    for size in sizes:
        ids = np.unique(np.searchsorted(cdf, rng.random(int(size) * 2)))
        while ids.size < size:  # top up (rare: heavy head ids repeat)
            ids = np.unique(np.concatenate([ids, np.searchsorted(cdf, rng.random(int(size)))]))
        ids = rng.permutation(ids)[:size]
        out.append(np.sort(perm[ids]).astype(np.int32))
    return out


@functools.cache
def jaccard_sets() -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(SEED + 3)
    w = 1.0 / (np.arange(VOCAB) + ZIPF_OFFSET) ** ZIPF_S
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    perm = rng.permutation(VOCAB)
    sets = _draw_sets(rng, N, cdf, perm)
    queries = _draw_sets(rng, 16, cdf, perm)
    return sets, queries


# ---------------------------------------------------------------------------------------------
# MaxSim: 32 query tokens vs 1,000 documents of ragged length uniform in [48, 80] (mean 64) x 128 dims.
MAXSIM_DOCS = 1_000
MAXSIM_DIM = 128
MAXSIM_QTOK = 32
MAXSIM_MIN, MAXSIM_MAX = 48, 80


@dataclass(frozen=True)
class MaxSimData:
    Qt: np.ndarray  # (32, 128) float32
    tokens: np.ndarray  # (T, 128) float32
    offsets: np.ndarray  # (1001,) int64
    padded: np.ndarray  # (1000 * MAXSIM_MAX, 128): each doc padded by repeating its last token


@functools.cache
def maxsim_data() -> MaxSimData:
    rng = np.random.default_rng(SEED + 4)
    lens = rng.integers(MAXSIM_MIN, MAXSIM_MAX + 1, MAXSIM_DOCS)
    offsets = np.zeros(MAXSIM_DOCS + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    tokens = _normalise(rng.standard_normal((int(offsets[-1]), MAXSIM_DIM), dtype=np.float32))
    Qt = _normalise(rng.standard_normal((MAXSIM_QTOK, MAXSIM_DIM), dtype=np.float32))
    # Padding by repeating a real token of the same doc leaves each max unchanged, so the padded
    # numpy path needs no mask (its cheapest correct form).
    padded = np.empty((MAXSIM_DOCS, MAXSIM_MAX, MAXSIM_DIM), np.float32)
    for t in range(MAXSIM_DOCS):
        doc = tokens[offsets[t] : offsets[t + 1]]
        padded[t, : len(doc)] = doc
        padded[t, len(doc) :] = doc[-1]
    return MaxSimData(Qt, tokens, offsets, padded.reshape(-1, MAXSIM_DIM))


# ---------------------------------------------------------------------------------------------
# Centroids: 1,000 centroids at d = 384; a batch of 10,000 (node, vector) running-mean updates.
CENT_C = 1_000
CENT_UPDATES = 10_000
ASSIGN_N = 10_000


@functools.cache
def centroid_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED + 5)
    cent = _normalise(rng.standard_normal((CENT_C, D), dtype=np.float32))
    counts = rng.integers(1, 50, CENT_C).astype(np.int64)
    nodes = rng.integers(0, CENT_C, CENT_UPDATES).astype(np.int64)
    vecs = _normalise(rng.standard_normal((CENT_UPDATES, D), dtype=np.float32))
    return cent, counts, nodes, vecs


# ---------------------------------------------------------------------------------------------
def paired(fns: dict[str, Callable[[], Any]], ref: str, reps: int, seed: int = 0) -> dict[str, Any]:
    """Interleaved A/B timing: each repetition calls every function once, in a fresh random order.

    The machine is shared (other builds run beside the benchmarks), so timings drift over seconds; the
    pytest-benchmark rows of one group are measured one after another and can land in different
    load. Here the reference and its peers see the same load within each repetition, and the
    per-repetition ratio peer_time / ref_time cancels the drift. Returns, for every peer,
    ratio_median (median of the per-repetition ratios) and ratio_of_mins (min peer / min ref).
    """
    import random
    import statistics
    import time

    names = list(fns)
    for name in names:  # warm up (caches, lazy init, JIT)
        fns[name]()
    times: dict[str, list[float]] = {n: [] for n in names}
    order_rng = random.Random(seed)
    for _ in range(reps):
        order = names[:]
        order_rng.shuffle(order)
        for name in order:
            t0 = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t0)
    vs = {}
    for name in names:
        if name == ref:
            continue
        ratios = [p / r for p, r in zip(times[name], times[ref])]
        vs[name] = {
            "ratio_median": statistics.median(ratios),
            "ratio_of_mins": min(times[name]) / min(times[ref]),
        }
    return {"reps": reps, "ref_median": statistics.median(times[ref]), "vs": vs}


def optional_peer(request: Any, fixture: str) -> Any:
    """The peer module from its conftest fixture, or None when that peer is not installed."""
    import pytest

    try:
        return request.getfixturevalue(fixture)
    except pytest.skip.Exception:
        return None


# ---------------------------------------------------------------------------------------------
def run(benchmark: Any, fn: Callable[[], Any], *, rounds: int | None = None, warmup: int = 1) -> Any:
    """Time fn: adaptive pytest-benchmark rounds by default, fixed pedantic rounds for long calls."""
    if rounds is None:
        return benchmark(fn)
    return benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=warmup)


def tag(benchmark: Any, impl: str, *, role: str = "peer", reference: bool = False, **extra: Any) -> None:
    """Label a benchmark for report.py: impl name, role (engramdb / peer / ceiling), ratio reference."""
    benchmark.extra_info.update(impl=impl, role=role, reference=reference, **extra)

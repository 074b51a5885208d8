"""Hamming top-10 over 100,000 random 1024-bit codes (np.packbits layout: 128 bytes per code).

Group hamming-1q: engramdb hamming_topk on uint8 codes (reference) and on the same bytes viewed as
uint64 words, vs simsimd cdist(metric="hamming", dtype="bin8") + argpartition, vs a numba @njit loop
over uint64 words (SWAR popcount: the fastest of SWAR / llvm.ctpop intrinsic / byte lookup table
measured on this machine; LLVM vectorises it) + argpartition, and numpy's np.bitwise_count for context.
All single-threaded (numba without parallel=True). The reference bench also runs an interleaved A/B
measurement against simsimd and numba (extra_info["paired"]) used to judge the targets.
"""

from __future__ import annotations

import functools
from typing import Any

import engramdb.kernels as ek
import numpy as np
from _data import K, hamming_codes, optional_peer, paired, run, tag

GROUP = "hamming-1q"


def _reference() -> tuple[np.ndarray, np.ndarray]:
    codes, Q = hamming_codes()
    q = Q[0]
    dist = np.unpackbits(codes ^ q, axis=1).sum(axis=1, dtype=np.int64)
    return dist, np.sort(dist)[:K]


def _check(idx: Any, dists: Any) -> None:
    full, best = _reference()
    idx = np.asarray(idx).reshape(-1)
    dists = np.asarray(dists).reshape(-1).astype(np.int64)
    np.testing.assert_array_equal(np.sort(dists), best)
    np.testing.assert_array_equal(full[idx], dists)


def _topk_from(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    part = np.argpartition(dist, K)[:K]
    order = np.argsort(dist[part], kind="stable")
    return part[order], dist[part[order]]


@functools.cache
def _numba_hamming(numba: Any) -> Any:
    u1 = np.uint64(1)
    u2 = np.uint64(2)
    u4 = np.uint64(4)
    u56 = np.uint64(56)
    m1 = np.uint64(0x5555555555555555)
    m2 = np.uint64(0x3333333333333333)
    m4 = np.uint64(0x0F0F0F0F0F0F0F0F)
    h01 = np.uint64(0x0101010101010101)

    @numba.njit(inline="always")
    def popcount64(x):
        x = x - ((x >> u1) & m1)
        x = (x & m2) + ((x >> u2) & m2)
        x = (x + (x >> u4)) & m4
        return (x * h01) >> u56

    @numba.njit(nogil=True)
    def hamming_all(qw, W):
        n, w = W.shape
        out = np.empty(n, np.int64)
        for i in range(n):
            s = np.uint64(0)
            for j in range(w):
                s += popcount64(qw[j] ^ W[i, j])
            out[i] = s
        return out

    return hamming_all


def test_hamming_engramdb(benchmark, request):
    codes, Q = hamming_codes()
    q = Q[0]
    benchmark.group = GROUP
    tag(benchmark, "engramdb hamming_topk (uint8 codes)", role="engramdb", reference=True, threads=1)
    r = run(benchmark, lambda: ek.hamming_topk(q, codes, K))
    _check(r.indices, r.distances)
    fns = {"engramdb": lambda: ek.hamming_topk(q, codes, K)}
    simsimd = optional_peer(request, "simsimd")
    if simsimd is not None:
        fns["simsimd"] = fn_simsimd(simsimd)
    numba = optional_peer(request, "numba")
    if numba is not None:
        fns["numba"] = fn_numba(numba)
    benchmark.extra_info["paired"] = paired(fns, "engramdb", reps=60)


def test_hamming_engramdb_u64(benchmark):
    codes, Q = hamming_codes()
    W, qw = codes.view(np.uint64), Q[0].view(np.uint64)
    benchmark.group = GROUP
    tag(benchmark, "engramdb hamming_topk (uint64 words)", role="engramdb", threads=1)
    r = run(benchmark, lambda: ek.hamming_topk(qw, W, K))
    _check(r.indices, r.distances)


def fn_simsimd(simsimd: Any) -> Any:
    codes, Q = hamming_codes()
    q2 = Q[:1]

    def f():
        # plain uint8 input is refused for "hamming" ("Unsupported metric ... datatype"): dtype="bin8"
        d = np.asarray(simsimd.cdist(q2, codes, metric="hamming", dtype="bin8"))[0]
        return _topk_from(d)

    return f


def fn_numba(numba: Any) -> Any:
    codes, Q = hamming_codes()
    W, qw = codes.view(np.uint64), Q[0].view(np.uint64)
    ham = _numba_hamming(numba)
    ham(qw, W)  # compile + warm up outside any timing
    return lambda: _topk_from(ham(qw, W))


def test_hamming_simsimd(benchmark, simsimd):
    benchmark.group = GROUP
    tag(benchmark, "simsimd cdist(hamming, bin8) + argpartition", key="simsimd", threads=1)
    idx, d = run(benchmark, fn_simsimd(simsimd))
    _check(idx, d)


def test_hamming_numba(benchmark, numba):
    f = fn_numba(numba)
    benchmark.group = GROUP
    tag(benchmark, "numba @njit SWAR popcount loop + argpartition", key="numba", threads=1)
    idx, d = run(benchmark, f)
    _check(idx, d)


def test_hamming_numpy_bitwise_count(benchmark):
    codes, Q = hamming_codes()
    W, qw = codes.view(np.uint64), Q[0].view(np.uint64)
    benchmark.group = GROUP
    tag(benchmark, "numpy bitwise_count(W ^ q).sum + argpartition", threads=1)
    idx, d = run(benchmark, lambda: _topk_from(np.bitwise_count(W ^ qw).sum(axis=1, dtype=np.int64)))
    _check(idx, d)

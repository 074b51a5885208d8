"""HDBSCAN on a precomputed distance matrix (C4's per-space clustering): engramdb's kernel vs
scikit-learn's `HDBSCAN(metric="precomputed")` and the `hdbscan` package, same matrix, same run.

The matrix: 1 - cosine of unit vectors drawn around 40 centres in 64 dimensions (float32 for
engramdb, its float64 copy for the peers, which convert to float64 anyway), min cluster size 3 and
min_samples 3, as the topics use them. Each peer's labels are compared with engramdb's by the
adjusted Rand index (extra_info["ari_vs_engramdb"]): scikit-learn's differ only where tied edges
are ordered differently (see kernels/density.py).

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python -m pytest bench/test_bench_hdbscan.py -q -p no:cacheprovider --benchmark-json=/tmp/bench_hdbscan.json`
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
import pytest
from engramdb import kernels

SIZES = [500, 2000]


@functools.cache
def matrix(n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    centres = rng.normal(size=(40, 64))
    x = (centres[rng.integers(0, 40, n)] + rng.normal(size=(n, 64)) * 0.6).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    d = x @ x.T
    np.subtract(np.float32(1.0), d, out=d)
    np.clip(d, 0.0, None, out=d)
    np.fill_diagonal(d, 0.0)
    return d


def _sklearn(d: np.ndarray) -> np.ndarray:
    from sklearn.cluster import HDBSCAN

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(HDBSCAN(min_cluster_size=3, min_samples=3, metric="precomputed", copy=True).fit(d).labels_)


def _hdbscan_package(d: np.ndarray) -> np.ndarray:
    import hdbscan

    # the package's min_samples counts neighbours without the point itself: 2 here is scikit-learn's 3
    return np.asarray(hdbscan.HDBSCAN(min_cluster_size=3, min_samples=2, metric="precomputed").fit(d).labels_)


PEERS = {"engramdb": None, "sklearn": _sklearn, "hdbscan": _hdbscan_package}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", list(PEERS))
def test_hdbscan_precomputed(benchmark: Any, impl: str, n: int) -> None:
    from sklearn.metrics import adjusted_rand_score

    d32 = matrix(n)
    ours = kernels.hdbscan(d32, 3)
    benchmark.group = f"hdbscan-{n}"
    if impl == "engramdb":
        got = benchmark.pedantic(kernels.hdbscan, args=(d32, 3), rounds=15, iterations=1, warmup_rounds=1)
    else:
        pytest.importorskip(impl)
        d64 = d32.astype(np.float64)
        got = benchmark.pedantic(PEERS[impl], args=(d64,), rounds=5 if n > 1000 else 10, iterations=1,
                                 warmup_rounds=1)
    clusters = len(set(np.asarray(got).tolist()) - {-1})
    benchmark.extra_info.update({"rows": n, "clusters": clusters,
                                 "ari_vs_engramdb": round(float(adjusted_rand_score(ours, got)), 4)})
    assert clusters >= 10  # 40 centres: it found structure, not one lump

"""The hierarchy tree built with and without `two_means`' even-split rule, on ordinary data.

60,000 unit rows of 300 noisy clusters (d 64), 300 noisy queries; `CentroidTree.build` at its
default sizes with the rule off (LOPSIDED huge) and on (the shipped 8): build time, height, leaves,
recall@10 against the exact top-10 at probe 1 / 4 / 16 (bench/RESULTS.md, "The first tree build at
100,000 memories").

Command: `python bench/tree_even_split.py`
"""

from __future__ import annotations

import time

import numpy as np
from engramdb.hierarchy import CentroidTree, MatrixSource, kmeans


def main() -> None:
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((300, 64)).astype(np.float32)
    x = (centres[rng.integers(0, 300, 60_000)] * rng.uniform(0.3, 1.5, (60_000, 1))
         + 0.9 * rng.standard_normal((60_000, 64))).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[rng.choice(60_000, 300, replace=False)] + 0.3 * rng.standard_normal((300, 64)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    exact = np.argsort(-(q @ x.T), axis=1)[:, :10]
    shipped = kmeans.LOPSIDED
    try:
        for rule, lopsided in (("off", 10**9), ("on", shipped)):
            kmeans.LOPSIDED = lopsided
            t = time.perf_counter()
            tree = CentroidTree.build(MatrixSource(x), np.arange(len(x)))
            built = time.perf_counter() - t
            recall = []
            for probe in (1, 4, 16):
                found = sum(len(set(tree.search(MatrixSource(x), qq, 10, probe=probe)[0].tolist()) & set(e.tolist()))
                            for qq, e in zip(q, exact))
                recall.append(round(found / (10 * len(q)), 3))
            print(f"even split {rule}: build {built:.1f} s, height {tree.height}, leaves {len(tree.leaves())}, "
                  f"recall@10 at probe 1/4/16 {recall}")
    finally:
        kmeans.LOPSIDED = shipped


if __name__ == "__main__":
    main()

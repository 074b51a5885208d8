"""`LexicalEmbedder`: the sparse lexical space (S5), what N3 Jaccard and H1 BM25 consume.

A text becomes the bag of its analysed terms (`Analyzer`: NFKC, lowercase, Snowball stop words
removed, Snowball English stems), each term mapped to its stable 31-bit id (`analyzer.term_id`).

Weights are the raw term frequency (float32 counts), not ``1 + ln(tf)``: BM25 applies its own tf
saturation (k1) and needs the true counts, and the row's weight sum is then the text's length in
terms (BM25's document length). Jaccard ignores weights; for weighted Jaccard with sublinear tf,
take ``1 + np.log(weights)``. Two terms whose ids collide (see `analyzer`) become one id whose
weight is the sum of their counts.

Rows hold strictly increasing int32 ids; a text without terms (empty, or only stop words and
punctuation) is an empty row. `dim` is the id space, 2^31.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from .analyzer import SNOWBALL_STOPWORDS, Analyzer, term_id, term_ids
from .protocol import SpaceKind, SparseBatch

__all__ = ["LexicalEmbedder"]

_ID_BITS = np.int64(31)
_ID_MASK = np.int64((1 << 31) - 1)


class LexicalEmbedder:
    """Sparse bag-of-terms embedder: analyzer term ids, raw tf weights, CSR rows.

    Args:
        analyzer: the analyzer to use (default: `Analyzer()`, Snowball stop words and stemmer).
            `name` is ``lexical``; a non-default analyzer gets a name of its own
            (``lexical-<digest of its stop list and stem flag>``), so spaces built with different
            analyzers never mix.
    """

    version = "1"
    kind: SpaceKind = "sparse"
    dim = 1 << 31

    def __init__(self, analyzer: Analyzer | None = None) -> None:
        self.analyzer = analyzer if analyzer is not None else Analyzer()
        a = self.analyzer
        if a.stopwords == SNOWBALL_STOPWORDS and a.stem:
            self.name = "lexical"
        else:
            spec = "\n".join(sorted(a.stopwords)) + f"\nstem={a.stem}"
            digest = hashlib.blake2b(spec.encode("utf-8"), digest_size=4).hexdigest()
            self.name = f"lexical-{digest}"

    def __repr__(self) -> str:
        return f"LexicalEmbedder({self.analyzer!r})"

    def embed(self, texts: Sequence[str]) -> SparseBatch:
        """One CSR row per text: sorted unique term ids (int32) with their counts (float32)."""
        n = len(texts)
        if n == 1:  # a query: a dict count beats the batch path's array passes on a few terms
            tally: dict[int, int] = {}
            for t in self.analyzer.terms(texts[0]):
                tid = term_id(t)
                tally[tid] = tally.get(tid, 0) + 1
            order = sorted(tally)
            return SparseBatch(np.array([0, len(order)], np.int64), np.array(order, np.int32),
                               np.array([tally[i] for i in order], np.float32))
        tb = self.analyzer.terms_batch(texts)  # each distinct term hashed once, then one gather
        ids = term_ids(tb.words)[tb.codes]
        key, tf = np.unique((tb.rows() << _ID_BITS) | ids, return_counts=True)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(key >> _ID_BITS, minlength=n), out=indptr[1:])
        return SparseBatch(indptr, (key & _ID_MASK).astype(np.int32), tf.astype(np.float32))

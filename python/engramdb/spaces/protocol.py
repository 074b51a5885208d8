"""The embedder protocol (S5) and the batch types each kind of space produces.

An embedder turns texts into one vector per text for one space. Four kinds exist:

- ``dense``: float32 array (n, dim), rows L2-normalised (zero rows allowed only for empty text).
- ``sparse``: a `SparseBatch` (CSR): per text a strictly increasing set of int32 term ids in
  0..2^31-1 with float32 weights > 0 (what N3 Jaccard and BM25 consume).
- ``binary``: uint8 array (n, dim // 8) of packed bits in `np.packbits` order (N4 Hamming).
- ``multivector``: a `TokenBatch`: float32 token vectors (T, dim), rows L2-normalised, with
  int64 offsets (n + 1) so text t owns tokens[offsets[t]:offsets[t+1]] (N5 MaxSim).

Embedders are deterministic: the same text, name and version give the same output on any machine
and in any process (no randomness without a fixed seed, no Python `hash()`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np

SpaceKind = Literal["dense", "sparse", "binary", "multivector"]


@dataclass(frozen=True)
class SparseBatch:
    """Sparse vectors in CSR form: row t is indices[indptr[t]:indptr[t+1]] with those weights."""

    indptr: np.ndarray  # int64, (n + 1,)
    indices: np.ndarray  # int32, (nnz,), strictly increasing within a row
    weights: np.ndarray  # float32, (nnz,), > 0

    def __len__(self) -> int:
        return int(self.indptr.shape[0]) - 1

    def row(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, weights) of text t."""
        a, b = int(self.indptr[t]), int(self.indptr[t + 1])
        return self.indices[a:b], self.weights[a:b]


class TokenBatch:
    """Ragged token vectors: text t owns tokens[offsets[t]:offsets[t+1]].

    `codes`, when the embedder made them, are the tokens' int8 codes and float32 scales as storage
    writes them (`storage.vectors.quantize_tokens(tokens)`, bit for bit): an embedder whose tokens
    repeat (one vector per distinct term) quantises each distinct vector once and gathers. Ignored
    (and storage quantises `tokens`) unless both match `tokens`' shape; slicing a batch drops them,
    joining keeps them when every part has them.

    A batch made by `of_rows` holds its tokens as rows of a small table (token i is
    ``table[rows[i]]``) and gathers `tokens` (and `codes`) only when they are read: a write checks
    the table and stores the gathered codes, and never needs the float matrix (a long-turn batch's
    is ~100 MB). Treat a batch as immutable.
    """

    __slots__ = ("_codes", "_table", "_table_codes", "_tokens", "offsets", "table_rows")

    def __init__(self, tokens: np.ndarray, offsets: np.ndarray,
                 codes: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self._tokens: np.ndarray | None = tokens
        self.offsets: np.ndarray = offsets  # int64, (n + 1,)
        self._codes = codes
        self._table: np.ndarray | None = None
        self._table_codes: tuple[np.ndarray, np.ndarray] | None = None
        self.table_rows: np.ndarray | None = None  # int64 (T,) indexes into `table` (`of_rows` batches)

    @classmethod
    def of_rows(cls, table: np.ndarray, rows: np.ndarray, offsets: np.ndarray,
                codes: tuple[np.ndarray, np.ndarray] | None = None) -> TokenBatch:
        """A batch whose token i is ``table[rows[i]]`` (`table_rows`), and whose codes, when given for
        the table's rows, are ``codes[0][rows[i]]`` and ``codes[1][rows[i]]``: gathered when first read."""
        out = cls.__new__(cls)
        out._tokens, out.offsets, out._codes = None, offsets, None
        out._table, out.table_rows, out._table_codes = table, rows, codes
        return out

    @property
    def table(self) -> np.ndarray | None:
        """The distinct token vectors `table_rows` index (None for a batch of plain tokens)."""
        return self._table

    @property
    def table_codes(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The int8 codes and scales of `table`'s rows, as `codes` are of tokens (or None)."""
        return self._table_codes

    @property
    def tokens(self) -> np.ndarray:
        """float32, (T, dim)."""
        if self._tokens is None:
            assert self._table is not None and self.table_rows is not None
            self._tokens = self._table[self.table_rows]  # a race gathers twice, the same values
        return self._tokens

    @property
    def codes(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The tokens' int8 codes and float32 scales, when the embedder made them (or None)."""
        if self._codes is None and self._table_codes is not None and self.table_rows is not None:
            q, scale = self._table_codes
            rows = self._table.shape[0] if self._table is not None else -1
            if q.shape[:1] == (rows,) and scale.shape == (rows,):  # codes of another table: none
                self._codes = (q[self.table_rows], scale[self.table_rows])
        return self._codes

    @property
    def size(self) -> int:
        """How many tokens the batch holds (without gathering them)."""
        return int(self.table_rows.shape[0]) if self.table_rows is not None else int(self.tokens.shape[0])

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    def __repr__(self) -> str:
        return f"TokenBatch({len(self)} texts, {self.size} tokens)"

    def row(self, t: int) -> np.ndarray:
        """The (tokens_t, dim) matrix of text t."""
        return self.tokens[int(self.offsets[t]) : int(self.offsets[t + 1])]


Embedding = np.ndarray | SparseBatch | TokenBatch


@runtime_checkable
class Embedder(Protocol):
    """What a space needs from an embedder: identity, shape, and a batched `embed`."""

    name: str
    version: str
    kind: SpaceKind
    dim: int

    def embed(self, texts: Sequence[str]) -> Embedding:
        """One vector (or token matrix / sparse row) per text, in order."""
        ...

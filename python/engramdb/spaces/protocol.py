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
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class TokenBatch:
    """Ragged token vectors: text t owns tokens[offsets[t]:offsets[t+1]].

    `codes`, when the embedder made them, are the tokens' int8 codes and float32 scales as storage
    writes them (`storage.vectors.quantize_tokens(tokens)`, bit for bit): an embedder whose tokens
    repeat (one vector per distinct term) quantises each distinct vector once and gathers. Ignored
    (and storage quantises `tokens`) unless both match `tokens`' shape; slicing a batch drops them,
    joining keeps them when every part has them.
    """

    tokens: np.ndarray  # float32, (T, dim)
    offsets: np.ndarray  # int64, (n + 1,)
    codes: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

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

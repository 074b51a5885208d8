"""The built-in embedders (S5) and the default profile's four spaces, no model download."""

from __future__ import annotations

from .analyzer import Analyzer
from .hashing import HashingEmbedder
from .hdc import BinaryHDCEmbedder
from .lexical_space import LexicalEmbedder
from .protocol import Embedder
from .token_space import TokenEmbedder

__all__ = [
    "Analyzer",
    "BinaryHDCEmbedder",
    "HashingEmbedder",
    "LexicalEmbedder",
    "TokenEmbedder",
    "default_embedders",
]


def default_embedders() -> dict[str, Embedder]:
    """Fresh embedders of the default profile, keyed by space name.

    ``dense``: `HashingEmbedder` (384, version 2), ``lexical``: `LexicalEmbedder`, ``hdc``:
    `BinaryHDCEmbedder` (1,024 bits) over that same dense embedder, ``tokens``: `TokenEmbedder` (128).
    """
    dense = HashingEmbedder(384)
    return {
        "dense": dense,
        "lexical": LexicalEmbedder(),
        "hdc": BinaryHDCEmbedder(dense, 1024),
        "tokens": TokenEmbedder(128),
    }

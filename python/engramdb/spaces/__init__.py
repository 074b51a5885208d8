"""Spaces (S4) and embedders (S5): what a memory's vectors are and how they are made."""

from .protocol import Embedder, Embedding, SpaceKind, SparseBatch, TokenBatch

__all__ = ["Embedder", "Embedding", "SpaceKind", "SparseBatch", "TokenBatch"]

"""Derived indexes behind one protocol (load / sync / save / drop): centroid trees, usearch HNSW,
BM25 and turn maps; rebuildable from the segments, saved as checked derived files."""

from .derived_index import DerivedIndex
from .registry import Indexes

__all__ = ["DerivedIndex", "Indexes"]

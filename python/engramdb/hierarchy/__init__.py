"""The centroid hierarchy (J1-J7): a tree of k-means centroids over a space's memories."""

from .tree import CentroidTree, MatrixSource, SearchStats, VectorSource

__all__ = ["CentroidTree", "MatrixSource", "SearchStats", "VectorSource"]

"""Memory types (H6): free-form names, clustered, and a type filter that reaches their neighbours.

A store's memory_type names are embedded in the main space and clustered by DBSCAN
(`kernels.dbscan_cosine`: scikit-learn's labels, without it; cosine distance, eps 0.20, min 3
names). A search filtered by `types=[...]` also keeps up to 5 neighbour types of each asked one:
names at cosine >= 0.80 to it, in its cluster, among the names of the namespace searched (a name
only another namespace uses is never shown, nor shapes the clusters). The expansion is shown in
explain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..kernels import dbscan_cosine
from ..storage.view import View

EPS, MIN_NAMES = 0.20, 3  # DBSCAN, cosine distance
NEIGHBOUR_SIMILARITY, MAX_NEIGHBOURS = 0.80, 5


@dataclass(frozen=True)
class TypeClusters:
    """The clusters of a store's type names (label -1: in no cluster)."""

    names: tuple[str, ...]
    vectors: np.ndarray  # unit rows, one per name
    labels: tuple[int, ...]
    clustered: bool  # False only for a store without type names
    clusters: list[list[str]] = field(default_factory=list)

    def expand(self, asked: Sequence[str], embed: Callable[[Sequence[str]], np.ndarray]) -> dict[str, list[str]]:
        """Each asked type -> its neighbour types (nearest first, at most 5; the asked ones excluded)."""
        out: dict[str, list[str]] = {}
        if not self.names:
            return {a: [] for a in asked}
        q = _unit(np.asarray(embed(list(asked)), np.float64))
        sims = q @ self.vectors.T
        label_of = dict(zip(self.names, self.labels))
        for i, a in enumerate(asked):
            own = label_of.get(a, -1)
            near: list[str] = []
            for j in np.argsort(-sims[i], kind="stable").tolist():
                name = self.names[j]
                if sims[i, j] < NEIGHBOUR_SIMILARITY or len(near) == MAX_NEIGHBOURS:
                    break
                if name in asked or (self.clustered and (own == -1 or self.labels[j] != own)):
                    continue
                near.append(name)
            out[a] = near
        return out


def namespace_type_names(view: View, namespace: str) -> frozenset[str]:
    """The memory_type names of one namespace's rows (every version): what its type filter expands
    among, so a search never shows, nor is shaped by, the names only another namespace uses."""
    key = f"types:{namespace}"
    found = view.derived.get(key)
    if found is None:
        names: set[str] = set()
        for si, seg in enumerate(view.segments):
            mine = view.namespace_mask(si, namespace)
            if mine is None:
                continue
            names.update(n for n in seg.type_names() if n not in names and (seg.type_mask(frozenset([n])) & mine).any())
        found = view.derived[key] = frozenset(names)
    out: frozenset[str] = found
    return out


def cluster_types(names: Sequence[str], embed: Callable[[Sequence[str]], np.ndarray]) -> TypeClusters:
    """DBSCAN over the names' main-space vectors (see the module docstring)."""
    names = tuple(sorted(set(names)))
    if not names:
        return TypeClusters((), np.zeros((0, 1)), (), False)
    vecs = _unit(np.asarray(embed(list(names)), np.float64))
    labels = dbscan_cosine(vecs, EPS, MIN_NAMES)
    groups: dict[int, list[str]] = {}
    for n, lab in zip(names, labels.tolist()):
        if lab >= 0:
            groups.setdefault(lab, []).append(n)
    return TypeClusters(names, vecs, tuple(int(x) for x in labels), True, sorted(groups.values()))


def _unit(x: np.ndarray) -> np.ndarray:
    x = x.reshape(len(x), -1)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    out: np.ndarray = np.divide(x, n, out=np.zeros_like(x), where=n > 0)
    return out


__all__ = ["TypeClusters", "cluster_types", "namespace_type_names"]

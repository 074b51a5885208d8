"""Topics by weighted agreement of per-space clusterings (C4).

Each voting space clusters a namespace's current memories on its own (HDBSCAN, scikit-learn, at
least `MIN_CLUSTER` memories a cluster) over its own distance: 1 - cosine for dense spaces (and
for multivector spaces, on each memory's mean token vector), the Hamming fraction for binary
codes, 1 - Jaccard for sparse term sets. Two memories are together in a space when that space
puts them in one cluster; their *agreement* is the sum of the category weights of the spaces
that do (semantic 1.0, relational and structural 0.5; temporal spaces never vote). A topic is a
connected group of memories whose pairs agree at the threshold or more; its confidence is the
mean agreement of its agreeing pairs over the most the schema allows.

Who votes: every non-temporal space, except one whose embedder is a projection of the main
space's (the HDC codes of the dense vectors): it would repeat the main space's vote.

The threshold: SPEC C4 writes 2.5 for the 13-space profile (a maximum of 8.5): two semantic
spaces and one more. For any schema it is the larger of 2.5/8.5 of its maximum and the heaviest
voter's weight plus the lightest's, so a topic always needs at least two spaces to agree. The
default profile (dense 1.0, tokens 1.0, lexical 0.5; maximum 2.5) needs 1.5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..spaces.protocol import Embedding, SparseBatch, TokenBatch
from ..spaces.schema import Space

MIN_CLUSTER = 3
SPEC_THRESHOLD, SPEC_MAXIMUM = 2.5, 8.5


@dataclass(frozen=True)
class SpaceClusters:
    """One space's clustering of the memories: a label per memory (-1: in no cluster)."""

    space: str
    weight: float
    labels: np.ndarray  # int64 (n,)


def threshold(weights: Sequence[float]) -> float:
    """The agreement a pair needs to share a topic (see the module docstring)."""
    ws = sorted((w for w in weights if w > 0), reverse=True)
    if len(ws) < 2:
        return float("inf")  # one voter cannot agree with anything
    return max(sum(ws) * SPEC_THRESHOLD / SPEC_MAXIMUM, ws[0] + ws[-1])


def distances(space: Space, vectors: Embedding) -> np.ndarray:
    """The pairwise distance matrix of one space's vectors (float64, zero diagonal)."""
    if isinstance(vectors, SparseBatch):
        n = len(vectors.indptr) - 1
        rows = np.repeat(np.arange(n), np.diff(vectors.indptr))
        cols = np.unique(vectors.indices, return_inverse=True)[1]
        m = np.zeros((n, int(cols.max()) + 1 if len(cols) else 1), np.float32)
        m[rows, cols] = 1.0
        inter = m @ m.T
        sizes = m.sum(axis=1)
        union = sizes[:, None] + sizes[None, :] - inter
        d = 1.0 - np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    elif isinstance(vectors, TokenBatch):
        off = vectors.offsets
        x = np.stack([vectors.tokens[off[i]:off[i + 1]].mean(axis=0) if off[i + 1] > off[i]
                      else np.zeros(vectors.tokens.shape[1], np.float32) for i in range(len(off) - 1)])
        d = 1.0 - _cosines(x)
    elif space.kind == "binary":
        bits = np.unpackbits(np.asarray(vectors, np.uint8), axis=1)[:, : space.dim].astype(np.float32)
        s = 2.0 * bits - 1.0  # +-1: dot = dim - 2 x hamming
        d = (space.dim - s @ s.T) / (2.0 * space.dim)
    else:
        d = 1.0 - _cosines(np.asarray(vectors, np.float32))
    d = np.clip(np.asarray(d, np.float64), 0.0, None)
    np.fill_diagonal(d, 0.0)
    out: np.ndarray = (d + d.T) / 2.0
    return out


def _cosines(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    u = np.divide(x, n, out=np.zeros_like(x), where=n > 0)
    out: np.ndarray = u @ u.T
    return out


def cluster(space: Space, vectors: Embedding) -> SpaceClusters:
    """HDBSCAN of one space (needs scikit-learn: `engramdb[cluster]`)."""
    from sklearn.cluster import HDBSCAN  # type: ignore[import-untyped]

    d = distances(space, vectors)
    if len(d) < MIN_CLUSTER:
        return SpaceClusters(space.name, space.weight, np.full(len(d), -1, np.int64))
    labels = HDBSCAN(min_cluster_size=MIN_CLUSTER, metric="precomputed", copy=True).fit(d).labels_
    return SpaceClusters(space.name, space.weight, np.asarray(labels, np.int64))


def topics_of(clusterings: Sequence[SpaceClusters], n: int) -> list[tuple[list[int], float]]:
    """(member indices, confidence) of each topic, biggest first (see the module docstring)."""
    from scipy.sparse import coo_matrix  # type: ignore[import-untyped]
    from scipy.sparse.csgraph import connected_components  # type: ignore[import-untyped]

    weights = [c.weight for c in clusterings]
    need, top = threshold(weights), sum(weights)
    keys, ws = [], []
    for c in clusterings:  # every pair two memories of one cluster make, with that space's weight
        for label in np.unique(c.labels[c.labels >= 0]).tolist():
            members = np.flatnonzero(c.labels == label)
            a, b = np.triu_indices(len(members), 1)
            keys.append(members[a] * n + members[b])
            ws.append(np.full(len(a), c.weight))
    if not keys:
        return []
    pairs, inv = np.unique(np.concatenate(keys), return_inverse=True)
    agree = np.bincount(inv, weights=np.concatenate(ws))
    strong = agree >= need - 1e-9
    a, b = pairs[strong] // n, pairs[strong] % n
    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    out = []
    for k in np.unique(comp[a]).tolist() if len(a) else []:
        members = np.flatnonzero(comp == k)
        if len(members) >= MIN_CLUSTER:
            inside = comp[a] == k
            out.append((members.tolist(), float(agree[strong][inside].mean()) / top))
    return sorted(out, key=lambda t: (-len(t[0]), t[0][0]))


__all__ = ["MIN_CLUSTER", "SpaceClusters", "cluster", "distances", "threshold", "topics_of"]

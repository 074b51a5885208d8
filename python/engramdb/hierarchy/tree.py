"""The centroid tree (J1-J4): memories in leaves, centroids above them, searched by top-K descent.

Levels: memories are level 0 (they are the keys held by leaves), leaves are level 1, the root is
level `height`. Every node's centroid is the running mean of the vectors below it (N2
`centroid_update`), scored against a query by cosine inside the N1 scan (`topk` with an
allow-list of the candidate nodes, so nothing is gathered or copied).

Search is top-K descent (hierarchy/descent.py, the search half of the class). A batch build
labels leaves as hierarchy/leaves.py says, then clusters upwards; inserts route each vector to
its leaf and split full nodes (J3).

Vectors are not copied into the tree: a `VectorSource` gives them by key (rows of one matrix for
a bare tree; segment rows for the store).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import kernels
from ..kernels.sets import unique
from .descent import Descent, SearchStats, now_us
from .kmeans import spherical_kmeans, two_means
from .leaves import leaf_labels
from .pca import fit, project
from .source import KeyFilter, MatrixSource, VectorSource

__all__ = ["CentroidTree", "KeyFilter", "MatrixSource", "SearchStats", "VectorSource"]

NO_PARENT = -1
SPILL_CANDIDATES = 8  # a batch build picks each key's second leaf among its nearest leaves
SOAR_LAMBDA = 1.0  # weight of residual parallelism in the second-leaf choice (SOAR, Sun et al. 2023)
ROUTE_ALL_LEAVES = 4_096  # inserts compare against every leaf up to this many leaves
RECLUSTER_ITERS = 4  # k-means iterations re-clustering a parent's leaves from their own centroids (3: up to -4 recall points at narrow beams)
SPLIT_ITERS = 5  # k-means iterations of a full leaf re-clustered with its nearest sibling (3: -0.8 recall points)
ROUTE_BEAM = 8  # parents of leaves kept per vector past ROUTE_ALL_LEAVES (4: -7 recall points, 16: -20% speed)


class CentroidTree(Descent):
    """A hierarchy of centroids over memory keys, grown by batch build and incremental insert."""

    def __init__(self, dim: int, *, leaf_size: int = 64, fanout: int = 32, seed: int = 0, spill: bool = True) -> None:
        if leaf_size < 2 or fanout < 2:
            raise ValueError(f"leaf_size and fanout must be >= 2, got {leaf_size} and {fanout}")
        self.dim = int(dim)
        self.leaf_size = int(leaf_size)
        self.leaf_cap = 2 * self.leaf_size  # a leaf holding more splits in two (J3)
        self.fanout = int(fanout)
        self.fanout_cap = 2 * self.fanout
        self.seed = seed
        self.spill_enabled = spill  # keys also listed in a second leaf (search recall per vector scored)
        self._splits = 0
        cap = 16
        self.centroids = np.zeros((cap, self.dim), np.float32)
        self.counts = np.zeros(cap, np.int64)
        self.level = np.zeros(cap, np.int8)
        self.parent = np.full(cap, NO_PARENT, np.int64)
        self.first_seq = np.full(cap, np.iinfo(np.int64).max, np.int64)
        self.last_seq = np.full(cap, -1, np.int64)
        self.archived = np.zeros(cap, bool)
        self.created_at = np.zeros(cap, np.int64)  # microseconds since the epoch, UTC
        self.last_accessed_at = np.zeros(cap, np.int64)  # set when a search probes the node
        self.children: list[np.ndarray] = []  # internal nodes: child node ids; leaves: empty
        self.members: list[np.ndarray] = []  # leaves: memory keys (int64); internal nodes: empty
        # leaves: keys whose *second* leaf this is (spilled assignment, see `_second_leaves`); they
        # are scanned with the leaf but take no part in its centroid or count
        self.spill: list[np.ndarray] = []
        self.n_nodes = 0
        self.root = NO_PARENT
        self.height = 0
        self._csr_cache: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        # leaf-contiguous copy of the scanned vectors (`pack`): (the CSR it was made for, vectors in
        # member order, the key at each position, (mask id, mask by position) of the last filter)
        self._packed: tuple[Any, np.ndarray, np.ndarray] | None = None
        self._packed_mask: tuple[np.ndarray, np.ndarray] | None = None
        self._positions = np.empty(0, np.int64)

    def copy(self) -> CentroidTree:
        """A deep copy sharing nothing mutable with this tree: a sync inserts into the copy while
        searches keep reading this one (index/tree_index.py). Caches (CSR views, a packed copy) are not
        copied: the copy makes its own when it is next searched or packed."""
        new = object.__new__(CentroidTree)
        new.__dict__.update(self.__dict__)
        for name in ("centroids", "counts", "level", "parent", "first_seq", "last_seq", "archived", "created_at",
                     "last_accessed_at"):
            setattr(new, name, getattr(self, name).copy())
        new.children = [a.copy() for a in self.children]
        new.members = [a.copy() for a in self.members]
        new.spill = [a.copy() for a in self.spill]
        new._csr_cache, new._packed, new._packed_mask = None, None, None
        new._positions = np.empty(0, np.int64)
        return new

    # ------------------------------------------------------------------------------ structure
    def __len__(self) -> int:
        """Memories held."""
        return int(self.counts[self.root]) if self.root >= 0 else 0

    def leaves(self) -> np.ndarray:
        """Ids of all leaves."""
        return np.flatnonzero(self.level[: self.n_nodes] == 1)

    def nodes_per_level(self) -> dict[int, int]:
        """Level -> node count (level 1 = leaves)."""
        lv, cnt = np.unique(self.level[: self.n_nodes], return_counts=True)
        return {int(a): int(b) for a, b in zip(lv, cnt) if a > 0}  # level 0: detached nodes

    def _new_node(self, level: int, parent: int) -> int:
        if self.n_nodes == len(self.counts):
            grow = len(self.counts)
            self.centroids = np.concatenate([self.centroids, np.zeros((grow, self.dim), np.float32)])
            self.counts = np.concatenate([self.counts, np.zeros(grow, np.int64)])
            self.level = np.concatenate([self.level, np.zeros(grow, np.int8)])
            self.parent = np.concatenate([self.parent, np.full(grow, NO_PARENT, np.int64)])
            self.first_seq = np.concatenate([self.first_seq, np.full(grow, np.iinfo(np.int64).max, np.int64)])
            self.last_seq = np.concatenate([self.last_seq, np.full(grow, -1, np.int64)])
            self.archived = np.concatenate([self.archived, np.zeros(grow, bool)])
            self.created_at = np.concatenate([self.created_at, np.zeros(grow, np.int64)])
            self.last_accessed_at = np.concatenate([self.last_accessed_at, np.zeros(grow, np.int64)])
        nid = self.n_nodes
        self.n_nodes += 1
        self._csr_cache = None
        self.level[nid] = level
        self.parent[nid] = parent
        self.created_at[nid] = now_us()
        self.children.append(np.empty(0, np.int64))
        self.members.append(np.empty(0, np.int64))
        self.spill.append(np.empty(0, np.int64))
        if parent >= 0:
            self.children[parent] = np.append(self.children[parent], nid)
        return nid

    def _set_leaf(self, leaf: int, keys: np.ndarray, vectors: np.ndarray) -> None:
        """A leaf's members, count, centroid and seq range (keys are given in insertion order, so
        a leaf's first/last seq are its smallest and largest key)."""
        self.members[leaf] = keys
        self._csr_cache = None
        self.counts[leaf] = len(keys)
        self.centroids[leaf] = vectors.mean(axis=0, dtype=np.float64) if len(keys) else 0.0
        if len(keys):
            self.first_seq[leaf], self.last_seq[leaf] = int(keys.min()), int(keys.max())

    def _refresh_internal(self, node: int) -> None:
        """An internal node's count, centroid and seq range from its children's."""
        ch = self.children[node]
        w = self.counts[ch].astype(np.float64)
        self.counts[node] = int(w.sum())
        if w.sum() > 0:
            self.centroids[node] = (self.centroids[ch].astype(np.float64) * w[:, None]).sum(0) / w.sum()
        self.first_seq[node] = self.first_seq[ch].min()
        self.last_seq[node] = self.last_seq[ch].max()

    # ------------------------------------------------------------------------------ build (J2)
    @classmethod
    def build(
        cls,
        source: VectorSource,
        keys: np.ndarray,
        *,
        leaf_size: int = 64,
        fanout: int = 32,
        pca_dims: int | None = None,
        seed: int = 0,
        iters: int = 10,
        refine: int = 2,
        spill: bool = True,
    ) -> CentroidTree:
        """Leaves first, then the levels above them from the leaves' centroids.

        Leaves: a coarse k-means (about sqrt(leaves) cells), k-means into leaves of about
        `leaf_size` inside each cell, then `refine` passes that move every memory to its nearest
        leaf among the leaves of its 3 nearest cells (top-down splitting alone strands ~10% of
        points in the wrong cell on noisy data); leaves over 2 x `leaf_size` are re-clustered into
        leaves of about `leaf_size`. Upper levels: k-means of the leaf centroids into parents of
        about `fanout` children (groups over 2 x `fanout` halved), repeated until one root.
        Clustering runs in `pca_dims` principal dimensions when given; centroids are always kept in
        full dimension.
        """
        keys = np.asarray(keys, dtype=np.int64)
        if len(keys) == 0:
            raise ValueError("build needs at least one key (an empty tree grows by insert)")
        x = np.ascontiguousarray(source.take(keys), dtype=np.float32)
        tree = cls(x.shape[1], leaf_size=leaf_size, fanout=fanout, seed=seed, spill=spill)
        z = x
        if pca_dims is not None and len(keys) > pca_dims:
            mean, comp = fit(x, pca_dims, seed=seed)
            z = project(x, mean, comp)
        labels, n_leaves = leaf_labels(z, leaf_size, iters, refine, seed)
        order = np.argsort(labels, kind="stable")
        starts = np.searchsorted(labels[order], np.arange(n_leaves + 1))
        groups = [order[starts[i] : starts[i + 1]] for i in range(n_leaves)]
        groups = [g for g in groups if len(g)]
        # upper levels, bottom-up over centroids (in full dimension: they are what queries score)
        level_nodes: list[list[np.ndarray]] = [groups]
        cents = np.stack([x[g].mean(axis=0) for g in groups]).astype(np.float32)
        weights = np.array([len(g) for g in groups], np.float64)
        while len(level_nodes[-1]) > fanout or len(level_nodes) == 1:
            k = max(1, math.ceil(len(cents) / fanout))
            _, lab = spherical_kmeans(cents, k, iters=iters, seed=seed + len(level_nodes)) if k > 1 else \
                (None, np.zeros(len(cents), np.int64))
            parents = [np.flatnonzero(lab == c) for c in range(k)]
            parents = _within_fanout([p for p in parents if len(p)], cents, 2 * fanout, seed)
            level_nodes.append(parents)
            w = np.array([weights[p].sum() for p in parents])
            cents = np.stack([(cents[p] * weights[p, None]).sum(0) / weights[p].sum() for p in parents]).astype(np.float32)
            weights = w
        tree.height = len(level_nodes) + 1
        tree.root = tree._new_node(tree.height, NO_PARENT)
        tree._attach_build(level_nodes, len(level_nodes) - 1, np.arange(len(level_nodes[-1])), tree.root, keys, x)
        for lvl in range(2, tree.height + 1):  # bottom-up: counts and centroids of internal nodes
            for node in np.flatnonzero(tree.level[: tree.n_nodes] == lvl):
                tree._refresh_internal(int(node))
        for leaf in tree.leaves():  # oversized leaves (uneven clusters) split like inserts do
            tree._split_if_full(int(leaf), source)
        for lvl in range(2, tree.height + 1):  # and so do parents k-means made too wide
            for node in np.flatnonzero(tree.level[: tree.n_nodes] == lvl):
                tree._split_internal_if_full(int(node), source)
        if spill and len(tree.leaves()) > 1:
            primary = np.empty(len(keys), np.int64)  # each key's leaf, by position in `keys`
            order = np.argsort(keys)
            for leaf in tree.leaves():
                primary[order[np.searchsorted(keys[order], tree.members[int(leaf)])]] = leaf
            if len(tree.leaves()) <= ROUTE_ALL_LEAVES:
                # each key's 8 nearest leaves anywhere in the tree as candidates (+2 s at 100K)
                cand = tree._top_leaves(x, SPILL_CANDIDATES)
                tree._add_spill(keys, tree._second_leaves_among(x, primary, cand))
            else:
                # past that, every key against every leaf grows as n^2 (1M keys x 18,600 leaves:
                # 534 s of a build that took 77 s without spill): the primary's siblings instead
                tree._add_spill(keys, tree._second_leaves(x, primary))
        return tree

    def _attach_build(self, level_nodes: list[list[np.ndarray]], depth: int, items: np.ndarray, parent: int,
                      keys: np.ndarray, x: np.ndarray) -> None:
        """Create the nodes `items` of build level `depth` (0 = leaves) under `parent`, recursively."""
        for i in items:
            node = self._new_node(depth + 1, parent)
            if depth == 0:
                g = level_nodes[0][int(i)]
                self._set_leaf(node, keys[g], x[g])
            else:
                self._attach_build(level_nodes, depth - 1, level_nodes[depth][int(i)], node, keys, x)

    # ------------------------------------------------------------------------------ insert (J3)
    def insert(self, source: VectorSource, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Add memories: each joins its nearest leaf (`_route`), the centroids on the leaf's path
        take it into their running means (N2), full leaves split (2-means), a full root grows a
        new level."""
        keys = np.asarray(keys, dtype=np.int64)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if len(keys) == 0:
            return
        self._csr_cache = None
        if self.root < 0:
            self.height = 2
            self.root = self._new_node(2, NO_PARENT)
            self._new_node(1, self.root)
        second = np.full(len(keys), -1, np.int64)
        if self.spill_enabled and 1 < len(self.leaves()) <= ROUTE_ALL_LEAVES:
            # one scan gives both: the nearest leaf joins, the spill leaf is chosen among the
            # nearest SPILL_CANDIDATES as in a batch build (siblings only would drift from it)
            cand = self._top_leaves(vectors, SPILL_CANDIDATES)
            at = cand[:, 0].copy()
            second = self._second_leaves_among(vectors, at, cand)
        else:
            at = self._route(vectors)
            if self.spill_enabled:
                second = self._second_leaves(vectors, at)
        path = [at]  # the leaf, then its ancestors up to the root
        for _ in range(self.height - 1):
            path.append(self.parent[path[-1]])
        for nodes in path:  # running means along every path (N2)
            kernels.centroid_update(self.centroids[: self.n_nodes], self.counts[: self.n_nodes], nodes, vectors)
            np.minimum.at(self.first_seq, nodes, keys)
            np.maximum.at(self.last_seq, nodes, keys)
        order = np.argsort(at, kind="stable")
        leaves, starts = np.unique(at[order], return_index=True)
        bounds = list(starts[1:]) + [len(order)]
        for leaf, a, b in zip(leaves, starts, bounds):
            self.members[int(leaf)] = np.concatenate([self.members[int(leaf)], keys[order[a:b]]])
        self._add_spill(keys, second)
        for leaf in leaves:
            self._split_if_full(int(leaf), source)

    def _top_leaves(self, vectors: np.ndarray, m: int) -> np.ndarray:
        """The m leaves with the most similar centroids, per vector ((n, m), best first): one
        N2 `assign_topk` call, parallel over the vectors."""
        leaves = self.leaves()
        lab, _ = kernels.assign_topk(np.ascontiguousarray(vectors, dtype=np.float32), self.centroids[leaves],
                                     min(m, len(leaves)), "cosine")
        out: np.ndarray = leaves[lab]
        return out

    def _second_leaves_among(self, vectors: np.ndarray, primary: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """SOAR's choice (see `_second_leaves`) among each vector's own candidate leaves (n, m)."""
        out = np.full(len(vectors), -1, np.int64)
        norms2 = np.einsum("cd,cd->c", self.centroids[: self.n_nodes], self.centroids[: self.n_nodes])
        # 256 rows a chunk: their gathered candidates (3 MiB at d = 384) stay in cache for both
        # products; 4,096 (48 MiB) went to memory and back twice (0.9 s of a 100K build, now 0.5)
        for a in range(0, len(vectors), 256):
            x, p, cs = vectors[a : a + 256], primary[a : a + 256], cand[a : a + 256]
            r = x - self.centroids[p]
            rn = r / np.maximum(np.linalg.norm(r, axis=1, keepdims=True), 1e-12)
            # |x - c|^2 + lambda (rn . (x - c))^2 expanded into dot products: two passes over the
            # gathered candidates instead of materialising every difference (2.4x faster)
            g = self.centroids[cs]  # (b, m, d)
            xc, rc = np.einsum("bd,bmd->bm", x, g), np.einsum("bd,bmd->bm", rn, g)
            xx, rx = np.einsum("bd,bd->b", x, x)[:, None], np.einsum("bd,bd->b", rn, x)[:, None]
            score = xx - 2 * xc + norms2[cs] + SOAR_LAMBDA * (rx - rc) ** 2
            score[cs == p[:, None]] = np.inf
            best = np.argmin(score, axis=1)
            ok = np.isfinite(score[np.arange(len(x)), best])
            out[a : a + 256] = np.where(ok, cs[np.arange(len(x)), best], -1)
        return out

    def _second_leaves(self, vectors: np.ndarray, primary: np.ndarray) -> np.ndarray:
        """Each vector's spill leaf among the siblings of its primary leaf, chosen as SOAR does:
        small distance, and a residual as orthogonal as possible to the one the primary leaf
        leaves, so a query the primary centroid misjudges is likely caught by the second
        (Sun et al. 2023). -1 where the primary leaf has no sibling."""
        out = np.full(len(vectors), -1, np.int64)
        parents = self.parent[primary]
        for p in unique(parents):
            rows = np.flatnonzero(parents == p)
            sibs = self.children[int(p)]
            sibs = sibs[self.level[sibs] == 1]
            if len(sibs) < 2:
                continue
            x = vectors[rows]
            c = self.centroids[sibs]
            r = x - self.centroids[primary[rows]]
            rn = r / np.maximum(np.linalg.norm(r, axis=1, keepdims=True), 1e-12)
            xc, rc = x @ c.T, rn @ c.T  # (rows, sibs): small products, no BLAS threads needed
            dist = (x * x).sum(1)[:, None] + (c * c).sum(1)[None, :] - 2 * xc
            par = (rn * x).sum(1)[:, None] - rc
            score = dist + SOAR_LAMBDA * par * par
            score[sibs[None, :] == primary[rows][:, None]] = np.inf
            out[rows] = sibs[np.argmin(score, axis=1)]
        return out

    def _add_spill(self, keys: np.ndarray, leaves: np.ndarray) -> None:
        """Append keys to the spill lists of their second leaves (-1: none)."""
        keep = leaves >= 0
        keys, leaves = keys[keep], leaves[keep]
        order = np.argsort(leaves, kind="stable")
        uniq, starts = np.unique(leaves[order], return_index=True)
        bounds = list(starts[1:]) + [len(order)]
        for leaf, a, b in zip(uniq, starts, bounds):
            self.spill[int(leaf)] = np.concatenate([self.spill[int(leaf)], keys[order[a:b]]])
        self._csr_cache = None

    def _respill(self, source: VectorSource, spilled: np.ndarray, targets: list[int]) -> None:
        """Spilled keys of leaves just rebuilt go to the nearest of the rebuilt leaves `targets`."""
        if len(spilled) == 0:
            return
        x = np.ascontiguousarray(source.take(spilled), dtype=np.float32)
        lab, _ = kernels.assign_nearest(x, self.centroids[targets], "cosine", threads=1)
        self._add_spill(spilled, np.asarray(targets, np.int64)[lab])

    def _route(self, vectors: np.ndarray) -> np.ndarray:
        """The leaf each vector joins: the nearest of all leaves while there are at most
        ROUTE_ALL_LEAVES (one kernel call; greedy routing on early, coarse centroids strands
        memories in the wrong subtree and cost 25 points of recall in the incremental bench).
        Beyond that, batched two-stage routing: every vector scores all parents of leaves and
        keeps its ROUTE_BEAM best, then joins the nearest leaf under those (one kernel call per
        parent reached, not a Python descent per vector)."""
        leaves = self.leaves()
        if len(leaves) <= ROUTE_ALL_LEAVES:
            lab, _ = kernels.assign_nearest(vectors, self.centroids[leaves], "cosine")
            routed: np.ndarray = leaves[lab]
            return routed
        parents = np.flatnonzero(self.level[: self.n_nodes] == 2)
        near = kernels.topk(vectors, self.centroids[parents], min(ROUTE_BEAM, len(parents)), "cosine").indices
        out = np.full(len(vectors), -1, np.int64)
        best = np.full(len(vectors), -np.inf, np.float32)
        for p in unique(near):
            rows = np.flatnonzero((near == p).any(axis=1))
            ch = self.children[int(parents[p])]
            lab, sc = kernels.assign_nearest(np.ascontiguousarray(vectors[rows]), self.centroids[ch], "cosine", threads=1)
            better = sc > best[rows]
            best[rows[better]] = sc[better]
            out[rows[better]] = ch[lab[better]]
        return out

    def _split_if_full(self, leaf: int, source: VectorSource) -> None:
        """A leaf over capacity becomes two; with its nearest sibling (when there is one and
        neither is archived) the pair is re-clustered into three, which mends a leaf that had
        grown into a mix of two groups instead of cutting the mix in half."""
        if len(self.members[leaf]) <= self.leaf_cap:
            return
        parent = int(self.parent[leaf])
        pair = [leaf]
        sibs = self.children[parent]
        sibs = sibs[(sibs != leaf) & ~self.archived[sibs]]
        if len(sibs) and not self.archived[leaf]:
            # a few dozen dot products: plain numpy beats a kernel call's validation and dispatch
            c = self.centroids[sibs]
            cos = (c @ self.centroids[leaf]) / np.maximum(np.linalg.norm(c, axis=1), 1e-12)
            pair.append(int(sibs[int(np.argmax(cos))]))
        self._splits += 1
        groups: list[np.ndarray] = []
        if len(pair) == 2:
            keys = np.concatenate([self.members[n] for n in pair])
            x = np.ascontiguousarray(source.take(keys), dtype=np.float32)
            _, labels = spherical_kmeans(x, 3, iters=SPLIT_ITERS, seed=self.seed + self._splits, threads=1)
            groups = [g for g in (np.flatnonzero(labels == c) for c in range(3)) if len(g)]
            if len(groups) < 3 or max(len(g) for g in groups) > self.leaf_cap:
                groups = []  # k-means could not part them (e.g. identical rows): split the leaf alone
        if not groups:
            pair = [leaf]
            keys = self.members[leaf]
            x = np.ascontiguousarray(source.take(keys), dtype=np.float32)
            halves = two_means(x, seed=self.seed + self._splits)
            groups = [np.flatnonzero(halves == 0), np.flatnonzero(halves == 1)]
        spilled = np.concatenate([self.spill[n] for n in pair])
        for n in pair:
            self.spill[n] = np.empty(0, np.int64)
        ids = pair + [self._new_node(1, parent) for _ in range(len(groups) - len(pair))]
        for node, g in zip(ids, groups):
            self._set_leaf(node, keys[g], x[g])
            self.archived[node] = self.archived[leaf]
        self._respill(source, spilled, ids)
        for node in ids:  # a very uneven split can leave one part still full
            self._split_if_full(node, source)
        self._split_internal_if_full(int(self.parent[leaf]), source)

    def _split_internal_if_full(self, node: int, source: VectorSource) -> None:
        if len(self.children[node]) <= self.fanout_cap:
            return
        if self.level[node] == 2:
            self._recluster_leaves(node, source)
        ch = self.children[node]
        self._splits += 1
        self._csr_cache = None
        labels = two_means(self.centroids[ch], seed=self.seed + self._splits)
        if node == self.root:  # the root splits: a new root one level up
            self.height += 1
            self.root = self._new_node(self.height, NO_PARENT)
            self.parent[node] = self.root
            self.children[self.root] = np.array([node], np.int64)
        parent = int(self.parent[node])
        sib = self._new_node(int(self.level[node]), parent)
        self.children[node], self.children[sib] = ch[labels == 0], ch[labels == 1]
        self.parent[self.children[sib]] = sib
        self._refresh_internal(node)
        self._refresh_internal(sib)
        self._refresh_internal(parent)  # same memories below it; a fresh root takes them here
        for half in (node, sib):  # a very uneven split can leave one side still too wide
            self._split_internal_if_full(half, source)
        self._split_internal_if_full(int(self.parent[node]), source)

    def _recluster_leaves(self, node: int, source: VectorSource) -> None:
        """Before a parent of leaves splits, re-run k-means over all its leaves' memories.

        Leaves grown by inserts and 2-means splits drift into mixtures (each split only sees its
        own members, in arrival order); re-clustering the parent's ~fanout_cap leaves at once
        gives them batch-build quality again, at the cost of one k-means on a few thousand rows
        every ~fanout leaf splits. Archived leaves are left as they are.
        """
        leaves = self.children[node]
        if self.archived[leaves].any():
            return
        keys = np.concatenate([self.members[int(leaf)] for leaf in leaves])
        x = np.ascontiguousarray(source.take(keys), dtype=np.float32)
        k = max(len(leaves), math.ceil(len(keys) / self.leaf_size))
        self._splits += 1
        # warm start from the leaves as they are: they are a fair partition already, so a few
        # iterations settle it (a cold k-means++ start cost 2.5 of 6.5 s in 100K inserts)
        _, labels = spherical_kmeans(x, k, iters=RECLUSTER_ITERS, seed=self.seed + self._splits,
                                     init=self.centroids[leaves])
        todo = [np.flatnonzero(labels == c) for c in range(k)]
        groups = []
        while todo:  # a cluster over capacity is halved (2-means) until every leaf fits
            g = todo.pop()
            if len(g) > self.leaf_cap:
                halves = two_means(x[g], seed=self.seed + len(todo))
                todo += [g[halves == 0], g[halves == 1]]
            elif len(g):
                groups.append(g)
        groups += [np.empty(0, np.int64)] * max(0, len(leaves) - len(groups))  # k-means may merge some
        spilled = np.concatenate([self.spill[int(leaf)] for leaf in leaves])
        for leaf in leaves:
            self.spill[int(leaf)] = np.empty(0, np.int64)
        ids = list(leaves) + [self._new_node(1, node) for _ in range(len(groups) - len(leaves))]
        for leaf, g in zip(ids, groups):
            self._set_leaf(int(leaf), keys[g], x[g])
        empty = [int(leaf) for leaf in ids if self.counts[leaf] == 0]
        self._csr_cache = None
        self._respill(source, spilled, [int(i) for i in ids if self.counts[i] > 0])
        if empty:  # rare: fewer clusters than leaves; drop the empty ones from the parent
            self.children[node] = np.array([c for c in self.children[node] if int(c) not in empty], np.int64)
            for leaf in empty:
                self.parent[leaf] = NO_PARENT
                self.level[leaf] = 0  # detached: no level, never scored

    # ------------------------------------------------------------------------------ checks
    def check(self, source: VectorSource | None = None, *, atol: float = 1e-3) -> None:
        """Raise AssertionError when an invariant fails (tests call this after random operations).

        Every key in exactly one leaf; leaves at level 1 and within leaf_cap; parent/child links
        agree; counts add up; levels drop by one per edge; with `source`, every centroid is the
        mean of the vectors below it.
        """
        if self.root < 0:
            return
        assert self.level[self.root] == self.height and self.parent[self.root] == NO_PARENT
        seen: list[np.ndarray] = []
        for node in range(self.n_nodes):
            lvl = int(self.level[node])
            if lvl == 0:  # detached by a re-clustering: unreachable, holds nothing
                assert self.counts[node] == 0 and len(self.members[node]) == 0
                continue
            if node != self.root:
                p = int(self.parent[node])
                assert p >= 0 and node in self.children[p], f"node {node} is not a child of its parent {p}"
                assert self.level[p] == lvl + 1, f"node {node} at level {lvl} under level {self.level[p]}"
            if lvl == 1:
                assert len(self.children[node]) == 0
                assert self.counts[node] == len(self.members[node]), f"leaf {node} count"
                assert len(self.members[node]) <= self.leaf_cap, f"leaf {node} over capacity"
                seen.append(self.members[node])
            else:
                assert len(self.members[node]) == 0 and len(self.children[node]) >= 1
                assert len(self.children[node]) <= self.fanout_cap, f"node {node} over fanout"
                assert self.counts[node] == self.counts[self.children[node]].sum(), f"node {node} count"
        keys = np.concatenate(seen) if seen else np.empty(0, np.int64)
        assert len(unique(keys)) == len(keys), "a key is in two leaves"
        spilled = np.concatenate([self.spill[i] for i in range(self.n_nodes)]) if self.n_nodes else keys[:0]
        assert len(unique(spilled)) == len(spilled), "a key is spilled to two leaves"
        assert np.isin(spilled, keys).all(), "a spilled key is in no leaf"
        for node in range(self.n_nodes):
            assert len(self.spill[node]) == 0 or self.level[node] == 1, f"node {node} holds spilled keys"
        if source is not None:
            for nid in np.flatnonzero(self.level[: self.n_nodes] > 0):
                node = int(nid)
                below = self._keys_under(node)
                if len(below):
                    want = source.take(below).mean(axis=0, dtype=np.float64)
                    assert np.allclose(self.centroids[node], want, atol=atol), f"centroid of node {node}"

    def _keys_under(self, node: int) -> np.ndarray:
        if self.level[node] == 1:
            return self.members[node]
        parts = [self._keys_under(int(c)) for c in self.children[node]]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)


def _within_fanout(groups: list[np.ndarray], cents: np.ndarray, cap: int, seed: int) -> list[np.ndarray]:
    """Groups of a build level halved (2-means of their centroids) until none holds more than cap.

    k-means of 2,000 leaf centroids into ~70 parents left some with 120+ children; split after
    attaching, each such parent of leaves first re-clustered all its leaves' memories, then again
    for each half still too wide (80 re-clusterings, a third of a 100K build). Halving the
    centroids' groups here costs a few milliseconds."""
    out, todo = [], list(groups)
    while todo:
        g = todo.pop()
        if len(g) <= cap:
            out.append(g)
            continue
        halves = two_means(cents[g], seed=seed + len(todo))
        todo += [g[halves == 0], g[halves == 1]]
    return out

"""Searching a centroid tree (J4): top-K descent, natively, over the tree's CSR views or its
packed leaf-ordered copy; what one search scored (`SearchStats`).

Search is top-K descent, never thresholds: at each level score all children of the kept nodes
and keep the best `beam` (at the leaf level `probe`), then scan the kept leaves' memories. Both
beams are what a caller tunes against recall; `SearchStats` counts every centroid and memory
scored (the E-computations). `Descent` is the search half of `CentroidTree` (hierarchy/tree.py
holds its structure, build and inserts); it only reads the tree, except the leaves' last-access
stamps and its own caches.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import kernels
from ..kernels.sets import unique
from .source import KeyFilter, VectorSource


def now_us() -> int:
    return time.time_ns() // 1_000


@dataclass
class SearchStats:
    """What one search scored: centroids per level (top first), memories, leaves probed."""

    centroids: int = 0
    memories: int = 0
    leaves: int = 0
    per_level: tuple[int, ...] = ()

    @property
    def e_computations(self) -> int:
        """Vectors scored against the query in all (centroids + memories)."""
        return self.centroids + self.memories


class Descent:
    """The search methods of a centroid tree (see the module docstring)."""

    root: int
    height: int
    n_nodes: int
    centroids: np.ndarray
    level: np.ndarray
    last_accessed_at: np.ndarray
    children: list[np.ndarray]
    members: list[np.ndarray]
    spill: list[np.ndarray]
    _csr_cache: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None
    _packed: tuple[Any, np.ndarray, np.ndarray] | None
    _packed_mask: tuple[np.ndarray, np.ndarray] | None
    _positions: np.ndarray

    # ------------------------------------------------------------------------------ search (J4)
    def search(
        self,
        source: VectorSource,
        query: np.ndarray,
        k: int,
        *,
        probe: int = 32,
        beam: int | None = None,
        allowed: np.ndarray | KeyFilter | None = None,
    ) -> tuple[np.ndarray, np.ndarray, SearchStats]:
        """Top-k memory keys for a query by top-K descent.

        `probe`: leaves whose memories are scanned. `beam`: nodes kept per level above the leaves
        (default: enough parents to hold `probe` leaves twice over). `allowed`: a bool array indexed by
        key, or a function from the probed keys to a bool array; other keys are never scored (the
        filter runs before the scan, not on its top-k).
        """
        stats = SearchStats()
        if self.root < 0:
            return np.empty(0, np.int64), np.empty(0, np.float32), stats
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if beam is None:
            beam = max(4, math.ceil(2 * probe / max(1.0, self._mean_fanout())))
        if hasattr(source, "matrices") and not callable(allowed):
            return self._search_fused(source, q, k, probe, beam, allowed)
        frontier = np.array([self.root], np.int64)
        per_level = []
        for lvl in range(self.height - 1, 0, -1):
            cand = np.concatenate([self.children[int(n)] for n in frontier])
            keep = probe if lvl == 1 else beam
            if len(cand) > keep:  # score and keep the best; fewer than that are all kept unscored
                idx, _ = kernels.topk(q, self.centroids[: self.n_nodes], keep, "cosine", mask=cand, threads=1)
                frontier = idx
                per_level.append(len(cand))
            else:
                frontier = cand
                per_level.append(0)
        stats.per_level = tuple(per_level)
        stats.centroids = sum(per_level)
        stats.leaves = len(frontier)
        keys = unique(np.concatenate([self.members[int(leaf)] for leaf in frontier]
                                        + [self.spill[int(leaf)] for leaf in frontier])) if len(frontier) \
            else np.empty(0, np.int64)
        if len(frontier):
            self.last_accessed_at[frontier] = now_us()
        if allowed is not None and len(keys):
            keys = keys[allowed(keys) if callable(allowed) else allowed[keys]]
        stats.memories = len(keys)
        idx, sc = source.topk(q, keys, k)
        return idx, sc, stats

    def prepare(self) -> None:
        """Build the read-side views (the CSR of children and members) now, so that searches of a
        published tree only read it (index/tree_index.py calls this before publishing a version)."""
        self._csr()

    def pack(self, source: VectorSource, *, half: bool = True) -> int:
        """Keep a copy of every scanned vector (members and spilled keys) in leaf order, so a search
        reads each kept leaf as one contiguous block instead of gathering rows scattered through
        the source (on real text a probe scans ~5,000 vectors: the random reads were most of the
        latency). Costs (members + spill) x dim x 4 bytes, about twice the vectors, like an IVF or
        HNSW index's own copy. Valid until the tree changes; call again after inserts. Returns the
        bytes held.

        `half` (default): the copy is IEEE binary16, half the memory and bandwidth; the scan keeps
        4k candidates by their half-precision cosine and rescores them exactly from `source`, so
        scores are float32-exact."""
        csr = self._csr()
        rows = np.ascontiguousarray(source.take(csr[3]), dtype=np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))[:, None]
        rows /= np.where(norms > 0, norms, np.float32(1.0))  # unit rows: the scan's cosine is a dot
        if half:
            rows = np.ascontiguousarray(rows.astype(np.float16).view(np.uint16))
        self._packed = (csr, rows, csr[3])
        self._packed_mask = None
        self._positions = np.arange(len(csr[3]), dtype=np.int64)  # the packed copy's own keys
        return int(self._packed[1].nbytes)

    @property
    def packed(self) -> bool:
        """True while a `pack` copy matches the tree (it goes stale at the next change)."""
        return self._packed is not None and self._packed[0] is self._csr_cache

    def _search_packed(self, source: Any, q: np.ndarray, k: int, probe: int, beam: int,
                       allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, SearchStats]:
        """`_search_fused` over the packed copy: keys are positions in it (a leaf's block is one
        run), mapped back to memory keys after; a key scanned in both its leaves is kept once."""
        assert self._packed is not None
        (cp, ci, mp, _), packed, pos_keys = self._packed
        mask = None
        if allowed is not None:  # the filter by position, cached while the same mask array is passed
            # (the cache holds the array itself: an id alone could be reused by a new array)
            # read once: searches side by side may each put their own mask here meanwhile
            cached = self._packed_mask
            if cached is None or cached[0] is not allowed:
                cached = self._packed_mask = (allowed, np.ascontiguousarray(allowed[pos_keys], dtype=bool).view(np.uint8))
            mask = cached[1]
        positions = self._positions
        half = packed.dtype == np.uint16
        try:
            if half:  # candidates by half-precision cosine, then exact scores for the few kept
                hits = kernels.tree_search(q, self.centroids[: self.n_nodes], cp, ci, mp, positions, self.root,
                                           self.height, [], np.zeros(1, np.int64), 4 * k, beam=beam, probe=probe,
                                           allowed=mask, unit_rows=True, rows_f16=packed)
            else:  # a key may come twice
                hits = kernels.tree_search(q, self.centroids[: self.n_nodes], cp, ci, mp, positions, self.root,
                                           self.height, [packed], np.array([0, len(pos_keys)], np.int64), 2 * k,
                                           beam=beam, probe=probe, allowed=mask, unit_rows=True)
        except kernels.NonFiniteRow as e:  # a position in the packed copy: name its memory key
            raise ValueError(f"the vector of key {int(pos_keys[e.row])} contains NaN or inf") from None
        stats = self._visited(hits)
        keys, scores = pos_keys[hits.keys], hits.scores
        if half:  # exact scores of the distinct candidates decide
            uniq = unique(keys)
            if not len(uniq):
                return uniq, np.empty(0, np.float32), stats
            exact_k, exact_s = rescore(source, q, uniq, k)
            return exact_k, exact_s, stats
        seen: set[int] = set()
        keep = []
        for i, key in enumerate(keys.tolist()):  # best first already: keep each key's first copy
            if key not in seen:
                seen.add(key)
                keep.append(i)
        keep = keep[:k]
        return keys[keep], scores[keep], stats

    def _search_fused(self, source: Any, q: np.ndarray, k: int, probe: int, beam: int,
                      allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, SearchStats]:
        """The same descent in one native call (`kernels.tree_search`) over flat CSR views."""
        cp, ci, mp, mi = self._csr()
        if self.packed:
            return self._search_packed(source, q, k, probe, beam, allowed)
        mats, bases = source.matrices()
        mask = None if allowed is None else np.ascontiguousarray(allowed, dtype=bool).view(np.uint8)
        hits = kernels.tree_search(q, self.centroids[: self.n_nodes], cp, ci, mp, mi, self.root, self.height, mats,
                                   bases, k, beam=beam, probe=probe, allowed=mask)
        return hits.keys, hits.scores, self._visited(hits)

    def _visited(self, hits: kernels.TreeHits) -> SearchStats:
        """Stamp the leaves a native descent read and count its work."""
        if len(hits.kept_leaves):
            self.last_accessed_at[hits.kept_leaves] = now_us()
        return SearchStats(centroids=hits.centroids, memories=hits.memories, leaves=hits.leaves)

    def _csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(child_ptr, child_idx, member_ptr, member_idx) of the current tree, cached until it changes."""
        if self._csr_cache is None:
            n = self.n_nodes
            out = []
            scanned = [np.concatenate([m, sp]) if len(sp) else m for m, sp in zip(self.members[:n], self.spill[:n])]
            for lists in (self.children[:n], scanned):
                ptr = np.zeros(n + 1, np.int64)
                np.cumsum(np.fromiter((len(x) for x in lists), np.int64, n), out=ptr[1:])
                idx = np.concatenate(lists).astype(np.int64) if ptr[-1] else np.empty(0, np.int64)
                out += [ptr, idx]
            self._csr_cache = (out[0], out[1], out[2], out[3])
        return self._csr_cache

    def _mean_fanout(self) -> float:
        internal = self.level[: self.n_nodes] >= 2
        n_internal = int(internal.sum())
        return (self.n_nodes - 1) / n_internal if n_internal else 1.0


def rescore(source: Any, q: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-k of a few distinct keys. Sources with `matrices()` go straight to the
    gather kernel (`kernels.rescore_rows`): `topk`'s allow-list would sort the keys again (~0.15 ms)."""
    if not hasattr(source, "matrices"):
        got_k, got_s = source.topk(q, keys, k)
        return np.asarray(got_k, np.int64), np.asarray(got_s, np.float32)
    mats, bases = source.matrices()
    if len(mats) == 1:  # one matrix: one call, already best first
        got = kernels.rescore_rows(q, mats[0], keys, k, "cosine")
        return got.indices, got.scores
    seg = np.searchsorted(bases, keys, side="right") - 1
    out_k, out_s = [], []
    for si in unique(seg).tolist():
        rows = np.ascontiguousarray(keys[seg == si] - bases[si])
        try:
            got = kernels.rescore_rows(q, mats[si], rows, len(rows), "cosine")
        except kernels.NonFiniteRow as e:
            raise ValueError(f"the vector of key {int(bases[si] + e.row)} contains NaN or inf") from None
        out_k.append(got.indices + bases[si])
        out_s.append(got.scores)
    return kernels.merge_topk(out_k, out_s, k)

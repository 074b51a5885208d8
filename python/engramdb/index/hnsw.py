"""usearch HNSW as the other index kind (J): one graph per namespace and dense space.

Chosen with `engramdb.open(path, index="hnsw")` (or `search(..., strategy="hnsw")`). Keys are the
same global row numbers the trees use, so the two share upkeep: new committed rows are added at
each sync, a purge (row epoch) drops everything. usearch's Python API takes no filter, so a
search over-fetches (4k, then 16k, ...) and applies the store's filters to what comes back; the
search statistics say how many candidates were fetched. Graphs are derived files
(`index/hnsw-<space>-<n>.usearch`) listed with their size and CRC-32 in `index/hnsw-<space>.json`;
missing, corrupt or stale ones are rebuilt. Builds are slow (minutes per 100,000 vectors on two
cores), which is why the centroid tree is the default.

Unlike the trees, graphs grow in place (copying a graph per sync would cost as much as the
sync): searches hold a shared lock, a sync the exclusive one. A search whose snapshot is older
than the graph filters out the keys it does not hold.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model.tuning import Tuning
from ..storage.derived_files import DerivedFiles
from ..storage.view import View
from .rwlock import ReadWriteLock
from .segments_source import SegmentsSource, newest

log = logging.getLogger("engramdb.hnsw")
FORMAT = 1


@dataclass(frozen=True)
class HnswVersion:
    """What a search reads of the graphs: how far they reached when it looked, and the graphs."""

    epoch: int
    covered: int
    source: SegmentsSource | None
    index: HnswIndex
    namespaces: frozenset[str] = frozenset()
    recent: dict[str, np.ndarray] = field(default_factory=dict)

    def query(self, ns: str, q: np.ndarray, k: int,
              allowed: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray, dict[str, Any]] | None:
        """Top-k keys of the namespace's graph that pass `allowed`, over-fetching; None when the
        graphs are no longer of this version's row epoch (a purge dropped or rebuilt them: their
        keys number other rows), and the caller scans exactly."""
        with self.index.rw.read():
            graph = self.index.graphs.get(ns) if self.index.epoch == self.epoch else None
            if graph is None:
                return None
            size = len(graph)
            want = min(size, 4 * k)
            while True:
                m = graph.search(q, want, threads=1)
                keys = np.asarray(m.keys, np.int64)
                scores = (1.0 - np.asarray(m.distances, np.float64)).astype(np.float32)
                ok = allowed(keys) if len(keys) else np.zeros(0, bool)
                if ok.sum() >= k or want >= size:
                    return keys[ok][:k], scores[ok][:k], {"fetched": int(want), "passed_filters": int(ok.sum())}
                want = min(size, want * 4)


class HnswIndex:
    """usearch graphs of one dense space, per namespace, kept in step with committed segments."""

    kind = "hnsw"

    def __init__(self, space: str, dim: int, tuning: Tuning) -> None:
        self.space = space
        self.dim = dim
        self.tuning = tuning
        self.graphs: dict[str, Any] = {}  # namespace -> usearch.index.Index
        self.covered = 0
        self.epoch = -1
        self.source: SegmentsSource | None = None
        self.dirty = False
        self.load_state: str | None = None  # "adopted" (from its file) or why it was rebuilt; None: never loaded
        self.recent: dict[str, np.ndarray] = {}
        self.rw = ReadWriteLock()  # searches share it; a sync holds it alone
        self._lock = threading.Lock()  # one sync at a time

    def _new(self) -> Any:
        from usearch.index import Index

        return Index(ndim=self.dim, metric="cos", dtype="f32")

    def _version(self) -> HnswVersion:
        return HnswVersion(self.epoch, self.covered, self.source, self, frozenset(self.graphs), dict(self.recent))

    def sync(self, view: View, *, wait: bool = True, advance: bool = True) -> HnswVersion | None:
        """Add new committed rows to the graphs; build graphs for namespaces that crossed the
        threshold (not with `advance=False`: the version as it is, see TreeIndex.sync). None when
        the view is older than the graphs' row epoch."""
        if self.epoch > view.epoch:
            return None
        if self.epoch == view.epoch and self.covered >= view.committed_rows:
            return self._version()
        if not advance:
            return self._version() if self.epoch == view.epoch else None
        if not self._lock.acquire(blocking=wait):
            return self._version() if self.epoch == view.epoch else None
        try:
            if self.epoch == view.epoch and self.covered >= view.committed_rows:
                return self._version()
            if self.epoch > view.epoch:  # a purge came while this waited: never the purged rows back
                return None
            src = SegmentsSource(view.committed_segments, view.schema, self.space)
            with self.rw.write():
                if self.epoch != view.epoch:
                    self.graphs, self.covered, self.epoch, self.recent = {}, 0, view.epoch, {}
                new = np.arange(self.covered, src.total)
                for ns, keys in src.namespaces_of(new).items():
                    self.recent[ns] = newest(self.recent.get(ns), keys, self.tuning.hot_rows)
                    graph = self.graphs.get(ns)
                    if graph is None:
                        keys = src.keys_of(ns)
                        if len(keys) < self.tuning.tree_min_rows:  # one threshold for both kinds
                            continue
                        graph = self.graphs[ns] = self._new()
                    graph.add(keys, src.take(keys), threads=0)
                self.covered, self.source = src.total, src
                self.dirty = True
                return self._version()
        finally:
            self._lock.release()

    def drop(self, epoch: int = -1) -> None:
        """Forget every graph (the rows they index are gone); empty at row epoch `epoch`."""
        with self._lock, self.rw.write():
            self.graphs, self.covered, self.epoch, self.recent, self.source = {}, 0, epoch, {}, None
            self.dirty = False

    def mark_dirty(self) -> None:
        self.dirty = True

    # ------------------------------------------------------------------------------ files
    def _side(self) -> str:
        return f"hnsw-{self.space}.json"

    def save(self, files: DerivedFiles) -> None:
        with self._lock, self.rw.read():
            entries = {}
            for i, (ns, graph) in enumerate(sorted(self.graphs.items())):
                name = f"hnsw-{self.space}-{i}.usearch"
                entries[ns] = {"file": name, **files.write(name, graph.save())}
            files.write_sidecar(self._side(), {"format": FORMAT, "epoch": self.epoch, "covered": self.covered,
                                               "graphs": entries})
            self.dirty = False

    def load(self, files: DerivedFiles, view: View) -> bool:
        from usearch.index import Index

        meta = files.sidecar_checked(self._side(), FORMAT, view.epoch, view.committed_rows)
        reason = meta if isinstance(meta, str) else None
        if reason is None and isinstance(meta, dict):
            try:
                graphs = {}
                for ns, f in meta["graphs"].items():
                    raw = files.read(f["file"], f)
                    if isinstance(raw, str):
                        reason = raw
                        break
                    graphs[ns] = Index.restore(raw)
                if reason is None:
                    src = SegmentsSource(view.committed_segments, view.schema, self.space)
                    with self._lock, self.rw.write():
                        self.graphs, self.covered, self.epoch = graphs, int(meta["covered"]), view.epoch
                        self.source = src
                    self.load_state = "adopted"
                    return True
            except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
                reason = f"unreadable ({exc})"
        self.load_state = reason
        log.info("hnsw index for space %r: %s; rebuilding from the segments", self.space, reason)
        return False

    def describe(self) -> dict[str, Any]:
        return {ns: {"memories": len(g)} for ns, g in self.graphs.items()}

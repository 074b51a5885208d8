"""usearch HNSW as the other index kind (J): one graph per namespace and dense space.

Chosen with `engramdb.open(path, index="hnsw")` (or `search(..., strategy="hnsw")`). Keys are the
same global row numbers the trees use, so the two share upkeep: new committed rows are added at
each sync, a purge (row_epoch) drops everything. usearch's Python API takes no filter, so a
search over-fetches (4k, then 16k, ...) and applies the store's filters to what comes back; the
explain output says how many candidates were fetched. Graphs are derived files
(`index/hnsw-<space>-<n>.usearch`) listed with their size and CRC-32 in `index/hnsw-<space>.json`;
missing, corrupt or stale ones are rebuilt. Builds are slow (minutes per 100,000 vectors on two
cores), which is why the centroid tree is the default.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..spaces.schema import Schema
from . import tree_index
from .derived import fingerprint, intact, stale_reason, write_sidecar
from .segment import Segment
from .tree_index import SegmentsSource, _keys_of, _namespaces_of

log = logging.getLogger("engramdb.hnsw")
FORMAT = 1


class HnswIndex:
    """usearch graphs of one dense space, per namespace, kept in step with committed segments."""

    def __init__(self, space: str, dim: int) -> None:
        self.space = space
        self.dim = dim
        self.graphs: dict[str, Any] = {}  # namespace -> usearch.index.Index
        self.covered = 0
        self.epoch = 0
        self.dirty = False
        self.rebuilt_reason: str | None = None
        self.recent: dict[str, np.ndarray] = {}

    def _new(self) -> Any:
        from usearch.index import Index

        return Index(ndim=self.dim, metric="cos", dtype="f32")

    def sync(self, segments: list[Segment], schema: Schema, epoch: int) -> SegmentsSource:
        """Add new committed rows to the graphs; build graphs for namespaces that crossed the threshold."""
        src = SegmentsSource(segments, schema, self.space)
        if epoch != self.epoch or self.covered > src.total:
            self.graphs, self.covered, self.epoch = {}, 0, epoch
        if self.covered == src.total:
            return src
        new = np.arange(self.covered, src.total)
        for ns, keys in _namespaces_of(segments, src, new).items():
            self.recent[ns] = np.concatenate([self.recent.get(ns, np.empty(0, np.int64)), keys])[-tree_index.HOT_ROWS:]
            graph = self.graphs.get(ns)
            if graph is None:
                keys = _keys_of(segments, src, ns)
                if len(keys) < tree_index.TREE_MIN_ROWS:  # read at call time: one threshold for both kinds
                    continue
                graph = self.graphs[ns] = self._new()
            graph.add(keys, src.take(keys), threads=0)
        self.covered = src.total
        self.dirty = True
        return src

    def query(self, ns: str, q: np.ndarray, k: int, allowed: Any) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Top-k keys of the namespace's graph that pass `allowed` (keys -> bool), over-fetching."""
        graph = self.graphs[ns]
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

    # ------------------------------------------------------------------------------ files
    def _side(self, folder: Path) -> Path:
        return folder / "index" / f"hnsw-{self.space}.json"

    def save(self, folder: Path) -> None:
        (folder / "index").mkdir(exist_ok=True)
        files = {}
        for i, (ns, graph) in enumerate(sorted(self.graphs.items())):
            name = f"hnsw-{self.space}-{i}.usearch"
            tmp = folder / "index" / (name + ".tmp")
            graph.save(str(tmp))
            os.replace(tmp, folder / "index" / name)
            files[ns] = {"file": name, **fingerprint((folder / "index" / name).read_bytes())}
        write_sidecar(self._side(folder), {"format": FORMAT, "epoch": self.epoch, "covered": self.covered,
                                           "graphs": files})
        self.dirty = False

    def load(self, folder: Path, epoch: int, committed: int) -> bool:
        from usearch.index import Index

        reason = None
        try:
            meta = json.loads(self._side(folder).read_text())
            reason = stale_reason(meta, FORMAT, epoch, committed)
            if reason is None:
                graphs = {}
                for ns, f in meta["graphs"].items():
                    raw = (folder / "index" / f["file"]).read_bytes()
                    if not intact(raw, f):
                        reason = f"corrupt ({f['file']}: size or CRC-32 mismatch)"
                        break
                    graphs[ns] = Index.restore(raw)
                if reason is None:
                    self.graphs, self.covered, self.epoch = graphs, int(meta["covered"]), epoch
                    return True
        except FileNotFoundError:
            reason = "missing"
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            reason = f"unreadable ({exc})"
        self.rebuilt_reason = reason
        log.info("hnsw index for space %r: %s; rebuilding from the segments", self.space, reason)
        return False

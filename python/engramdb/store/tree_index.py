"""The store's centroid trees (J): one per namespace and dense space, over committed rows.

Keys are global row numbers across the committed segment files, in manifest order. They stay
valid when a checkpoint appends a file and when compaction concatenates files (same order); only
a purge renumbers rows, and it bumps the manifest's `row_epoch`. A tree is derived data: saved
as `index/tree-<space>.arrow` with a sidecar `index/tree-<space>.json` (format, epoch, rows
covered, size and CRC-32 of the file); a missing, corrupt or stale file is rebuilt from the
segments and never trusted. Namespaces below `TREE_MIN_ROWS` get no tree: exact scan is faster.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import kernels
from ..hierarchy.persist import TREE_FORMAT, table_to_trees, trees_to_table
from ..hierarchy.tree import CentroidTree
from ..spaces.schema import Schema
from .derived import fingerprint, read_checked, write_sidecar
from .segment import Segment, write_segment

log = logging.getLogger("engramdb.tree")

TREE_MIN_ROWS = 20_000  # a namespace's trees start here (bench/test_bench_hierarchy.py: below it exact wins)
LEAF_SIZE = 64
FANOUT = 32
PROBE = 8  # leaves scanned per query and nodes kept per level: see bench/RESULTS.md (hierarchy)
BEAM = 16
REBUILD_GROWTH = 2.0  # a tree grown to this multiple of its last batch build is rebuilt
HOT_ROWS = 100  # the newest keys of each namespace, scanned directly on every tree search (J5)


class SegmentsSource:
    """Vectors of one dense space by global key, over the committed segments."""

    def __init__(self, segments: list[Segment], schema: Schema, space: str) -> None:
        self.mats = [np.asarray(s.vectors(schema, space)) for s in segments]
        self.bases = np.zeros(len(segments) + 1, np.int64)
        np.cumsum([len(s) for s in segments], out=self.bases[1:])

    def matrices(self) -> tuple[list[np.ndarray], np.ndarray]:
        """The segments' matrices and where each starts in key space (for the native descent)."""
        return [np.ascontiguousarray(m, dtype=np.float32) for m in self.mats], self.bases

    @property
    def total(self) -> int:
        return int(self.bases[-1])

    def locate(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(segment index, row) of each key."""
        seg = np.searchsorted(self.bases, keys, side="right") - 1
        return seg, keys - self.bases[seg]

    def take(self, keys: np.ndarray) -> np.ndarray:
        seg, row = self.locate(np.asarray(keys, np.int64))
        out = np.empty((len(keys), self.mats[0].shape[1] if self.mats else 0), np.float32)
        for s in np.unique(seg):
            sel = seg == s
            out[sel] = self.mats[int(s)][row[sel]]
        return out

    def topk(self, query: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        seg, row = self.locate(np.asarray(keys, np.int64))
        found_k, found_s = [], []
        for s in np.unique(seg):
            idx, sc = kernels.topk(query, self.mats[int(s)], k, "cosine", mask=row[seg == s], threads=1)
            found_k.append(idx + self.bases[int(s)])
            found_s.append(sc)
        return kernels.merge_topk(found_k, found_s, k)


class TreeIndex:
    """The trees of one dense space, kept in step with the committed segments."""

    def __init__(self, space: str, dim: int) -> None:
        self.space = space
        self.dim = dim
        self.trees: dict[str, CentroidTree] = {}
        self.covered = 0  # committed rows already in (or deliberately not in) a tree
        self.epoch = 0
        self.dirty = False
        self.rebuilt_reason: str | None = None  # why the last load fell back to a rebuild
        self.recent: dict[str, np.ndarray] = {}  # namespace -> its newest HOT_ROWS keys
        self.built: dict[str, int] = {}  # namespace -> memories its tree held when last batch-built

    # ------------------------------------------------------------------------------ upkeep
    def sync(self, segments: list[Segment], schema: Schema, epoch: int) -> SegmentsSource:
        """Bring every tree up to the committed rows: insert new keys, build trees for namespaces
        that crossed TREE_MIN_ROWS. Returns the vector source the trees read."""
        src = SegmentsSource(segments, schema, self.space)
        if epoch != self.epoch or self.covered > src.total:
            self.trees, self.covered, self.epoch, self.built = {}, 0, epoch, {}
        if self.covered == src.total:
            return src
        new = np.arange(self.covered, src.total)
        by_ns = _namespaces_of(segments, src, new)
        for ns, keys in by_ns.items():
            self.recent[ns] = np.concatenate([self.recent.get(ns, np.empty(0, np.int64)), keys])[-HOT_ROWS:]
            tree = self.trees.get(ns)
            if tree is not None and len(tree) + len(keys) <= REBUILD_GROWTH * self.built.get(ns, 0):
                tree.insert(src, keys, src.take(keys))
                continue
            # new, or grown past REBUILD_GROWTH x its last build: a batch build (inserted trees
            # drift from batch quality on real text; rebuilding at each doubling bounds that at
            # an amortised ~2 build-costs per memory)
            all_keys = _keys_of(segments, src, ns)
            if len(all_keys) >= TREE_MIN_ROWS:
                self.trees[ns] = CentroidTree.build(src, all_keys, leaf_size=LEAF_SIZE, fanout=FANOUT)
                self.built[ns] = len(all_keys)
        self.covered = src.total
        self.dirty = True
        return src

    # ------------------------------------------------------------------------------ files
    def paths(self, folder: Path) -> tuple[Path, Path]:
        return folder / "index" / f"tree-{self.space}.arrow", folder / "index" / f"tree-{self.space}.json"

    def save(self, folder: Path) -> None:
        """Write the trees and their sidecar (atomically, file first)."""
        data, side = self.paths(folder)
        data.parent.mkdir(exist_ok=True)
        write_segment(data, trees_to_table(self.trees, self.dim))
        meta = {"format": TREE_FORMAT, "epoch": self.epoch, "covered": self.covered, "built": self.built,
                **fingerprint(data.read_bytes())}
        write_sidecar(side, meta)
        self.dirty = False

    def load(self, folder: Path, epoch: int, committed: int) -> bool:
        """Adopt saved trees when they are whole and match this store; else say why and keep none."""
        data, side = self.paths(folder)
        got = read_checked(data, side, TREE_FORMAT, epoch, committed)
        reason = got if isinstance(got, str) else None
        if not isinstance(got, str):
            raw, meta = got
            try:
                self.trees = table_to_trees(pa.ipc.open_file(pa.py_buffer(raw)).read_all())
                self.built = {ns: int(meta.get("built", {}).get(ns, len(t))) for ns, t in self.trees.items()}
                self.covered, self.epoch = int(meta["covered"]), epoch
                return True
            except (ValueError, KeyError, pa.ArrowException) as exc:
                reason = f"unreadable ({exc})"
        self.rebuilt_reason = reason
        log.info("tree index %s for space %r: %s; rebuilding from the segments", data.name, self.space, reason)
        return False


def _namespaces_of(segments: list[Segment], src: SegmentsSource, keys: np.ndarray) -> dict[str, np.ndarray]:
    seg, row = src.locate(keys)
    out: dict[str, list[np.ndarray]] = {}
    for s in np.unique(seg):
        sel = seg == s
        sg = segments[int(s)]
        codes = sg.ns_index[row[sel]]
        for code in np.unique(codes):
            out.setdefault(sg.ns_names[int(code)], []).append(keys[sel][codes == code])
    return {ns: np.concatenate(parts) for ns, parts in out.items()}


def _keys_of(segments: list[Segment], src: SegmentsSource, ns: str) -> np.ndarray:
    parts = []
    for i, sg in enumerate(segments):
        code = sg.ns_codes.get(ns)
        if code is not None:
            parts.append(np.flatnonzero(sg.ns_index == code) + src.bases[i])
    return np.concatenate(parts) if parts else np.empty(0, np.int64)

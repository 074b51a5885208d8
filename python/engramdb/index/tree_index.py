"""The store's centroid trees (J): one per namespace and dense space, over committed rows.

Keys are global row numbers across the committed segment files, in manifest order. They stay
valid when a checkpoint appends a file and when compaction concatenates files (same order); only
a purge renumbers rows, and it bumps the row epoch. A tree is derived data: saved as
`index/tree-<space>.arrow` with a sidecar `index/tree-<space>.json` (format, epoch, rows covered,
size and CRC-32 of the file); a missing, corrupt or stale file is rebuilt from the segments and
never trusted. Namespaces below `Tuning.tree_min_rows` get no tree: exact scan is faster.

Versions: searches read a `TreeVersion`, which never changes once published (its source and its
trees; only the leaves' last-access stamps and archived marks are set in place, flags nothing
reads to decide a result). A sync copies the trees it inserts into (`CentroidTree.copy`) and
publishes a new version, so a search never waits for the writer and never sees a half-done insert.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..hierarchy.persist import TREE_FORMAT, table_to_trees, trees_to_table
from ..hierarchy.tree import CentroidTree
from ..model.tuning import Tuning
from ..storage.derived_files import DerivedFiles, bytes_table, table_bytes
from ..storage.view import View
from .segments_source import SegmentsSource, newest

log = logging.getLogger("engramdb.tree")


@dataclass(frozen=True)
class TreeVersion:
    """The trees of one space as of `covered` committed keys (immutable once published)."""

    epoch: int
    covered: int  # committed keys [0, covered) are in a tree, or in a namespace too small for one
    source: SegmentsSource | None  # the vectors the trees read (covers every key they hold)
    trees: Mapping[str, CentroidTree] = field(default_factory=dict)
    built: Mapping[str, int] = field(default_factory=dict)  # namespace -> memories at its last batch build
    recent: Mapping[str, np.ndarray] = field(default_factory=dict)  # namespace -> its newest keys (J5)


class TreeIndex:
    """The trees of one dense space, kept in step with the committed segments."""

    kind = "tree"

    def __init__(self, space: str, dim: int, tuning: Tuning, *, pack: bool = False) -> None:
        self.space = space
        self.dim = dim
        self.tuning = tuning
        self.pack = pack  # keep each tree's leaf-ordered half-precision copy (index="tree-packed")
        self.current = TreeVersion(epoch=-1, covered=0, source=None)
        self.dirty = False
        self.load_state: str | None = None  # "adopted" (from its file) or why it was rebuilt; None: never loaded
        self._lock = threading.Lock()  # one sync at a time; searches never take it
        self._save_lock = threading.Lock()  # one save at a time

    # ------------------------------------------------------------------------------ upkeep
    def sync(self, view: View, *, wait: bool = True, advance: bool = True) -> TreeVersion | None:
        """A version covering the view's committed rows: the current one when it does, else a
        new one (inserting the new keys, building trees for namespaces that crossed
        `tree_min_rows`). With `wait=False` a sync already running elsewhere is not waited for:
        the current version comes back (the caller scans the keys it lacks exactly); with
        `advance=False` nothing is inserted or built here (a search whose store has a
        background worker for that). None when the view is older than the index's row epoch (a
        purge came between), or newer and not advanced to."""
        v = self.current
        if v.epoch == view.epoch and v.covered >= view.committed_rows:
            return v
        if v.epoch > view.epoch:
            return None
        if not advance:
            return v if v.epoch == view.epoch else None
        if not self._lock.acquire(blocking=wait):
            return v if v.epoch == view.epoch else None
        try:
            v = self.current
            if v.epoch == view.epoch and v.covered >= view.committed_rows:
                return v
            if v.epoch > view.epoch:  # a purge came while this waited: never the purged rows back
                return None
            self.current = self._advanced(v, view)
            self.dirty = True
            return self.current
        finally:
            self._lock.release()

    def _advanced(self, v: TreeVersion, view: View) -> TreeVersion:
        t = self.tuning
        src = SegmentsSource(view.committed_segments, view.schema, self.space)
        if v.epoch != view.epoch:
            v = TreeVersion(epoch=view.epoch, covered=0, source=None)
        trees, built, recent = dict(v.trees), dict(v.built), dict(v.recent)
        new = np.arange(v.covered, src.total)
        for ns, keys in src.namespaces_of(new).items():
            recent[ns] = newest(recent.get(ns), keys, t.hot_rows)
            tree = trees.get(ns)
            if tree is not None and len(tree) + len(keys) <= t.tree_rebuild_growth * built.get(ns, 0):
                tree = tree.copy()  # the published tree keeps answering while this one changes
                tree.insert(src, keys, src.take(keys))
                trees[ns] = tree
                continue
            # new, or grown past tree_rebuild_growth x its last build: a batch build (inserted
            # trees drift from batch quality on real text; rebuilding at each doubling bounds
            # that at an amortised ~2 build-costs per memory)
            all_keys = src.keys_of(ns)
            if len(all_keys) >= t.tree_min_rows:
                trees[ns] = CentroidTree.build(src, all_keys, leaf_size=t.tree_leaf_size, fanout=t.tree_fanout)
                built[ns] = len(all_keys)
        for ns, tree in trees.items():
            if tree is v.trees.get(ns):
                continue  # published already, ready as it is
            if self.pack and not tree.packed:  # after a build or an insert: copy once, before publishing
                tree.pack(src)
            tree.prepare()
        return TreeVersion(epoch=view.epoch, covered=src.total, source=src, trees=trees, built=built,
                           recent=recent)

    def drop(self, epoch: int = -1) -> None:
        """Forget every tree (the rows they index are gone); empty at row epoch `epoch`."""
        with self._lock:
            self.current = TreeVersion(epoch=epoch, covered=0, source=None)
            self.dirty = False

    def mark_dirty(self) -> None:
        """The trees changed in place (archived marks): save them at the next save."""
        self.dirty = True

    # ------------------------------------------------------------------------------ files
    def names(self) -> tuple[str, str]:
        return f"tree-{self.space}.arrow", f"tree-{self.space}.json"

    def save(self, files: DerivedFiles) -> None:
        """Write the trees and their sidecar (atomically, file first)."""
        # its own lock: a version never changes, so searches and syncs go on while it is written
        with self._save_lock:
            v = self.current
            data, side = self.names()
            entry = files.write(data, table_bytes(trees_to_table(dict(v.trees), self.dim)))
            files.write_sidecar(side, {"format": TREE_FORMAT, "epoch": v.epoch, "covered": v.covered,
                                       "built": dict(v.built), **entry})
            self.dirty = self.current is not v  # a sync published a newer one meanwhile

    def load(self, files: DerivedFiles, view: View) -> bool:
        """Adopt saved trees when they are whole and match this store; else say why and keep none."""
        data, side = self.names()
        got = files.read_checked(data, side, TREE_FORMAT, view.epoch, view.committed_rows)
        reason = got if isinstance(got, str) else None
        if not isinstance(got, str):
            raw, meta = got
            try:
                covered = int(meta["covered"])
                trees = table_to_trees(bytes_table(raw), keys=covered)  # no key past the rows covered
                built = {ns: int(meta.get("built", {}).get(ns, len(tr))) for ns, tr in trees.items()}
                src = SegmentsSource(view.committed_segments, view.schema, self.space)
                for tree in trees.values():
                    if self.pack:
                        tree.pack(src)
                    tree.prepare()  # searches of a published tree only read it
                with self._lock:
                    self.current = TreeVersion(epoch=view.epoch, covered=covered, source=src, trees=trees,
                                               built=built)
                self.load_state = "adopted"
                return True
            except (ValueError, KeyError, TypeError) as exc:
                reason = f"unreadable ({exc})"
            except Exception as exc:  # noqa: BLE001 - pyarrow's errors: a derived file is never trusted
                reason = f"unreadable ({type(exc).__name__}: {exc})"
        self.load_state = reason
        log.info("tree index %s for space %r: %s; rebuilding from the segments", data, self.space, reason)
        return False

    def describe(self) -> dict[str, Any]:
        """Per namespace: levels, nodes per level, memories, memories at its last batch build
        (a tree is rebuilt whole when it has grown past `tree_rebuild_growth` x that), packed."""
        v = self.current
        return {ns: {"levels": t.height, "nodes_per_level": t.nodes_per_level(), "memories": len(t),
                     "built": int(v.built.get(ns, len(t))), "packed": t.packed}
                for ns, t in v.trees.items()}

    # ------------------------------------------------------------------------------ archival, recall
    def old_leaves(self, view: View, old: set[str], archived: set[str], namespace: str | None
                   ) -> tuple[set[str], list[tuple[CentroidTree, int]], set[str]]:
        """Whole leaves whose every memory is old (or archived already): (their old ids, the
        (tree, leaf) pairs, the namespaces that have a tree). Archival moves whole leaves (J7)."""
        v = self.sync(view)
        assert v is not None
        src = SegmentsSource(view.committed_segments, view.schema, self.space)
        chosen: set[str] = set()
        leaves: list[tuple[CentroidTree, int]] = []
        treed: set[str] = set()
        for ns, tree in v.trees.items():
            if namespace is not None and ns != namespace:
                continue
            treed.add(ns)
            for leaf in tree.leaves():
                seg_of, row = src.locate(tree.members[int(leaf)])
                ids = set(view.ids_at(zip(seg_of.tolist(), row.tolist())))
                if ids and all(i in old or i in archived for i in ids):  # the whole leaf is old
                    chosen |= ids & old
                    leaves.append((tree, int(leaf)))
        return chosen, leaves, treed

    def set_archived(self, leaves: list[tuple[CentroidTree, int]] | None) -> None:
        """Mark these leaves archived, or (None) clear every mark (leaves are archived only while
        all they hold is). Marks are saved with the trees; searches do not read them."""
        if leaves is None:
            for tree in self.current.trees.values():
                tree.archived[: tree.n_nodes] = False
        else:
            for tree, leaf in leaves:
                tree.archived[leaf] = True
        self.dirty = True

    def recall(self, view: View, namespace: str, *, sample: int, k: int) -> float:
        """Recall@k of the namespace's tree against exact search, on `sample` of its own vectors
        used as queries (J6). NaN when the namespace has no tree."""
        v = self.sync(view)
        tree = v.trees.get(namespace) if v is not None else None
        if tree is None:
            return float("nan")
        src = SegmentsSource(view.committed_segments, view.schema, self.space)
        keys = np.sort(np.concatenate([tree.members[int(x)] for x in tree.leaves()]))
        rng = np.random.default_rng(0)
        qs = src.take(rng.choice(keys, min(sample, len(keys)), replace=False))
        hit = 0
        for q in qs:
            want, _ = src.topk(q, keys, k)
            got, _, _ = tree.search(src, q, k, probe=self.tuning.tree_probe, beam=self.tuning.tree_beam)
            hit += len(set(want.tolist()) & set(got.tolist()))
        return hit / (k * len(qs))

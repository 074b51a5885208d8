"""The derived indexes of one store, made (and loaded from their files) on first use."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from ..model.tuning import Tuning
from ..spaces.forking import members
from ..spaces.protocol import Embedder
from ..spaces.query import lexical_space
from ..spaces.schema import Space
from ..storage.derived_files import DerivedFiles
from ..storage.renumbering import Renumbering
from ..storage.view import View
from .derived_index import DerivedIndex
from .hnsw import HnswIndex, HnswVersion
from .lexical_index import StoreBm25, text_bytes
from .passage_vectors import StorePassages
from .tree_index import TreeIndex, TreeVersion
from .turns import TurnMaps

INDEX_KINDS = ("tree", "tree-packed", "hnsw", "none")
LEXICAL_LAG = 2_048  # rows a saved BM25 file may lack at a writer's close before the close rewrites it
LEXICAL_LAG_BYTES = 256 * 1024  # and bytes of their content (a reader indexes ~256 KB in ~10 ms)
_LIVE: weakref.WeakSet[Indexes] = weakref.WeakSet()  # every store's indexes in this process
_HELD: list[Any] = []  # the locks a fork holds from just before it until just after


def _before_fork() -> None:
    """A fork waits until no thread is inside an index's sync, load or turn map (a writer's
    background worker syncs BM25 and builds trees): a child forked meanwhile inherited that lock
    held, by a thread it does not have, and its first search waited for it for ever."""
    for indexes in members(_LIVE):
        for lock in indexes._locks.values():  # first: no index is made meanwhile, so the list below is whole
            lock.acquire()
            _HELD.append(lock)
        for lock in indexes.fork_locks():
            lock.acquire()
            _HELD.append(lock)


def _after_fork() -> None:
    while _HELD:
        _HELD.pop().release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)


class Indexes:
    """Per dense space a tree or HNSW index and its passage vectors, per lexical space BM25, and
    the turn maps."""

    def __init__(self, files: DerivedFiles, tuning: Tuning, kind: str,
                 embedders: Mapping[str, Embedder] | None = None, *, reader: bool = False) -> None:
        if kind not in INDEX_KINDS:
            raise ValueError(f"index must be 'tree', 'tree-packed', 'hnsw' or 'none', got {kind!r}")
        self.files = files
        self.tuning = tuning
        # a read-only store: it cannot save an index, so one it built would be built again by each
        # reader (a tree over 100,000 memories: 4-10 s, on every hook process's first search)
        self.reader = reader
        self.embedders = dict(embedders or {})  # what analyses long memories' passages
        # "tree-packed": trees that keep their own leaf-ordered half-precision copy of the vectors
        # (about the dense space's size again, like HNSW's copy) and scan contiguous blocks
        self.pack = kind == "tree-packed"
        self.kind = "tree" if self.pack else kind  # what searches a large namespace by default
        self._trees: dict[str, TreeIndex] = {}
        self._graphs: dict[str, HnswIndex] = {}
        self._bm25: dict[str, StoreBm25] = {}
        self._passages: dict[str, StorePassages] = {}
        self.turns = TurnMaps()
        # one lock per kind makes (and loads) each index once: a first request that loads BM25
        # while the open's warm job loads a tree no longer waits for the tree before its own BM25
        # (8-16 ms of a first context at 100,000 memories, issue 26); no load takes another kind's
        self._locks = {kind: threading.Lock() for kind in ("tree", "hnsw", "bm25", "passages")}
        # a writer's background worker (store/background.py): `ask(key, job)`, and the newest
        # snapshot for its jobs; None: indexes advance on the caller's thread
        self.ask: Callable[[str, Callable[[], Any]], None] | None = None
        self.view_now: Callable[[], View] | None = None
        _LIVE.add(self)

    def fork_locks(self) -> list[Any]:
        """The locks a fork holds across it besides this registry's own (taken first: one is held
        while an index of its kind is made and loaded, which takes the index's), see
        `_before_fork`: each index's sync lock, then the turn maps'. A fork waits for a tree build
        under way."""
        found = [getattr(ix, "_lock", None) for ix in self.loaded()]
        return [*[lock for lock in found if lock is not None], self.turns.lock]

    def tree(self, space: Space, view: View) -> TreeIndex:
        """The centroid trees of a dense space."""
        ix = self._trees.get(space.name)
        if ix is None:
            with self._locks["tree"]:
                ix = self._trees.get(space.name)
                if ix is None:
                    ix = TreeIndex(space.name, space.dim, self.tuning, pack=self.pack)
                    self._load(ix, view)
                    self._trees[space.name] = ix
        return ix

    def graph(self, space: Space, view: View) -> HnswIndex:
        """The HNSW graphs of a dense space."""
        ix = self._graphs.get(space.name)
        if ix is None:
            with self._locks["hnsw"]:
                ix = self._graphs.get(space.name)
                if ix is None:
                    ix = HnswIndex(space.name, space.dim, self.tuning)
                    self._load(ix, view)
                    self._graphs[space.name] = ix
        return ix

    def dense(self, space: Space, view: View, kind: str | None = None) -> TreeIndex | HnswIndex:
        """The dense index of a space: `kind` ("tree" or "hnsw"), or the store's own."""
        return self.graph(space, view) if (kind or self.kind) == "hnsw" else self.tree(space, view)

    def dense_version(self, space: Space, view: View, kind: str | None = None) -> TreeVersion | HnswVersion | None:
        """The dense index version a search of `view` reads. With a background worker (`ask`), the
        search never inserts or builds (the first search after a namespace crossed
        `tree_min_rows` would build its tree: a second at 20,000 memories): it reads the version
        there is and asks the worker to advance it (the search scans the rows it lacks exactly)."""
        ix = self.dense(space, view, kind)
        if self.ask is None or self.view_now is None:
            # a read-only store searches what the saved index covers and scans the rest exactly
            # (as a writer's search does while its worker builds); others advance it here
            return ix.sync(view, wait=False, advance=not self.reader)
        v = ix.sync(view, wait=False, advance=False)
        if view.committed_rows > (v.covered if v is not None else 0):  # something for the worker to index
            now = self.view_now
            self.ask(f"index:{ix.kind}:{space.name}", lambda: ix.sync(now()))
        return v

    def bm25(self, space: Space, view: View) -> StoreBm25:
        """The BM25 indexes of a lexical space."""
        ix = self._bm25.get(space.name)
        if ix is None:
            with self._locks["bm25"]:
                ix = self._bm25.get(space.name)
                if ix is None:
                    ix = StoreBm25(space.name, embedder=self.embedders.get(space.name))
                    self._load(ix, view)
                    self._bm25[space.name] = ix
        return ix

    def passages(self, space: Space, view: View) -> StorePassages | None:
        """The passage vectors of a dense space (C7); None without an embedder for it (the
        caller gives that space's vectors itself, so its passages cannot be embedded)."""
        ix = self._passages.get(space.name)
        if ix is None:
            emb = self.embedders.get(space.name)
            if emb is None or space.kind != "dense":
                return None
            with self._locks["passages"]:
                ix = self._passages.get(space.name)
                if ix is None:
                    ix = StorePassages(space.name, space.dim, emb)
                    self._load(ix, view)
                    self._passages[space.name] = ix
        return ix

    def _load(self, ix: DerivedIndex, view: View) -> None:
        if self.files.dir is not None:
            ix.load(self.files, view)

    def pin(self, view: View) -> None:
        """Keep in the snapshot the dense index versions that cover it now (what a search of it
        would pin at first use), so a snapshot taken before a write searches the trees of then."""
        group: dict[str, TreeIndex] | dict[str, HnswIndex]
        for kind, group in (("tree", self._trees), ("hnsw", self._graphs)):
            for name, ix in group.items():
                v = ix.sync(view, wait=False, advance=self.ask is None)  # never a build here
                if v is not None and v.covered >= view.committed_rows:
                    view.derived.setdefault(f"index:{kind}:{name}", v)

    def loaded(self) -> list[DerivedIndex]:
        """Every index made so far."""
        return [*self._trees.values(), *self._graphs.values(), *self._bm25.values(), *self._passages.values()]

    def sync(self, view: View, *, closing: bool = False) -> list[TreeIndex | HnswIndex | StoreBm25 | StorePassages]:
        """Bring the indexes made so far up to the view's committed rows, in memory (no file);
        returns them. BM25 and the passages only when every segment is a file (their keys span
        every segment). `closing` (a writer's close): no tree or graph built from nothing once the
        rows are enough for one (`_from_nothing`)."""
        dense: list[TreeIndex | HnswIndex] = [*self._trees.values(), *self._graphs.values()]
        synced: list[TreeIndex | HnswIndex | StoreBm25 | StorePassages] = [
            ix for ix in dense if not (closing and self._from_nothing(ix, view))]
        if view.committed == len(view.segments):
            synced += [*self._bm25.values(), *self._passages.values()]
        for ix in synced:
            ix.sync(view)
        return synced

    def save(self, view: View, *, closing: bool = False) -> None:
        """Bring the indexes made so far up to the view's committed rows and write the changed
        ones (the writer, after a checkpoint and on close). `closing` (a writer's close): the
        lexical space's BM25 too, made here if no search made it (`_lexical_made`), and a BM25
        file close enough to the rows left as it is (`_lexical_close_enough`)."""
        if not self.files.writable:
            return
        if closing:
            self._lexical_made(view)
        for ix in self.sync(view, closing=closing):
            if ix.dirty and not (closing and isinstance(ix, StoreBm25) and self._lexical_close_enough(ix, view)):
                ix.save(self.files)

    def _lexical_close_enough(self, ix: StoreBm25, view: View) -> bool:
        """Whether a BM25 file lacks at most LEXICAL_LAG of the view's committed rows, holding at most
        LEXICAL_LAG_BYTES of content (2,000 rows of 2,500 words took a reader 2.8 s), and can be used:
        a short writer's close (a command that adds a few memories, whose open's warm job loaded the
        index) would otherwise rewrite the whole file (20 MB and 0.13-0.24 s at 100,000 memories)
        for rows a reader indexes in memory in a few milliseconds (~4 a thousand). Never for an index
        this process rebuilt because its file could not be used (a byte flipped in place: the size
        and the sidecar look right)."""
        if ix.load_state not in (None, "adopted"):
            return False
        behind = ix.saved_behind(self.files, view)
        return behind is not None and behind <= LEXICAL_LAG and \
            text_bytes(view, view.committed_rows - behind) <= LEXICAL_LAG_BYTES

    def _from_nothing(self, ix: TreeIndex | HnswIndex, view: View) -> bool:
        """Whether bringing a dense index up to `view` would build it from nothing (none loaded from a
        current file, none built here since, or all dropped by a purge) over at least
        `tree_min_rows` rows. A close does not: at 100,000 memories that is a tree build of 5 s (10-12
        beside other work), which a close after a purge, or any writer opened and closed on a store
        whose tree file was missing, waited for. The next writer's worker builds it when a search
        asks (`dense_version`), `db.admin.build_index()` builds it at once, and a reader meanwhile
        scans exactly what no index covers (at 100,000 memories, default profile: a default search 3 ms,
        a dense-only one 9 ms against 1.4 with a tree)."""
        if view.committed_rows < self.tuning.tree_min_rows:
            return False
        got = ix.sync(view, wait=False, advance=False)
        return got is None or got.covered == 0  # none, or one a purge left empty (`drop`)

    def _lexical_made(self, view: View) -> None:
        """The lexical space's BM25 made (so `save` brings it up to the committed rows and writes
        it) when no search made it in this process and its file does not cover those rows. Why: a
        writer that only added (a bulk import, a hook's take-in) saved none, its worker's job having
        been dropped by the close, and then every reader indexed the namespace in memory at its
        first search: 375 ms at 100,000 memories in each hook process, where PreToolUse's budget is
        500 ms. A file close enough to the rows is left as it is (`_lexical_close_enough`). The trees
        are left to a writer's worker: a reader scans exactly what they lack."""
        space = lexical_space(view.schema, self.embedders)
        if space is None or space.name in self._bm25 or not view.committed_rows or view.committed != len(view.segments):
            return
        if not self._lexical_close_enough(StoreBm25(space.name), view):
            self.bm25(space, view)

    def drop(self, renumbered: Renumbering) -> None:
        """Forget every index (after a purge renumbered the rows; their files are gone), empty at
        the new row epoch, but for the passage vectors and BM25 indexes of the rows kept, carried
        over where they can be (`renumbered`: where each row went; a rebuild analyses or embeds
        every text again). The trees and graphs are rebuilt by a worker; a search scans exactly
        meanwhile."""
        for ix in self.loaded():
            if isinstance(ix, (StorePassages, StoreBm25)) and ix.renumber(renumbered):
                continue
            ix.drop(renumbered.new_epoch)
        self.turns.drop()

    def text_changed(self, view: View) -> None:
        """Rows' text changed in place (archived, or brought back): the indexes made from the text
        (BM25, which reads a long memory's passages from it, and the passage vectors) no longer
        match the segments, and a purge would carry them over as they are. Dropped, their files
        deleted; a search or a writer's close makes them again."""
        text: list[StoreBm25 | StorePassages] = [*self._bm25.values(), *self._passages.values()]
        for ix in text:
            ix.drop(view.epoch)
        if self.files.writable:
            self.files.clear(("bm25-", "passages-"))

    def describe(self) -> dict[str, Any]:
        """What `Store.stats` reports of the indexes made so far."""
        files = {f"{kind}-{name}": ix.load_state
                 for kind, group in (("tree", self._trees), ("hnsw", self._graphs), ("bm25", self._bm25),
                                     ("passages", self._passages))
                 for name, ix in group.items() if ix.load_state is not None}
        return {"trees": {name: ix.describe() for name, ix in self._trees.items()},
                "hnsw": {name: ix.describe() for name, ix in self._graphs.items()},
                "bm25": {name: ix.describe() for name, ix in self._bm25.items()},
                "passages": {name: ix.describe() for name, ix in self._passages.items()},
                "index_files": files}

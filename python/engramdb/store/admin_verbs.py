"""`db.admin`: what an operator runs rather than an agent: checkpoints, compaction, indexes,
backups, export and import, snapshots, the background worker, the dashboard's figures, edge
inference and the index checks."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..graph import inference
from ..graph.heuristic import MIN_CONFIDENCE, InferenceReport, Inferrer
from ..ingest.embedding import vectors_for
from ..ingest.intake import content_bytes
from ..model import checks
from ..model.errors import InvalidMemory, StoreError
from ..model.hit import Hits
from ..spaces.protocol import Embedding
from ..spaces.query import lexical_space
from ..storage import rewrites, transfer
from ..storage.backup import backup as storage_backup
from ..storage.columns import memories_to_table
from .reads import Snapshot

if TYPE_CHECKING:
    from .facade import Store

_log = logging.getLogger("engramdb")


class AdminVerbs:
    """Operations on a whole store (`db.admin`)."""

    def __init__(self, db: Store) -> None:
        self._db = db

    @property
    def index_kind(self) -> str:
        """What searches a large namespace: "tree", "hnsw" or "none"."""
        return self._db._indexes.kind

    def checkpoint(self) -> None:
        """Write the rows waiting in the WAL to one segment file, then empty the WAL (and write
        the access log's waiting rows)."""
        self._db._engine.checkpoint()
        self._db._usage.flush()

    def compact(self) -> int:
        """Merge all committed segments (and the WAL) into one segment file (S6).

        Every version is kept (history is data); what goes is the per-segment overhead: fewer
        files to map on open and fewer scans per query. Atomic: the new manifest lists the merged
        file in place of the old ones. Returns the number of segments merged.
        """
        return rewrites.compact(self._db._engine)

    def build_index(self, *, space: str | None = None) -> dict[str, int]:
        """Build (or bring up to date) the index of every namespace with `tuning.tree_min_rows` or
        more committed memories in a dense space, and the BM25 index of every namespace, and save
        them. Otherwise a writer's worker builds one once a search needs it (that search scans
        exactly meanwhile, and the tree is saved at the writer's next checkpoint or close); call
        this after a bulk load so no query pays for it. Returns namespace -> memories indexed."""
        sp = self._db.schema[space or self._db.schema.main]
        engine = self._db._engine
        if not engine.read_only:
            engine.checkpoint()
        view = engine.view

        def save(ix: Any) -> None:
            if not engine.files.writable or not ix.dirty:
                return
            with engine.writing() as now:  # built without the lock: a purge since renumbered the
                if now.epoch == view.epoch:  # rows, and what was built holds what it took out
                    ix.save(engine.files)

        lex = lexical_space(self._db.schema, self._db.embedders)
        if lex is not None and space is None:  # BM25 of every namespace, saved with the trees
            bm = self._db._indexes.bm25(lex, view)
            bm.sync(view)
            if view.committed == len(view.segments):
                save(bm)
        pv = self._db._indexes.passages(sp, view)
        if pv is not None:  # long memories' passages, embedded now rather than by the first search
            pv.sync(view)
            if view.committed == len(view.segments):
                save(pv)
        if sp.kind != "dense" or self.index_kind == "none":
            return {}
        ix = self._db._indexes.dense(sp, view)
        ix.sync(view)
        save(ix)
        return {ns: int(info["memories"]) for ns, info in ix.describe().items()}

    def backup(self, dest: str | Path) -> dict[str, Any]:
        """A full-fidelity copy of this store in folder `dest` (new or empty): every version,
        edge and archived text, the known_at history, taken while writes go on. Opening `dest`
        is the restore. Returns what was copied (see `engramdb.backup`)."""
        checks.path("dest", dest)
        if self._db.path is None:
            raise StoreError("backup copies a store folder; this store is in memory: use export()")
        if self._db._engine.closed:
            raise StoreError("the store is closed")
        return storage_backup(self._db.path, dest)

    def export(self, path: str | Path, *, namespace: str | None = None) -> int:
        """Write the memories (of `namespace`, or all) to `.jsonl` or `.arrow`, losslessly: every
        version (forgotten ones included), the edges between them with their history, archived
        text read back from the archive. Returns how many memories.

        JSONL: one line per memory, the current version's fields on top, `history` (earlier
        versions) and `edges` (the edge rows leaving it) beside them; no vectors. Arrow: one row
        per version in the segment layout with every space's vectors, the store's schema and the
        edges in its metadata. See `engramdb.storage.transfer` for the layout.
        """
        return transfer.export(self._db._engine.view, path, self._db._engine.table_schema, namespace)

    def import_(self, path: str | Path) -> transfer.Imported:
        """Add the memories of an `export` file (`.jsonl` or `.arrow`), as they were: every version
        with its number, valid and system times, forgotten state and metadata, and the edges
        between them, in one write (all or nothing: a bad line, a known id or a space that cannot
        be filled refuses the file, naming it, the line or row and the field). Ids must not exist
        here yet. Dedup and contradiction checks do not run: the file is what a store held.

        An Arrow file's vectors are kept for each space whose recorded kind, dimension and
        embedder are this store's; other spaces (and every space of a JSONL file) are embedded
        again from the text. Returns the ids in file order (a list), with `reembedded` (space ->
        why), `versions` and `edges` written; spaces of an Arrow file embedded again are logged.
        """
        incoming = transfer.read_export(path, self._db.schema)
        for m, at in zip(incoming.memories, incoming.where):
            try:
                content_bytes(m.content, None, self._db.tuning.max_content_bytes)
            except InvalidMemory as exc:
                raise InvalidMemory(f"{incoming.name} {at}: {exc}") from None
        missing = sorted(name for name in incoming.reembedded if name not in self._db.embedders)
        if missing:
            raise InvalidMemory(f"{incoming.name}: space(s) {missing} must be embedded again "
                                f"({'; '.join(incoming.reembedded[n] for n in missing)}) but this store has no "
                                "embedder for them: open it with embedders= for those spaces")
        with self._db._engine.writing() as view:
            for m, at in zip(incoming.memories, incoming.where):
                if m.id in view:
                    raise StoreError(f"{incoming.name} {at}: id {m.id!r} already exists in this store; import adds "
                                     "memories, it does not replace them")
            if incoming.memories:
                contents = [m.content for m in incoming.memories]
                vectors = dict(incoming.vectors)  # the file's, for the spaces they fit; the rest embedded
                if incoming.reembedded:
                    given = transfer.given_rows(incoming, set(self._db.embedders))
                    vectors = {**vectors_for(self._db.schema, self._db.embedders, contents, given, self._db.tuning), **vectors}
                self._db._engine.append(memories_to_table(incoming.memories), vectors, incoming.edges)
                self._db._passages_of(contents)
            self._db._turns.clear()  # the imported turns' positions are read from the store again
        if incoming.reembedded and Path(path).suffix == ".arrow":
            _log.warning("import %s: embedded again from the text (the file's vectors do not fit this store): %s",
                         incoming.name, "; ".join(f"{k}: {v}" for k, v in incoming.reembedded.items()))
        return transfer.Imported(incoming.ids(), incoming.reembedded, len(incoming.memories), len(incoming.edges))

    def snapshot(self) -> Snapshot:
        """The store as it is now, for reads that must agree with each other (`get`, `edges`,
        `search`, `len` on it never see a later write). Nothing is copied."""
        view = self._db._engine.view
        self._db._indexes.pin(view)
        return Snapshot(view, self._db.schema, self._db.embedders, self._db.tuning, self._db._indexes, self._db._usage)

    def infer_edges(self, ids: Iterable[str] | None = None, *, namespace: str | None = None,
                    inferrer: Inferrer | None = None, candidates: int = 10,
                    min_confidence: float = MIN_CONFIDENCE) -> InferenceReport:
        """Propose typed edges for memories and store the sure ones (H2).

        Give `ids` (these memories) or `namespace` (every live memory in it). Each memory's
        `candidates` nearest memories in the main space are shown to `inferrer`, a callable
        `(memory, candidates) -> EdgeProposal`s (an LLM hook, say); the default is the built-in
        `HeuristicInferrer` (CAUSED_BY from causal cues, RELATED_TO from shared words and high
        similarity). Only valid proposals with confidence >= `min_confidence` (at least 0.7)
        become edges, written as `link` writes them; the report lists what was stored, what was
        below the bar, what was rejected and why, and where the inferrer failed.
        """
        def nearest(vector: Embedding, namespace: str, k: int) -> Hits:
            return self._db.search(vector, namespace=namespace, k=k, explain=True)  # explain holds the raw similarity

        return inference.infer_edges(self._db._engine, self._db._indexes, self._db.embedders, nearest, ids, namespace,
                                     inferrer, candidates, min_confidence)

    def tree_recall(self, namespace: str, *, space: str | None = None, sample: int = 50, k: int = 10) -> float:
        """Recall@k of the namespace's tree against exact search, on `sample` of its own vectors
        used as queries (J6). NaN when the namespace has no tree."""
        sp = self._db.schema[space or self._db.schema.main]
        view = self._db._view()
        return self._db._indexes.tree(sp, view).recall(view, namespace, sample=sample, k=k)

    def type_clusters(self) -> list[list[str]]:
        """The store's memory_type names clustered (H6: DBSCAN over their main-space vectors, cosine
        eps 0.20, at least 3 names a cluster)."""
        return self._db._type_clusters().clusters

    def settle(self, timeout: float | None = None) -> bool:
        """`db.admin.settle`: wait until the background upkeep has caught up with what was asked of it so far
        (topics, trees, the indexes after a checkpoint), running those jobs now rather than after
        their usual delay and pace: True when it has, False when `timeout` seconds passed first. A job that failed and waits out its backoff is not waited for
        (`stats()["upkeep"]["runs"]` gives its error and failures in a row). Nothing to wait for (True) on a read-only store or with
        `Tuning(background=False)`."""
        return self._db._background.settle(timeout)

    def dashboard(self, *, top: int = 10, namespace: str | None = None) -> dict[str, Any]:
        """What `engramdb stats` shows (E9): the memories with the highest ELO, how many memories
        sit in each ELO tier and each lifecycle tier, recent activity (searches, feedback, latest
        queries, search latency) and the recent consolidation runs."""
        return self._db.lifecycle._consolidation.dashboard(top=top, namespace=namespace)

    def ingest_spool(self) -> dict[str, int] | None:
        """Take in now what other processes captured (`engramdb.capture`) while this writer held
        the lock; a writer does it by itself when it opens and before each `add_many`. Returns
        counts (files, records, damaged, rejected), or None when nothing waited."""
        return self._db._capture.drain_spool()


__all__ = ["AdminVerbs"]

"""The facade: `engramdb.open` and the `Store` verbs, each a few lines over the layers below.

Writes hold the engine's lock (storage) for their read-modify-write; reads take the current
snapshot and hold nothing, so searches run side by side and beside the writer. The layers:
storage (files, snapshots), index (derived indexes), ingest (validation, embedding, dedup),
graph (edges, inference), retrieval (search plans and strategies).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NoReturn, SupportsIndex

import numpy as np

from .._requests_first import request
from ..context.handoff import EDGE_BUDGET, LATENCY_MS, STEP_BUDGET
from ..context.result import Context
from ..context.tokens import Counter, preload
from ..graph import links
from ..index.registry import Indexes
from ..ingest.dedup import DedupEvent, find_duplicates
from ..ingest.embedding import check_vector_names, vectors_for
from ..ingest.intake import build_intake, content_bytes
from ..ingest.sequence import TurnCounter
from ..lifecycle.contradictions import Proposal
from ..model import checks
from ..model.edge import Edge
from ..model.errors import ConflictError, CorruptFile, InvalidMemory, StoreError
from ..model.memory import Memory, utc_now, validate_memory
from ..model.tuning import Tuning
from ..spaces.passages import MIN_CHARS
from ..spaces.profiles import earlier_schemas, embedders_for, mismatch, names_match, profile_schema
from ..spaces.protocol import Embedder
from ..spaces.schema import Schema, SpaceError
from ..storage import rewrites
from ..storage.columns import memories_to_table
from ..storage.derived_files import DerivedFiles
from ..storage.engine import Engine
from ..storage.view import View
from . import deprecations
from .added import Added
from .admin_verbs import AdminVerbs
from .background import Background, Worker
from .capture_verbs import Capture
from .cold_start import age_the_imports, prepare_for_writes
from .context_verbs import ContextAssembly
from .curiosity_verbs import CuriosityVerbs
from .importance_verbs import ImportanceVerbs
from .lifecycle_verbs import LifecycleVerbs
from .merging import MergeRule, merge_newer, merged_update
from .options import Options
from .paging import Page, Pager
from .purge_verbs import Purging
from .reads import Reads
from .topic_verbs import TopicVerbs
from .usage import Usage

_log = logging.getLogger("engramdb")
_MEMORY_FIELDS = {f.name for f in fields(Memory)}
_UPDATABLE = _MEMORY_FIELDS - {"id", "namespace", "version", "learned_at"}


class Store(Reads):
    """A memory store in a folder (or in memory when `path` is None). Open one with `engramdb.open`.

    The verbs an agent uses are methods (add, add_messages, search, context, feedback, ...); the
    rest are grouped by what they are about: `db.topics`, `db.importance`, `db.lifecycle`,
    `db.curiosity` and `db.admin`."""

    _usage: Usage
    _upkeep: Worker | None = None  # the background worker (None: read-only, or Tuning(background=False))

    def __init__(self, path: str | Path | None = None, options: Options | None = None) -> None:
        age_the_imports()
        if path is not None:
            checks.path("path", path)  # before the folder is touched
        o = options or Options()
        schema = profile_schema(o.profile) if o.profile is not None else o.schema
        self._options = o
        self.dedup = o.dedup
        self.dedup_threshold = float(o.dedup_threshold)
        self.tuning: Tuning = o.tuning
        self._spool_report: dict[str, int] | None = None  # the spool taken in at open (deprecated: last_spool)
        self._dedup_report: list[DedupEvent] = []  # what the last add_many found (S8; deprecated: read Added.dedup)
        self.contradictions = o.contradictions
        self._contradiction_report: list[Proposal] = []  # the last add_many's (H5; deprecated: Added.contradictions)
        self._pages = Pager()
        self._capture = Capture(self)
        self._context = ContextAssembly(self)
        self._purging = Purging(self)
        self._background = Background(self)
        self.topics = TopicVerbs(self)
        self.importance = ImportanceVerbs(self)
        self.lifecycle = LifecycleVerbs(self)
        self.curiosity = CuriosityVerbs(self)
        self.admin = AdminVerbs(self)
        self._turns = TurnCounter()  # seq per (namespace, session) when the caller gives none
        if path is not None and o.tuning.background and not o.read_only:
            # a service's writer: the default BPE loads on its own thread while the folder opens
            # (its build holds the GIL for ~35 ms, which a process's first context paid inside its
            # own time: issue 26). Not for a reader: a hook's SessionStart or PreToolUse searches
            # and counts no tokens, and the load's GIL time would fall inside its budget; a reader's
            # context starts the load itself (`context`). Nor for a hook's short writer (no worker).
            preload(None)
        self._engine = Engine(path, schema=schema, read_only=o.read_only, tuning=o.tuning, salvage=o.salvage,
                              also=earlier_schemas(o.profile) if o.profile is not None else ())
        try:
            self.schema: Schema = self._engine.schema
            self.embedders: dict[str, Embedder] = dict(o.embedders) if o.embedders is not None \
                else embedders_for(self.schema)
            for name, emb in self.embedders.items():
                declared = self.schema[name].embedder if name in self.schema.spaces else None
                if declared is not None and not names_match(emb, declared):
                    raise SpaceError(mismatch(name, emb, declared))
            self._indexes = Indexes(self._engine.files, o.tuning, o.index, self.embedders, reader=o.read_only)
            self._engine.on_commit = self._background.after_commit
            if not o.read_only and o.tuning.background:
                self._upkeep = Worker(str(self._engine.path or "in memory"))
                self._indexes.ask, self._indexes.view_now = self._upkeep.ask, lambda: self._engine.view
            self._usage = Usage(self._engine.path, self._engine.files, writable=not o.read_only, log=o.access_log)
            self._spool_report = self._capture.drain_spool()  # what hooks spooled while another writer held the lock
            self._usage.log.on_crowded, self._usage.log.on_due = self._background.log_upkeep("access")  # the worker's
            prepare_for_writes({} if o.read_only else self.embedders)  # a reader never embeds a text
            if self._upkeep is not None and path is not None and self._engine.view.committed_rows:
                self._upkeep.ask("warm", self._background.warm, delay=0.0)  # a new folder has nothing to warm
        except BaseException:
            # a failed open never keeps the writer's lock: what was taken in is durable in the WAL
            self._engine.close(checkpoint=False)
            raise

    @property
    def path(self) -> Path | None:
        """The store folder (None: in memory)."""
        return self._engine.path

    @property
    def read_only(self) -> bool:
        return self._engine.read_only

    @property
    def _derived(self) -> DerivedFiles:
        return self._engine.files

    # ----------------------------------------------------------------------------- lifecycle
    def close(self, *, checkpoint: bool = True) -> None:
        """Fold the WAL into a segment file, save the indexes and release the files. Idempotent.
        `checkpoint=False` leaves the rows in the (durable) WAL for the next writer to fold: what a
        short-lived writer such as a hook's capture does, so it does not leave a tiny segment."""
        engine = self._engine
        if engine.closed:
            return
        if self._upkeep is not None:
            self._upkeep.close()  # the running job ends first: it may write derived files
        done = False
        try:
            if not engine.read_only and checkpoint and not engine.forked:
                with engine.writing():
                    engine.on_commit = None  # the save below is the close's (no index built from nothing)
                    engine.checkpoint()
                    try:
                        self._indexes.save(engine.view, closing=True)
                    except (OSError, CorruptFile) as exc:  # derived, rebuilt from the segments by the next search
                        # a segment whose vectors are damaged fails an index brought up to it (the open's warm
                        # job loaded one); `verify` reports it, and a close must still fold its WAL and let go
                        _log.warning("the indexes of %s were not saved at close: %s", self.path, exc)
            self._usage.flush()  # a reader's access rows go to the spool
            if not engine.read_only and not engine.forked:
                try:
                    self.curiosity._write_pending()  # what the worker had not written yet
                except OSError as exc:  # the navigator's notes, not the caller's writes
                    _log.warning("%s: curiosity items were not written at close: %s", self.path, exc)
            done = True
        finally:
            # the lock is released whatever failed: the rows are durable in the WAL either way
            engine.close(checkpoint=checkpoint and done)

    def __enter__(self) -> Store:  # noqa: PYI034 - Store is not meant to be subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        # pickle and copy.copy both come here: a copy would share the writer's files, lock and
        # worker (closing it closed the original), and a pickle cannot carry them
        raise TypeError("a Store holds its folder's open files, the writer's lock and a worker thread: it cannot be "
                        "pickled or copied; open the folder by path where it is needed (engramdb.open(path), or "
                        "read_only=True beside a writer)")

    # ----------------------------------------------------------------------------- writes
    def add(self, content: str, *, namespace: str, session_id: str | None = None, role: str | None = None,
            memory_type: str | None = None, valid_from: datetime | None = None, id: str | None = None,
            vectors: Mapping[str, Any] | None = None, **fields_: Any) -> Memory:
        """Store one memory; returns it as stored (with id, version 1, learned_at)."""
        record = {"content": content, "namespace": namespace, "session_id": session_id, "role": role,
                  "memory_type": memory_type, "valid_from": valid_from, "id": id, "vectors": vectors, **fields_}
        got = self.get(self.add_many([record])[0])
        assert got is not None
        return got

    @request  # a write the caller waits for: a worker's job gives way to all of it (_requests_first.py)
    def add_many(self, records: Iterable[Mapping[str, Any] | Memory]) -> Added:
        """Store many memories in one batch (one WAL frame); returns their ids in order (`Added`,
        with the write's dedup and contradiction reports).

        Each record is a dict with the keys of `add` (or a Memory). All or nothing: one bad
        record refuses the batch, naming the record and the field.
        """
        self._spool_report = self._capture.drain_spool() or self._spool_report
        batch = build_intake(records, utc_now(), self.tuning.max_content_bytes)
        n = len(batch.ids)
        if not n:
            return Added([])
        check_vector_names(self.schema, batch.vectors)
        with self._engine.writing() as view:
            batch.table = self._turns.assign(view, batch.table)
            if len(set(batch.ids)) != n or any(i in view for i, named in zip(batch.ids, batch.named) if named):
                seen: dict[str, int] = {}
                for i, mid in enumerate(batch.ids):
                    if mid in seen:  # not "already exists": nothing of it is stored
                        raise StoreError(f"records[{i}]: id {mid!r} repeats records[{seen[mid]}]'s in this batch")
                    if mid in view:
                        raise StoreError(f"records[{i}]: id {mid!r} already exists; use update() to change it")
                    seen[mid] = i
            vectors = vectors_for(self.schema, self.embedders, batch.contents, batch.vectors, self.tuning)
            action: Literal["merged", "skipped"] = "merged" if self.dedup == "merge" else "skipped"
            dedup = find_duplicates(view, batch, vectors, self.dedup_threshold, action) \
                if self.dedup != "off" else []
            dup = {e.index: e for e in dedup if e.action != "kept"}
            keep = [i for i in range(n) if i not in dup]
            if not dup:
                self._engine.append(batch.table, vectors)
            elif keep:
                from ..spaces.batches import take

                self._engine.append(batch.table.take(keep), {k: take(v, keep) for k, v in vectors.items()})
            self._passages_of([batch.contents[i] for i in keep])
            if dup and self.dedup == "merge":
                self._merge_duplicates(list(dup.values()))
        found: list[Proposal] = []
        if self.contradictions != "off" and keep:  # outside the writer's lock: applying one is a write
            stored = [batch.ids[i] for i in keep]
            for ns in dict.fromkeys(batch.namespaces[i] for i in keep):
                found += self.lifecycle.resolve_contradictions(namespace=ns, ids=stored,
                                                               dry_run=self.contradictions == "detect")
        self._dedup_report, self._contradiction_report = dedup, found
        return Added([dup[i].duplicate_of if i in dup else batch.ids[i] for i in range(n)], dedup, found)

    def add_messages(self, messages: Iterable[Mapping[str, Any]], *, namespace: str,
                     session_id: str | None = None, memory_type: str = "turn") -> Added:
        """Store chat messages ({"role": ..., "content": ...}, as chat APIs give them) as turns of one
        session, in order (seq assigned); returns their ids. A message's "id", when given, is its memory's id
        (a retried request then fails on the id instead of storing twice); its "valid_from", when given, is
        when it was said (an aware datetime, or an ISO-8601 string with its UTC offset, e.g.
        "2024-05-07T13:56:00+02:00" or "...Z"), else it is valid from when the store learns it; other keys go
        to metadata. One bad message refuses all, before anything is written."""
        return self._capture.add_messages(messages, namespace=namespace, session_id=session_id, memory_type=memory_type)

    def add_file(self, path: str | Path, *, namespace: str, encoding: str = "utf-8") -> dict[str, Any]:
        """Capture a markdown or text file as chunks (memory_type "chunk", source "file"; metadata
        file, chunk, chunks, sha256). Re-ingesting a changed file supersedes its old chunks; an
        unchanged file is skipped. Returns what was done: file, chunks, added, superseded, skipped."""
        return self._capture.add_file(path, namespace=namespace, encoding=encoding)

    def update(self, id: str, *, expected_version: int | None = None, merge: MergeRule | None = merge_newer,
               **changes: Any) -> Memory:
        """Write a new version of a memory with some fields changed (optimistic: name the version read).

        K4: when `expected_version` is no longer current (another writer got there first), the
        change is retried after 0.1, 0.2 and 0.4 s through `merge(current, changes) -> changes |
        None` (built-in `merge_newer`: this change's text, metadata merged key by key, the higher
        confidence); when the rule cannot merge (None, or `merge=None`) after the last wait,
        `ConflictError` names both versions."""
        if expected_version is not None and (isinstance(expected_version, bool) or not isinstance(expected_version, int)
                                             or expected_version < 1):
            raise TypeError(f"expected_version must be the version (an int >= 1) the change was made against, got "
                            f"{expected_version!r}")
        if merge is not None and not callable(merge):
            raise TypeError(f"merge must be a rule (current, changes) -> changes or None, or None, got {merge!r:.80}")
        if expected_version is None or merge is None:
            return self._update(id, expected_version, changes)
        try:
            return self._update(id, expected_version, dict(changes))
        except ConflictError:
            return merged_update(id, expected_version, merge, changes,
                                 lambda: self.get(id, include_forgotten=True), self._update)

    def _update(self, id: str, expected_version: int | None, changes: dict[str, Any]) -> Memory:
        vectors = changes.pop("vectors", None)
        bad = set(changes) - _UPDATABLE
        if bad:
            raise InvalidMemory(f"update cannot change {sorted(bad)}")
        if vectors:
            check_vector_names(self.schema, [vectors], "")
        if "content" in changes and isinstance(changes["content"], str):
            content_bytes(changes["content"], None, self.tuning.max_content_bytes)
        with self._engine.writing() as view:
            old = links.current(view, id)
            if expected_version is not None and expected_version > old.version:
                raise ValueError(f"expected_version {expected_version}: memory {id!r} is at version {old.version}, "
                                 "and no later version was ever written (a version this write cannot have read)")
            if expected_version is not None and old.version != expected_version:
                raise ConflictError(id, expected_version, old.version, "it changed while this write waited")
            new = validate_memory(old.with_changes(version=old.version + 1, learned_at=utc_now(), **changes), old)
            keep = {} if "content" in changes and changes["content"] != old.content else view.row_vectors(id)
            if vectors:
                keep.update(vectors)
            self._write([new], [keep])
            if "seq" in changes or "session_id" in changes:
                self._turns.clear()  # positions are read from the store again
            return new

    def supersede(self, old_id: str, new_id: str) -> tuple[Memory, Memory]:
        """`old` stops being true where `new` starts (S3); both are linked. Nothing is deleted."""
        with self._engine.writing() as view:
            old, new = links.pair(view, old_id, new_id, ("old_id", "new_id"))
            end = new.valid_from or new.learned_at
            assert end is not None  # a stored memory has learned_at
            return self._supersede_write(view, old, new, end)

    def _supersede_write(self, view: View, old: Memory, new: Memory, end: datetime) -> tuple[Memory, Memory]:
        """`old` ends at `end`, superseded by `new`: two new versions and the SUPERSEDES edge, one
        write, durable together or not at all (the caller holds the writer's lock)."""
        now = utc_now()
        o2 = validate_memory(old.with_changes(version=old.version + 1, learned_at=now, valid_until=end,
                                              superseded_by=new.id), old)
        n2 = validate_memory(new.with_changes(version=new.version + 1, learned_at=now, supersedes=old.id), new)
        self._write([o2, n2], [view.row_vectors(old.id), view.row_vectors(new.id)],
                    edges=[Edge(new.id, old.id, "SUPERSEDES", new.namespace, 1.0, "supersede", created_at=now)])
        return o2, n2

    def link(self, src: str, dst: str, type: str, *, confidence: float = 1.0, reason: str | None = None,
             valid_from: datetime | None = None, valid_until: datetime | None = None) -> Edge:
        """Add (or replace) the typed edge `src -[type]-> dst` between two memories of one namespace.

        `type` is UPPER_SNAKE_CASE (`CAUSED_BY`, `PART_OF`, ...); `confidence` in [0, 1]; `reason`
        says why (shown by explain); `valid_from`/`valid_until` bound when the relation held.
        Linking the same (src, dst, type) again replaces the edge.
        """
        with self._engine.writing() as view:
            edge = links.edge_for(view, src, dst, type, confidence, reason, valid_from, valid_until)
            self._engine.append_edges([edge])
            return edge

    def unlink(self, src: str, dst: str, type: str) -> bool:
        """End the edge `src -[type]-> dst`; False when there was none. History keeps the old rows."""
        with self._engine.writing() as view:
            row = links.removal(view, src, dst, type)
            if row is None:
                return False
            self._engine.append_edges([row])
            return True

    def forget(self, id: str) -> Memory:
        """Soft delete: hidden from search and get, restorable (S7). Forgetting a forgotten memory
        returns it as it is (a retried call, or two people's requests, change nothing)."""
        with self._engine.writing() as view:
            old = links.current(view, id, include_forgotten=True)
            return old if old.forgotten_at is not None else self._rewrite(view, old, forgotten_at=utc_now())

    def restore(self, id: str) -> Memory:
        """Undo `forget`."""
        with self._engine.writing() as view:
            old = links.current(view, id, include_forgotten=True)
            return old if old.forgotten_at is None else self._rewrite(view, old, forgotten_at=None)

    def purge(self, ids: str | Iterable[str] | None = None, *, namespace: str | None = None) -> int:
        """Hard delete for privacy requests: every version of these memories (one id, several, or
        with `namespace=` every memory of a namespace; ids, even none, with `namespace=` are refused)
        leaves every file, content, vectors, edges and archived text, and so does what was derived
        from them (S7; see store/purge_verbs.py).

        One atomic rewrite, whatever the count: the WAL is folded into a segment first, each
        segment holding a purged row is rewritten without it (the other rows copied unchanged;
        segments without one keep their files), and one manifest commit drops the old files.
        An unknown id refuses the whole call. Returns how many versions were removed."""
        ids = self._purging.request(ids, namespace)  # checked; the spool taken in, to be purged with the rest
        with self.topics._lock, self._engine.writing():
            self._purging.derived(self._engine.view, ids, namespace)  # first: a failure leaves every memory as it was
            try:
                done = rewrites.purge(self._engine, ids, namespace)
            except BaseException:
                self._usage.purged(save=False)  # the rows are kept: only this process stops logging them a while
                raise
            self._usage.purged()  # rows made before now naming them are never logged again
            if done.removed:  # rows renumbered: BM25 and passages carried over, the trees rebuilt on demand
                self._indexes.drop(done)
            self._dedup_report, self._contradiction_report = [], []  # they may name what was purged
            return done.removed

    # ----------------------------------------------------------------------------- files
    def delete(self, id: str) -> Memory:
        """mem0's name for `forget` (soft: restorable; `purge` deletes for privacy requests)."""
        return self.forget(id)

    def context(self, query: str, *, namespace: str, max_tokens: int = 2000, session_id: str | None = None,
                as_of: datetime | None = None, tokenizer: str | Counter | None = None, log: bool = True,
                navigate: bool = True, edge_budget: int = EDGE_BUDGET, step_budget: int = STEP_BUDGET,
                latency_ms: float = LATENCY_MS, now: datetime | None = None) -> Context:
        """The best memories for a prompt under `max_tokens` (C6): a `Context` with `.text` (the
        block a person would paste: sections in priority order, one line a memory with who said
        it, a session's turns under one line with its date, a fact that no longer holds marked
        with when it ended; no line twice, no internal id; never more than `max_tokens` by the
        tokenizer in use; the layout is in context/assemble.py), `.items` (id, section, score,
        tokens, why, K3 provenance, badge: the date line it sits under and its mark) and `.stats`
        (tokens used, budget, tokenizer, milliseconds per stage, and the handoff: `stages` with
        each stage's spend, budget and what it wanted, `prices` and `duals` (the budgets' dual
        variables before and after this call), `utility`, and `curiosity`: the surprising hops
        found and queued).
        `tokenizer`: "cl100k_base" (the default when bpe-openai is installed:
        `engramdb[tokens]`), "o200k_base", "estimate", or any callable text -> token count.
        `as_of`: the facts true then (those that ended since marked as such). `now`: when the
        question is asked, as in `search` (the dates it names are read against it). `navigate`: walk the
        links from the hits (typed edges, neighbouring turns: K1) within `edge_budget` links read
        and `step_budget` hops; `latency_ms`: the time a context should take (a soft budget: its
        dual shrinks the walk's budgets when calls overrun it). The topics are the ones last
        computed (`topics()`), never computed here. `log=False` neither logs the search nor the
        injection, nor queues curiosity items."""
        return self._context.context(query, namespace=namespace, max_tokens=max_tokens, session_id=session_id, as_of=as_of, tokenizer=tokenizer, log=log, navigate=navigate, edge_budget=edge_budget, step_budget=step_budget, latency_ms=latency_ms, now=now)

    def feedback(self, query_id: str, used: Iterable[str], *, session_id: str | None = None) -> int:
        """Record which hits of a logged search the caller used (`query_id`: the search's `Hits.query_id`):
        the outcome ELO learns from (E2); `used=[]` says none was (every hit shown loses). The ratings follow
        at once (`db.importance.of`, hits' `elo` and `tier`): the search is settled by its first feedback,
        with what a context injected for it; feedback given for it again later is late and changes nothing.
        Returns how many ids were recorded. Unknown query ids raise ValueError; ids need not be among the hits
        (an agent may use a memory it found another way) but must be memories of the namespace searched
        (ValueError otherwise: one namespace's feedback never rates another's memories). `used` is a list of
        ids (a single string raises TypeError)."""
        view = self._view()

        def owner(mid: str) -> str | None:
            loc = view.loc_of(mid)
            return None if loc is None else view.namespace_at(loc)

        return self._usage.feedback(query_id, used, session_id=session_id, owner=owner)

    def history(self, id: str) -> list[Memory]:
        """Every stored version of a memory, oldest first, each with its system time (learned_at,
        expired_at) and valid time (valid_from, valid_until). Empty for an unknown id."""
        return self._view().versions(id)

    def _view(self) -> View:
        return self._engine.view

    # ----------------------------------------------------------------------------- indexes
    def stats(self) -> dict[str, Any]:
        """Counts and layout: memories, versions, segments, WAL size, namespaces, spaces, indexes."""
        view = self._engine.view
        namespaces = view.namespace_counts()
        indexes = self._indexes.describe()
        return {
            "memories": view.count(),
            "versions": view.rows,
            "segments": view.committed,
            "wal_segments": len(view.segments) - view.committed,
            "wal_bytes": self._engine.wal_bytes(),
            "namespaces": namespaces,
            "edges": len(view.live_edges()),
            "spaces": [s.name for s in self.schema],
            "path": str(self.path) if self.path else None,
            "generation": view.generation,
            "trees": indexes["trees"],
            "hnsw": indexes["hnsw"],
            "bm25": indexes["bm25"],  # indexes loaded or built so far (searches and build_index build them)
            "passages": indexes["passages"],  # per dense space, the passage vectors of long memories (C7)
            # per saved index: "adopted" from its file, or why it was rebuilt ("missing", "corrupt ...")
            "index_files": indexes["index_files"],
            "salvage": dict(self._engine.salvaged),  # salvage=True: damaged files left out, and why
            "usage": self._usage.describe(),  # the access log and the ELO ratings (E1-E5)
            "spool": self._spool_report,  # what the last take-in of the spool did (at open or before a write)
            "upkeep": self._background.stats(),  # the background worker: pending jobs, each job's last run
            # per namespace whose topics were computed in this process: C4's consolidation trigger
            "topics": {ns: {"topics": len(t), "churn": t.churn, "entropy": t.entropy,
                            "consolidation_due": t.consolidation_due}
                       for ns, (_, t) in (self.topics._topic_cache or {}).items()},
        }

    # ----------------------------------------------------------------------------- internals
    def _write(self, memories: list[Memory], given: list[Mapping[str, Any]], edges: list[Edge] | None = None) -> None:
        """New versions with their vectors, and `edges` in the same write (the caller holds the
        writer's lock)."""
        vectors = vectors_for(self.schema, self.embedders, [m.content for m in memories], given, self.tuning)
        self._engine.append(memories_to_table(memories), vectors, edges or ())
        self._passages_of([m.content for m in memories])

    def _new_versions(self, changes: Mapping[str, Mapping[str, Any]]) -> int:
        """One new version per memory with the given fields changed, keeping its vectors (what
        compression writes: the summary stays findable by what the full text said), in one batch."""
        if not changes:
            return 0
        with self._engine.writing() as view:
            olds = [links.current(view, mid) for mid in changes]
            now = utc_now()
            news = [validate_memory(o.with_changes(version=o.version + 1, learned_at=now, **changes[o.id]), o) for o in olds]
            self._write(news, [view.row_vectors(o.id) for o in olds])
        return len(news)

    def _passages_of(self, contents: list[str]) -> None:
        """Long memories' passage vectors (C7), embedded now, with the write, not by a search."""
        if any(len(c) >= MIN_CHARS for c in contents):
            pv = self._indexes.passages(self.schema[self.schema.main], self._engine.view)
            if pv is not None:
                pv.sync(self._engine.view)

    def _rewrite(self, view: View, old: Memory, **changes: Any) -> Memory:
        new = validate_memory(old.with_changes(version=old.version + 1, learned_at=utc_now(), **changes), old)
        self._write([new], [view.row_vectors(old.id)])
        return new

    def _merge_duplicates(self, events: list[DedupEvent]) -> None:
        """Record merged copies on the memories they duplicate (one new version each)."""
        counts: dict[str, int] = {}
        for e in events:
            counts[e.duplicate_of] = counts.get(e.duplicate_of, 0) + 1
        for mid, n in counts.items():
            view = self._engine.view
            old = links.current(view, mid)
            meta = dict(old.metadata)
            meta["merged_duplicates"] = int(meta.get("merged_duplicates", 0)) + n
            self._rewrite(view, old, metadata=meta, confidence=old.confidence)

    def _topic_map(self, namespace: str) -> tuple[dict[str, int], np.ndarray]:
        """The pipeline's topic stage (`search(topics=True)`): the namespace's last topics."""
        return self.topics._topic_map(namespace)

    # `list` last: a method named list shadows the builtin in the annotations after it
    def list(self, namespace: str, *, filters: Mapping[str, Any] | None = None, limit: int = 100,
             cursor: str | None = None, include_ended: bool = False, newest_first: bool = False) -> Page:
        """A namespace's current memories in the order they were learned (a batch in its order), a
        page at a time: a `Page` (a list of Memory) whose `next_cursor` gives the next page (None
        at the end). `filters`: equality on memory_type, session_id, role, source, or on metadata
        keys as "metadata.KEY". Memories whose valid time has ended (superseded, a file's old
        chunks) are left out unless `include_ended`. `newest_first` pages from the latest. A
        cursor outlives writes: after a memory that changed or was forgotten since, the next page
        starts again at that memory's batch (it may repeat, it never skips)."""
        return self._pages.page(self._view(), namespace, filters=filters, limit=limit, cursor=cursor,
                                include_ended=include_ended, newest_first=newest_first)



# the old names, for one release (store/deprecations.py); set outside the class body so that type
# checkers see only the new names
deprecations.install(Store)


def open(
    path: str | Path | None = None,
    *,
    schema: Schema | None = None,
    embedders: Mapping[str, Embedder] | None = None,
    read_only: bool = False,
    salvage: bool = False,
    dedup: str = "off",
    dedup_threshold: float = 0.90,
    profile: str | None = None,
    index: str = "tree",
    tuning: Tuning | None = None,
    access_log: bool | Literal["spool"] = True,
    contradictions: str = "off",
) -> Store:
    """Open (or create) the store in folder `path`; None keeps it in memory (tests, scratch).

    One process may write a store at a time (a second writer gets `StoreLocked`); any number
    may open it with `read_only=True`, seeing what was committed or logged at open time (with
    `salvage=True` too, a damaged store opens with its intact files only: `stats()["salvage"]` names
    what was left out, `engramdb.verify(path)` checks every file). Within a process, searches and
    reads run side by side, and beside the writer: each reads the snapshot current when it started.

    `profile` names a built-in schema: "default" (model-free), "minilm" (all-MiniLM-L6-v2 as the
    dense space; needs `engramdb[minilm]`) or "static" (a table distilled from MiniLM: docs/install.md);
    a reopened store keeps the schema it was created with
    and gets its embedders back from the names the schema stores. `index` is what searches a
    namespace of `tuning.tree_min_rows` (20,000) or more memories in a dense space: "tree" (the
    centroid hierarchy, default), "tree-packed" (the same trees keeping a leaf-ordered
    half-precision copy of their vectors: about the dense space's size again, ~2.5x faster scans on
    real text), "hnsw" (usearch graphs; slow to build) or "none" (always exact). `dedup` ("skip" |
    "merge" | "off") is what happens to a new memory whose main-space cosine to a current memory of
    its namespace exceeds `dedup_threshold`, unless their negations differ; "off" (default: in a
    conversation log a repeat is an event) keeps everything, and a record naming its own id is
    always stored (see `engramdb.ingest.dedup`). `tuning`: thresholds and sizes (`engramdb.Tuning`:
    checkpoint size, tree threshold, probe and beam, ...).
    `access_log`: log every search and its feedback in the store folder's `access/` (E1: what
    ELO importance learns from); False logs nothing; a read-only store logs nothing, unless
    "spool": then its rows go to the spool at close, for the writer's log (hooks). `contradictions` ("off" | "detect" |
    "supersede"): after each `add_many`, look for older memories the new ones contradict (H5,
    `db.lifecycle.resolve_contradictions`): "detect" reports them in what `add_many` returns
    (`.contradictions`), "supersede" also ends each older one where the newer starts.
    """
    return Store(path, Options(schema=schema, embedders=embedders, read_only=read_only, salvage=salvage,
                               dedup=dedup,  # type: ignore[arg-type] # checked by Options
                               dedup_threshold=dedup_threshold, profile=profile, index=index,
                               tuning=tuning if tuning is not None else Tuning(), access_log=access_log,
                               contradictions=contradictions))

"""A Hypothesis state machine: the store against a plain-Python model (add, add_messages, a capture
spooled beside the writer, update, supersede, link, unlink, forget, restore, purge, checkpoint,
compact, reopen), checked after every step through get(), search(), edges(), list() and history()."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from engramdb import StoreError, Tuning, capture
from engramdb import open as open_store
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from store_helpers import toy_embedders, toy_schema


@dataclass
class Model:
    content: str
    namespace: str
    version: int = 1
    forgotten: bool = False
    superseded: bool = False  # valid_until set in the past
    archived: bool = False  # content moved to an archive file (J7)
    session: str | None = None
    seq: int | None = None  # the turn's position: given, or the store's count (ingest/sequence.py)


NAMESPACES = ("a", "b")
WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta"])
CONTENT = st.lists(WORDS, min_size=1, max_size=3).map(" ".join)


class StoreMachine(RuleBasedStateMachine):
    tuning = Tuning(checkpoint_rows=5)  # checkpoints every few steps

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="engramdb-sm-"))
        self.db = self.open()
        self.model: dict[str, Model] = {}
        self.purged: set[str] = set()
        self.edges: dict[tuple[str, str, str], float] = {}  # (src, dst, type) -> confidence
        self.counter = 0
        self.turns: dict[tuple[str, str], int] = {}  # the writer's next seq per (namespace, session)

    def open(self) -> Any:
        return open_store(self.dir / "mem", schema=toy_schema(), embedders=toy_embedders(), dedup="off",  # type: ignore[arg-type]
                          tuning=self.tuning)

    def teardown(self) -> None:
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(content=CONTENT, ns=st.sampled_from(NAMESPACES))
    def add(self, content: str, ns: str) -> None:
        mid = f"m{self.counter}"
        self.counter += 1
        self.db.add(content, namespace=ns, id=mid)
        self.model[mid] = Model(content, ns)

    @rule(contents=st.lists(CONTENT, min_size=1, max_size=3), ns=st.sampled_from(NAMESPACES),
          session=st.sampled_from(["s1", "s2"]), given=st.lists(st.none() | st.integers(0, 12), min_size=3, max_size=3))
    def add_turns(self, contents: list[str], ns: str, session: str, given: list[int | None]) -> None:
        """A batch of turns of one session, some with their own seq: the rest are counted on."""
        records = []
        for content, seq in zip(contents, given):
            mid = f"m{self.counter}"
            self.counter += 1
            records.append({"content": content, "namespace": ns, "id": mid, "session_id": session, "seq": seq})
        self.db.add_many(records)
        self._count_turns(records, ns, session)

    @rule(contents=st.lists(CONTENT, min_size=1, max_size=3), ns=st.sampled_from(NAMESPACES),
          session=st.sampled_from(["s1", "s2"]))
    def add_messages(self, contents: list[str], ns: str, session: str) -> None:
        """Chat messages: turns of one session whose positions the store counts on."""
        given = []
        for _ in contents:
            given.append(f"m{self.counter}")
            self.counter += 1
        ids = self.db.add_messages([{"role": "user", "content": c, "id": i} for c, i in zip(contents, given)],
                                   namespace=ns, session_id=session)
        assert ids == given
        self._count_turns([{"id": i, "content": c, "seq": None} for i, c in zip(ids, contents)], ns, session)

    @rule(content=CONTENT, ns=st.sampled_from(NAMESPACES))
    def capture_beside_the_writer(self, content: str, ns: str) -> None:
        """Another process's capture while this writer holds the lock: spooled, then taken in by
        the writer's next add_many (here an empty one), exactly once."""
        mid = f"m{self.counter}"
        self.counter += 1
        got = capture(self.dir / "mem", [{"id": mid, "content": content, "namespace": ns}])
        assert got["spooled"] == 1
        self.db.add_many([])
        self.model[mid] = Model(content, ns)

    def _count_turns(self, records: list[dict[str, Any]], ns: str, session: str) -> None:
        key = (ns, session)
        if any(r["seq"] is None for r in records) and key not in self.turns:
            held = [m.seq for k, m in self.model.items() if (m.namespace, m.session) == key and m.seq is not None]
            self.turns[key] = max(held, default=-1) + 1
        for r in records:
            seq = r["seq"]
            if key in self.turns:
                if seq is None:
                    seq = self.turns[key]
                self.turns[key] = max(self.turns[key], seq + 1)
            self.model[r["id"]] = Model(r["content"], ns, session=session, seq=seq)

    def changeable(self) -> list[str]:
        return sorted(k for k, m in self.model.items() if not m.forgotten and not m.archived)

    @precondition(lambda self: bool(self.changeable()))
    @rule(data=st.data(), content=CONTENT)
    def update(self, data: st.DataObject, content: str) -> None:
        mid = data.draw(st.sampled_from(self.changeable()))
        got = self.db.update(mid, content=content, expected_version=self.model[mid].version)
        self.model[mid].content = content
        self.model[mid].version += 1
        assert got.version == self.model[mid].version

    @precondition(lambda self: bool(self.changeable()))
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        mid = data.draw(st.sampled_from(self.changeable()))
        self.db.forget(mid)
        self.model[mid].forgotten = True
        self.model[mid].version += 1

    @precondition(lambda self: any(m.forgotten and not m.archived for m in self.model.values()))
    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        mid = data.draw(st.sampled_from(sorted(k for k, m in self.model.items() if m.forgotten and not m.archived)))
        self.db.restore(mid)
        self.model[mid].forgotten = False
        self.model[mid].version += 1

    @precondition(lambda self: sum(not (m.forgotten or m.superseded or m.archived) for m in self.model.values()) >= 2)
    @rule(data=st.data())
    def supersede(self, data: st.DataObject) -> None:
        live = sorted(k for k, m in self.model.items() if not (m.forgotten or m.superseded or m.archived))
        old = data.draw(st.sampled_from(live))
        new = data.draw(st.sampled_from([k for k in live if k != old]))
        if self.model[old].namespace != self.model[new].namespace:  # refused, like link: nothing changes
            with pytest.raises(StoreError, match="never linked"):
                self.db.supersede(old, new)
            return
        self.db.supersede(old, new)
        self.model[old].superseded = True
        self.model[old].version += 1
        self.model[new].version += 1
        self.edges[(new, old, "SUPERSEDES")] = 1.0

    @precondition(lambda self: len(self.model) >= 2)
    @rule(data=st.data(), kind=st.sampled_from(["RELATES_TO", "CAUSED_BY"]), conf=st.sampled_from([0.5, 0.7, 1.0]))
    def link(self, data: st.DataObject, kind: str, conf: float) -> None:
        live = self.changeable()
        src = data.draw(st.sampled_from(sorted(self.model)))
        dst = data.draw(st.sampled_from(sorted(self.model)))
        if src == dst or self.model[src].namespace != self.model[dst].namespace or not {src, dst} <= set(live):
            with pytest.raises(ValueError if src == dst and src in live else RuntimeError):
                self.db.link(src, dst, kind, confidence=conf)
            return
        self.db.link(src, dst, kind, confidence=conf, reason="because")
        self.edges[(src, dst, kind)] = conf

    @precondition(lambda self: bool(self.edges))
    @rule(data=st.data())
    def unlink(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.edges)))
        assert self.db.unlink(*key)
        del self.edges[key]
        assert not self.db.unlink(*key)

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def purge(self, data: st.DataObject) -> None:
        mid = data.draw(st.sampled_from(sorted(self.model)))
        self.db.purge(mid)
        del self.model[mid]
        self.purged.add(mid)
        self.edges = {k: c for k, c in self.edges.items() if mid not in k[:2]}

    @rule(days_on=st.sampled_from([1, 31]))
    def purge_forgotten(self, days_on: int) -> None:
        """S7's window: forgotten memories go once 30 days have passed (none before)."""
        due = sorted(k for k, m in self.model.items() if m.forgotten) if days_on > 30 else []
        later = datetime.now(timezone.utc) + timedelta(days=days_on)
        assert self.db.lifecycle.purge_forgotten(now=later) == due
        for mid in due:
            del self.model[mid]
            self.purged.add(mid)
            self.edges = {k: c for k, c in self.edges.items() if mid not in k[:2]}

    @precondition(lambda self: bool(self.model))
    @rule()
    def archive_everything_old(self) -> None:
        """Everything was learned before now + 1 s: every memory's content goes to the archive."""
        report = self.db.lifecycle.archive(datetime.now(timezone.utc) + timedelta(seconds=1))
        fresh = [m for m in self.model.values() if not m.archived]
        assert report["memories"] == len(fresh)
        for m in fresh:
            m.archived = True

    @precondition(lambda self: any(m.archived for m in self.model.values()))
    @rule(data=st.data())
    def unarchive(self, data: st.DataObject) -> None:
        mid = data.draw(st.sampled_from(sorted(k for k, m in self.model.items() if m.archived)))
        with pytest.raises(RuntimeError, match="is archived"):
            self.db.update(mid, memory_type="x")
        assert self.db.lifecycle.unarchive([mid]) == 1
        self.model[mid].archived = False

    @rule()
    def checkpoint(self) -> None:
        self.db.admin.checkpoint()

    @rule()
    def compact(self) -> None:
        self.db.admin.compact()

    @rule()
    def reopen(self) -> None:
        self.db.close()
        self.db = self.open()
        self.turns.clear()  # a new writer reads the positions from the store

    @invariant()
    def get_matches_the_model(self) -> None:
        for mid, m in self.model.items():
            got = self.db.get(mid, include_forgotten=True)
            assert got is not None
            content = "" if m.archived else m.content  # archived text is never handed out
            assert (got.content, got.namespace, got.version) == (content, m.namespace, m.version)
            assert (got.session_id, got.seq) == (m.session, m.seq)
            assert self.db.lifecycle.is_archived(mid) == m.archived
            assert (got.forgotten_at is not None) == m.forgotten
            assert (self.db.get(mid) is None) == m.forgotten

    @invariant()
    def edges_match_the_model(self) -> None:
        for mid in self.model:
            got = {(e.src, e.dst, e.type): e.confidence for e in self.db.edges(mid, include_forgotten=True)}
            assert got == {k: c for k, c in self.edges.items() if k[0] == mid}
            into = {(e.src, e.dst, e.type) for e in self.db.edges(mid, direction="in", include_forgotten=True)}
            assert into == {k for k in self.edges if k[1] == mid}
        assert self.db.stats()["edges"] == len(self.edges)

    @invariant()
    def list_pages_through_exactly_the_current_memories(self) -> None:
        for ns in NAMESPACES:
            seen, cursor = [], None
            while True:
                page = self.db.list(ns, limit=4, cursor=cursor)
                seen += [m.id for m in page]
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            assert len(seen) == len(set(seen))
            assert set(seen) == {k for k, m in self.model.items()
                                 if m.namespace == ns and not m.forgotten and not m.superseded}

    @invariant()
    def history_holds_every_version(self) -> None:
        for mid, m in self.model.items():
            assert [v.version for v in self.db.history(mid)] == list(range(1, m.version + 1))

    @invariant()
    def purged_memories_are_gone(self) -> None:
        for mid in self.purged:
            assert self.db.get(mid, include_forgotten=True) is None
            assert self.db.history(mid) == []

    @invariant()
    def search_sees_exactly_the_current_memories(self) -> None:
        for ns in NAMESPACES:
            want = {k for k, m in self.model.items() if m.namespace == ns and not m.forgotten and not m.superseded}
            hits = self.db.search("alpha", namespace=ns, k=1000)
            assert {h.id for h in hits} == want
            for h in hits:
                assert h.archived == self.model[h.id].archived
                assert (h.memory.content == "") == self.model[h.id].archived
            for mid in [k for k in want if not self.model[k].archived][:3]:  # found by its own content
                # among every current memory ranked for it (a memory that says the same words more
                # often, "alpha alpha" for "alpha", may rank above it: BM25's term frequency), and
                # the best match shares a word with it. The best match by its own score, not the
                # first in order: session support ranks a turn by its match plus a third of its
                # session's best, so two turns of one session that each match a little (the toy
                # dense space's "delta" for "alpha eps alpha", 0.84) can be placed above a lone
                # exact match (1.0), each still scored by its own match (retrieval/session_support.py)
                text = self.model[mid].content
                found = self.db.search(text, namespace=ns, k=len(want))
                assert mid in {h.id for h in found} or any(
                    self.model[h.id].content == text for h in found)  # (a twin may stand in)
                best = max(found, key=lambda h: h.score)
                assert set(self.model[best.id].content.split()) & set(text.split())


StoreMachine.TestCase.settings = settings(
    max_examples=25, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestStoreMachine = StoreMachine.TestCase


class TreeStoreMachine(StoreMachine):
    """The same rules with every namespace searched through an exhaustive centroid tree (probe and
    beam unbounded, so its answers must equal the exact scan's): key mapping, filters, the cached
    mask, tree files across purge/compact/reopen are all checked against the model."""

    tuning = Tuning(checkpoint_rows=5, tree_min_rows=3, tree_leaf_size=2, tree_probe=1_000_000, tree_beam=1_000_000)


TreeStoreMachine.TestCase.settings = settings(
    max_examples=20, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestTreeStoreMachine = TreeStoreMachine.TestCase


class PackedTreeStoreMachine(TreeStoreMachine):
    """The tree-backed rules with packed (half-precision, leaf-ordered) tree copies: the copy goes
    stale on every insert and is re-made by the next search; answers must still equal exact."""

    def open(self) -> Any:
        return open_store(self.dir / "mem", schema=toy_schema(), embedders=toy_embedders(), dedup="off",  # type: ignore[arg-type]
                          index="tree-packed", tuning=self.tuning)


PackedTreeStoreMachine.TestCase.settings = settings(
    max_examples=10, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestPackedTreeStoreMachine = PackedTreeStoreMachine.TestCase


class HybridStoreMachine(StoreMachine):
    """The same rules on a store with a lexical space: BM25 (kept incrementally, saved at
    checkpoints, reloaded, reset by purge) must find exactly the current memories holding a word,
    and every fused strategy must return only current memories of the namespace."""

    def open(self) -> Any:
        from engramdb.spaces.lexical_space import LexicalEmbedder
        from engramdb.spaces.schema import Schema, Space

        schema = Schema([*toy_schema(), Space("lexical", "sparse", 2**31, "jaccard", embedder="lexical")])
        return open_store(self.dir / "mem", schema=schema, embedders={**toy_embedders(), "lexical": LexicalEmbedder()},
                          dedup="off", tuning=self.tuning)

    @invariant()
    def bm25_finds_exactly_the_current_memories_holding_a_word(self) -> None:
        for ns in NAMESPACES:
            current = {k: m for k, m in self.model.items() if m.namespace == ns and not m.forgotten and not m.superseded}
            for word in ("alpha", "gamma"):
                want = {k for k, m in current.items() if word in m.content.split()}
                got = {h.id for h in self.db.search(word, namespace=ns, k=1000, strategy="bm25")}
                assert got == want
            for strategy in ("hybrid", "pipeline"):
                hits = self.db.search("alpha gamma", namespace=ns, k=1000, strategy=strategy)
                assert {h.id for h in hits} <= set(current)


HybridStoreMachine.TestCase.settings = settings(
    max_examples=15, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestHybridStoreMachine = HybridStoreMachine.TestCase

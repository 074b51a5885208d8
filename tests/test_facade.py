"""The facade a user holds in their head (issue 27): the verbs every agent uses on `Store`, the
rest grouped on `db.topics`, `db.importance`, `db.lifecycle`, `db.curiosity` and `db.admin`;
reports returned by the call that made them; the old names working for one release, each with a
DeprecationWarning naming its new home."""

from __future__ import annotations

import asyncio
import inspect
import pathlib
import warnings

import engramdb
import engramdb.aio
import pytest
from engramdb.store.deprecations import LAST, MOVED
from engramdb.topics.results import Topics

CORE = {"add", "add_many", "add_messages", "add_file", "get", "update", "supersede", "forget", "restore", "delete",
        "purge", "search", "context", "feedback", "list", "history", "link", "unlink", "edges", "stats", "close"}
FACETS = {"topics", "importance", "lifecycle", "curiosity", "admin"}


def _conversation(db: engramdb.Store) -> None:
    db.add_messages([{"role": "user", "content": "I moved to Lisbon last spring."},
                     {"role": "assistant", "content": "Lisbon is lovely; how is the new flat?"},
                     {"role": "user", "content": "The flat is small but it has a balcony over the river."}],
                    namespace="u1", session_id="s1")


def test_the_store_has_the_agent_verbs_and_the_facets_only() -> None:
    public = {n for n, v in inspect.getmembers(engramdb.Store) if not n.startswith("_") and callable(v)}
    assert public == CORE
    with engramdb.open() as db:
        assert {n for n in vars(db) if not n.startswith("_")} >= FACETS
        deprecated = set(MOVED) | set(LAST) | {"get_all"}  # old names, one release: not methods of the class
        assert {n for n in dir(db) if not n.startswith("_")} - CORE - FACETS - deprecated <= {
            "path", "read_only", "schema", "embedders", "tuning", "dedup", "dedup_threshold", "contradictions"}


def test_no_store_class_inherits_verbs_it_does_not_have() -> None:
    """No mixins: `Store`'s only base is the read verbs it shares with `Snapshot`, and nothing
    in the facade stands in for a verb another class provides."""
    assert [c.__name__ for c in engramdb.Store.__mro__] == ["Store", "Reads", "ABC", "object"]
    folder = pathlib.Path(engramdb.__file__).parent / "store"
    stubs = [p.name for p in folder.glob("*.py") if "raise NotImplementedError" in p.read_text()]
    assert stubs == []


def test_every_old_name_works_and_warns_with_its_new_home() -> None:
    with engramdb.open() as db:
        _conversation(db)
        for old, (facet, new) in MOVED.items():
            with pytest.warns(DeprecationWarning, match=rf"Store\.{old} is now Store\.{facet}\.{new}"):
                got = getattr(db, old)
            want = getattr(getattr(db, facet), new)
            assert got == want, old  # the same bound method (or the same value)
        with pytest.warns(DeprecationWarning, match="get_all"):
            assert [m.id for m in db.get_all("u1", limit=2)] == [m.id for m in db.list("u1", limit=2)]
        for old in LAST:
            with pytest.warns(DeprecationWarning, match=old):
                getattr(db, old)
        with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
            db.nonsense  # noqa: B018 - the lookup is the test


def test_the_old_calls_give_what_the_new_ones_give() -> None:
    with engramdb.open() as db:
        _conversation(db)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            old_report = db.consolidate(namespace="u1")
            old_pack = db.pack("u1", max_tokens=200)
        new_report = db.lifecycle.consolidate(namespace="u1")
        assert old_report.counts() == new_report.counts()
        assert old_pack.text == db.importance.pack("u1", max_tokens=200).text
        assert db.topics("u1") is not None  # listing topics is still a call
        hits = db.search("where do I live?", namespace="u1")
        assert db.importance(hits[0].id) == db.importance.of(hits[0].id)


def test_add_many_returns_its_own_reports() -> None:
    with engramdb.open(dedup="skip", contradictions="detect") as db:
        first = db.add_many([{"content": "Maya's team has 4 engineers.", "namespace": "n"}])
        assert first.dedup == [] and first.contradictions == []
        again = db.add_many([{"content": "Maya's team has 4 engineers.", "namespace": "n"},
                             {"content": "Maya's team has 7 engineers.", "namespace": "n"}])
        assert again[0] == first[0]  # the duplicate's id is the memory it repeats
        assert [e.action for e in again.dedup] == ["skipped"]
        assert [(p.old, p.new) for p in again.contradictions] == [(first[0], again[1])]


def test_the_async_store_reaches_the_facets() -> None:
    async def run() -> None:
        adb = await engramdb.aio.open(None)
        try:
            await adb.add_messages([{"role": "user", "content": "I moved to Lisbon last spring."}], namespace="u1")
            report = await adb.lifecycle.dream("u1")
            assert report["dry_run"] is True
            assert isinstance(await adb.topics("u1"), Topics)
            assert await adb.admin.settle(5) is True
        finally:
            await adb.close()

    asyncio.run(run())

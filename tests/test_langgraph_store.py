"""EngramStore, LangGraph's BaseStore over engramdb (issue 27), held to LangGraph's own InMemoryStore.

The same operations run against both and the answers are compared, with the differences the
adapter documents (python/engramdb/integrations/langgraph/engram_store.py): the order of a search
without a query (newest update first here, insertion order there), the ranking and scores of a
query (compared on what must agree: the full set, and the first hit of a query only one item
matches), namespaces left empty by deletes (InMemoryStore keeps listing them). Also: hostile
namespace labels, the store reopened from its folder, a compiled LangGraph graph run twice, and
abatch under asyncio.
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any, TypedDict

import engramdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

pytest.importorskip("langgraph", reason="the LangGraph adapter needs langgraph: pip install 'engramdb[langgraph]'")

from engramdb.integrations.langgraph import EngramStore, decode_namespace, encode_namespace, item_id
from engramdb.integrations.langgraph.engram_store import DELETED
from engramdb.model.memory import check_namespace
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

VOCAB = ("apple", "banana", "cherry", "delta", "echo", "falcon", "granite", "harbor")


def bag_of_words(texts: list[str]) -> list[list[float]]:
    """InMemoryStore's embedder in these tests: one dimension per word of VOCAB, so a query word
    matches exactly the items holding it (cosine 0 for the others)."""
    return [[float(w in t.split()) for w in VOCAB] + [0.01] for t in texts]


def reference(fields: list[str] | None = None) -> InMemoryStore:
    return InMemoryStore(index={"dims": len(VOCAB) + 1, "embed": bag_of_words, "fields": fields or ["text"]})


def ours(path: Path | None = None, **kw: Any) -> EngramStore:
    return EngramStore.open(path, index={"fields": ["text"]}, **kw)


def view(item: Item | None) -> tuple[Any, ...] | None:
    """What two stores must agree on for an item (their clocks differ)."""
    return None if item is None else (tuple(item.namespace), item.key, json.dumps(item.value, sort_keys=True))


def stored_id(namespace: tuple[str, ...], key: str) -> str:
    return item_id(encode_namespace(namespace), key)


# ---------------------------------------------------------------------------- namespaces and keys

LABELS = ["users", "maya", "a/b", "a", "b", "a+2Fb", "+", "+2F", "小明", "😀", "with space", "-lead", "*", "x" * 40]
HOSTILE = [("users", "a/b"), ("users", "a", "b"), ("users", "a+2Fb"), ("users", "+"), ("users", "+2F"),
           ("小明", "😀"), ("with space",), ("-lead",), ("*",), ("users",), ("users", "maya")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=5))
def test_a_namespace_encodes_reversibly_into_what_engramdb_allows(labels: list[str]) -> None:
    namespace = tuple(labels)  # any text at all: the separator, the escape, empty labels, unicode
    text = encode_namespace(namespace)
    assert decode_namespace(text) == namespace
    assert encode_namespace(decode_namespace(text) or ()) == text
    if len(text) <= 128:
        check_namespace(text)  # engramdb's own rule, raises when the text is no namespace


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=4), st.lists(st.text(max_size=6), max_size=4))
def test_two_namespaces_never_share_an_encoding_or_an_id(a: list[str], b: list[str]) -> None:
    if a != b:
        assert encode_namespace(tuple(a)) != encode_namespace(tuple(b))
        assert stored_id(tuple(a), "k") != stored_id(tuple(b), "k")


def test_hostile_labels_and_separator_collisions_by_hand() -> None:
    assert encode_namespace(("a/b",)) != encode_namespace(("a", "b"))
    assert encode_namespace(("a+2Fb",)) != encode_namespace(("a/b",))
    assert encode_namespace(("",)) == "langgraph/" and decode_namespace("langgraph/") == ("",)
    assert decode_namespace("langgraph//") == ("", "")
    assert encode_namespace(()) == "langgraph" and decode_namespace("langgraph") == ()
    for text in ("langgraph/+41", "langgraph/+2f", "langgraph/+C3", "langgraph/a b", "langgraphx/a", "other/a"):
        assert decode_namespace(text) is None, text  # not an encoding this adapter makes: not its namespace


def test_hostile_labels_round_trip_through_the_store(tmp_path: Path) -> None:
    with ours(tmp_path / "m") as store:
        for i, ns in enumerate(HOSTILE):
            store.put(ns, f"k{i}", {"text": "apple", "i": i})
        for i, ns in enumerate(HOSTILE):
            got = store.get(ns, f"k{i}")
            assert got is not None and got.namespace == ns and got.value["i"] == i
            assert [x.value["i"] for x in store.search(ns) if x.namespace == ns] == [i]
        assert store.list_namespaces(limit=100) == sorted(HOSTILE)
        assert store.list_namespaces(prefix=("users", "a"), limit=100) == [("users", "a", "b")]
        assert store.list_namespaces(prefix=("users", "a/b"), limit=100) == [("users", "a/b")]
        assert store.get(("users", "a"), "k1") is None and store.get(("users",), "k1") is None
    with ours(tmp_path / "m") as store:  # and from the folder
        assert store.list_namespaces(limit=100) == sorted(HOSTILE)


def test_labels_langgraph_refuses_are_refused_by_batch_too() -> None:
    mem, store = reference(), ours()
    for ns in (("users", ""), ("users", "a.b"), ("nul\x00",), ()):
        for st_ in (mem, store):
            with pytest.raises(InvalidNamespaceError):
                st_.put(ns, "k", {"text": "apple"})  # LangGraph's own check, before either store runs
        with pytest.raises(InvalidNamespaceError):  # the batch path checks what put() would
            store.batch([PutOp(ns, "k", {"text": "apple"})])
    assert store.db.stats()["memories"] == 0
    store.close()


def test_a_namespace_too_long_to_store_is_refused_naming_it_before_anything_is_written() -> None:
    store = ours()
    long = ("users", "ü" * 30)  # 60 UTF-8 bytes, 180 characters escaped
    with pytest.raises(InvalidNamespaceError, match="128"):
        store.batch([PutOp(("ok",), "k", {"text": "apple"}), PutOp(long, "k", {"text": "apple"})])
    assert store.db.stats()["memories"] == 0 and store.get(("ok",), "k") is None
    assert store.get(long, "k") is None and store.search(long) == []  # reads find nothing there, no error
    store.close()


def test_keys_are_any_string_and_stable_ids() -> None:
    store = ours()
    keys = ["", "k", "a/b", "小明", "x" * 500, "😀 emoji", "."]
    for k in keys:
        store.put(("ns",), k, {"text": "apple", "k": k})
    assert sorted(x.key for x in store.search(("ns",), limit=100)) == sorted(keys)
    for k in keys:
        got = store.get(("ns",), k)
        assert got is not None and got.value["k"] == k
        assert store.db.get(stored_id(("ns",), k)) is not None  # the id is computable, fixed in length
    store.close()


# ---------------------------------------------------------------------------- one memory per key

def test_putting_a_key_again_writes_a_new_version_of_one_memory(tmp_path: Path) -> None:
    with ours(tmp_path / "m") as store:
        store.put(("users", "maya"), "food", {"text": "apple pie"})
        first = store.get(("users", "maya"), "food")
        store.put(("users", "maya"), "food", {"text": "banana bread"})
        second = store.get(("users", "maya"), "food")
        assert first is not None and second is not None
        assert second.value == {"text": "banana bread"}
        assert second.created_at == first.created_at and second.updated_at > first.updated_at
        assert first.created_at == first.updated_at
        db = store.db
        assert len(db) == 1 and db.stats()["namespaces"] == {"langgraph/users/maya": 1}
        mid = stored_id(("users", "maya"), "food")
        assert [m.metadata["langgraph"]["value"]["text"] for m in db.history(mid)] == ["apple pie", "banana bread"]
        assert db.get(mid).content == "banana bread"  # the text a query matches: the index field


def test_delete_forgets_and_a_put_after_it_starts_the_key_again() -> None:
    store = ours()
    store.put(("ns",), "k", {"text": "apple"})
    before = store.get(("ns",), "k")
    store.delete(("ns",), "k")
    mid = stored_id(("ns",), "k")
    assert store.get(("ns",), "k") is None and store.search(("ns",)) == [] and store.list_namespaces() == []
    assert store.db.get(mid) is None and store.db.get(mid, include_forgotten=True) is not None  # soft, as forget
    store.delete(("ns",), "k")  # deleting what is gone is a no-op, as in InMemoryStore
    store.put(("ns",), "k", {"text": "banana"})
    again = store.get(("ns",), "k")
    assert before is not None and again is not None and again.value == {"text": "banana"}
    assert again.created_at > before.updated_at  # a new item: created when put again
    assert len(store.db) == 1 and len(store.db.history(mid)) >= 3
    store.close()


def test_an_item_marked_deleted_stays_hidden_if_the_process_stopped_mid_delete_or_mid_put() -> None:
    """A delete marks the memory, then forgets it; a put after it restores, then rewrites. The
    store left between the two writes (made here with the public verbs) shows no item."""
    store = ours()
    store.put(("ns",), "gone", {"text": "apple"})
    store.put(("ns",), "kept", {"text": "banana"})
    db = store.db
    db.update(stored_id(("ns",), "gone"), source=DELETED)  # stopped between the mark and the forget
    assert store.get(("ns",), "gone") is None
    assert [x.key for x in store.search(("ns",))] == ["kept"]
    assert [x.key for x in store.search(("ns",), query="apple")] == ["kept"]
    store.delete(("ns",), "gone")  # the delete finishes
    assert db.get(stored_id(("ns",), "gone")) is None
    db.restore(stored_id(("ns",), "gone"))  # a put stopped between its restore and its rewrite
    assert store.get(("ns",), "gone") is None and [x.key for x in store.search(("ns",))] == ["kept"]
    store.delete(("ns",), "kept")
    db.restore(stored_id(("ns",), "kept"))
    assert store.list_namespaces() == []  # the old value never shows again
    store.put(("ns",), "gone", {"text": "cherry"})
    got = store.get(("ns",), "gone")
    assert got is not None and got.value == {"text": "cherry"}
    store.close()


def test_items_live_beside_the_stores_other_memories() -> None:
    store = ours()
    db = store.db
    db.add("a note of the user's own", namespace="langgraph")  # the bare prefix: no item namespace
    db.add("another", namespace="langgraph/users", source="langgraph")  # item-like, holding no item
    db.add("one more", namespace="langgraph/team", source="langgraph")
    db.add("elsewhere", namespace="maya")
    store.put(("users",), "k", {"text": "apple"})
    assert [x.key for x in store.search(())] == ["k"]
    assert [x.key for x in store.search((), query="another")] == ["k"]
    assert store.list_namespaces() == [("users",)]
    other = EngramStore(db, namespace_prefix="team2")  # a second adapter over the same store
    assert other.search(()) == [] and other.list_namespaces() == []
    other.put(("users",), "k", {"text": "banana"})
    assert store.get(("users",), "k").value == {"text": "apple"}  # type: ignore[union-attr]
    assert other.get(("users",), "k").value == {"text": "banana"}  # type: ignore[union-attr]
    store.close()


# ---------------------------------------------------------------------------- bad input

@pytest.mark.parametrize(("value", "error", "match"), [
    ({"x": math.nan}, ValueError, "JSON"),
    ({"x": {1: "a"}}, ValueError, "key 1"),
    ({"x": "half \ud83d"}, ValueError, "UTF-8"),
    (["not", "a", "dict"], TypeError, "dict"),
    ({"x": object()}, ValueError, "JSON"),
])
def test_a_bad_value_is_refused_naming_it_and_nothing_of_the_batch_is_written(value: Any, error: type[Exception],
                                                                                match: str) -> None:
    store = ours()
    store.put(("ns",), "old", {"text": "apple"})
    with pytest.raises(error, match=match):
        store.batch([PutOp(("ns",), "new", {"text": "banana"}), PutOp(("ns",), "old", None),
                     PutOp(("ns",), "bad", value)])
    assert [x.key for x in store.search(("ns",))] == ["old"] and len(store.db) == 1
    store.close()


def test_other_bad_ops_are_refused_before_anything_runs() -> None:
    store = ours()
    deep: dict[str, Any] = {"text": "apple"}
    for _ in range(70):
        deep = {"d": deep}
    cases: list[tuple[Any, type[Exception], str]] = [
        (PutOp(("ns",), "k", deep), ValueError, "nested deeper"),
        (PutOp(("ns",), "half \ud83d", {"text": "a"}), ValueError, "key"),
        (PutOp(("ns",), 7, {"text": "a"}), TypeError, "key must be a string"),  # type: ignore[arg-type]
        (PutOp(("ns",), "k", {"text": "a"}, ttl=5.0), NotImplementedError, "TTL"),
        (PutOp(("ns",), "k", {"text": "a"}, index="text"), TypeError, "index"),  # type: ignore[arg-type]
        (SearchOp(("ns",), filter={"n": {"$in": [1]}}), ValueError, r"\$in"),
        (SearchOp(("ns",), filter={"n": {"$gt": "many"}}), ValueError, "numbers"),
        (SearchOp(("ns",), limit=-1), ValueError, "limit"),
        (SearchOp(("ns",), offset=True), ValueError, "offset"),  # type: ignore[arg-type]
        (ListNamespacesOp(max_depth=0), ValueError, "max_depth"),
        (ListNamespacesOp(match_conditions=(MatchCondition("middle", ("a",)),)), ValueError,  # type: ignore[arg-type]
         "match_type"),
        (GetOp("ns", "k"), InvalidNamespaceError, "tuple"),  # type: ignore[arg-type]
        ("get", TypeError, "unknown operation"),
    ]
    for op, error, match in cases:
        with pytest.raises(error, match=match):
            store.batch([PutOp(("ns",), "first", {"text": "apple"}), op])
    assert len(store.db) == 0
    with pytest.raises(NotImplementedError):
        store.put(("ns",), "k", {"text": "a"}, ttl=5)  # LangGraph's own refusal: supports_ttl is False
    with pytest.raises(ValueError, match="embed"):
        EngramStore(store.db, index={"dims": 8, "embed": bag_of_words, "fields": ["text"]})
    with pytest.raises(ValueError, match="namespace_prefix"):
        EngramStore(store.db, namespace_prefix="a/b")
    with pytest.raises(TypeError, match="engramdb.Store"):
        EngramStore(InMemoryStore())  # type: ignore[arg-type]
    store.close()


def test_text_over_the_content_limit_is_refused_before_writing() -> None:
    store = ours(tuning=engramdb.Tuning(max_content_bytes=64))
    with pytest.raises(ValueError, match="max_content_bytes"):
        store.batch([PutOp(("ns",), "a", {"text": "apple"}), PutOp(("ns",), "b", {"text": "apple " * 20})])
    assert len(store.db) == 0
    store.put(("ns",), "c", {"text": "apple", "big": "x" * 500}, index=["text"])  # only the index text counts
    store.close()


# ---------------------------------------------------------------------------- filters, as InMemoryStore

VALUES = [
    {"text": "apple", "n": 1, "tag": "red", "meta": {"a": 1, "b": [1, 2]}, "s": "5"},
    {"text": "banana", "n": 2, "tag": "blue", "meta": {"a": 2}, "s": "10"},
    {"text": "cherry", "n": 3.5, "tag": "red", "meta": {"a": 1, "b": [2, 1]}, "s": "7.5"},
    {"text": "delta", "n": -4, "tag": None, "meta": {"a": 0}, "s": "-1", "flag": True},
]
FILTERS = [
    {}, {"tag": "red"}, {"tag": None}, {"n": 2}, {"n": 2.0}, {"meta": {"a": 1}}, {"meta": {"b": [1, 2]}},
    {"n": {"$gt": 1}}, {"n": {"$gte": 2, "$lt": 3.5}}, {"n": {"$lte": -4}}, {"n": {"$ne": 2}},
    {"tag": {"$eq": "blue"}}, {"tag": {"$ne": "red"}}, {"s": {"$gt": 6}}, {"s": {"$lte": 5}}, {"tag": "red", "n": {"$gt": 2}},
    {"missing": None}, {"missing": {"$ne": 1}}, {"flag": True}, {"meta": {"a": {"$gt": 1}}},
]


@pytest.mark.parametrize("flt", FILTERS, ids=[json.dumps(f) for f in FILTERS])
def test_filters_select_what_inmemorystore_selects(flt: dict[str, Any]) -> None:
    mem, store = reference(), ours()
    for i, v in enumerate(VALUES):
        for s in (mem, store):
            s.put(("ns", str(i % 2)), f"k{i}", v)
    for s in (mem, store):
        s.put(("other",), "k9", VALUES[0])
    want = {view(x) for x in mem.search(("ns",), filter=flt, limit=100)}
    assert {view(x) for x in store.search(("ns",), filter=flt, limit=100)} == want
    assert {view(x) for x in store.search(("ns",), query="apple", filter=flt, limit=100)} == want
    store.close()


def test_an_ordering_operator_on_a_missing_or_non_number_field_does_not_match() -> None:
    mem, store = reference(), ours()
    for s in (mem, store):
        s.put(("ns",), "a", {"text": "apple", "n": 5})
        s.put(("ns",), "b", {"text": "apple", "n": "many"})
        s.put(("ns",), "c", {"text": "apple"})
    with pytest.raises((TypeError, ValueError)):
        mem.search(("ns",), filter={"n": {"$gt": 1}})  # InMemoryStore: float("many") raises
    assert [x.key for x in store.search(("ns",), filter={"n": {"$gt": 1}})] == ["a"]
    assert sorted(x.key for x in store.search(("ns",), filter={"n": {"$ne": 5}})) == ["b", "c"]
    store.close()


# ---------------------------------------------------------------------------- queries

def test_a_query_ranks_by_the_index_fields_and_unindexed_items_follow_unscored() -> None:
    store = ours()
    store.put(("ns",), "a", {"text": "apple harbor", "note": "banana"})
    store.put(("ns",), "b", {"text": "banana split"})
    store.put(("ns",), "c", {"text": "banana boat"}, index=False)
    store.put(("ns",), "d", {"title": "cherry"})  # no text at the index field: not ranked either
    store.put(("ns",), "e", {"text": "granite", "title": "banana"}, index=["title"])
    hits = store.search(("ns",), query="banana", limit=10)
    assert [h.key for h in hits][:2] in (["b", "e"], ["e", "b"])  # "a"'s banana is in a field not indexed
    assert all(h.score is not None and 0.0 <= h.score <= 1.0 for h in hits if h.key in "abe")
    assert hits[0].score is not None and hits[0].score > 0.2
    assert {h.key for h in hits[3:]} == {"c", "d"} and all(h.score is None for h in hits[3:])
    assert [h.key for h in store.search(("ns",), query="banana", limit=2, offset=3)] == [h.key for h in hits[3:5]]
    assert store.search(("ns",), query="apple", limit=1)[0].key == "a"
    store.close()


def test_a_query_across_namespaces_merges_by_score_and_pages_consistently() -> None:
    store = ours()
    for u in range(6):
        for i in range(5):
            word = VOCAB[(u + i) % len(VOCAB)]
            store.put(("users", f"u{u}"), f"k{i}", {"text": f"{word} {VOCAB[i]}", "u": u})
    full = store.search(("users",), query="echo", limit=100)
    assert len(full) == 30 and len({(h.namespace, h.key) for h in full}) == 30
    scores = [h.score for h in full if h.score is not None]
    assert scores == sorted(scores, reverse=True) and all("echo" in h.value["text"] for h in full[:3])
    pages = [store.search(("users",), query="echo", limit=7, offset=o) for o in range(0, 30, 7)]
    assert [(h.namespace, h.key) for p in pages for h in p] == [(h.namespace, h.key) for h in full]
    filtered = store.search(("users",), query="echo", filter={"u": 3}, limit=100)
    assert {h.namespace for h in filtered} == {("users", "u3")} and len(filtered) == 5
    store.close()


# ---------------------------------------------------------------------------- the same as InMemoryStore

NAMESPACES = [("users", "maya"), ("users", "bob"), ("users", "a/b"), ("users", "a", "b"), ("小明", "😀"),
              ("users", "bob", "notes"), ("*",)]
PREFIXES = [(), ("users",), ("users", "bob"), ("users", "a"), ("小明",), ("nope",), ("users", "a/b")]
PATTERNS = [None, ("users",), ("users", "*"), ("*", "bob"), ("b",), ("notes",), ("*",), ("小明", "😀")]
KEYS = ["k1", "k2", "", "a/b", "小"]
values_st = st.fixed_dictionaries({
    "text": st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3).map(" ".join),
    "n": st.integers(-3, 3),
    "tag": st.sampled_from(["red", "blue", None]),
}, optional={"meta": st.fixed_dictionaries({"a": st.integers(0, 2)}), "list": st.lists(st.integers(0, 2), max_size=2)})
filters_st = st.one_of(
    st.none(),
    st.fixed_dictionaries({"tag": st.sampled_from(["red", "blue", None])}),
    st.fixed_dictionaries({"n": st.integers(-3, 3)}),
    st.fixed_dictionaries({"n": st.dictionaries(st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$ne", "$eq"]),
                                                st.integers(-3, 3), min_size=1, max_size=2)}),
    st.fixed_dictionaries({"meta": st.fixed_dictionaries({"a": st.integers(0, 2)})}),
    st.fixed_dictionaries({"tag": st.just("red"), "n": st.fixed_dictionaries({"$gte": st.integers(-3, 3)})}),
)


class SameAsInMemoryStore(RuleBasedStateMachine):
    """Random puts, deletes, gets, searches and listings (alone and in batches) on EngramStore
    over a store folder, which is sometimes closed and reopened, and on InMemoryStore."""

    def __init__(self) -> None:
        super().__init__()
        self.mem = reference()
        self.store: EngramStore | None = None
        self.unindexed: set[tuple[tuple[str, ...], str]] = set()  # put last with index=False

    @initialize()
    def open_store(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="engramdb-langgraph-")
        self.path = Path(self.folder) / "m"
        self.store = ours(self.path)

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
            shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def s(self) -> EngramStore:
        assert self.store is not None
        return self.store

    @rule(ns=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS), value=values_st,
          index=st.sampled_from([None, None, None, False]))
    def put(self, ns: tuple[str, ...], key: str, value: dict[str, Any], index: Any) -> None:
        for s in (self.mem, self.s):
            s.put(ns, key, value, index=index)
        (self.unindexed.add if index is False else self.unindexed.discard)((ns, key))

    @rule(ns=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS))
    def delete(self, ns: tuple[str, ...], key: str) -> None:
        for s in (self.mem, self.s):
            s.delete(ns, key)
        self.unindexed.discard((ns, key))

    @rule(ns=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS))
    def get(self, ns: tuple[str, ...], key: str) -> None:
        assert view(self.s.get(ns, key)) == view(self.mem.get(ns, key))

    @rule(prefix=st.sampled_from(PREFIXES), flt=filters_st, limit=st.integers(0, 6), offset=st.integers(0, 6))
    def search(self, prefix: tuple[str, ...], flt: dict[str, Any] | None, limit: int, offset: int) -> None:
        full = self.s.search(prefix, filter=flt, limit=1000)
        want = self.mem.search(prefix, filter=flt, limit=1000)
        assert sorted(map(view, full)) == sorted(map(view, want))  # type: ignore[type-var]
        stamps = [x.updated_at for x in full]
        assert stamps == sorted(stamps, reverse=True)  # newest update first (documented)
        page = self.s.search(prefix, filter=flt, limit=limit, offset=offset)
        assert [view(x) for x in page] == [view(x) for x in full[offset:offset + limit]]
        assert len(page) == len(self.mem.search(prefix, filter=flt, limit=limit, offset=offset))

    @rule(prefix=st.sampled_from(PREFIXES), flt=filters_st, word=st.sampled_from(VOCAB))
    def query(self, prefix: tuple[str, ...], flt: dict[str, Any] | None, word: str) -> None:
        got = self.s.search(prefix, query=word, filter=flt, limit=1000)
        want = self.mem.search(prefix, query=word, filter=flt, limit=1000)
        assert sorted(map(view, got)) == sorted(map(view, want))  # type: ignore[type-var]
        holders = [view(x) for x in got if word in x.value["text"].split()
                   and (x.namespace, x.key) not in self.unindexed]
        if len(holders) == 1:  # an easy query: one indexed item holds the word; it ranks first
            assert view(got[0]) == holders[0]
            if not any((x.namespace, x.key) in self.unindexed for x in want):
                # (InMemoryStore keeps the vectors of a key's earlier value when it is put again
                # with index=False, and ranks it by them: compared where no such item is)
                assert view(want[0]) == holders[0]

    @rule(prefix=st.sampled_from(PATTERNS), suffix=st.sampled_from(PATTERNS),
          max_depth=st.sampled_from([None, 1, 2, 3]), limit=st.integers(1, 8), offset=st.integers(0, 3))
    def list_namespaces(self, prefix: Any, suffix: Any, max_depth: int | None, limit: int, offset: int) -> None:
        # InMemoryStore keeps listing a namespace whose items were deleted (or that a get only read):
        # its answer is taken from one holding just the items that are there
        fresh = InMemoryStore()
        for x in self.mem.search((), limit=10_000):
            fresh.put(x.namespace, x.key, x.value)
        kw = {"prefix": prefix, "suffix": suffix, "max_depth": max_depth, "limit": limit, "offset": offset}
        assert self.s.list_namespaces(**kw) == fresh.list_namespaces(**kw)

    @rule(ops=st.lists(st.one_of(
        st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(KEYS), st.one_of(st.none(), values_st))
        .map(lambda a: PutOp(*a)),
        st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(KEYS)).map(lambda a: GetOp(*a)),
        st.tuples(st.sampled_from(PREFIXES), filters_st).map(lambda a: SearchOp(a[0], a[1], 1000)),
    ), min_size=1, max_size=5))
    def batch(self, ops: list[Any]) -> None:
        try:
            want = self.mem.batch(ops)
        except ValueError as exc:  # InMemoryStore embeds two keys put with one text in a batch once,
            assert "Number of embeddings" in str(exc)  # then fails, before it changes anything
            return
        got = self.s.batch(ops)  # reads see the store before the batch's puts, in both
        self.unindexed -= {(op.namespace, op.key) for op in ops if isinstance(op, PutOp)}
        for op, g, w in zip(ops, got, want):
            if isinstance(op, GetOp):
                assert view(g) == view(w)  # type: ignore[arg-type]
            elif isinstance(op, SearchOp):
                assert sorted(map(view, g)) == sorted(map(view, w))  # type: ignore[arg-type]
            else:
                assert g is None and w is None

    @rule()
    def reopen(self) -> None:
        self.s.close()
        self.store = ours(self.path)

    @invariant()
    def one_memory_per_item(self) -> None:
        if self.store is not None:
            assert len(self.s.db) == len(self.mem.search((), limit=10_000))


SameAsInMemoryStore.TestCase.settings = settings(
    max_examples=25, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TestSameAsInMemoryStore = SameAsInMemoryStore.TestCase


# ---------------------------------------------------------------------------- reopened

def test_a_store_reopened_from_its_folder_gives_the_same_answers(tmp_path: Path) -> None:
    def answers(store: BaseStore) -> list[Any]:
        return [
            [view(x) for x in store.search(("users",), limit=100)],
            [(view(x), x.created_at, x.updated_at) for x in store.search((), limit=100)],
            [view(x) for x in store.search(("users",), query="banana", limit=100)],
            [view(x) for x in store.search(("users",), filter={"n": {"$gte": 2}}, limit=100)],
            store.list_namespaces(max_depth=2), store.list_namespaces(suffix=("notes",)),
            view(store.get(("users", "maya"), "k1")), view(store.get(("users", "maya"), "k0")),
        ]

    with ours(tmp_path / "m") as store:
        for i in range(12):
            store.put(("users", f"u{i % 3}", "notes") if i % 2 else ("users", "maya"), f"k{i}",
                      {"text": f"{VOCAB[i % len(VOCAB)]} banana" if i % 4 == 0 else VOCAB[i % 5], "n": i})
        store.delete(("users", "maya"), "k0")
        store.put(("users", "maya"), "k2", {"text": "cherry again", "n": 20})
        before = answers(store)
    with ours(tmp_path / "m") as store:
        assert answers(store) == before
    with ours(tmp_path / "m", read_only=True) as store:  # a reader sees the same
        assert answers(store) == before


# ---------------------------------------------------------------------------- a real LangGraph graph

class Turn(TypedDict):
    user: str
    said: str
    recalled: list[str]
    related: list[str]


def remember(state: Turn) -> dict[str, Any]:
    """A node that reads what earlier runs stored, through `get_store()`, then stores this turn."""
    from langgraph.config import get_store

    store = get_store()
    ns = ("memories", state["user"])
    recalled = sorted(x.value["text"] for x in store.search(ns, limit=100))
    store.put(ns, f"turn-{len(recalled)}", {"text": state["said"]})
    return {"recalled": recalled}


def relate(state: Turn, *, store: BaseStore) -> dict[str, Any]:
    """A node given the store as its `store` argument: a query over the user's memories."""
    hits = store.search(("memories", state["user"]), query=state["said"].split()[0], limit=1)
    return {"related": [h.value["text"] for h in hits]}


def graph_over(store: BaseStore) -> Any:
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(Turn)
    builder.add_node("remember", remember)
    builder.add_node("relate", relate)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "relate")
    builder.add_edge("relate", END)
    return builder.compile(store=store)


def test_a_compiled_graph_run_twice_sees_its_first_runs_memories(tmp_path: Path) -> None:
    with ours(tmp_path / "m") as store:
        out = graph_over(store).invoke({"user": "maya", "said": "apple pie for dessert", "recalled": [],
                                        "related": []})
        assert out["recalled"] == [] and out["related"] == ["apple pie for dessert"]
    with ours(tmp_path / "m") as store:  # another process's run, say: the folder is the memory
        out = graph_over(store).invoke({"user": "maya", "said": "banana bread", "recalled": [], "related": []})
        assert out["recalled"] == ["apple pie for dessert"]
        out = asyncio.run(graph_over(store).ainvoke({"user": "maya", "said": "apple crumble", "recalled": [],
                                                     "related": []}))
        assert out["recalled"] == ["apple pie for dessert", "banana bread"]
        assert out["related"][0] in ("apple pie for dessert", "apple crumble")
        other = graph_over(store).invoke({"user": "bob", "said": "cherry", "recalled": [], "related": []})
        assert other["recalled"] == []  # another user's namespace
        assert store.list_namespaces() == [("memories", "bob"), ("memories", "maya")]


# ---------------------------------------------------------------------------- asyncio

def test_abatch_under_asyncio_with_concurrent_writers_of_one_key(tmp_path: Path) -> None:
    async def main(store: EngramStore) -> None:
        await asyncio.gather(*(store.aput(("ns", f"u{i % 3}"), f"k{i}", {"text": VOCAB[i % 8], "i": i})
                               for i in range(24)))
        # ten writers of one new key at once: one memory, holding one of their values
        await asyncio.gather(*(store.aput(("ns", "same"), "k", {"text": "apple", "i": i}) for i in range(10)))
        got = await store.aget(("ns", "same"), "k")
        assert got is not None and got.value["i"] in range(10)
        results = await store.abatch([GetOp(("ns", "u0"), "k0"), SearchOp(("ns",), limit=100),
                                      SearchOp(("ns",), query="banana", limit=3),
                                      ListNamespacesOp(limit=10), PutOp(("ns", "u0"), "k0", None)])
        assert view(results[0]) == (("ns", "u0"), "k0", json.dumps({"i": 0, "text": "apple"}))  # type: ignore[arg-type]
        assert len(results[1]) == 25  # type: ignore[arg-type]
        assert "banana" in results[2][0].value["text"]  # type: ignore[index]
        assert results[3] == [("ns", "same"), ("ns", "u0"), ("ns", "u1"), ("ns", "u2")]
        assert await store.aget(("ns", "u0"), "k0") is None
        assert len(await store.asearch(("ns",), limit=100)) == 24
        assert await store.alist_namespaces(prefix=("ns",), max_depth=1) == [("ns",)]
        await store.adelete(("ns", "same"), "k")
        assert await store.aget(("ns", "same"), "k") is None

    with ours(tmp_path / "m") as store:
        asyncio.run(main(store))
        assert len(store.db) == 24 - 1 and len(store.db.history(stored_id(("ns", "same"), "k"))) >= 10


# ------------------------------------------------------------------------------ adversary 5 (F6, F14)
def _archived(path: Path) -> EngramStore:
    """A store whose two items' memories engramdb's upkeep archived (`engramdb archive`)."""
    from datetime import datetime, timedelta, timezone

    store = ours(path)
    store.put(("users", "maya"), "pref", {"text": "likes green tea"})
    store.put(("users", "maya"), "job", {"text": "works as a nurse in Porto"})
    done = store.db.lifecycle.archive(datetime.now(timezone.utc) + timedelta(seconds=1),
                                      namespace=encode_namespace(("users", "maya")))
    assert done["memories"] == 2
    return store


def test_an_archived_items_key_can_be_put_and_deleted(tmp_path: Path) -> None:
    ns = ("users", "maya")
    with _archived(tmp_path / "s") as store:
        pref = store.get(ns, "pref")
        assert pref is not None and pref.value == {"text": "likes green tea"}  # readable while archived
        store.put(ns, "pref", {"text": "now likes coffee"})
        assert store.get(ns, "pref").value == {"text": "now likes coffee"}  # type: ignore[union-attr]
        assert [(i.key, i.score is not None) for i in store.search(ns, query="coffee", limit=1)] == [("pref", True)]
        store.delete(ns, "job")
        assert store.get(ns, "job") is None
        store.put(ns, "job", {"text": "works as a teacher"})
        assert store.get(ns, "job").value == {"text": "works as a teacher"}  # type: ignore[union-attr]
    assert engramdb.verify(tmp_path / "s")["ok"]
    with ours(tmp_path / "s") as again:
        assert {i.key: i.value["text"] for i in again.search(ns)} == {"pref": "now likes coffee",
                                                                     "job": "works as a teacher"}


def test_a_batch_touching_an_archived_item_is_written_whole(tmp_path: Path) -> None:
    ns = ("users", "maya")
    with _archived(tmp_path / "s") as store:
        store.batch([PutOp(ns, "new", {"text": "a new fact"}), PutOp(ns, "pref", {"text": "coffee now"}),
                     PutOp(ns, "job", None)])
        assert store.get(ns, "new").value == {"text": "a new fact"}  # type: ignore[union-attr]
        assert store.get(ns, "pref").value == {"text": "coffee now"}  # type: ignore[union-attr]
        assert store.get(ns, "job") is None


def test_contradictions_supersede_is_refused_each_key_is_its_own_fact(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="contradictions='supersede'.*each key is its own fact"):
        EngramStore.open(tmp_path / "s", index={"fields": ["text"]}, contradictions="supersede")
    assert not (tmp_path / "s").exists(), "refused before the store was opened"
    with engramdb.open(tmp_path / "own", contradictions="supersede") as db, \
            pytest.raises(ValueError, match="db was opened with contradictions='supersede'"):
        EngramStore(db)
    # the default, and "detect" (it only reports), keep every key's item ranked
    for options in ({}, {"contradictions": "detect"}):
        with ours(tmp_path / f"ok-{len(options)}", **options) as store:
            store.put(("u",), "a", {"text": "Maya's team has 4 engineers."})
            store.put(("u",), "b", {"text": "Maya's team has 7 engineers."})
            found = {i.key: i.score for i in store.search(("u",), query="how many engineers are in Maya's team")}
            assert set(found) == {"a", "b"} and None not in found.values(), (options, found)

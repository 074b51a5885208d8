"""`EngramStore`: LangGraph's `BaseStore` over an engramdb store.

Each item is one memory: its namespace tuple is an engramdb namespace (`names.py`: reversible,
under a prefix, `langgraph/` by default), its key a stable id (`names.item_id`), its value kept
whole in the memory's metadata and its content the text a query is matched against (`values.py`).
A second put of a key writes a new version of the same memory (the history keeps the old value);
a delete forgets it (soft, as engramdb's `forget`: `Store.purge` erases for good). `created_at` is
when the key was first put (since its last delete), `updated_at` when it was last put: the
memory's valid-from and system times.

A batch runs as LangGraph's own stores run one: every get, search and listing reads the store as
it was before the batch, then the puts are written (the last op on a key wins); every op is
checked first, so a bad one refuses the batch before anything is written.

Where it differs from `InMemoryStore` (LangGraph leaves these to each store; see
docs/guides/langgraph.md):
- a search without a query lists the newest update first (as `PostgresStore` does; InMemoryStore
  lists in insertion order);
- a query always ranks: engramdb searches every memory (BM25 and its dense space), so no `index=`
  config is needed, and its `embed`/`dims` keys are refused (the store's embedders embed:
  `engramdb.open(profile=...)`); `score` is engramdb's, in [0, 1]; items put with `index=False`
  or holding no text at their index fields follow the ranked ones unscored (score None), on
  every page;
- `list_namespaces` lists namespaces holding at least one item (InMemoryStore also lists ones
  whose items were all deleted, or that a get only read);
- an ordering operator ($gt...) on a field that is missing or not a number does not match
  (InMemoryStore raises); a value holding NaN or a non-string key is refused; tuples come back
  as lists (JSON);
- TTL is not supported (`supports_ttl` is False: LangGraph's `put(ttl=...)` raises
  NotImplementedError, and so does a PutOp with a ttl); an encoded namespace is at most 128
  characters;
- a store opened with `contradictions="supersede"` is refused: each key is its own fact, and
  engramdb would end one key's memory when another key's value contradicts it (the item would
  stay readable, but a query would rank it no more).

engramdb's upkeep may archive an item's memory (`engramdb archive`, `consolidate --apply`): its
value stays readable (it is in the metadata), and a put or delete of its key brings its text back
(`db.lifecycle.unarchive`) before writing, first of all the batch's writes.
"""

from __future__ import annotations

import asyncio
import heapq
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from ...model import checks
from ...model.errors import InvalidMemory
from ...model.memory import Memory, utc_now
from ...store import Store
from ...store import open as open_store
from . import names, values

LIVE = "langgraph"  # the `source` of a memory holding an item
DELETED = "langgraph:deleted"  # an item's memory on its way to being forgotten (see _delete)
META = "langgraph"  # the metadata key holding the item: namespace, key, value, indexed
_PAGE = 256  # memories per `list` page when a search walks a namespace
SUPERSEDE = "supersede"
_EACH_KEY = ("each key is its own fact, and engramdb would end one key's memory when another key's value "
             "contradicts it (a query would rank that item no more); open with contradictions='off' (the default) "
             "or 'detect'")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

_LOCKS: weakref.WeakKeyDictionary[Store, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def _writer_lock(db: Store) -> threading.Lock:
    """One lock per engramdb store for every adapter over it: a put reads the key's memory, then
    writes (add or update), and two batches putting one new key at once must not both add it."""
    with _LOCKS_GUARD:
        lock = _LOCKS.get(db)
        if lock is None:
            lock = _LOCKS[db] = threading.Lock()
        return lock


@dataclass(frozen=True)
class _Put:
    """A checked PutOp: where it goes and, unless a delete, what is written."""

    namespace: tuple[str, ...]
    key: str
    stored: str  # the engramdb namespace
    id: str
    value: dict[str, Any] | None  # None: delete
    content: str = ""
    indexed: bool = False

    def meta(self) -> dict[str, Any]:
        return {"namespace": list(self.namespace), "key": self.key, "value": self.value, "indexed": self.indexed}


class EngramStore(BaseStore):
    """LangGraph's `BaseStore` over an engramdb store: pass it as `store=` to
    `StateGraph.compile` (or `create_react_agent`), and every node's `get_store()` reads and
    writes engramdb memories.

    `db`: an open `engramdb.Store` (the caller closes it), or use `EngramStore.open(path, ...)`,
    which opens one and closes it with `close()`. `index`: `{"fields": [...]}`, the value's field
    paths whose text a query is matched against (LangGraph's path syntax; default `["$"]`, the
    whole value as JSON); a put's own `index=` list overrides it, `index=False` leaves the item
    out of query ranking. `namespace_prefix`: the engramdb namespace every item's namespace is
    stored under (`langgraph/users/maya` for `("users", "maya")`), so one engramdb store can hold
    other memories beside them.
    """

    def __init__(self, db: Store, *, index: Mapping[str, Any] | None = None,
                 namespace_prefix: str = names.DEFAULT_PREFIX) -> None:
        if not isinstance(db, Store):
            raise TypeError(f"db must be an open engramdb.Store (engramdb.open(...)), got {type(db).__name__}")
        if db.contradictions == SUPERSEDE:
            raise ValueError(f"db was opened with contradictions={SUPERSEDE!r}: {_EACH_KEY}")
        self.db = db
        self.prefix = names.check_prefix(namespace_prefix)
        self.fields = _index_config(index)
        self._owned = False
        self._lock = _writer_lock(db)

    @classmethod
    def open(cls, path: str | Path | None, *, index: Mapping[str, Any] | None = None,
             namespace_prefix: str = names.DEFAULT_PREFIX, **options: Any) -> EngramStore:
        """Open (or create) the engramdb store in folder `path` (`options` as `engramdb.open`)
        and adapt it; `close()` closes it. `contradictions="supersede"` is refused (see the module
        docstring)."""
        if options.get("contradictions") == SUPERSEDE:
            raise ValueError(f"contradictions={SUPERSEDE!r} is not an option of {cls.__name__}: {_EACH_KEY}")
        db = open_store(path, **options)
        try:
            store = cls(db, index=index, namespace_prefix=namespace_prefix)
        except BaseException:
            db.close()
            raise
        store._owned = True
        return store

    def close(self) -> None:
        """Close the engramdb store if `open` opened it (one given to the constructor is the caller's)."""
        if self._owned:
            self.db.close()

    def __enter__(self) -> EngramStore:  # noqa: PYI034 - not meant to be subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------ batches
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph store operations: reads first, against the store as it was, then the
        puts (see the module docstring). Every op is checked before any runs."""
        ops = list(ops)
        checked = [self._check(i, op) for i, op in enumerate(ops)]
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], _Put] = {}
        listed: dict[str, int] | None = None
        for i, (op, put) in enumerate(zip(ops, checked)):
            if put is not None:
                puts.pop((put.namespace, put.key), None)  # the last op on a key wins, in its place
                puts[(put.namespace, put.key)] = put
            elif isinstance(op, GetOp):
                results[i] = self._get(tuple(op.namespace), op.key)
            else:
                listed = self._namespaces() if listed is None else listed
                if isinstance(op, SearchOp):
                    results[i] = self._search(op, listed)
                elif isinstance(op, ListNamespacesOp):
                    results[i] = self._list_namespaces(op, listed)
        self._write(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in the event loop's default executor: engramdb's calls block (files, embedding)."""
        ops = list(ops)
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, ops)

    # ------------------------------------------------------------------------------ checks
    def _check(self, i: int, op: Any) -> _Put | None:
        """Refuse a bad op (naming it) before anything runs; a PutOp comes back ready to write."""
        if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
            raise TypeError(f"ops[{i}]: unknown operation type {type(op).__name__}")
        for name in ("namespace", "namespace_prefix"):
            ns = getattr(op, name, ())
            if not isinstance(ns, (tuple, list)):
                raise InvalidNamespaceError(f"ops[{i}]: {name} must be a tuple of strings, got {ns!r:.80}")
        validate_op_namespace(op)  # LangGraph's own rule: labels are non-empty strings without "." or NUL
        if isinstance(op, (GetOp, PutOp)) and not isinstance(op.key, str):
            raise TypeError(f"ops[{i}]: key must be a string, got {type(op.key).__name__} {op.key!r:.80}")
        if isinstance(op, SearchOp):
            values.check_filter(f"ops[{i}]", op.filter)
            _count(i, "limit", op.limit)
            _count(i, "offset", op.offset)
            if op.query is not None and not isinstance(op.query, str):
                raise TypeError(f"ops[{i}]: query must be a string or None, got {op.query!r:.80}")
        elif isinstance(op, ListNamespacesOp):
            _count(i, "limit", op.limit)
            _count(i, "offset", op.offset)
            if op.max_depth is not None:
                _count(i, "max_depth", op.max_depth, least=1)
            for c in op.match_conditions or ():
                if getattr(c, "match_type", None) not in ("prefix", "suffix"):
                    raise ValueError(f"ops[{i}]: match_conditions: match_type must be 'prefix' or 'suffix', got "
                                     f"{c!r:.80}")
        elif isinstance(op, PutOp):
            return self._check_put(i, op)
        return None

    def _check_put(self, i: int, op: PutOp) -> _Put:
        namespace = tuple(op.namespace)
        where = f"ops[{i}] (put {namespace!r:.100} key {op.key!r:.60})"
        if not namespace:
            raise InvalidNamespaceError(f"{where}: the namespace cannot be empty")
        if op.ttl is not None:
            raise NotImplementedError(f"{where}: TTL is not supported by {type(self).__name__}; put with ttl=None")
        checks.utf8(f"{where}: key", op.key)
        stored = names.storable_namespace(namespace, self.prefix)
        mid = names.item_id(stored, op.key)
        if op.value is None:
            return _Put(namespace, op.key, stored, mid, None)
        value = values.check_value(where, op.value)
        fields = values.index_fields(where, op.index)
        text = values.search_text(value, self.fields if fields is None else fields)
        content = text if text is not None else values.whole(value)
        size = len(content.encode("utf-8"))
        limit = self.db.tuning.max_content_bytes
        if size > limit:
            raise InvalidMemory(f"{where}: the text it is searched by is {size:,} bytes of UTF-8; the limit is "
                                f"{limit:,} (Tuning.max_content_bytes): index fewer fields or smaller ones")
        return _Put(namespace, op.key, stored, mid, value, content, text is not None)

    # ------------------------------------------------------------------------------ reads
    def _item(self, m: Memory | None) -> Item | None:
        """The item a memory holds; None for a memory that holds none (another writer's, or one
        being deleted)."""
        if m is None or m.source != LIVE:
            return None
        meta = m.metadata.get(META)
        namespace = names.decode_namespace(m.namespace, self.prefix)
        if not isinstance(meta, dict) or not isinstance(meta.get("key"), str) or \
                not isinstance(meta.get("value"), dict) or not namespace:
            return None
        updated = m.learned_at or _EPOCH
        return Item(value=meta["value"], key=meta["key"], namespace=namespace,
                    created_at=m.valid_from or updated, updated_at=updated)

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        stored = names.encode_namespace(namespace, self.prefix)
        if len(stored) > names.MAX_NAMESPACE:
            return None  # nothing can be stored there
        item = self._item(self.db.get(names.item_id(stored, key)))
        return item if item is not None and item.namespace == namespace and item.key == key else None

    def _namespaces(self) -> dict[str, int]:
        """This adapter's engramdb namespaces with their memory counts (forgotten ones included)."""
        counts: dict[str, int] = self.db.stats()["namespaces"]
        return {n: c for n, c in counts.items() if n == self.prefix or n.startswith(self.prefix + "/")}

    def _live(self, stored: str) -> Iterator[Memory]:
        """The memories holding items in one engramdb namespace, newest update first."""
        cursor: str | None = None
        while True:
            page = self.db.list(stored, filters={"source": LIVE}, limit=_PAGE, cursor=cursor, include_ended=True,
                                newest_first=True)
            yield from page
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def _listing(self, targets: list[str], filter: Mapping[str, Any] | None) -> Iterator[Item]:
        """Every item of these namespaces that passes the filter, newest update first."""
        streams = [self._live(n) for n in targets]
        seen: set[str] = set()  # a page after a concurrent write may repeat a memory (never skip one)
        for m in heapq.merge(*streams, key=lambda m: m.learned_at or _EPOCH, reverse=True):
            if m.id in seen:
                continue
            seen.add(m.id)
            item = self._item(m)
            if item is not None and values.matches(item.value, filter):
                yield item

    def _search(self, op: SearchOp, listed: dict[str, int]) -> list[SearchItem]:
        if op.limit == 0:
            return []
        root = names.encode_namespace(tuple(op.namespace_prefix), self.prefix)
        targets = [n for n in listed if (n == root or n.startswith(root + "/"))
                   and names.decode_namespace(n, self.prefix)]
        need = op.offset + op.limit
        query = op.query if op.query and op.query.strip() else None  # engramdb refuses a blank query
        ranked: list[tuple[float | None, Item]] = []
        if query is not None:
            for n in targets:
                ranked += self._ranked(query, n, listed[n], need, op.filter)
            ranked.sort(key=lambda pair: -(pair[0] or 0.0))  # stable: ties keep the namespaces' order
            ranked = ranked[:need]
        if len(ranked) < need:  # the rest (every item without a query), unscored, in listing order
            have = {(item.namespace, item.key) for _, item in ranked}
            for item in self._listing(targets, op.filter):
                if (item.namespace, item.key) not in have:
                    ranked.append((None, item))
                    if len(ranked) == need:
                        break
        return [SearchItem(namespace=item.namespace, key=item.key, value=item.value, created_at=item.created_at,
                           updated_at=item.updated_at, score=score) for score, item in ranked[op.offset:need]]

    def _ranked(self, query: str, stored: str, total: int, need: int,
                filter: Mapping[str, Any] | None) -> list[tuple[float | None, Item]]:
        """The `need` best indexed items of one namespace for a query that pass the filter: engramdb's
        search asked for more while the filter leaves too few."""
        k = min(max(need, 10), total)
        while True:
            hits = self.db.search(query, namespace=stored, k=k)
            kept: list[tuple[float | None, Item]] = []
            for h in hits:
                item = self._item(h.memory)
                if item is not None and h.memory.metadata[META].get("indexed") is True and \
                        values.matches(item.value, filter):
                    kept.append((float(h.score), item))
            if len(kept) >= need or len(hits) < k or k >= total:
                return kept[:need]
            k = min(k * 4, total)

    def _list_namespaces(self, op: ListNamespacesOp, listed: dict[str, int]) -> list[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for n in listed:
            namespace = names.decode_namespace(n, self.prefix)
            if not namespace or not all(_matches(c, namespace) for c in op.match_conditions or ()):
                continue
            shown = namespace[:op.max_depth] if op.max_depth is not None else namespace
            if shown not in found and any(self._item(m) is not None for m in self._live(n)):
                found.add(shown)  # a namespace holding an item (its memories may all be deleted ones)
        return sorted(found)[op.offset:op.offset + op.limit]

    # ------------------------------------------------------------------------------ writes
    def _write(self, puts: list[_Put]) -> None:
        """Write a batch's puts, under the store's adapter lock: first the text of archived memories
        among them comes back (engramdb changes no archived memory), then the new keys go in one
        `add_many` (all or nothing), then each update and delete. So no write of the batch comes
        before one that would refuse it."""
        if not puts:
            return
        with self._lock:
            current = {p.id: self.db.get(p.id, include_forgotten=True) for p in puts}
            archived = [i for i, cur in current.items() if cur is not None and self.db.lifecycle.is_archived(i)]
            if archived:
                self.db.lifecycle.unarchive(archived)  # the value never left (metadata): only the text comes back
                current.update({i: self.db.get(i, include_forgotten=True) for i in archived})
            fresh: list[dict[str, Any]] = []
            later: list[tuple[_Put, Memory]] = []
            for p in puts:
                cur = current[p.id]
                if p.value is None:
                    if cur is not None and cur.forgotten_at is None:
                        later.append((p, cur))
                elif cur is None:
                    fresh.append({"content": p.content, "namespace": p.stored, "id": p.id, "source": LIVE,
                                  "metadata": {META: p.meta()}})
                else:
                    later.append((p, cur))
            if fresh:
                self.db.add_many(fresh)
            for p, cur in later:
                if p.value is None:
                    self._delete(p, cur)
                else:
                    self._replace(p, cur)

    def _delete(self, p: _Put, cur: Memory) -> None:
        """Forget the item's memory. First it is marked deleted (its source), which hides it from
        this adapter: a put of the key again restores the memory before rewriting it, and the
        restored memory must not show the old value in between, even if the process stops there."""
        if cur.source != DELETED:
            self.db.update(p.id, source=DELETED)
        self.db.forget(p.id)

    def _replace(self, p: _Put, cur: Memory) -> None:
        """A new version of the key's memory holding the new value (restored first if deleted; a
        key put again after a delete starts again: its created_at is now)."""
        revived = cur.forgotten_at is not None or cur.source != LIVE
        if cur.forgotten_at is not None:
            self.db.restore(p.id)  # still marked deleted (see _delete): hidden until the update below
        changes: dict[str, Any] = {"content": p.content, "source": LIVE,
                                   "metadata": {**cur.metadata, META: p.meta()}}
        if revived:
            changes["valid_from"] = utc_now()
        if cur.valid_until is not None:  # ended by another writer (a contradiction): true again from now
            changes["valid_until"] = None
        self.db.update(p.id, **changes)


def _index_config(index: Mapping[str, Any] | None) -> list[str]:
    """The index fields of the store's `index=` config (only `fields`: engramdb embeds with its own
    embedders)."""
    if index is None:
        return ["$"]
    if not isinstance(index, Mapping):
        raise TypeError(f"index must be a dict such as {{'fields': ['text']}}, got {index!r:.80}")
    extra = sorted(set(index) - {"fields"})
    if extra:
        raise ValueError(f"index: {extra} not supported: engramdb embeds every memory with the store's own "
                         "embedders (choose them when opening it: engramdb.open(path, profile='minilm') or "
                         "embedders=...); give index={'fields': [...]}, the value's fields a query matches")
    fields = values.index_fields("index", index.get("fields"))
    return ["$"] if not fields else fields


def _count(i: int, name: str, value: Any, *, least: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"ops[{i}]: {name} must be an int >= {least}, got {value!r:.80}")


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether a namespace matches a list_namespaces condition ("*" matches any one label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(p == "*" or p == label for label, p in pairs)


__all__ = ["DELETED", "LIVE", "META", "EngramStore"]

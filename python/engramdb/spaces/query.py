"""A query in a store's spaces: its vector in one space, its terms in the lexical space."""

from __future__ import annotations

import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .protocol import Embedder, SparseBatch
from .schema import Schema, Space, SpaceError

QUERY_CACHE = 2048  # query embeddings kept (K5): an agent asks the same things, a model call costs ms
_cache: OrderedDict[tuple[int, str, str], Any] = OrderedDict()
_cache_lock = threading.Lock()


def _new_lock_in_child() -> None:
    """A child forked while another thread held the cache's lock would wait for ever (the cache's
    operations hold the GIL throughout: it is whole)."""
    global _cache_lock
    _cache_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)
QUIET_AFTER_PURGE = 60.0  # seconds after a purge when the purging store's query embeddings are not kept
_quiet: dict[int, float] = {}  # id of an embedder -> time.monotonic() before which nothing it embeds is kept


def embed_query(space: Space, embedders: Mapping[str, Embedder], query: Any) -> Any:
    """The query's vector in `space`: a text is embedded (through a small LRU cache keyed by the
    embedder and the text: an embedding depends on nothing the store holds, so writes never make
    one stale), a vector is checked."""
    if isinstance(query, str):
        if not query.strip():
            raise ValueError("query must be a non-empty string or a vector")
        emb = embedders.get(space.name)
        if emb is None:
            raise SpaceError(f"space {space.name!r} has no embedder: pass the query as a vector")
        key = (id(emb), getattr(emb, "name", ""), query)
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
                return hit
        vec = space.check(emb.embed([query]), 1)
        with _cache_lock:
            if time.monotonic() >= _quiet.get(id(emb), 0.0):  # see forget_queries
                _cache[key] = vec
                if len(_cache) > QUERY_CACHE:
                    _cache.popitem(last=False)
        return vec
    return space.check(query, 1)


def cached_queries() -> int:
    """How many query embeddings the cache holds."""
    return len(_cache)


def forget_queries(embedders: Iterable[Embedder] = ()) -> None:
    """Empty the cache (a purge: its keys are query texts, which may say what purged memories said),
    and keep nothing embedded by `embedders` (the purging store's) for QUIET_AFTER_PURGE seconds: a
    search under way on another thread embedded its query before the purge and would keep it right
    after (as the context's line caches)."""
    with _cache_lock:
        now = time.monotonic()
        for key in [k for k, until in _quiet.items() if until <= now]:
            del _quiet[key]
        for emb in embedders:
            _quiet[id(emb)] = now + QUIET_AFTER_PURGE
        _cache.clear()


def lexical_space(schema: Schema, embedders: Mapping[str, Embedder]) -> Space | None:
    """The sparse space BM25 indexes: the first sparse space with an embedder (its term counts)."""
    for sp in schema:
        if sp.kind == "sparse" and sp.name in embedders:
            found: Space = sp
            return found
    return None


# Words that place a question in time rather than say what it is about ("where does she work
# now?"): the time filters answer them (current facts by default, `as_of`), so BM25 does not match
# them against memories that happen to say "now".
QUERY_TIME_WORDS = re.compile(r"\b(now|currently|nowadays|presently|these days)\b", re.IGNORECASE)


def query_terms(space: Space, embedders: Mapping[str, Embedder], text: str) -> tuple[np.ndarray, np.ndarray]:
    """(term ids, counts) of a query text in the lexical space (its time words left out)."""
    sb = embedders[space.name].embed([QUERY_TIME_WORDS.sub(" ", text)])
    assert isinstance(sb, SparseBatch)
    ids, counts = sb.row(0)
    return np.asarray(ids, np.int32), np.asarray(counts, np.float32)

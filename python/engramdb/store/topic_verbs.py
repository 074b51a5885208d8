"""`db.topics`: what a namespace is about (C4, H8): `db.topics(namespace)`, `.get(id)`, `.themes`, ...

Topics are derived data: computed from the namespace's current memories when asked and stale
(the namespace changed since the last run); what the next run compares with (ids, members,
centroids) is kept beside the indexes (topics/state.py), so ids, stability and phases carry
across runs and reopens. A lost or damaged state starts the topics' history over.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from .._requests_first import give_way, stoppable
from ..model import checks
from ..model.memory import Memory
from ..spaces.protocol import Embedding
from ..spaces.query import embed_query
from ..storage.view import View
from ..topics import clustering
from ..topics import state as topic_state
from ..topics.labels import DistinctiveTerms, Labeler, label_sample
from ..topics.results import Previous, Topic, Topics, follow
from ..topics.smalltalk import SmallTalk, without
from ..topics.themes import Theme, labelled, theme_groups
from ..topics.themes import divergence as theme_divergence

if TYPE_CHECKING:
    from .facade import Store

_log = logging.getLogger("engramdb")

SAMPLE = 3000  # memories clustered at most; the rest join by centroid
ASSIGN_CHUNK = 4_096  # memories joined to topics by the centroid rule in one product
INCREMENTAL = 0.2  # a change of at most this share of a namespace is folded in without re-clustering
UNIT_BLOCK = 1024  # rows normalised at once (`_unit`)
STALE_SHARE = 0.02  # a request asks the background worker for new topics past this share of new rows


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _one_at_a_time(fn: Callable[Concatenate[TopicVerbs, _P], _R]) -> Callable[Concatenate[TopicVerbs, _P], _R]:
    """Topic runs read and replace the store's topic state and its files: one thread at a time
    (a service calls context() from many)."""
    def run(self: TopicVerbs, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return fn(self, *args, **kwargs)
    functools.update_wrapper(run, fn)
    return run


class TopicVerbs:
    """What a namespace is about: its topics and themes (C4, H8), as `db.topics`."""

    def __init__(self, db: Store) -> None:
        self._db = db
        self._lock = threading.RLock()  # a topics run, or a purge of derived data, one thread at a time
        self._stored_lock = threading.Lock()  # the stored topics' swaps against a purge
        # one reader of the stored topics' file at a time: the open's warm job and a first request
        # read it at once, and the one that comes second waits for what the first read (11 ms at
        # 100,000 memories) instead of reading it again (issue 26). Taken by no one who holds it
        # while waiting for another lock (a purge reads the file without it)
        self._load_lock = threading.Lock()
        self.state: str | None = None  # "adopted" (the saved history) or why it started over

    _topic_cache: dict[str, tuple[tuple[int, int], Topics]] | None = None
    _topic_prev: dict[str, Previous] | None = None
    _term_caches: dict[str, dict[str, tuple[tuple[str, str], ...]]] | None = None  # namespace -> text -> terms
    # namespace -> (speakers, text -> small talk, text -> its terms that may label): what the speakers decide
    _aside_caches: dict[str, tuple[frozenset[str], dict[str, bool], dict[str, tuple[str, ...]]]] | None = None
    _topic_runs: dict[str, _Run] | None = None  # the last clustering per namespace (what increments start from)
    _topic_merges: dict[str, dict[str, str]] | None = None  # namespace -> merged topic id -> the id it joined
    _topic_maps: dict[str, tuple[Topics, dict[str, int], np.ndarray]] | None = None  # per topics run
    _topics_stored: dict[str, tuple[str, Topics]] | None = None  # namespace -> (stamp, topics), as stored
    _themes_stored: dict[str, tuple[str, list[Theme]]] | None = None  # namespace -> (stamp, themes), as stored
    _purge_count = 0  # purges of topics begun and ended (odd: one under way): see _stored_topics

    def spaces(self) -> list[str]:
        """The spaces whose clusterings vote on topics: every non-temporal space but one projected
        from the main space's vectors (it would repeat the main space's vote)."""
        main = self._db.embedders.get(self._db.schema.main)
        out = []
        for sp in self._db.schema:
            if sp.category == "temporal" or sp.weight <= 0:
                continue
            if sp.name != self._db.schema.main and main is not None and getattr(self._db.embedders.get(sp.name), "base",
                                                                             None) is main:
                continue
            out.append(sp.name)
        return out

    def _stored_topics(self) -> dict[str, tuple[str, Topics]]:
        """The stored topics, read from their file on first use. A request reads them without the
        topic lock (it never waits for a run); a purge's `_forget_topics` counts up before and
        after its change (`_purge_count` odd while one is under way), and a read that a purge
        overlapped is not kept (it may hold what the purge took out: kept, the next run of any
        namespace wrote it back into the file), so it is read again, or none used this once. One
        thread reads the file at a time; another that asks meanwhile uses what it read."""
        for _ in range(3):
            stored = self._topics_stored
            if stored is not None:
                return stored
            with self._load_lock:
                stored = self._topics_stored
                if stored is not None:  # read meanwhile by the thread this one waited for
                    return stored
                before = self._purge_count
                loaded = topic_state.load_results(self._db._derived)
                with self._stored_lock:
                    if self._topics_stored is None and before == self._purge_count and before % 2 == 0:
                        self._topics_stored = loaded
        return self._topics_stored if self._topics_stored is not None else {}

    def __call__(self, namespace: str, *, refresh: bool = False, labeler: Labeler | None = None,
                 compute: bool = True) -> Topics:
        """What a namespace is about (C4): groups of its current memories that at least two spaces
        cluster together (see `engramdb.topics.clustering`), biggest first, each with `.id`,
        `.label`, `.members`, `.confidence`, `.phase`, `.stability`, `.centroid_stability` and
        `.runs`; the list has `.churn`, `.entropy` and `.consolidation_due`. Each space's
        HDBSCAN runs in the C++ core (no scikit-learn needed). `labeler(member texts, namespace
        texts) -> str` replaces the built-in distinctive-terms label.

        When it runs: on the first call, on `refresh`, and when the namespace changed by more than
        a fifth since the last clustering; a smaller change is incremental: memories gone leave
        their topics, new ones join the topic whose centroid they are nearest when they are as
        near as its farthest member (else none), nothing is re-clustered. A namespace of more
        than `SAMPLE` memories is clustered on a sample of that many (seeded by its name) and the
        rest join by the same centroid rule (`Topics.sampled`). A read-only store lists what its
        writer last stored, even when the namespace moved since (`refresh` computes them here).
        Searches and `context()` never run this: they read the last topics, and a writer's
        background worker refreshes them (`Tuning.background`). `compute=False` lists only what
        is already computed (by this store, or by a writer and stored: what a request would use)
        and never clusters here: an empty list when nothing was, as for a hook that has no time to
        cluster."""
        checks.name("namespace", namespace)
        if not isinstance(compute, bool):  # "false" would compute: a hook's budget gone
            raise TypeError(f"compute must be True or False, got {compute!r:.80}")
        if not compute:  # without the topic lock: a run under way (seconds) is not waited for
            if refresh or labeler is not None:
                raise ValueError("compute=False lists what is already computed: it takes no refresh or labeler")
            return self._topics_to_use(namespace)
        return self._computed(namespace, refresh, labeler)

    @_one_at_a_time
    def _computed(self, namespace: str, refresh: bool, labeler: Labeler | None) -> Topics:
        """`topics(namespace)` computing what is stale (see `__call__`), one run at a time."""
        view = self._db._view()
        fingerprint = (view.epoch, view.namespace_rows(namespace))
        cache = self._topic_cache if self._topic_cache is not None else {}
        self._topic_cache = cache
        hit = cache.get(namespace)
        if hit is not None and hit[0] == fingerprint and not refresh:
            return hit[1]
        stamp = _stamp(view, namespace)
        stored = self._topics_stored = self._stored_topics()  # under the topic lock: no purge overlaps
        kept = stored.get(namespace)
        if kept is not None and (kept[0] == stamp or self._db.read_only) and not refresh and labeler is None:
            # what the writer (or this store, earlier) found; a reader lists the writer's last
            # ones even when the namespace moved since (a hook has no time to cluster)
            cache[namespace] = (fingerprint, kept[1])
            return kept[1]
        # in a worker's run each step of O(namespace) Python, and each chunk of the longer ones,
        # gives way to the requests running beside it (engramdb/_requests_first.py)
        locs = view.current_locs(namespace)
        give_way()
        ids = view.ids_at(locs)  # no Memory objects: 100K of them cost seconds
        give_way()
        main = view.vectors_at(self._db.schema.main, locs) if locs else None
        unit = _unit_of(main, len(locs)) if main is not None else np.zeros((0, 1))
        last = self._topic_runs.get(namespace) if self._topic_runs is not None else None
        texts = texts_of(view, locs)
        chat = SmallTalk({r for r in view.values_at("role", locs) if r})  # speakers' names: never a label
        verdicts, contents = self._by_speakers(namespace, chat, texts)
        give_way()
        aside = chat.set_aside(texts, verdicts)  # small talk neither forms nor joins a topic
        incremental = not refresh and last is not None and last.epoch == view.epoch and \
            len(set(ids) ^ last.ids) <= INCREMENTAL * max(1, len(last.ids))
        pick = None if incremental else _sample(namespace, aside)
        among = label_sample(ids, pick or ())  # a large namespace's labels read a sample of its texts
        words = DistinctiveTerms(texts, self._term_cache(namespace, texts if among is None else
                                                         [texts[i] for i in among]), chat, contents, among)
        if incremental:
            assert last is not None
            groups, sampled, full = without(last.assign(ids, unit), aside), last.sampled, False
        else:
            assert pick is not None
            (groups, sampled), full = self._cluster(view, locs, unit, aside, pick, words, main), True
        give_way()
        names = self._labels([m for m, _ in groups], texts, labeler, words=words)
        means = [unit[members].mean(axis=0) for members, _ in groups] if len(unit) else None
        rows = [([ids[i] for i in members], conf, name, means[k] if means is not None else None)
                for k, ((members, conf), name) in enumerate(zip(groups, names))]
        give_way()
        prev = self._previous().get(namespace, Previous())
        result, nxt = follow(namespace, rows, prev, time.time_ns() // 1_000)
        result = _merged(result, self._merges().get(namespace, {}))
        result.sampled = sampled
        give_way()
        pos = {mid: i for i, mid in enumerate(ids)}
        result.centroids = _centroids([[pos[m] for m in t.members if m in pos] for t in result], unit)
        self._previous()[namespace] = nxt
        _derived_saved(self._db, "topics", self._save_previous)
        cache[namespace] = (fingerprint, result)
        if labeler is None:
            stored[namespace] = (stamp, result)
            _derived_saved(self._db, "topics", lambda: topic_state.save_results(self._db._derived, stored))
        if full:  # increments start from the last full clustering
            if self._topic_runs is None:
                self._topic_runs = {}
            self._topic_runs[namespace] = _Run.of(view.epoch, ids, groups, unit, sampled, means)
        return result

    def _cluster(self, view: View, locs: list[tuple[int, int]], unit: np.ndarray, aside: np.ndarray,
                 pick: list[int], words: DistinctiveTerms | None = None,
                 main: Embedding | None = None) -> tuple[list[tuple[list[int], float]], int | None]:
        """Cluster every voting space on the memories `pick` (`_sample`), then the topics of their
        agreement; the memories outside the sample join by the centroid rule. The memories
        `aside` (small talk) are in none. `main`: the main space's vectors of `locs`, already
        read (not read again)."""
        sampled = SAMPLE if len(pick) < len(locs) - int(aside.sum()) else None
        sub = [locs[i] for i in pick]

        def vectors(name: str) -> Embedding:
            if name == self._db.schema.main and isinstance(main, np.ndarray):
                return main if len(pick) == len(locs) else main[pick]
            return view.vectors_at(name, sub)

        found = clustering.topics_capped([(self._db.schema[name], vectors(name)) for name in self.spaces()],
                                         terms=words.rows(pick) if words is not None else None) if sub else []
        groups = [([pick[i] for i in members], conf) for members, conf in found]
        if sampled is None:
            return groups, None
        at = {p: k for k, p in enumerate(pick)}  # a member's place in the sample (`pick.index` was O(sample) each)
        run = _Run.of(0, [str(i) for i in pick], [([at[i] for i in m], c) for m, c in groups], unit[pick], sampled)
        return without(run.assign([str(i) for i in range(len(locs))], unit), aside), sampled

    @_one_at_a_time
    def themes(self, namespace: str, *, labeler: Labeler | None = None, refresh: bool = False) -> list[Theme]:
        """Themes of a namespace (H8): DBSCAN clusters of its memories' main-space vectors (cosine
        eps 0.15, at least 3, confidence >= 0.6), each with `.label`, `.members`, `.silhouette`
        and `.confidence`, biggest first. Stored beside the indexes (`index/themes.arrow`) and
        listed from there while the namespace is unchanged (a read-only store lists what its
        writer stored); `refresh` or a custom `labeler` computes them again."""
        checks.name("namespace", namespace)
        view = self._db._view()
        stamp = _stamp(view, namespace)
        if self._themes_stored is None:
            self._themes_stored = topic_state.load_themes(self._db._derived)
        kept = self._themes_stored.get(namespace)
        if kept is not None and kept[0] == stamp and not refresh and labeler is None:
            return list(kept[1])
        locs = view.current_locs(namespace)
        found: list[Theme] = []
        if locs:
            x = np.asarray(view.vectors_at(self._db.schema.main, locs), np.float64).reshape(len(locs), -1)
            texts = texts_of(view, locs)
            chat = SmallTalk({r for r in view.values_at("role", locs) if r})
            verdicts, contents = self._by_speakers(namespace, chat, texts)
            groups, _ = theme_groups(x, chat.set_aside(texts, verdicts))  # nor theme
            found = labelled(groups, view.ids_at(locs),
                             self._labels([g[0] for g in groups], texts, labeler, self._term_cache(namespace, texts),
                                          chat, contents=contents))
        self._themes_stored[namespace] = (stamp, found)
        themes = self._themes_stored
        _derived_saved(self._db, "themes", lambda: topic_state.save_themes(self._db._derived, themes))
        return found

    def divergence(self, query: str, *, namespace: str, session_id: str, recent: int = 20) -> dict[str, Any]:
        """Whether a query is far from what a session has been about (C6's first priority): its
        main-space similarity to the session's `recent` newest memories, and "divergent" when even
        the nearest is under the space's `low` threshold. Returns {"divergent", "similarity",
        "nearest", "low", "session_memories"}."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"query must be non-empty text, got {query!r}")
        checks.utf8("query", query, ValueError)
        view = self._db._view()
        mine = view.session_locs(namespace, session_id)[-recent:]
        sp = self._db.schema[self._db.schema.main]
        if not mine:
            return {"divergent": False, "similarity": None, "nearest": None, "low": sp.low, "session_memories": 0}
        q = np.asarray(embed_query(sp, self._db.embedders, query), np.float64).reshape(-1)  # cached (K5)
        x = np.asarray(view.vectors_at(sp.name, mine))
        far, sim, i = theme_divergence(q, x, sp.low)
        return {"divergent": far, "similarity": round(sim, 4), "nearest": view.id_at(mine[i]), "low": sp.low,
                "session_memories": len(mine)}

    def _topics_to_use(self, namespace: str) -> Topics:
        """The topics a search or a context uses: the last ones computed (by this store, or by the
        writer and stored), even when the namespace moved since, or none before a first run. A
        request never clusters (a run takes seconds at 100,000 memories: bench/RESULTS.md "The
        agent loop"): when they are behind the namespace, a writer with a background worker asks
        it to refresh them (store/background.py); a reader, or `Tuning(background=False)`, uses
        them as they are until `topics()` is called. Takes no lock: a run replaces whole entries."""
        view = self._db._view()
        kept = self._stored_topics().get(namespace)
        stamp = _stamp(view, namespace)
        fresh = kept is not None and kept[0] == stamp
        hit = (self._topic_cache or {}).get(namespace)
        if not fresh and self._db._upkeep is not None and (kept is None or _moved(kept[0], stamp)):
            self._db._upkeep.ask(f"topics:{namespace}", functools.partial(self._refresh_topics, namespace))
        if kept is not None and (fresh or hit is None):
            return kept[1]
        return hit[1] if hit is not None else Topics([])

    def _refresh_topics(self, namespace: str) -> None:
        """The worker's job: the namespace's topics as `topics()` computes them, and their map. A
        close stops it at its next chance to give way (it keeps nothing until it ends)."""
        with stoppable():
            self._topic_map(namespace, self(namespace))

    def _topic_map(self, namespace: str, found: Topics | None = None) -> tuple[dict[str, int], np.ndarray]:
        """Memory id -> topic number, and the topics' main-space unit centroids (the pipeline's
        topic stage, the context's topic matches); made once per topics run (by the worker,
        after its run, when there is one)."""
        found = self._topics_to_use(namespace) if found is None else found
        if not found:  # no topics yet: nothing to read (not the namespace's every vector)
            return {}, np.zeros((0, 1))
        maps = self._topic_maps if self._topic_maps is not None else {}
        self._topic_maps = maps
        hit = maps.get(namespace)
        if hit is not None and hit[0] is found:
            return hit[1], hit[2]
        topic_of = {mid: i for i, t in enumerate(found) for mid in t.members}
        centroids = found.centroids
        if centroids is None or len(centroids) != len(found):  # topics stored before centroids were kept
            view = self._db._view()
            locs = view.current_locs(namespace)
            pos = {mid: j for j, mid in enumerate(view.ids_at(locs))}
            unit = _unit_of(view.vectors_at(self._db.schema.main, locs), len(locs)) \
                if locs else np.zeros((0, 1))
            centroids = _centroids([[pos[m] for m in t.members if m in pos] for t in found], unit)
        maps[namespace] = (found, topic_of, centroids)
        return topic_of, centroids

    @staticmethod
    def _labels(groups: list[list[int]], texts: list[str], labeler: Labeler | None,
                analysed: dict[str, tuple[tuple[str, str], ...]] | None = None, chat: SmallTalk | None = None,
                words: DistinctiveTerms | None = None, contents: dict[str, tuple[str, ...]] | None = None) -> list[str]:
        if labeler is not None:
            return [labeler([texts[i] for i in g], texts) for g in groups]
        dt = (words or DistinctiveTerms(texts, analysed, chat or SmallTalk(), contents)) if groups else None
        return dt.labels(groups) if dt is not None else []

    def _term_cache(self, namespace: str, texts: list[str]) -> dict[str, tuple[tuple[str, str], ...]]:
        """The analysed terms of the namespace's texts, kept between runs so an increment analyses
        only the new texts (the whole of a 100K namespace takes seconds); holds the current texts only."""
        caches = self._term_caches if self._term_caches is not None else {}
        self._term_caches = caches
        old = caches.get(namespace, {})
        caches[namespace] = fresh = {t: old[t] for t in texts if t in old}
        return fresh

    def _by_speakers(self, namespace: str, chat: SmallTalk,
                     texts: list[str]) -> tuple[dict[str, bool], dict[str, tuple[str, ...]]]:
        """The small-talk verdicts of the namespace's texts and their terms that may label, kept
        between runs beside their terms while its speakers are the same (their names decide both):
        a refresh of 2,000 memories spent 15-20 ms on the verdicts, about 5 on the terms."""
        caches = self._aside_caches if self._aside_caches is not None else {}
        self._aside_caches = caches
        names, old, old_terms = caches.get(namespace, (frozenset(chat.names), {}, {}))
        if names != chat.names:
            old, old_terms = {}, {}
        fresh = {t: old[t] for t in texts if t in old}
        fresh_terms = {t: old_terms[t] for t in texts if t in old_terms}
        caches[namespace] = (frozenset(chat.names), fresh, fresh_terms)
        return fresh, fresh_terms

    @_one_at_a_time
    def merge(self, keep: str, into_it: str) -> Topic:
        """Merge two topics of one namespace (C8): `into_it`'s members join `keep` now, and in
        every later run the topic that takes `into_it`'s id is folded into `keep` (the merge is
        kept beside the indexes). Returns the merged topic."""
        ns = keep.rpartition("/t")[0]
        if into_it.rpartition("/t")[0] != ns or keep == into_it:
            raise ValueError(f"merge_concepts needs two topics of one namespace, got {keep!r} and {into_it!r}")
        found = {t.id: t for t in self(ns)}
        for tid in (keep, into_it):
            if tid not in found:
                raise KeyError(f"no topic {tid!r} in {ns!r} now")
        self._merges().setdefault(ns, {})[into_it] = keep
        self._save_previous()
        self._topic_cache = None
        if self._topics_stored is not None:
            self._topics_stored.pop(ns, None)  # stored before the merge
        merged = {t.id: t for t in self(ns)}
        return merged[keep]

    def _merges(self) -> dict[str, dict[str, str]]:
        self._previous()
        if self._topic_merges is None:
            self._topic_merges = {}
        return self._topic_merges

    def get(self, id: str, *, sample: int = 5) -> tuple[Topic, list[Memory]]:
        """One topic (by id, from its namespace's latest topics) and up to `sample` of its memories."""
        namespace = id.rpartition("/t")[0]
        for t in self(namespace):
            if t.id == id:
                view = self._db._view()
                return t, [m for m in (view.get(mid) for mid in t.members[:sample]) if m is not None]
        raise KeyError(f"no topic {id!r} (topics are named '<namespace>/t<n>')")

    # ------------------------------------------------------------------------------ state
    @_one_at_a_time
    def _forget_topics(self, namespaces: set[str], ids: set[str], whole: set[str]) -> None:
        """What a purge takes out of topics and themes (C4, H8): the stored topics and themes of
        `namespaces` (the namespaces of the purged memories), their history (all of it for the
        namespaces purged `whole`, else the topics that held one of `ids`), on disk and in
        memory, with every cache that held their ids, centroids or text."""
        if not namespaces and not whole:
            return
        touched = namespaces | whole
        with self._stored_lock:
            self._purge_count += 1  # odd: a request's read of the stored topics now is not kept
        try:
            topic_state.purge(self._db._derived, touched, ids, whole)
        finally:
            with self._stored_lock:
                for found in (self._topic_cache, self._topic_maps, self._term_caches, self._aside_caches, self._topic_runs,
                              self._topics_stored, self._themes_stored):
                    for ns in touched & set(found or ()):
                        found.pop(ns)  # type: ignore[union-attr] # not None: it holds ns
                self._purge_count += 1
        if self._topic_prev is not None:
            topic_state.forget(self._topic_prev, self._topic_merges or {}, ids, whole)

    def _previous(self) -> dict[str, Previous]:
        if self._topic_prev is None:
            self._topic_prev, merges, self.state = topic_state.load(self._db._derived)
            if self._topic_merges is None:
                self._topic_merges = merges
        return self._topic_prev

    def _save_previous(self) -> None:
        if self._topic_prev is not None:
            topic_state.save(self._db._derived, self._topic_prev, self._topic_merges or {})


class _Run:
    """A clustering: its memories, each topic's members, centroid and radius (the cosine of its
    farthest member to the centroid)."""

    def __init__(self, epoch: int, ids: list[str], topics: list[tuple[list[str], float, np.ndarray, float]],
                 sampled: int | None) -> None:
        self.epoch, self.ids, self.topics, self.sampled = epoch, set(ids), topics, sampled

    @staticmethod
    def of(epoch: int, ids: list[str], groups: list[tuple[list[int], float]], unit: np.ndarray,
           sampled: int | None, means: list[np.ndarray] | None = None) -> _Run:
        """The clustering of `groups` (positions in `ids` and `unit`); `means`: each group's mean
        row of `unit`, when the caller has them (a refresh does: its topics' centroids)."""
        topics = []
        for k, (members, conf) in enumerate(groups):
            c = unit[members].mean(axis=0) if means is None else means[k]
            c = c / max(float(np.sqrt(c.dot(c))), 1e-12)  # np.linalg.norm's arithmetic, without its checks
            topics.append(([ids[i] for i in members], conf, c, float((unit[members] @ c).min())))
        return _Run(epoch, ids, topics, sampled)

    def assign(self, ids: list[str], unit: np.ndarray) -> list[tuple[list[int], float]]:
        """The topics over `ids`: members still there stay, the others join by the centroid rule."""
        give_way()
        pos = {mid: i for i, mid in enumerate(ids)}
        groups: list[list[int]] = [[pos[m] for m in members if m in pos] for members, _, _, _ in self.topics]
        new = [i for i, mid in enumerate(ids) if mid not in self.ids]
        if new and self.topics:
            cents = np.stack([c for _, _, c, _ in self.topics])
            radius = np.array([r for _, _, _, r in self.topics])
            for at in range(0, len(new), ASSIGN_CHUNK):  # a worker's run gives way to requests between chunks
                part = new[at:at + ASSIGN_CHUNK]
                with clustering.BLAS_FORK_GUARD:  # a fork waits for the product (see there)
                    sims = unit[part] @ cents.T
                best = np.argmax(sims, axis=1)
                # as near as its farthest member; tested at once (a numpy scalar read per memory took
                # a second of the GIL at 100,000, issue 26), joined in the order of `new` as before
                near = sims[np.arange(len(part)), best] >= radius[best] - 1e-9
                for i, t in zip(np.asarray(part)[near].tolist(), best[near].tolist()):
                    groups[t].append(i)
                give_way()
        return sorted([(sorted(g), conf) for g, (_, conf, _, _) in zip(groups, self.topics)
                       if len(g) >= clustering.MIN_CLUSTER], key=lambda t: (-len(t[0]), t[0][0]))


def _derived_saved(db: Store, what: str, save: Callable[[], None]) -> None:
    """`save()` of a namespace's derived topic files, a failure to write them (a full disk, a
    directory where the file goes) logged, not raised: the topics are returned and computed again
    when next asked, as for a damaged file (an IsADirectoryError came out of `topics()`)."""
    try:
        save()
    except OSError as exc:
        _log.warning("engramdb: the %s of %s were not saved: %s", what, db.path or "the store in memory", exc)


def _sample(namespace: str, aside: np.ndarray) -> list[int]:
    """The positions a full run clusters: every memory not set aside, or `SAMPLE` of them (seeded by
    the namespace's name) when there are more."""
    pick: list[int] = np.flatnonzero(~aside).tolist()
    return sorted(random.Random(namespace).sample(pick, SAMPLE)) if len(pick) > SAMPLE else pick


def texts_of(view: View, locs: list[tuple[int, int]]) -> list[str]:
    """The content of these locations of `view`, in order ("" for an archived row's)."""
    return [text or "" for text in view.values_at("content", locs)]


def _moved(stored: str, now: str) -> bool:
    """Whether a namespace moved enough since its stored topics (stamps of `_stamp`) for the worker
    to refresh them: by `STALE_SHARE` of its rows, or by any purge (its rows fell or its newest
    learning time went back). One new turn in a namespace of 100,000 does not re-run its topics:
    a run is O(namespace) (its texts, labels and stored members), new memories wait at most a
    fiftieth of it to join a topic, and `topics()` refreshes them whenever it is called."""
    try:
        rows, newest = (int(x) for x in stored.split(":"))
        rows_now, newest_now = (int(x) for x in now.split(":"))
    except ValueError:
        return True
    return rows_now < rows or newest_now < newest or rows_now - rows >= max(1, STALE_SHARE * rows)


def _stamp(view: View, namespace: str) -> str:
    """The state of a namespace stored results are valid for: its rows (every write adds one) and
    its newest learning time (a purge and as many adds after it change that). Once per snapshot:
    every search and context of a namespace reads it (each segment's newest is found once: a pass
    over the namespace's rows at each write was ~0.5 ms of the next context at 100,000 memories)."""
    key = f"topics-stamp:{namespace}"
    found = view.derived.get(key)
    if found is not None:
        return str(found)
    newest = max((seg.ns_newest(namespace) for seg in view.segments), default=0)  # kept per segment
    found = view.derived[key] = f"{view.namespace_rows(namespace)}:{newest}"
    return found


def _centroids(groups: list[list[int]], unit: np.ndarray) -> np.ndarray:
    """Each group's unit centroid over `unit`'s rows (a zero row for a group with none)."""
    dim = unit.shape[1] if unit.ndim == 2 and len(unit) else 1
    rows = []
    for g in groups:
        c = unit[g].mean(axis=0) if g else np.zeros(dim)
        rows.append(c / max(float(np.sqrt(c.dot(c))), 1e-12))  # as np.linalg.norm: a tenth of its time
    return np.stack(rows) if rows else np.zeros((0, dim))


def _unit_of(vectors: Embedding, n: int) -> np.ndarray:
    """The main space's vectors of n memories as float64 unit rows (`_unit`), normalised in the
    float64 copy itself when the conversion made one (float32 vectors: at 100,000 memories a
    second 300 MB beside it, at 2,000 a fresh 6 MB the kernel zeroes every run)."""
    x = np.asarray(vectors, np.float64)
    return _unit(x.reshape(n, -1), own=x is not vectors)


def _unit(x: np.ndarray, own: bool = False) -> np.ndarray:
    """Each row over its norm (a row without one: zeros), a block of rows at a time: each row's
    figures as over the whole, without a squared and a zeroed copy of the matrix beside it (at
    100,000 memories, 300 MB each; the norms took a tenth of an increment). `own`: `x` is the
    caller's to overwrite (the rows are normalised in place)."""
    out = x if own else np.empty_like(x)
    for s in range(0, len(x), UNIT_BLOCK):
        block, into = x[s:s + UNIT_BLOCK], out[s:s + UNIT_BLOCK]
        n = np.linalg.norm(block, axis=1, keepdims=True)
        np.divide(block, n, out=into, where=n > 0)
        into[~(n[:, 0] > 0)] = 0.0
    return out


def _merged(found: Topics, merges: dict[str, str]) -> Topics:
    """The topics with each merged one folded into the one it joined (chains followed)."""
    if not merges:
        return found

    def root(tid: str) -> str:
        seen = set()
        while tid in merges and tid not in seen:
            seen.add(tid)
            tid = merges[tid]
        return tid

    by_id = {t.id: t for t in found}
    members: dict[str, set[str]] = {}
    for t in found:
        members.setdefault(root(t.id) if root(t.id) in by_id else t.id, set()).update(t.members)
    out = [dataclasses.replace(by_id[tid], members=tuple(sorted(ms))) for tid, ms in members.items()]
    kept = Topics(sorted(out, key=lambda t: (-t.size, t.id)), found.churn, found.entropy)
    return kept


__all__ = ["TopicVerbs", "texts_of"]

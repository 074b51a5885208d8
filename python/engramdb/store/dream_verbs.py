"""The verbs that act on a namespace's memories by themselves or by concept (C8, C9; issue 25):
`dream(namespace)` and `forget_concept(concept)`.

Both are proposals first: a dry run is the default, and what they would do is listed with its
reason. Each acts only on evidence about the memory itself (its own text, its own match, its
validity; never a compression's summary, a neighbour's score or an ended version), decides
everything before it writes, and writes its forgets (with the dream's edges) in one write. Their
forgets are soft and recorded (see `engramdb.lifecycle.forgetting`): the dream's wait for a
person's confirmation before the restore window's purge may take them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from ..lifecycle import dream as replay
from ..lifecycle import forgetting
from ..lifecycle.consolidation import STEPS, Summarizer, leading_sentences
from ..lifecycle.forgetting import Forgotten
from ..model import checks
from ..model.errors import StoreError
from ..model.memory import as_utc, micros, utc_now
from ..storage.view import Loc, View
from ..topics.model import Topic, Topics
from .upkeep import PROTECT_DAYS, PROTECT_DEPTH, UpkeepVerbs

FORGET_MIN_SCORE = 0.5  # a concept given as text: what a search finds at a good match
DREAM_EDGES, DREAM_CONFIDENCE = 50, 0.3
EXPLORE = 5000  # memories the dream's exploration compares pairwise (the newest)


class DreamVerbs(UpkeepVerbs):
    """Mixed into `Store` (under the topic verbs, which provide the topics a dream reads)."""

    # provided by TopicVerbs
    def topics(self, namespace: str, *, refresh: bool = False, labeler: Any = None) -> Topics:
        raise NotImplementedError

    def topic(self, id: str, *, sample: int = 5) -> tuple[Topic, list[Any]]:
        raise NotImplementedError

    @staticmethod
    def _texts(view: View, locs: list[tuple[int, int]]) -> list[str]:
        raise NotImplementedError

    def _gather(self, view: View, locs: list[tuple[int, int]], space: str) -> Any:
        raise NotImplementedError

    def dream(self, namespace: str, *, dry_run: bool = True, max_edges: int = DREAM_EDGES,
              now: datetime | None = None, summarizer: Summarizer | None = None) -> dict[str, Any]:
        """An offline pass over a namespace (C9), for a quiet hour. `dry_run` (the default) only
        reports what it would do; `dry_run=False` does it.

        Replay:
        - re-cluster its topics (derived data: refreshed either way);
        - consolidate it (H7, E7; as `consolidate` at `now`, compressing with `summarizer`);
        - forget the newer of two memories that are exact copies: their own texts (never a
          summary a compression wrote) the same word for word, both in force (not ended, not
          archived), the same record otherwise, the newer first stored in the last 7 days
          outside any session (a turn said twice is an event and stays; see
          `engramdb.lifecycle.dream`). Such a forget is the engine's own proposal: recorded (by
          "dream", with the copy it repeats), restorable with `restore`, and never purged by the
          restore window until a person confirms it (`forget_proposals`, `confirm_forgotten`).

        Exploration: link up to `max_edges` pairs of similar memories that sit in different
        topics (main-space cosine at least the midpoint of the space's low and high thresholds,
        best first) with RELATED_TO edges of confidence 0.3 and reason "dream: ...". These
        hypotheses are never walked by graph expansion unless a search passes `hypotheses=True`.

        Everything is decided before anything is written; applied, the consolidation runs first
        (its steps as in `consolidate`), then the forgets and the edges in one write, all or
        nothing. A copy is forgotten only while it and its original are still at the versions
        judged (an update, forget, archive or restore meanwhile leaves it, listed in `skipped`),
        and an edge only while both its ends are. Returns a report: topics, churn, the
        consolidation's counts, what it applied, purged and held; `duplicates` ((original, copy)
        pairs), `forgotten` (copy -> why), `duplicates_forgotten` (the copies forgotten, when
        applied), `skipped` (id -> why a planned change was not made) and the `edges` proposed
        (written, when applied, but those `skipped` names)."""
        checks.name("namespace", namespace)
        if not isinstance(dry_run, bool):
            raise TypeError(f"dry_run must be True or False, got {dry_run!r}")
        if isinstance(max_edges, bool) or not isinstance(max_edges, int) or max_edges < 0:
            raise ValueError(f"max_edges must be an int >= 0, got {max_edges!r}")
        if summarizer is not None and not callable(summarizer):
            raise TypeError(f"summarizer must be a callable (text) -> summary, or None, got {summarizer!r:.80}")
        at = as_utc("now", now) or utc_now()
        if not dry_run and self.read_only:
            raise StoreError("this store is read-only: dream(dry_run=False) writes")
        found = self.topics(namespace, refresh=True)
        plan = self._consolidation_plan(namespace, dry_run, "exponential", at, PROTECT_DAYS, PROTECT_DEPTH)
        run = plan.report
        changing = {d.id for d in run.decisions if d.action in ("archive", "compress")}
        view = self._view()
        locs = view.current_locs(namespace)
        ids = [view.segments[si].ids[r] for si, r in locs]  # columns, not Memory objects: 100K of them cost seconds
        copies = self._copies(view, locs, ids, self._texts(view, locs), at, changing)
        gone = {c.copy for c in copies}
        edges = self._explore(view, locs, ids, found, gone | changing | set(view.archived), max_edges)
        forgotten: list[str] = []
        skipped: dict[str, str] = {}
        if not dry_run:
            forgets = {c.copy: c.reason for c in copies}
            hypotheses = [(e["src"], e["dst"], "RELATED_TO", DREAM_CONFIDENCE, e["reason"]) for e in edges]
            self._forget_check(view, forgets, hypotheses)  # checked before the consolidation writes anything
            self._apply(plan, summarizer or leading_sentences, STEPS)
            # written only as judged: each copy with its original, each edge with its two ends
            judged = {mid: self._version_in(view, mid) for e in edges for mid in (e["src"], e["dst"])}
            for c in copies:
                judged[c.original], judged[c.copy] = c.versions
            forgotten, skipped = self._forget_recorded(forgets, forgetting.BY_DREAM, confirmed=False, edges=hypotheses,
                                                       judged=judged, along={c.copy: c.original for c in copies})
        return {"namespace": namespace, "dry_run": dry_run, "topics": len(found), "churn": found.churn,
                "consolidation": run.counts(), "consolidation_applied": run.applied, "purged": run.purged,
                "held": run.held, "duplicates": [(c.original, c.copy) for c in copies],
                "forgotten": {c.copy: c.reason for c in copies}, "duplicates_forgotten": forgotten,
                "skipped": {**run.skipped, **skipped}, "edges": edges}

    @staticmethod
    def _version_in(view: View, mid: str) -> int:
        m = view.get(mid, include_forgotten=True)
        return m.version if m is not None else 0

    def _copies(self, view: View, locs: list[Loc], ids: list[str], texts: list[str], at: datetime,
                changing: set[str]) -> list[replay.Copy]:
        """The exact copies among a namespace's memories (`engramdb.lifecycle.dream`): only those
        whose current texts match another's are read whole, with their versions."""
        groups: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            if ids[i] not in view.archived and ids[i] not in changing and text.strip():
                groups.setdefault(replay.key(text), []).append(i)
        seen = []
        for members in groups.values():
            if len(members) < 2:
                continue
            for i in members:
                versions = view.versions(ids[i])
                first = versions[0].learned_at if versions else None
                if first is None:
                    continue
                linked = bool(view.outgoing(ids[i]) or view.incoming(ids[i]))
                seen.append(replay.Seen(view.memory_at(*locs[i]), replay.own_text(versions), micros(first), linked))
        return replay.copies(seen, at)

    def _explore(self, view: View, locs: list[Loc], ids: list[str], found: Topics, skip: set[str],
                 max_edges: int) -> list[dict[str, Any]]:
        """The dream's RELATED_TO hypotheses between memories of different topics (not `skip`: the
        copies it forgets, what the consolidation changes, archived memories)."""
        from ..retrieval.graph import HYPOTHESIS

        topic_of = {mid: i for i, t in enumerate(found) for mid in t.members}
        sp = self.schema[self.schema.main]
        floor = (sp.low + sp.high) / 2
        learned = np.array([int(view.segments[si].learned_at[r]) for si, r in locs], np.int64)
        by_age = sorted(range(len(locs)), key=lambda i: (int(learned[i]), ids[i]))
        # the newest EXPLORE members: a dream replays recent experience, and all pairs of a 100K
        # namespace would be 5e9 similarities
        inside = [i for i in by_age if ids[i] in topic_of and ids[i] not in skip][-EXPLORE:]
        pairs: list[tuple[float, str, str]] = []
        if len(inside) > 1 and max_edges > 0:
            x = np.asarray(self._gather(view, [locs[i] for i in inside], sp.name), np.float32).reshape(len(inside), -1)
            x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
            tid = np.array([topic_of[ids[i]] for i in inside])
            for sim, ia, ib in cross_pairs(x, tid, floor, max_edges):
                pairs.append((sim, ids[inside[ia]], ids[inside[ib]]))
        made = []
        for sim, src, dst in pairs:
            ta, tb = found[topic_of[src]], found[topic_of[dst]]
            if any(e.dst == dst and e.type == "RELATED_TO" for e in view.outgoing(src)):
                continue
            reason = f"{HYPOTHESIS}: similar ({sim:.2f}) across topics {ta.label!r} and {tb.label!r}"
            made.append({"src": src, "dst": dst, "similarity": round(sim, 4), "reason": reason})
        return made

    def forget_concept(self, concept: str, *, namespace: str, dry_run: bool = True,
                       min_score: float = FORGET_MIN_SCORE) -> Forgotten:
        """Forget every memory of a concept (C8): the members of a topic (`concept` a topic id such
        as "n/t3"), or the memories whose own match to a search for `concept` scores `min_score`
        or more (expansion off: a turn that only sits next to a match, or an edge away from one,
        is not of the concept). Archived memories are left (`unarchive` them first), and so are
        members of a stored topic forgotten since. `dry_run` (the default) only says which.
        Soft: each forget is recorded (by "forget_concept", with the match or topic that chose
        it) as this call's word, so `restore(id)` brings it back for 30 days and then the restore
        window's purge takes it. Returns the ids (a list) with `.reasons` (id -> why) and
        `.dry_run`; applied, all are forgotten in one write or none."""
        checks.name("namespace", namespace)
        if not isinstance(concept, str) or not concept.strip():
            raise ValueError(f"concept must be a topic id or non-empty text, got {concept!r:.80}")
        checks.utf8("concept", concept, ValueError)
        if not isinstance(dry_run, bool):
            raise TypeError(f"dry_run must be True or False, got {dry_run!r}")
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not 0 < min_score <= 1:
            raise ValueError(f"min_score must be a number in (0, 1], got {min_score!r}")
        if not dry_run and self.read_only:
            raise StoreError("this store is read-only: forget_concept(dry_run=False) writes")
        view = self._view()
        reasons: dict[str, str] = {}
        if concept.startswith(f"{namespace}/t") and concept[len(namespace) + 2:].isdigit():
            t = self.topic(concept, sample=0)[0]
            reasons = {mid: f"a member of topic {t.id} ({t.label!r})" for mid in t.members
                       if mid not in view.archived and view.get(mid) is not None}  # a stored topic may be older
        else:
            hits = self.search(concept, namespace=namespace, k=1000, min_score=min_score, log=False, explain=True,
                               weights={"neighbours": 0.0, "graph": 0.0})
            for h in hits:
                why = h.explain or {}
                own = float(why.get("own", h.score))
                if not h.archived and "expanded" not in why and own >= min_score:
                    reasons[h.id] = f"its own text matches {concept[:80]!r} (score {own:.2f})"
        ids = list(reasons)
        if not dry_run and ids:
            self._forget_recorded(reasons, forgetting.BY_CONCEPT, confirmed=True)
        return Forgotten(ids, reasons, dry_run)


def cross_pairs(x: np.ndarray, tid: np.ndarray, floor: float, k: int) -> list[tuple[float, int, int]]:
    """The k most similar pairs (i < j) of unit rows in different topics at `floor` or more, best
    first (ties by position), computed a block of rows at a time (bounded memory)."""
    best: list[tuple[float, int, int]] = []
    step = max(1, (1 << 22) // max(1, len(x)))
    for s in range(0, len(x), step):
        sims = x[s:s + step] @ x.T
        i, j = np.nonzero(sims >= floor)
        keep = (j > i + s) & (tid[i + s] != tid[j])
        i, j = i[keep], j[keep]
        vals = sims[i, j]
        if len(vals) > k:
            top = np.argpartition(-vals, k - 1)[:k]
            i, j, vals = i[top], j[top], vals[top]
        best += [(float(v), int(a) + s, int(b)) for v, a, b in zip(vals.tolist(), i.tolist(), j.tolist())]
        best = sorted(best, key=lambda t: (-t[0], t[1], t[2]))[:k]
    return best


__all__ = ["DreamVerbs"]

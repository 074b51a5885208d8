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
from typing import TYPE_CHECKING, Any

import numpy as np

from ..lifecycle import dream as replay
from ..lifecycle import forgetting
from ..lifecycle.consolidation import STEPS, Summarizer, leading_sentences
from ..lifecycle.forgetting import Forgotten
from ..model import checks
from ..model.errors import StoreError
from ..model.memory import as_utc, micros, utc_now
from ..storage.view import Loc, View
from ..topics.results import Topics
from .forget_verbs import Forgetting
from .topic_verbs import texts_of
from .upkeep_verbs import PROTECT_DAYS, PROTECT_DEPTH, Consolidation

if TYPE_CHECKING:
    from .facade import Store

FORGET_MIN_SCORE = 0.5  # a concept given as text: what a search finds at a good match
DREAM_EDGES, DREAM_CONFIDENCE = 50, 0.3
EXPLORE = 5000  # memories the dream's exploration compares pairwise (the newest)


class Dreaming:
    """The dream and concept forgetting (C9), behind `db.lifecycle`."""

    def __init__(self, db: Store, consolidation: Consolidation, forgetting: Forgetting) -> None:
        self._db = db
        self._consolidation, self._forgetting = consolidation, forgetting

    def dream(self, namespace: str, *, dry_run: bool = True, max_edges: int = DREAM_EDGES,
              now: datetime | None = None, summarizer: Summarizer | None = None) -> dict[str, Any]:
        """`LifecycleVerbs.dream`."""
        checks.name("namespace", namespace)
        if not isinstance(dry_run, bool):
            raise TypeError(f"dry_run must be True or False, got {dry_run!r}")
        if isinstance(max_edges, bool) or not isinstance(max_edges, int) or max_edges < 0:
            raise ValueError(f"max_edges must be an int >= 0, got {max_edges!r}")
        if summarizer is not None and not callable(summarizer):
            raise TypeError(f"summarizer must be a callable (text) -> summary, or None, got {summarizer!r:.80}")
        at = as_utc("now", now) or utc_now()
        if not dry_run and self._db.read_only:
            raise StoreError("this store is read-only: dream(dry_run=False) writes")
        found = self._db.topics(namespace, refresh=True)
        plan = self._consolidation.plan(namespace, dry_run, "exponential", at, PROTECT_DAYS, PROTECT_DEPTH)
        run = plan.report
        changing = {d.id for d in run.decisions if d.action in ("archive", "compress")}
        view = self._db._view()
        locs = view.current_locs(namespace)
        ids = view.ids_at(locs)  # columns, not Memory objects: 100K of them cost seconds
        copies = self._copies(view, locs, ids, texts_of(view, locs), at, changing)
        gone = {c.copy for c in copies}
        edges = self._explore(view, locs, ids, found, gone | changing | set(view.archived), max_edges)
        forgotten: list[str] = []
        skipped: dict[str, str] = {}
        if not dry_run:
            forgets = {c.copy: c.reason for c in copies}
            hypotheses = [(e["src"], e["dst"], "RELATED_TO", DREAM_CONFIDENCE, e["reason"]) for e in edges]
            self._forgetting.check(view, forgets, hypotheses)  # checked before the consolidation writes anything
            self._consolidation.apply(plan, summarizer or leading_sentences, STEPS)
            # written only as judged: each copy with its original, each edge with its two ends
            judged = {mid: self._version_in(view, mid) for e in edges for mid in (e["src"], e["dst"])}
            for c in copies:
                judged[c.original], judged[c.copy] = c.versions
            forgotten, skipped = self._forgetting.record(forgets, forgetting.BY_DREAM, confirmed=False, edges=hypotheses,
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
        from ..retrieval.graph_method import HYPOTHESIS

        topic_of = {mid: i for i, t in enumerate(found) for mid in t.members}
        sp = self._db.schema[self._db.schema.main]
        floor = (sp.low + sp.high) / 2
        learned = view.column_at("learned_at", locs)
        by_age = sorted(range(len(locs)), key=lambda i: (int(learned[i]), ids[i]))
        # the newest EXPLORE members: a dream replays recent experience, and all pairs of a 100K
        # namespace would be 5e9 similarities
        inside = [i for i in by_age if ids[i] in topic_of and ids[i] not in skip][-EXPLORE:]
        pairs: list[tuple[float, str, str]] = []
        if len(inside) > 1 and max_edges > 0:
            x = np.asarray(view.vectors_at(sp.name, [locs[i] for i in inside]), np.float32).reshape(len(inside), -1)
            x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
            tid = np.array([topic_of[ids[i]] for i in inside])
            for sim, ia, ib in cross_pairs(x, tid, floor, max_edges):
                pairs.append((sim, ids[inside[ia]], ids[inside[ib]]))
        made = []
        for sim, src, dst in pairs:
            ta, tb = found[topic_of[src]], found[topic_of[dst]]
            if any(e.dst == dst and e.type == "RELATED_TO" for e in view.outgoing(src)):
                continue
            # the topics by id, never by label: a label is made of members' words, and an edge between
            # two other memories would keep a purged member's words after purge() took them out
            reason = f"{HYPOTHESIS}: similar ({sim:.2f}) across topics {ta.id} and {tb.id}"
            made.append({"src": src, "dst": dst, "similarity": round(sim, 4), "reason": reason})
        return made

    def forget_concept(self, concept: str, *, namespace: str, dry_run: bool = True,
                       min_score: float = FORGET_MIN_SCORE) -> Forgotten:
        """`LifecycleVerbs.forget_concept`."""
        checks.name("namespace", namespace)
        if not isinstance(concept, str) or not concept.strip():
            raise ValueError(f"concept must be a topic id or non-empty text, got {concept!r:.80}")
        checks.utf8("concept", concept, ValueError)
        if not isinstance(dry_run, bool):
            raise TypeError(f"dry_run must be True or False, got {dry_run!r}")
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not 0 < min_score <= 1:
            raise ValueError(f"min_score must be a number in (0, 1], got {min_score!r}")
        if not dry_run and self._db.read_only:
            raise StoreError("this store is read-only: forget_concept(dry_run=False) writes")
        view = self._db._view()
        reasons: dict[str, str] = {}
        if concept.startswith(f"{namespace}/t") and concept[len(namespace) + 2:].isdigit():
            t = self._db.topics.get(concept, sample=0)[0]
            # by id, not label: a label is made of members' words, kept in each member's record
            reasons = {mid: f"a member of topic {t.id}" for mid in t.members
                       if mid not in view.archived and view.get(mid) is not None}  # a stored topic may be older
        else:
            hits = self._db.search(concept, namespace=namespace, k=1000, min_score=min_score, log=False, explain=True,
                               weights={"neighbours": 0.0, "graph": 0.0})
            for h in hits:
                why = h.explain or {}
                own = float(why.get("own", h.score))
                if not h.archived and "expanded" not in why and own >= min_score:
                    reasons[h.id] = f"its own text matches {concept[:80]!r} (score {own:.2f})"
        ids = list(reasons)
        if not dry_run and ids:
            self._forgetting.record(reasons, forgetting.BY_CONCEPT, confirmed=True)
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


__all__ = ["Dreaming"]

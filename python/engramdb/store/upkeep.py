"""The store verbs that keep a namespace sound over time: contradictions (H5); more of the
lifecycle (consolidation, pruning) joins here."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import numpy as np

from ..lifecycle.contradictions import Detector, HeuristicDetector, Proposal, candidate_pairs
from ..model.memory import Memory, as_utc
from ..spaces.protocol import Embedder
from ..spaces.schema import Schema
from ..storage.view import Loc, View


class UpkeepVerbs:
    """Mixed into `Store`: the verbs above, over its current snapshot."""

    schema: Schema
    embedders: dict[str, Embedder]

    def _view(self) -> View:
        raise NotImplementedError

    def supersede(self, old_id: str, new_id: str) -> tuple[Memory, Memory]:
        raise NotImplementedError

    def resolve_contradictions(self, *, namespace: str, dry_run: bool = True, detector: Detector | None = None,
                               min_score: float = 0.0, since: datetime | None = None,
                               ids: Iterable[str] | None = None) -> list[Proposal]:
        """Find newer memories that contradict older ones of a namespace (H5) and, unless
        `dry_run`, end each older one where the newer starts (`supersede`; nothing is deleted).

        Pairs judged: current memories of the namespace whose validity overlaps and whose main-
        space vectors are near, older first; `since` (learned at or after) or `ids` limits the
        memories whose pairs are looked at (what a write just added). `detector(old, new,
        similarity) -> (score, reason) | None` replaces the built-in rule (an LLM judge, say);
        proposals under `min_score` are dropped. Returns the proposals best first, each with
        `.old`, `.new`, `.reason`, `.score` and `.applied`; an older memory is ended once (by
        its best proposal)."""
        view = self._view()
        mems, vectors = _current(view, self.schema, namespace)
        if len(mems) < 2:
            return []
        when = np.array([_start(m).timestamp() for m in mems])
        order = np.argsort(np.lexsort((np.array([_learned(m).timestamp() for m in mems]), when)))
        only = None
        if since is not None or ids is not None:
            wanted = set(ids) if ids is not None else None
            cut = as_utc("since", since)
            only = np.array([i for i, m in enumerate(mems) if (wanted is None or m.id in wanted)
                             and (cut is None or _learned(m) >= cut)], np.int64)
            if len(only) == 0:
                return []
        judge = detector or HeuristicDetector(self._embed_main)
        found = []
        for a, b, sim in candidate_pairs(vectors, order, lambda i, j: _overlap(mems[i], mems[j]), only):
            verdict = judge(mems[a], mems[b], sim)
            if verdict is None:
                continue
            score, reason = verdict
            if not 0.0 <= float(score) <= 1.0:
                raise ValueError(f"a contradiction detector's score must be in [0, 1], got {score!r} for "
                                 f"({mems[a].id!r}, {mems[b].id!r})")
            if score >= min_score:
                found.append(Proposal(mems[a].id, mems[b].id, str(reason), float(score), round(sim, 4)))
        found.sort(key=lambda p: (-p.score, p.old, p.new))
        best: dict[str, Proposal] = {}
        for p in found:
            best.setdefault(p.old, p)
        proposals = sorted(best.values(), key=lambda p: (-p.score, p.old, p.new))
        if dry_run:
            return proposals
        applied = []
        for p in proposals:
            self.supersede(p.old, p.new)
            applied.append(Proposal(p.old, p.new, p.reason, p.score, p.similarity, applied=True))
        return applied

    def _embed_main(self, texts: Iterable[str]) -> np.ndarray:
        emb = self.embedders.get(self.schema.main)
        if emb is None:
            raise ValueError(f"no embedder for the main space {self.schema.main!r}: pass detector= to judge pairs")
        return np.asarray(emb.embed(list(texts)), np.float64)


def _current(view: View, schema: Schema, namespace: str) -> tuple[list[Memory], np.ndarray]:
    """The namespace's current, not forgotten memories and their main-space vectors."""
    locs: list[Loc] = [loc for _, loc in view.current() if view.segments[loc[0]].namespace(loc[1]) == namespace]
    mems = view.memories_at(locs)
    keep = [i for i, m in enumerate(mems) if m.forgotten_at is None]
    main = schema.main
    rows = [np.asarray(view.segments[locs[i][0]].vectors(schema, main))[locs[i][1]] for i in keep]
    vectors = np.stack(rows).astype(np.float32) if rows else np.zeros((0, 1), np.float32)
    return [mems[i] for i in keep], vectors


def _learned(m: Memory) -> datetime:
    assert m.learned_at is not None  # every stored version has one
    return m.learned_at


def _start(m: Memory) -> datetime:
    return m.valid_from or _learned(m)


def _overlap(a: Memory, b: Memory) -> bool:
    """Whether two memories' validity intervals overlap (an open end is forever)."""
    a0, b0 = _start(a), _start(b)
    return (b.valid_until is None or a0 < b.valid_until) and (a.valid_until is None or b0 < a.valid_until)


__all__ = ["UpkeepVerbs"]

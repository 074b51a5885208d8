"""Contradictions in a namespace (H5, issue 25): `resolve_contradictions` finds newer statements
that contradict older ones and, applied, ends each older one.

Which of two statements is the newer is when the store learned each (its own text's telling,
`engramdb.lifecycle.statements`: an engine rewrite such as a merged copy's count or a supersede's
link is no new telling), then valid_from, then id. The later-learned statement is the correction
and is never the one ended, even when it is dated back: "my rent is 1450 since January", told
today, ends "my rent is 1200" told last week. The older ends where the newer starts (its
valid_from, else when it was told); when the newer starts before the older's own valid_from, the
older ends at its own start (as far as the newer says, it never held). A proposal is applied only
while both memories are still at the versions judged (a change meanwhile leaves the pair, the
proposal returned with `applied=False`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..graph import links
from ..lifecycle import statements
from ..lifecycle.contradictions import Detector, HeuristicDetector, Proposal, candidate_pairs
from ..model import checks
from ..model.errors import StoreError
from ..model.memory import Memory, as_utc
from ..spaces.schema import Schema
from ..storage.view import Loc, View
from .forget_verbs import changed

if TYPE_CHECKING:
    from .facade import Store

BULK = 32  # memories rewritten since their telling: read all versions in one pass past this many


class Contradictions:
    """Contradiction detection and supersede (H5), behind `db.lifecycle`."""

    def __init__(self, db: Store) -> None:
        self._db = db

    def resolve_contradictions(self, *, namespace: str, dry_run: bool = True, detector: Detector | None = None,
                               min_score: float = 0.0, since: datetime | None = None,
                               ids: Iterable[str] | None = None) -> list[Proposal]:
        """`LifecycleVerbs.resolve_contradictions`."""
        checks.name("namespace", namespace)
        if not isinstance(dry_run, bool):
            raise TypeError(f"dry_run must be True or False, got {dry_run!r:.80}")
        if detector is not None and not callable(detector):
            raise TypeError(f"detector must be a callable (old, new, similarity) -> (score, reason) | None, or "
                            f"None, got {detector!r:.80}")
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float)):
            raise TypeError(f"min_score must be a number in [0, 1], got {min_score!r:.80}")
        if not 0.0 <= min_score <= 1.0:  # NaN fails this too
            raise ValueError(f"min_score must be a number in [0, 1], got {min_score!r}")
        wanted = _ids(ids)
        cut = as_utc("since", since)
        if not dry_run and self._db.read_only:
            raise StoreError("this store is read-only: resolve_contradictions(dry_run=False) writes")
        view = self._db._view()
        mems, vectors = _current(view, self._db.schema, namespace)
        if len(mems) < 2:
            return []
        only = None
        if cut is not None or wanted is not None:
            only = np.array([i for i, m in enumerate(mems) if (wanted is None or m.id in wanted)
                             and (cut is None or _learned(m) >= cut)], np.int64)
            if len(only) == 0:
                return []
        told = _Told(view, mems, bulk=only is None)

        def start(i: int) -> datetime:
            return mems[i].valid_from or told(i)

        def key(i: int) -> tuple[datetime, datetime, str]:
            return told(i), start(i), mems[i].id

        judge = detector or HeuristicDetector(self._embed_main)
        found = []
        overlap = _overlap(mems, start)
        for i, j, sim in candidate_pairs(vectors, np.arange(len(mems)), overlap, only,
                                         texts=[m.content for m in mems]):
            a, b = (i, j) if key(i) < key(j) else (j, i)
            verdict = judge(mems[a], mems[b], sim)
            if verdict is None:
                continue
            score, reason = verdict
            if not 0.0 <= float(score) <= 1.0:
                raise ValueError(f"a contradiction detector's score must be in [0, 1], got {score!r} for "
                                 f"({mems[a].id!r}, {mems[b].id!r})")
            if score >= min_score:
                found.append((Proposal(mems[a].id, mems[b].id, str(reason), float(score), round(sim, 4)), a, b))
        found.sort(key=lambda f: (-f[0].score, f[0].old, f[0].new))
        best: dict[str, tuple[Proposal, int, int]] = {}
        for f in found:
            best.setdefault(f[0].old, f)
        chosen = sorted(best.values(), key=lambda f: (-f[0].score, f[0].old, f[0].new))
        if dry_run:
            return [p for p, _, _ in chosen]
        versions = {m.id: m.version for m in mems}
        applied = []
        for p, a, b in chosen:
            end, own = start(b), mems[a].valid_from
            if own is not None and end < own:  # the newer starts before the older: as it says, that never held
                end = own
            done = self._supersede_as_judged(p.old, p.new, end, versions)
            reason = p.reason if done else f"{p.reason}; not applied: one of the two changed meanwhile"
            applied.append(Proposal(p.old, p.new, reason, p.score, p.similarity, applied=done))
        return applied

    def _supersede_as_judged(self, old_id: str, new_id: str, end: datetime, versions: dict[str, int]) -> bool:
        """`old` ends at `end`, superseded by `new` (both linked, as `supersede` does), when both
        are still at `versions` (which this updates); False, writing nothing, when not."""
        with self._db._engine.writing() as view:
            if any(changed(view, mid, versions.get(mid, 0)) for mid in (old_id, new_id)):
                return False
            old, new = links.pair(view, old_id, new_id, ("old_id", "new_id"))
            o2, n2 = self._db._supersede_write(view, old, new, end)
            versions[old_id], versions[new_id] = o2.version, n2.version
            return True

    def _embed_main(self, texts: Iterable[str]) -> np.ndarray:
        emb = self._db.embedders.get(self._db.schema.main)
        if emb is None:
            raise ValueError(f"no embedder for the main space {self._db.schema.main!r}: pass detector= to judge pairs")
        return np.asarray(emb.embed(list(texts)), np.float64)


def _ids(ids: Any) -> set[str] | None:
    """`ids` checked: None, or an iterable of memory ids (one string is refused: its characters
    would be taken for ids)."""
    if ids is None:
        return None
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"ids must be an iterable of memory ids, not one string (pass [{ids!r:.80}] for one)")
    return set(checks.id_list("ids", ids))


class _Told:
    """When each memory's own text was told (`statements.told_at`): its learned_at for a memory
    never rewritten (version 1), else read from its versions, one memory at a time or, for a whole
    namespace (`bulk`) with many rewritten, all in one pass over the id columns."""

    def __init__(self, view: View, mems: list[Memory], *, bulk: bool) -> None:
        self.view, self.mems = view, mems
        self.cache: dict[int, datetime] = {}
        rewritten = {m.id: i for i, m in enumerate(mems) if m.version > 1}
        if bulk and len(rewritten) > BULK:
            found: dict[str, list[Memory]] = {}
            for seg in view.segments:
                for row, mid in enumerate(seg.ids):
                    if mid in rewritten:
                        found.setdefault(mid, []).append(seg.memory_at(row))
            for mid, versions in found.items():
                self.cache[rewritten[mid]] = statements.told_at(sorted(versions, key=lambda v: v.version)) or \
                    _learned(mems[rewritten[mid]])

    def __call__(self, i: int) -> datetime:
        got = self.cache.get(i)
        if got is None:
            m = self.mems[i]
            got = _learned(m) if m.version == 1 else (statements.told_at(self.view.versions(m.id)) or _learned(m))
            self.cache[i] = got
        return got


def _current(view: View, schema: Schema, namespace: str) -> tuple[list[Memory], np.ndarray]:
    """The namespace's current memories, not forgotten or archived (an archived row holds no text),
    and their main-space vectors."""
    locs: list[Loc] = view.current_locs(namespace)
    if view.archived:
        locs = [loc for loc, mid in zip(locs, view.ids_at(locs)) if mid not in view.archived]
    vectors = np.asarray(view.vectors_at(schema.main, locs), np.float32) if locs else np.zeros((0, 1), np.float32)
    return view.memories_at(locs), vectors


def _learned(m: Memory) -> datetime:
    assert m.learned_at is not None  # every stored version has one
    return m.learned_at


def _overlap(mems: list[Memory], start: Callable[[int], datetime]) -> Callable[[int, int], bool]:
    """Whether two memories' validity intervals overlap (an open end is forever)."""
    def overlap(i: int, j: int) -> bool:
        a, b = mems[i], mems[j]
        a0, b0 = start(i), start(j)
        return (b.valid_until is None or a0 < b.valid_until) and (a.valid_until is None or b0 < a.valid_until)
    return overlap


__all__ = ["Contradictions"]

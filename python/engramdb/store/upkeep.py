"""The store verbs that keep a namespace sound over time: contradictions (H5), consolidation
tiers and ELO pruning (H7, E7)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow.compute as pc

from ..importance.elo import DAY_US, tier
from ..lifecycle import consolidation as cons
from ..lifecycle import forgetting
from ..lifecycle.contradictions import Detector, HeuristicDetector, Proposal, candidate_pairs
from ..lifecycle.tier_state import DATA as TIERS_FILE
from ..lifecycle.tier_state import TierState
from ..model.errors import StoreError
from ..model.memory import Memory, as_utc, micros, utc_now
from ..spaces.schema import Schema
from ..storage.derived_files import DerivedFiles
from ..storage.view import Loc, View
from .forget_verbs import ForgetVerbs
from .usage import Usage

PROTECT_DAYS, PROTECT_DEPTH, PROTECT_QUERIES = 30.0, 50, 2000
PROTECT_MIN_SCORE = 0.1  # a hit scoring under it matched nothing of the question (README "Scores")


class UpkeepVerbs(ForgetVerbs):
    """Mixed into `Store`: the verbs above, over its current snapshot."""

    _usage: Usage
    _tiers: TierState | None = None

    def supersede(self, old_id: str, new_id: str) -> tuple[Memory, Memory]:
        raise NotImplementedError

    def purge(self, ids: str | Iterable[str] = (), *, namespace: str | None = None) -> int:
        raise NotImplementedError

    def archive(self, older_than: datetime | None = None, *, namespace: str | None = None,
                ids: Iterable[str] | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def _new_versions(self, changes: Mapping[str, Mapping[str, Any]]) -> int:
        raise NotImplementedError

    @property
    def read_only(self) -> bool:
        raise NotImplementedError

    @property
    def _derived(self) -> DerivedFiles:
        raise NotImplementedError

    def tiers(self) -> TierState:
        """The lifecycle tiers and the recent consolidation runs (loaded once)."""
        if self._tiers is None:
            self._tiers = TierState.load(self._derived)
        return self._tiers

    def _forget_tiers(self, ids: set[str]) -> None:
        """What a purge takes out of the tier state: the purged memories (a file that could not be
        read is written again without them, rather than kept with what it may hold)."""
        if not ids:
            return
        state = self.tiers()
        unread = state.state not in ("adopted", "missing") and self._derived.exists(TIERS_FILE)
        if (state.forget(ids) or unread) and self._derived.writable:
            state.save(self._derived)

    def dashboard(self, *, top: int = 10, namespace: str | None = None) -> dict[str, Any]:
        """What `engramdb stats` shows (E9): the memories with the highest ELO, how many memories
        sit in each ELO tier and each lifecycle tier, recent activity (searches, feedback, latest
        queries, search latency) and the recent consolidation runs."""
        now_us = time.time_ns() // 1_000
        view = self._view()
        ratings = self._usage.ratings
        state = self.tiers()
        elo_tiers = {t: 0 for t in ("HIGH", "MEDIUM", "LOW", "VERY_LOW")}
        life = {t: 0 for t in ("short_term", "long_term", "archived")}
        rated = []
        for si, row in view.current_locs(namespace):
            mid = view.segments[si].ids[row]
            e = ratings.elo_now(mid, now_us)
            elo_tiers[tier(e)] += 1
            life["archived" if mid in view.archived else state.tier(mid)] += 1
            if mid in ratings.by_id:
                rated.append((e, mid, si, row))
        rated.sort(key=lambda x: (-x[0], x[1]))
        best = []
        for e, mid, si, row in rated[:top]:
            m = view.segments[si].memory_at(row)
            r = ratings.by_id[mid]
            best.append({"id": mid, "namespace": m.namespace, "elo": round(e, 1), "tier": tier(e), "used": r.used,
                         "shown": r.shown, "content": m.content[:80]})
        return {"memories": sum(elo_tiers.values()), "elo_tiers": elo_tiers, "lifecycle_tiers": life, "top": best,
                "activity": self._usage.activity(now_us), "consolidation": state.runs[-5:],
                "log": self._usage.describe()}

    def consolidate(self, *, namespace: str | None = None, dry_run: bool = True, decay: str = "exponential",
                    summarizer: cons.Summarizer | None = None, now: datetime | None = None,
                    protect_days: float = PROTECT_DAYS, protect_depth: int = PROTECT_DEPTH) -> cons.Report:
        """One consolidation run (H7, E7): every current memory (of `namespace`) gets a decision,
        "promote" (short-term to long-term), "archive", "compress" or "keep", with its reason,
        priority and ELO (see `engramdb.lifecycle.consolidation`). `dry_run` (the default) only
        reports; otherwise the decisions are applied: archives in one rewrite (content to an
        archive file, `unarchive` brings it back), compressions as new versions whose content is
        `summarizer(text)` (built-in: the leading sentences; the full text stays the previous
        version), promotions in the tier state. No current memory is deleted; memories forgotten
        more than 30 days ago (S7's restore window) by a person are purged, listed in `.purged`
        (due, in a dry run); those the engine forgot on its own (the dream's copies) and nobody
        confirmed are kept, restorable, and listed in `.held` with why (see
        `engramdb.lifecycle.forgetting`). The access log is applied to
        the ratings first. `decay`: "exponential" (default), "ebbinghaus" or "linear". A memory
        among the `protect_depth` best hits of a query logged in the last `protect_days` days
        (replayed now, unlogged; at most 2,000 distinct queries) is never archived or compressed.
        Applied, the run is a sequence of steps, each atomic on its own (the archive rewrite, the
        compressions' new versions, the purge, the tier state): a failure (a full disk) raises and
        leaves the steps before it applied, each memory whole as it was or as the run made it."""
        t0 = time.perf_counter()
        report, texts, now_us = self._consolidation_plan(namespace, dry_run, decay, now, protect_days, protect_depth)
        if not dry_run:
            self._apply(report, texts, summarizer or cons.leading_sentences, now_us)
        report.seconds = time.perf_counter() - t0
        return report

    def _consolidation_plan(self, namespace: str | None, dry_run: bool, decay: str, now: datetime | None,
                            protect_days: float, protect_depth: int) -> tuple[cons.Report, dict[str, str], int]:
        """A run's decisions, written nowhere: the report, the texts of the memories it would
        compress, and its time (microseconds)."""
        if decay not in cons.DECAYS:
            raise ValueError(f"decay must be one of {', '.join(cons.DECAYS)}, got {decay!r}")
        if not isinstance(dry_run, bool):
            raise TypeError(f"dry_run must be True or False, got {dry_run!r}")
        if not dry_run and self.read_only:
            raise StoreError("this store is read-only: consolidate(dry_run=False) writes")
        if self._usage.logging:
            self._usage.update()
        now_us = micros(as_utc("now", now) or utc_now())
        view = self._view()
        ratings, state = self._usage.ratings, self.tiers()
        report = cons.Report(dry_run=dry_run, decay=decay)
        reached = self._reached(now_us - int(protect_days * DAY_US), namespace, protect_depth) if protect_days > 0 else {}
        texts: dict[str, str] = {}
        cols: dict[int, tuple[np.ndarray, list[str | None]]] = {}  # per segment: confidence, metadata JSON
        for si, row in view.current_locs(namespace):
            seg = view.segments[si]
            mid = seg.ids[row]
            if si not in cols:  # columns, not Memory objects: 100,000 of those cost seconds
                conf = pc.fill_null(seg.table.column("confidence"), 1.0).to_numpy(zero_copy_only=False)
                cols[si] = (np.asarray(conf, np.float64), seg.table.column("metadata").to_pylist())
            confidence, meta = cols[si][0][row], cols[si][1][row]
            learned = int(seg.learned_at[row])  # when the store learned it: the grace and "unused" count from there
            r = ratings.by_id.get(mid)
            last_access = max(r.last_shown_us, r.last_used_us) if r is not None else 0
            last_used = r.last_used_us if r is not None else 0
            elo = ratings.elo_now(mid, now_us)
            standing = cons.Standing(
                mid, seg.ns_names[seg.ns_index[row]], "archived" if mid in view.archived else state.tier(mid),
                age_days=(now_us - learned) / DAY_US, days_since_access=(now_us - max(last_access, learned)) / DAY_US,
                days_unused=(now_us - max(last_used, learned)) / DAY_US,
                accesses=(r.shown + r.used) if r is not None else 0, confidence=float(confidence), elo=elo,
                elo_tier=tier(elo), compressed=_compressed(meta), protected=reached.get(mid))
            d = cons.decide(standing, decay)
            report.decisions.append(d)
            if d.action == "compress":
                texts[mid] = seg.memory_at(row).content
        cached = getattr(self, "_topic_cache", None) or {}
        report.topics_due = {ns: t.consolidation_due for ns, (_, t) in cached.items()
                             if namespace is None or ns == namespace}
        report.purged, report.held = self._expired_forgotten(view, namespace, now_us, cons.FORGET_WINDOW_DAYS)
        return report, texts, now_us

    def purge_forgotten(self, *, days: float = cons.FORGET_WINDOW_DAYS, namespace: str | None = None,
                        dry_run: bool = False, now: datetime | None = None) -> list[str]:
        """Purge (hard delete, as `purge`) every memory a person forgot more than `days` ago (S7: a
        forgotten memory is restorable for 30 days, then it goes). `consolidate(dry_run=False)`
        does this too. A memory the engine forgot on its own (the dream's copies) and nobody
        confirmed is not taken (`forget_proposals`, `confirm_forgotten`). Returns the ids,
        sorted; `dry_run` only lists them."""
        if isinstance(days, bool) or not isinstance(days, (int, float)) or not days >= 0:
            raise ValueError(f"days must be a number >= 0, got {days!r}")
        if not dry_run and self.read_only:
            raise StoreError("this store is read-only: purge_forgotten(dry_run=False) writes")
        now_us = micros(as_utc("now", now) or utc_now())
        ids, _ = self._expired_forgotten(self._view(), namespace, now_us, float(days))
        if ids and not dry_run:
            self.purge(ids)
        return ids

    def _expired_forgotten(self, view: View, namespace: str | None, now_us: int,
                           days: float) -> tuple[list[str], dict[str, str]]:
        """Memories whose current version was forgotten `days` or more before `now_us`: those a
        person forgot (sorted), and those held because the engine forgot them on its own (id ->
        why)."""
        out, held = [], {}
        for si, row in view.current_locs(namespace, include_forgotten=True):
            seg = view.segments[si]
            if seg.forgotten[row]:
                m = seg.memory_at(row)
                if m.forgotten_at is not None and now_us - micros(m.forgotten_at) >= days * DAY_US:
                    if forgetting.purgeable(m):
                        out.append(m.id)
                    else:
                        held[m.id] = forgetting.held_because(m)
        return sorted(out), dict(sorted(held.items()))

    def _reached(self, since_us: int, namespace: str | None, depth: int) -> dict[str, str]:
        """Memory id -> why it is protected: the recent queries' best hits now."""
        out: dict[str, str] = {}
        for ns, q in self._usage.recent_queries(since_us, namespace, PROTECT_QUERIES):
            for h in self.search(q, namespace=ns, k=depth, log=False, min_score=PROTECT_MIN_SCORE):
                out.setdefault(h.id, f"a recent question reaches it ({q[:40]!r})")
        return out

    def _apply(self, report: cons.Report, texts: Mapping[str, str], summarizer: cons.Summarizer, now_us: int) -> None:
        state = self.tiers()
        by_action: dict[str, list[cons.Decision]] = {}
        for d in report.decisions:
            by_action.setdefault(d.action, []).append(d)
        archive = [d.id for d in by_action.get("archive", [])]
        if archive:
            try:
                report.applied["archive"] = int(self.archive(ids=archive)["memories"])
            except StoreError as exc:  # a store kept in memory has no archive file
                report.applied["archive"] = 0
                report.applied["archive_skipped"] = len(archive)
                report.decisions = [cons.Decision(d.id, d.namespace, "keep", f"{d.reason}; not archived: {exc}",
                                                  d.priority, d.elo, d.elo_tier, d.tier_before, d.tier_before)
                                    if d.action == "archive" else d for d in report.decisions]
        changes = {}
        for d in by_action.get("compress", []):
            summary = summarizer(texts[d.id])
            if not isinstance(summary, str) or not summary.strip():
                raise ValueError(f"the summarizer returned {summary!r} for {d.id!r}: it must return non-empty text")
            changes[d.id] = {"content": summary, "metadata": {**self._meta(d.id), "compressed": {
                "at_us": now_us, "reason": d.reason, "chars_before": len(texts[d.id])}}}
        report.applied["compress"] = self._new_versions(changes)
        for d in by_action.get("promote", []):
            state.set(d.id, "long_term", now_us)
        report.applied["promote"] = len(by_action.get("promote", []))
        if report.purged:
            self.purge(report.purged)
            report.applied["purge"] = len(report.purged)
        state.record({"at_us": now_us, "decay": report.decay, "counts": report.counts(), "applied": report.applied})
        state.save(self._derived)

    def _meta(self, mid: str) -> dict[str, Any]:
        m = self._view().get(mid)
        return dict(m.metadata) if m is not None else {}

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
    locs: list[Loc] = view.current_locs(namespace)
    main = schema.main
    rows = [np.asarray(view.segments[si].vectors(schema, main))[row] for si, row in locs]
    vectors = np.stack(rows).astype(np.float32) if rows else np.zeros((0, 1), np.float32)
    return view.memories_at(locs), vectors


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


def _compressed(metadata: str | None) -> bool:
    """Whether a memory's metadata JSON marks it compressed (parsed only when it may)."""
    if not metadata or '"compressed"' not in metadata:
        return False
    try:
        return bool(json.loads(metadata).get("compressed"))
    except (ValueError, AttributeError):
        return False

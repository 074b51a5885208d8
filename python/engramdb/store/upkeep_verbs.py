"""The store verbs that keep a namespace sound over time: consolidation tiers and ELO pruning
(H7, E7), and the restore window's purge (S7)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..graph import links
from ..importance.elo import DAY_US, tier
from ..lifecycle import consolidation as cons
from ..lifecycle import forgetting
from ..lifecycle.tier_state import DATA as TIERS_FILE
from ..lifecycle.tier_state import TierState
from ..model import checks
from ..model.errors import StoreError
from ..model.memory import Memory, as_utc, micros, utc_now, validate_memory
from ..storage.view import View
from .archive_verbs import Archiving
from .forget_verbs import changed

if TYPE_CHECKING:
    from .facade import Store

PROTECT_DAYS, PROTECT_DEPTH, PROTECT_QUERIES = 30.0, 50, 2000
MAX_PROTECT_DAYS, MAX_PROTECT_DEPTH = 36500, 1000  # a century of queries, a thousand hits deep
PROTECT_MIN_SCORE = 0.1  # a hit scoring under it matched nothing of the question (docs/guides/search.md "Scores")


@dataclass
class Plan:
    """A consolidation run decided, not applied: its report, and for each memory it would change
    (compress, purge) the version it decided on and the text it would summarize."""

    report: cons.Report
    now_us: int
    versions: dict[str, int] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)


def _steps(steps: Iterable[str] | None) -> tuple[str, ...]:
    """The steps an applied run takes, checked (a string is one step)."""
    if steps is None:
        return cons.STEPS
    if isinstance(steps, str):
        steps = [steps]
    if not isinstance(steps, Iterable):
        raise TypeError(f"steps must be some of {', '.join(map(repr, cons.STEPS))}, got {steps!r:.80}")
    out = tuple(steps)
    for s in out:
        if s not in cons.STEPS:
            error = ValueError if isinstance(s, str) else TypeError
            raise error(f"steps must be some of {', '.join(map(repr, cons.STEPS))}, got {s!r:.80}")
    return out


class Consolidation:
    """Consolidation, tiers and the purge of long-forgotten memories (H7, E7), behind `db.lifecycle`."""

    def __init__(self, db: Store, archiving: Archiving) -> None:
        self._db = db
        self._archiving = archiving

    _tiers: TierState | None = None

    def tiers(self) -> TierState:
        """The lifecycle tiers and the recent consolidation runs (loaded once)."""
        if self._tiers is None:
            self._tiers = TierState.load(self._db._derived)
        return self._tiers

    def forget_tiers(self, ids: set[str]) -> None:
        """What a purge takes out of the tier state: the purged memories (a file that could not be
        read is written again without them, rather than kept with what it may hold)."""
        if not ids:
            return
        state = self.tiers()
        unread = state.state not in ("adopted", "missing") and self._db._derived.exists(TIERS_FILE)
        if (state.forget(ids) or unread) and self._db._derived.writable:
            state.save(self._db._derived)

    def dashboard(self, *, top: int = 10, namespace: str | None = None) -> dict[str, Any]:
        """`AdminVerbs.dashboard`."""
        now_us = time.time_ns() // 1_000
        view = self._db._view()
        ratings = self._db._usage.ratings
        state = self.tiers()
        elo_tiers = {t: 0 for t in ("HIGH", "MEDIUM", "LOW", "VERY_LOW")}
        life = {t: 0 for t in ("short_term", "long_term", "archived")}
        rated = []
        locs = view.current_locs(namespace)
        for loc, mid in zip(locs, view.ids_at(locs)):
            e = ratings.elo_now(mid, now_us)
            elo_tiers[tier(e)] += 1
            life["archived" if mid in view.archived else state.tier(mid)] += 1
            if mid in ratings.by_id:
                rated.append((e, mid, loc))
        rated.sort(key=lambda x: (-x[0], x[1]))
        best = []
        for e, mid, loc in rated[:top]:
            m = view.memory_at(*loc)
            r = ratings.by_id[mid]
            best.append({"id": mid, "namespace": m.namespace, "elo": round(e, 1), "tier": tier(e), "used": r.used,
                         "shown": r.shown, "content": m.content[:80]})
        return {"memories": sum(elo_tiers.values()), "elo_tiers": elo_tiers, "lifecycle_tiers": life, "top": best,
                "activity": self._db._usage.activity(now_us), "consolidation": state.runs[-5:],
                "log": self._db._usage.describe()}

    def consolidate(self, *, namespace: str | None = None, dry_run: bool = True, decay: str = "exponential",
                    summarizer: cons.Summarizer | None = None, now: datetime | None = None,
                    protect_days: float = PROTECT_DAYS, protect_depth: int = PROTECT_DEPTH,
                    steps: Iterable[str] | None = None) -> cons.Report:
        """`LifecycleVerbs.consolidate`."""
        t0 = time.perf_counter()
        chosen = _steps(steps)
        if summarizer is not None and not callable(summarizer):
            raise TypeError(f"summarizer must be a callable (text) -> summary, or None, got {summarizer!r:.80}")
        plan = self.plan(namespace, dry_run, decay, now, protect_days, protect_depth)
        if not dry_run:
            self.apply(plan, summarizer or cons.leading_sentences, chosen)
        plan.report.seconds = time.perf_counter() - t0
        return plan.report

    def plan(self, namespace: str | None, dry_run: bool, decay: str, now: datetime | None,
                            protect_days: float, protect_depth: int) -> Plan:
        """A run's decisions, written nowhere: the report, the texts and versions of what it would
        change, and its time."""
        if namespace is not None:
            checks.name("namespace", namespace)
        if not isinstance(decay, str) or decay not in cons.DECAYS:
            raise ValueError(f"decay must be one of {', '.join(cons.DECAYS)}, got {decay!r}")
        if not isinstance(dry_run, bool):
            raise TypeError(f"dry_run must be True or False, got {dry_run!r}")
        if isinstance(protect_days, bool) or not isinstance(protect_days, (int, float)):
            raise TypeError(f"protect_days must be a number in [0, {MAX_PROTECT_DAYS}], got {protect_days!r:.80}")
        if not 0 <= protect_days <= MAX_PROTECT_DAYS:  # NaN fails this too
            raise ValueError(f"protect_days must be a number in [0, {MAX_PROTECT_DAYS}], got {protect_days!r}")
        if isinstance(protect_depth, bool) or not isinstance(protect_depth, int):
            raise TypeError(f"protect_depth must be an int in [0, {MAX_PROTECT_DEPTH}], got {protect_depth!r:.80}")
        if not 0 <= protect_depth <= MAX_PROTECT_DEPTH:
            raise ValueError(f"protect_depth must be an int in [0, {MAX_PROTECT_DEPTH}], got {protect_depth!r}")
        if not dry_run and self._db.read_only:
            raise StoreError("this store is read-only: consolidate(dry_run=False) writes")
        if self._db._usage.logging:
            self._db._usage.update()
        now_us = micros(as_utc("now", now) or utc_now())
        view = self._db._view()
        ratings, state = self._db._usage.ratings, self.tiers()
        report = cons.Report(dry_run=dry_run, decay=decay)
        reached = self._reached(now_us - int(protect_days * DAY_US), namespace, protect_depth) \
            if protect_days > 0 and protect_depth > 0 else {}
        plan = Plan(report, now_us)
        locs = view.current_locs(namespace)  # columns, not Memory objects: 100,000 of those cost seconds
        ids, spaces = view.ids_at(locs), view.namespaces_at(locs)
        confidences, metas = view.values_at("confidence", locs), view.values_at("metadata", locs)
        learned_at = view.column_at("learned_at", locs).tolist()  # the grace and "unused" count from there
        for loc, mid, ns, conf, meta, learned in zip(locs, ids, spaces, confidences, metas, learned_at):
            confidence = 1.0 if conf is None else conf
            r = ratings.by_id.get(mid)
            last_access = max(r.last_shown_us, r.last_used_us) if r is not None else 0
            last_used = r.last_used_us if r is not None else 0
            elo = ratings.elo_now(mid, now_us)
            standing = cons.Standing(
                mid, ns, "archived" if mid in view.archived else state.tier(mid),
                age_days=(now_us - learned) / DAY_US, days_since_access=(now_us - max(last_access, learned)) / DAY_US,
                days_unused=(now_us - max(last_used, learned)) / DAY_US,
                accesses=(r.shown + r.used) if r is not None else 0, confidence=float(confidence), elo=elo,
                elo_tier=tier(elo), compressed=_compressed(meta), protected=reached.get(mid))
            d = cons.decide(standing, decay)
            report.decisions.append(d)
            if d.action == "compress":
                m = view.memory_at(*loc)
                plan.texts[mid], plan.versions[mid] = m.content, m.version
        cached = self._db.topics._topic_cache or {}
        report.topics_due = {ns: t.consolidation_due for ns, (_, t) in cached.items()
                             if namespace is None or ns == namespace}
        due, report.held = self._expired_forgotten(view, namespace, now_us, cons.FORGET_WINDOW_DAYS)
        report.purged = sorted(due)
        plan.versions.update(due)
        return plan

    def purge_forgotten(self, *, days: float = cons.FORGET_WINDOW_DAYS, namespace: str | None = None,
                        dry_run: bool = False, now: datetime | None = None) -> list[str]:
        """`LifecycleVerbs.purge_forgotten`."""
        if isinstance(days, bool) or not isinstance(days, (int, float)) or not days >= 0:
            raise ValueError(f"days must be a number >= 0, got {days!r}")
        if not dry_run and self._db.read_only:
            raise StoreError("this store is read-only: purge_forgotten(dry_run=False) writes")
        if namespace is not None:
            checks.name("namespace", namespace)
        now_us = micros(as_utc("now", now) or utc_now())
        if dry_run:
            return sorted(self._expired_forgotten(self._db._view(), namespace, now_us, float(days))[0])
        with self._db.topics._lock, self._db._engine.writing() as view:  # listed and purged with no write between
            ids = sorted(self._expired_forgotten(view, namespace, now_us, float(days))[0])
            if ids:
                self._db.purge(ids)
        return ids

    def _expired_forgotten(self, view: View, namespace: str | None, now_us: int,
                           days: float) -> tuple[dict[str, int], dict[str, str]]:
        """Memories whose current version was forgotten `days` or more before `now_us`: those a
        person forgot (id -> that version), and those held because the engine forgot them on its
        own (id -> why)."""
        out: dict[str, int] = {}
        held: dict[str, str] = {}
        locs = view.current_locs(namespace, include_forgotten=True)
        for loc, forgotten in zip(locs, view.column_at("forgotten", locs).tolist()):
            if forgotten:
                m = view.memory_at(*loc)
                if m.forgotten_at is not None and now_us - micros(m.forgotten_at) >= days * DAY_US:
                    if forgetting.purgeable(m):
                        out[m.id] = m.version
                    else:
                        held[m.id] = forgetting.held_because(m)
        return out, dict(sorted(held.items()))

    def _reached(self, since_us: int, namespace: str | None, depth: int) -> dict[str, str]:
        """Memory id -> why it is protected: the recent queries' best hits now."""
        out: dict[str, str] = {}
        for ns, q in self._db._usage.recent_queries(since_us, namespace, PROTECT_QUERIES):
            for h in self._db.search(q, namespace=ns, k=depth, log=False, min_score=PROTECT_MIN_SCORE):
                out.setdefault(h.id, f"a recent question reaches it ({q[:40]!r})")
        return out

    def apply(self, plan: Plan, summarizer: cons.Summarizer, steps: tuple[str, ...]) -> None:
        """Apply a plan's `steps` (the others are counted as proposals), each memory only as the
        plan found it."""
        report, state = plan.report, self.tiers()
        by_action: dict[str, list[cons.Decision]] = {}
        for d in report.decisions:
            by_action.setdefault(d.action, []).append(d)
        for action in ("archive", "compress", "promote"):
            if action not in steps and by_action.get(action):
                report.proposed[action] = len(by_action[action])
        if "purge" not in steps and report.purged:
            report.proposed["purge"] = len(report.purged)
        archive = [d.id for d in by_action.get("archive", [])] if "archive" in steps else []
        if archive:
            try:
                report.applied["archive"] = int(self._archiving.archive(ids=archive)["memories"])
            except StoreError as exc:  # a store kept in memory has no archive file
                report.applied["archive"] = 0
                report.applied["archive_skipped"] = len(archive)
                report.decisions = [cons.Decision(d.id, d.namespace, "keep", f"{d.reason}; not archived: {exc}",
                                                  d.priority, d.elo, d.elo_tier, d.tier_before, d.tier_before)
                                    if d.action == "archive" else d for d in report.decisions]
        if "compress" in steps:
            summaries = {}
            for d in by_action.get("compress", []):
                summary = summarizer(plan.texts[d.id])  # outside the writer's lock: it may take seconds
                if not isinstance(summary, str) or not summary.strip():
                    raise ValueError(f"the summarizer returned {summary!r:.80} for {d.id!r}: it must return non-empty "
                                     "text")
                summaries[d.id] = (summary, d.reason)
            report.applied["compress"] = self._compress(plan, summaries)
        if "promote" in steps:
            for d in by_action.get("promote", []):
                state.set(d.id, "long_term", plan.now_us)
            report.applied["promote"] = len(by_action.get("promote", []))
        if "purge" in steps and report.purged:
            report.applied["purge"] = self._purge_planned(plan)
        elif report.purged:
            report.purged = []  # due, not purged: counted in `proposed`
        state.record({"at_us": plan.now_us, "decay": report.decay, "counts": report.counts(),
                      "applied": report.applied, "proposed": report.proposed})
        state.save(self._db._derived)

    def _compress(self, plan: Plan, summaries: Mapping[str, tuple[str, str]]) -> int:
        """Write each summary as a new version of its memory (its vectors kept: the summary stays
        findable by what the full text said), in one batch, over the version summarized only."""
        if not summaries:
            return 0
        with self._db._engine.writing() as view:
            now = utc_now()
            news: list[Memory] = []
            given: list[Mapping[str, Any]] = []
            for mid, (summary, reason) in summaries.items():
                why = changed(view, mid, plan.versions[mid])
                if why is not None:
                    plan.report.skipped[mid] = f"not compressed: {why}"
                    continue
                old = links.current(view, mid)
                meta = {**old.metadata, "compressed": {"at_us": plan.now_us, "reason": reason,
                                                       "chars_before": len(plan.texts[mid])}}
                news.append(validate_memory(old.with_changes(version=old.version + 1, learned_at=now, content=summary,
                                                             metadata=meta), old))
                given.append(view.row_vectors(mid))
            if news:
                self._db._write(news, given)
        return len(news)

    def _purge_planned(self, plan: Plan) -> int:
        """Purge the plan's due forgets that are still due: read again under the writer's lock
        (and the topics' lock, which a purge takes first), so nothing restored, changed or
        forgotten again since the plan is taken. Returns how many memories were purged."""
        report, days = plan.report, cons.FORGET_WINDOW_DAYS
        with self._db.topics._lock, self._db._engine.writing() as view:
            due = []
            for mid in report.purged:
                m = view.get(mid, include_forgotten=True)
                if m is None:
                    why = "purged meanwhile"
                elif m.forgotten_at is None:
                    why = "restored meanwhile"
                elif m.version != plan.versions[mid]:
                    why = f"changed meanwhile (version {plan.versions[mid]} -> {m.version})"
                elif not forgetting.purgeable(m):
                    why = forgetting.held_because(m)
                elif plan.now_us - micros(m.forgotten_at) < days * DAY_US:
                    why = f"forgotten again meanwhile: within its {days:g} days"
                else:
                    why = None
                if why is None:
                    due.append(mid)
                else:
                    report.skipped[mid] = f"not purged: {why}"
            if due:
                self._db.purge(due)
        report.purged = due
        return len(due)


__all__ = ["Consolidation", "Plan"]


def _compressed(metadata: str | None) -> bool:
    """Whether a memory's metadata JSON marks it compressed (parsed only when it may)."""
    if not metadata or '"compressed"' not in metadata:
        return False
    try:
        return bool(json.loads(metadata).get("compressed"))
    except (ValueError, AttributeError):
        return False

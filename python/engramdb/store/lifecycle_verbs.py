"""`db.lifecycle`: what keeps a store sound over time, each verb a proposal first where it destroys.

Consolidation and the restore window's purge (store/upkeep_verbs.py), the dream and concept forgetting
(store/dream_verbs.py), the forgets the engine proposes and a person confirms (store/forget_verbs.py),
contradiction detection (store/contradiction_verbs.py) and archival (store/archive_verbs.py). Each
verb is written where its concept lives; this class is the one place a user finds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..lifecycle import consolidation as cons
from ..lifecycle.consolidation import Summarizer
from ..lifecycle.contradictions import Detector, Proposal
from ..lifecycle.forgetting import Forgotten
from .archive_verbs import Archiving
from .contradiction_verbs import Contradictions
from .dream_verbs import DREAM_EDGES, FORGET_MIN_SCORE, Dreaming
from .forget_verbs import Forgetting
from .upkeep_verbs import PROTECT_DAYS, PROTECT_DEPTH, Consolidation

if TYPE_CHECKING:
    from .facade import Store


class LifecycleVerbs:
    """Consolidation, the dream, forgetting, contradictions and archival of a store (`db.lifecycle`)."""

    def __init__(self, db: Store) -> None:
        self._archiving = Archiving(db)
        self._forgetting = Forgetting(db)
        self._consolidation = Consolidation(db, self._archiving)
        self._dreaming = Dreaming(db, self._consolidation, self._forgetting)
        self._contradictions = Contradictions(db)

    def consolidate(self, *, namespace: str | None = None, dry_run: bool = True, decay: str = "exponential",
                    summarizer: cons.Summarizer | None = None, now: datetime | None = None,
                    protect_days: float = PROTECT_DAYS, protect_depth: int = PROTECT_DEPTH,
                    steps: Iterable[str] | None = None) -> cons.Report:
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
        leaves the steps before it applied, each memory whole as it was or as the run made it.
        `steps` (default all of "promote", "archive", "compress", "purge") are the ones applied;
        the others stay proposals (counted in `.proposed`). The summarizer runs outside the
        writer's lock (an LLM call may take seconds); a summary is written only over the version
        it summarized, and the purge list is checked again under the lock (still forgotten, at
        the version planned, still a person's or confirmed, still past its window): a memory
        updated, restored or forgotten again meanwhile is left as it is and listed in
        `.skipped` with why."""
        return self._consolidation.consolidate(namespace=namespace, dry_run=dry_run, decay=decay, summarizer=summarizer, now=now, protect_days=protect_days, protect_depth=protect_depth, steps=steps)

    def purge_forgotten(self, *, days: float = cons.FORGET_WINDOW_DAYS, namespace: str | None = None,
                        dry_run: bool = False, now: datetime | None = None) -> list[str]:
        """Purge (hard delete, as `purge`) every memory a person forgot more than `days` ago (S7: a
        forgotten memory is restorable for 30 days, then it goes). `consolidate(dry_run=False)`
        does this too. A memory the engine forgot on its own (the dream's copies) and nobody
        confirmed is not taken (`forget_proposals`, `confirm_forgotten`). Returns the ids,
        sorted; `dry_run` only lists them."""
        return self._consolidation.purge_forgotten(days=days, namespace=namespace, dry_run=dry_run, now=now)

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
        return self._dreaming.dream(namespace, dry_run=dry_run, max_edges=max_edges, now=now, summarizer=summarizer)

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
        return self._dreaming.forget_concept(concept, namespace=namespace, dry_run=dry_run, min_score=min_score)

    def forget_proposals(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """The forgotten memories (of `namespace`) that wait for a person: forgotten by one of the
        engine's own verbs (the dream's exact copies) and not confirmed. No purge by the restore
        window takes them; `restore(id)` brings one back, `confirm_forgotten(ids)` makes the
        forget a person's (purged once its 30 days have passed). Each: id, namespace, by,
        reason, forgotten_at and the first 200 characters of its content."""
        return self._forgetting.forget_proposals(namespace)

    def confirm_forgotten(self, ids: str | Iterable[str]) -> list[str]:
        """Stand behind the engine's forgets of these memories (see `forget_proposals`): each
        becomes a person's forget, purged once its 30 days (counted from the forget) have passed.
        A memory forgotten by hand is already one (left as it is). An id that is not a forgotten
        memory refuses the whole call, before anything is written. Returns the ids confirmed."""
        return self._forgetting.confirm_forgotten(ids)

    def resolve_contradictions(self, *, namespace: str, dry_run: bool = True, detector: Detector | None = None,
                               min_score: float = 0.0, since: datetime | None = None,
                               ids: Iterable[str] | None = None) -> list[Proposal]:
        """Find newer memories that contradict older ones of a namespace (H5) and, unless
        `dry_run`, end each older one where the newer starts (as `supersede`; nothing is deleted).

        Pairs judged: current memories of the namespace whose validity overlaps and whose main-
        space vectors are near, the older (learned first: see the module docstring) first;
        `since` (learned at or after) or `ids` (a list of memory ids) limits the memories whose
        pairs are looked at (what a write just added). `detector(old, new, similarity) ->
        (score, reason) | None` replaces the built-in rule (an LLM judge, say); proposals under
        `min_score` are dropped. Returns the proposals best first, each with `.old`, `.new`,
        `.reason`, `.score` and `.applied`; an older memory is ended once (by its best
        proposal), and only while both memories are as judged."""
        return self._contradictions.resolve_contradictions(namespace=namespace, dry_run=dry_run, detector=detector, min_score=min_score, since=since, ids=ids)

    def archive(self, older_than: datetime | None = None, *, namespace: str | None = None,
                ids: Iterable[str] | None = None) -> dict[str, Any]:
        """Move the content of old memories (or of the memories `ids`) to an archive file (J7);
        vectors and tree stay.

        A memory is old when its current version was learned before `older_than`. Where its
        namespace has a centroid tree, whole leaves go (every memory of a leaf is old); elsewhere
        memory by memory; `ids` are archived memory by memory (what consolidation chose).
        Archived memories still match searches (their hits carry `archived=True` and empty
        content) and can be brought back with `unarchive`. Returns a report: memories and leaves
        archived, and the archive file.
        """
        return self._archiving.archive(older_than, namespace=namespace, ids=ids)

    def unarchive(self, ids: Iterable[str] | None = None) -> int:
        """Put archived content back (all archived memories when `ids` is None); returns how many."""
        return self._archiving.unarchive(ids)

    def is_archived(self, id: str) -> bool:
        """True when the memory's content is in an archive file (J7)."""
        return self._archiving.is_archived(id)


__all__ = ["LifecycleVerbs"]

"""Consolidation (H7) and pruning (E7): what happens to each memory as it ages, and why.

Tiers short_term -> long_term -> archived. Each run scores every current memory:

    priority = 0.4 x frequency + 0.3 x recency + 0.3 x confidence

frequency = log(1 + accesses) / log(1 + 100) (accesses: times shown plus times used, from the
access log; capped at 1), recency = the chosen decay of the days since the last access (or since
it was learned, if never accessed), confidence = the memory's own. After a 7-day grace from when
it was learned, a short-term memory at priority >= 0.7 is promoted to long-term, and any memory
under 0.2 is archived. ELO pruning (E7) comes first: VERY_LOW and unused for 30 days -> archive;
LOW and unused for 14 days -> compress (its content becomes a summary from a pluggable summarizer,
the full text stays as its previous version). Nothing is ever deleted: archiving moves content to
an archive file (`Store.unarchive` brings it back). A memory a recent question reaches (the store
replays the last 30 days' queries, 50 deep) is never archived or compressed: retrieval is not
perfect, and what someone asked about last week may be the answer they did not get.

The one deletion: a memory forgotten more than 30 days ago (S7's restore window) is purged, when
a person forgot it or confirmed the engine's forget (`engramdb.lifecycle.forgetting`); what the
engine forgot on its own is held, restorable, and listed with why.

Applied, a run changes a memory only as it was when the run decided: a summary is written only
over the version it summarized, and the purge list is read again under the writer's lock right
before the purge (still forgotten, at the version planned, still a person's, still past its
window). A memory changed meanwhile (a correction, a restore while a summarizer works) is left as
it is and listed in the report's `.skipped` with why. `steps` chooses what an applied run does
(the others stay proposals, counted in `.proposed`).

Decay strategies (recency in [0, 1] after d days, a accesses):
- "exponential": 0.5 ^ (d / h), h = 43.3 days x (1 + ln(1 + a)) (adaptive: use slows forgetting);
- "ebbinghaus": (1 + 1.84 t) ^ -1.25 with t = d / (1 + ln(1 + a)) (the access boost);
- "linear": max(0, 1 - d / 90).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

W_FREQUENCY, W_RECENCY, W_CONFIDENCE = 0.4, 0.3, 0.3
FREQUENCY_CEILING = 100
GRACE_DAYS = 7.0
PROMOTE_AT, ARCHIVE_BELOW = 0.7, 0.2
PRUNE_ARCHIVE_DAYS, PRUNE_COMPRESS_DAYS = 30.0, 14.0
DECAYS = ("exponential", "ebbinghaus", "linear")
TIERS = ("short_term", "long_term", "archived")

Summarizer = Callable[[str], str]


def recency(days: float, accesses: int, decay: str = "exponential") -> float:
    """How fresh a memory is, in [0, 1], after `days` without access (see the module docstring)."""
    d = max(0.0, days)
    boost = 1.0 + math.log1p(max(0, accesses))
    if decay == "exponential":
        return float(0.5 ** (d / (43.3 * boost)))
    if decay == "ebbinghaus":
        return float((1.0 + 1.84 * d / boost) ** -1.25)
    if decay == "linear":
        return max(0.0, 1.0 - d / 90.0)
    raise ValueError(f"decay must be one of {', '.join(DECAYS)}, got {decay!r}")


def priority(accesses: int, days_since_access: float, confidence: float, decay: str = "exponential") -> float:
    """H7's priority in [0, 1]."""
    freq = min(1.0, math.log1p(max(0, accesses)) / math.log1p(FREQUENCY_CEILING))
    return W_FREQUENCY * freq + W_RECENCY * recency(days_since_access, accesses, decay) + \
        W_CONFIDENCE * min(1.0, max(0.0, confidence))


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def leading_sentences(text: str, sentences: int = 2, max_words: int = 60) -> str:
    """The built-in summarizer: the first sentences of a text (at most `max_words` words)."""
    parts = _SENTENCE.split(text.strip())
    out = " ".join(parts[:sentences])
    words = out.split()
    return " ".join(words[:max_words]) + (" ..." if len(words) > max_words or len(parts) > sentences else "")


FORGET_WINDOW_DAYS = 30.0  # S7: a forgotten memory stays restorable this long, then purge removes it
STEPS = ("promote", "archive", "compress", "purge")  # what an applied run may do, in this order

@dataclass(frozen=True)
class Standing:
    """What a run knows of one memory."""

    id: str
    namespace: str
    tier: str  # its lifecycle tier before the run
    age_days: float  # since it was learned
    days_since_access: float
    days_unused: float  # since it was last used (or learned, if never used)
    accesses: int
    confidence: float
    elo: float
    elo_tier: str
    compressed: bool
    protected: str | None = None  # why it must stay whole (a recent question reaches it), if it must


@dataclass(frozen=True)
class Decision:
    """One memory's outcome: `action` is "promote", "archive", "compress" or "keep"."""

    id: str
    namespace: str
    action: str
    reason: str
    priority: float
    elo: float
    elo_tier: str
    tier_before: str
    tier_after: str


@dataclass
class Report:
    """Every decision of a consolidation run, and what it did."""

    dry_run: bool
    decay: str
    decisions: list[Decision] = field(default_factory=list)
    applied: dict[str, int] = field(default_factory=dict)  # action -> memories changed
    seconds: float = 0.0
    topics_due: dict[str, bool] = field(default_factory=dict)  # namespace -> C4's trigger (topics computed)
    purged: list[str] = field(default_factory=list)  # forgotten longer than the window: purged (due, in a dry run)
    held: dict[str, str] = field(default_factory=dict)  # forgotten as long by the engine alone: kept (id -> why)
    proposed: dict[str, int] = field(default_factory=dict)  # applied, a step left out (`steps`): action -> how many
    skipped: dict[str, str] = field(default_factory=dict)  # planned, not done: changed meanwhile (id -> why)

    def counts(self) -> dict[str, int]:
        """How many memories each action got."""
        out: dict[str, int] = {}
        for d in self.decisions:
            out[d.action] = out.get(d.action, 0) + 1
        return out

    def summary(self) -> str:
        c = self.counts()
        n = len(self.decisions) or 1
        parts = [f"{a} {c.get(a, 0)} ({100 * c.get(a, 0) / n:.0f}%)" for a in ("promote", "archive", "compress", "keep")]
        gone = f"; {len(self.purged)} forgotten over {FORGET_WINDOW_DAYS:g} days {'due for purge' if self.dry_run else 'purged'}" \
            if self.purged else ""
        if self.held:
            gone += f"; {len(self.held)} forgotten by the engine alone, kept until confirmed"
        if self.proposed:
            gone += "; left as proposals: " + ", ".join(f"{a} {n}" for a, n in self.proposed.items())
        if self.skipped:
            gone += f"; {len(self.skipped)} changed while the run worked, left as they are"
        return f"{'dry run: ' if self.dry_run else ''}{len(self.decisions)} memories ({self.decay} decay): " + \
            ", ".join(parts) + gone


def decide(s: Standing, decay: str = "exponential") -> Decision:
    """The decision for one memory (see the module docstring)."""
    p = priority(s.accesses, s.days_since_access, s.confidence, decay)

    def out(action: str, reason: str, after: str) -> Decision:
        if s.protected is not None and action in ("archive", "compress"):
            return Decision(s.id, s.namespace, "keep", f"{reason}, but {s.protected}", round(p, 4), round(s.elo, 3),
                            s.elo_tier, s.tier, s.tier)
        return Decision(s.id, s.namespace, action, reason, round(p, 4), round(s.elo, 3), s.elo_tier, s.tier, after)

    if s.tier == "archived":
        return out("keep", "archived already", "archived")
    if s.elo_tier == "VERY_LOW" and s.days_unused >= PRUNE_ARCHIVE_DAYS:
        return out("archive", f"E7: ELO {s.elo:.0f} (VERY_LOW), unused {s.days_unused:.0f} days", "archived")
    if s.elo_tier == "LOW" and s.days_unused >= PRUNE_COMPRESS_DAYS and not s.compressed:
        return out("compress", f"E7: ELO {s.elo:.0f} (LOW), unused {s.days_unused:.0f} days", s.tier)
    if s.age_days < GRACE_DAYS:
        return out("keep", f"in its {GRACE_DAYS:.0f}-day grace ({s.age_days:.1f} days old)", s.tier)
    if p < ARCHIVE_BELOW:
        return out("archive", f"H7: priority {p:.2f} < {ARCHIVE_BELOW}", "archived")
    if p >= PROMOTE_AT and s.tier == "short_term":
        return out("promote", f"H7: priority {p:.2f} >= {PROMOTE_AT}", "long_term")
    return out("keep", f"priority {p:.2f}", s.tier)


__all__ = ["DECAYS", "STEPS", "TIERS", "Decision", "Report", "Standing", "Summarizer", "decide", "leading_sentences",
           "priority", "recency"]

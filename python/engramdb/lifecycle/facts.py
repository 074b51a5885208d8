"""Short facts as (subject, relation, value, polarity) (issue 29): "Maya lives in Berlin" then "Maya
lives in Munich" is an update, "Sam likes cats" then "Sam does not like cats" a negation, with no
model. `read` reads a statement's clauses; `fact_changes` weighs two statements' facts.

The grammar, over the words of `subjects.statement` (the analyzer's tokens, case kept):

    statement := clause (break clause)*
    clause    := [reporter] subject predicate value  |  conjunction predicate value
               |  "there" copula value ("in" | "on" | "at") place
    subject   := up to 6 words before the predicate, opening with a name, a noun, a pronoun, an
                 article or a possessive (not a preposition or a conjunction: "On trains Emma ...",
                 "When flying, ..." are not read)
    predicate := [auxiliary | negation | adverb]* (copula [participle | adjective] | verb) [particle]
    value     := the clause's words after the predicate

- A *copula* is a form of "be" ("is", "'m", "isn't", "been"); an *auxiliary* "do", "will", "can",
  "has" before a participle, "got" before one ("got pushed"), and their negated forms; a *verb*
  a word of `lexicon.VERBS` in a finite form: 3rd person ("lives"), past ("moved", "went",
  "quit"), or the base form after a pronoun or an auxiliary ("I work", "does not like"); never
  right after an article or a possessive, where the same word is a noun ("my rent", "the
  meeting"). After a copula an -ing form is the verb ("is coming"); a participle or an adjective
  taking a particle is the relation ("is married to", "is based in", "is allergic to", "is
  scheduled for"); "is a (big) fan of" likes.
- A *particle* is the preposition a relation takes ("live in", "work at / for / as", "move to",
  "married to", "report to"); any other preposition opens the value.
- A *break* is ; : ! ? a full stop (not after "Dr", "Mr", "St"...), a dash or a bracket, or one of
  "and", "but", "because", "so", "which", "who", "when", "while", "although", "please"; a comma
  too when a pronoun follows. A clause opening with a conjunction and a predicate ("..., and works
  as a nurse") speaks of the subject before it; a later clause's "he" / "she" ("her husband") of
  the person the statement named first.
- A *reporter* ("Leo says", "Kofi mentioned that", "Priya told me") is set aside: the clause
  after it is read, its "his" / "her" / "their" being the reporter's.
- "There are twelve engineers on the team" reads as the team having twelve engineers.

What a fact holds:

- *subject*: the subject's words, lowercased, stemmed, articles and adverbs out; "I", "we" are the
  speaker ("i"), "my" / "our" the speaker's, which is dropped before a longer subject ("my rent" is
  "rent": one speaker per store); "mum" is "mother", "kids" "child"; a possessive splits ("maya 's
  home"); "the default branch of the repo" is "repo 's default branch". An attribute its owner
  holds one of maps to the owner and a relation when the value is of its kind: "Maya's home is in
  Berlin" is Maya's residence, "My employer is Google" the speaker's employer, "Tom's wife is Anna"
  Tom's spouse, "Lily's birthday is 3 May" when Lily was born.
- *relation*: the verb's lemma and particle, one name where several say the same: residence
  (live in, be based in, move to, relocate to), employer (work at / for, be employed by),
  occupation (work as), spouse (be married to), fiance (be engaged to), like (like, love, enjoy,
  adore, be fond of, be a fan of; dislike, hate, detest, loathe, avoid and "can't stand" say it
  negated), prefer (prefer, would rather), want (want, would like), arrive (land), leave
  (depart), finish (complete); "costs" is the copula ("is €42"). A value opening with a time ("on
  Monday", "to Wednesday", "for 4pm", "tomorrow at 4pm", "from 5 to 12 July") makes the copula
  and the verbs that move a plan (move, schedule, push, postpone, happen, fall, hold...) say
  "when"; any other verb keeps its name ("comes on Tuesday": come).
- *value*: its terms and amounts (`quantities.value`); for the copula, a value that denies another
  reads as it, negated ("disabled" is "enabled" denied, "closed" "open").
- *polarity*: a negation in the predicate ("not", "n't", "never", "no longer"), "no" opening the
  value ("has no dog"), a verb ending another ("quit smoking", "stopped playing") or an antonym
  ("dislikes") negates the statement; two cancel ("can't stand").
- *single*: whether the relation holds one value at a time. Residence, employer, occupation,
  spouse, fiance, preference, when, birth, name, study, drive, report to, bank with hold one; so
  does a copula saying of a thing or an attribute what it is ("My manager is Helen", "Jake's car
  is a Toyota", "Our office is in Leeds"), or saying of a person a number ("Maya is 34"), "the
  ...", someone's ... ("Zoe is the CEO of Brightline") or a named value ("Anna is head of
  marketing at Brightwave"). Liking, having, speaking, visiting, playing, eating, any verb not
  named, and a copula saying of a person a class or a quality ("Nina is a nurse" / "Nina is a
  mother of two", "Sam is vegetarian" / "Sam is lactose intolerant") hold several.
- A copula whose value names an attribute ("Spring is my favourite season", "Anna is Tom's wife",
  "Kenji is the captain of the team") is also read the other way: the attribute is the subject.

How two facts weigh against each other is `fact_changes`.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..spaces.analyzer import SNOWBALL_STOPWORDS, negation, stem
from .lexicon import ENDING, irregular, lemma, verb_lemma, word_set
from .quantities import TIME_NAMES, Value
from .quantities import value as read_value
from .subjects import Statement, Word, statement

MAX_SUBJECT = 6  # words before the predicate, at most
MAX_TEXT = 600  # characters: a longer text is a note, not a few facts

_COPULAS = word_set("am is are was were be been being 's 'm 're isn't aren't wasn't weren't")
_AUXILIARIES = word_set("""do does did will would shall should can could may might must has have had
    don't doesn't didn't won't wouldn't shan't shouldn't can't cannot couldn't mustn't hasn't haven't hadn't
    got gets get 'll 've 'd""")
_MAIN_TOO = frozenset(("has", "have", "had", "got", "get", "gets"))  # auxiliaries that are verbs too
_BREAK_GAP = re.compile(r"[;:!?()\[\]\u2014\u2013\n]| - ")
_PRONOUN_VERB = re.compile(r"^(i|we|you|they|he|she|it)'(m|re|s|ve|ll|d)$")
_PRONOUNS = word_set("i we you they he she it")
_ARTICLES = word_set("the a an this that these those")
_POSSESSIVES = word_set("my our your his her their its")
_SPEAKER = word_set("i we me us")
_SPEAKER_OF = word_set("my our mine ours")
_ADVERBS = word_set("""still now currently also really usually always often definitely actually just only
    already mostly mainly sometimes again even totally fully rarely normally generally probably apparently
    recently finally officially exclusively""")
_CONJUNCTIONS = word_set("""and but because so which who whom whose when while although though whereas
    unless if or plus please""")
_ABBREVIATIONS = word_set("dr mr mrs ms prof st jr sr vs etc no approx ca str")
_PREPOSITIONS = word_set("""at on in by for to from of with until since into onto over under near via per
    about after before during between across through around within without""")
_NOT_SUBJECT = (SNOWBALL_STOPWORDS | _PREPOSITIONS | word_set("""there here please if when since so but and
    never always hey just note reminder also yes no ok okay well""")) - _ARTICLES - _POSSESSIVES \
    - _PRONOUNS
_REPORTING = frozenset(stem(w) for w in word_set("say mention tell think believe add confirm explain note"))
_PERSONS = frozenset(stem(w) for w in word_set("""user sister brother mum mom mother dad father parent wife husband
    partner son daughter kid child children boss manager friend colleague neighbour neighbor landlord landlady
    uncle aunt cousin grandma grandpa grandmother grandfather nephew niece fiance fiancee girlfriend boyfriend
    roommate flatmate teacher doctor dentist coach mentor lead assistant client customer baby twins
    supervisor"""))

_PARTICLES: dict[str, frozenset[str]] = {stem(k): frozenset(v.split()) for k, v in {
    "live": "in at with", "work": "at for as in with on from", "move": "to into from", "relocate": "to",
    "reside": "in", "married": "to", "engaged": "to", "based": "in at", "employed": "by", "allergic": "to",
    "fond": "of", "report": "to", "go": "to", "come": "to from", "bank": "with", "travel": "to",
    "belong": "to", "volunteer": "at for with", "stay": "in at with", "study": "at in", "teach": "at in",
    "schedule": "for", "reschedule": "for", "plan": "for", "set": "for", "book": "for", "push": "to back",
    "postpone": "to until", "shift": "to", "change": "to", "due": "on in by", "born": "in on", "bear": "in on",
    "interested": "in", "fan": "of", "addicted": "to", "afraid": "of", "held": "on in at", "hold": "on in at",
}.items()}
_ADJECTIVES = frozenset(stem(w) for w in word_set("allergic fond due afraid addicted interested"))
_RELATIONS = {(stem(verb), particle): name for name, phrasings in {  # one name for what several phrasings say
    "residence": "live:in live:at live: move:to move: relocate:to reside:in based:in based:at",
    "employer": "work:at work:for employed:by", "occupation": "work:as", "spouse": "married:to",
    "fiance": "engaged:to",
    "like": "like: love: enjoy: adore: fond:of fan:of stand: dislike: hate: detest: loathe: avoid:",
    "prefer": "prefer: rather:", "born": "bear:in bear:on bear:", "name": "call: name:", "be": "cost:",
    stem("arrive"): "land: land:in", stem("leave"): "depart:", stem("finish"): "complete:",  # as the verb's lemma
}.items() for verb, particle in (p.split(":") for p in phrasings.split())}
_RELATIONS[("would like", "")] = "want"
_ANTONYMS = frozenset(stem(w) for w in ("dislike", "hate", "detest", "loathe", "avoid"))
_OPPOSITES = {stem(a): stem(b) for a, b in (  # a copula's value and the one it denies
    ("disabled", "enabled"), ("forbidden", "allowed"), ("unavailable", "available"), ("closed", "open"),
    ("absent", "present"), ("false", "true"), ("invalid", "valid"), ("inactive", "active"),
    ("offline", "online"), ("unpaid", "paid"), ("illegal", "legal"), ("unsupported", "supported"))}
_KIN = {stem(a): stem(b) for a, b in (("mum", "mother"), ("mom", "mother"), ("dad", "father"), ("grandma", "grandmother"),
                                      ("granny", "grandmother"), ("grandpa", "grandfather"), ("grandad", "grandfather"),
                                      ("kids", "child"), ("children", "child"), ("kid", "child"))}
_MOVERS = frozenset(stem(w) for w in word_set("""be move schedule reschedule postpone push shift change plan set book
    bring happen fall hold"""))  # with a time, they say when the subject happens
_SINGLE = frozenset(("residence", "employer", "occupation", "spouse", "fiance", "prefer", "when", "born", "name",
                     stem("study"), stem("drive"), "report to", "bank with"))
# Relations whose value names one place, organisation, job or person: it ends where the clause says when
# ("moved to Porto last week") or where a new clause opens without a comma ("live in Porto I want to
# ..."); read whole, one city said twice read as two values.
_NAMED_VALUE = frozenset(("residence", "employer", "occupation", "spouse", "fiance"))
_NOMINATIVE = word_set("i we he she they")
_WHEN_OPENS = word_set("last next this every past yesterday today tonight tomorrow recently lately ago now currently") \
    | TIME_NAMES
_ATTRIBUTES = {stem(attribute): found for attribute, found in {  # an owner's attribute -> (relation, its value's kind)
    "home": ("residence", "place"), "address": ("residence", "place"), "employer": ("employer", "name"),
    "job": ("occupation", "any"), "occupation": ("occupation", "any"), "profession": ("occupation", "any"),
    "husband": ("spouse", "name"), "wife": ("spouse", "name"), "spouse": ("spouse", "name"),
    "birthday": ("born", "time"), "age": ("be", "number"), "name": ("name", "any"),
}.items()}


@dataclass(frozen=True)
class Fact:
    """What one clause says (see the module docstring)."""

    subject: tuple[str, ...]
    relation: str
    terms: frozenset[str]
    amounts: frozenset[str]
    positive: bool
    single: bool
    when: bool
    vague: bool  # "a bank": a kind of thing, which a named one ("Barclays") refines
    head: str | None
    value: str  # as written, for reasons
    person: bool = False  # the subject is a person
    clause: str = ""  # the clause's text


@dataclass(frozen=True)
class Reading:
    """The facts a statement's clauses say, and whether every clause was read."""

    facts: tuple[Fact, ...]
    complete: bool


@functools.lru_cache(maxsize=1 << 14)
def read(text: str) -> Reading:
    """The facts of a statement (see the module docstring); none for a text over MAX_TEXT characters."""
    if len(text) > MAX_TEXT:
        return Reading((), False)
    s = statement(text)
    facts: list[Fact] = []
    complete, before, who = True, None, _named_subject(s)
    for clause in _clauses(list(s.words), _gaps(s.text, s.words)):
        got = _clause(clause, before)
        if not got:
            complete = complete and _empty(clause)
            continue
        span = s.text[clause[0].start:clause[-1].start + len(clause[-1].raw)]
        got = [replace(_resolve(f, who), clause=span) for f in got]
        facts.extend(got)
        before = got[0]
        if who is None and before.person and before.subject[0] not in _PRONOUNS:
            who = before.subject
    return Reading(tuple(facts), complete and bool(facts))


def _named_subject(s: Statement) -> tuple[str, ...] | None:
    """The name a statement opens with, when it is the subject of its first verb ("Sofia remarried")."""
    subject = s.subject_text()
    if subject is None or s.predicate != 1 or not s.words[0].raw[:1].isupper() or not s.words[0].low.isalpha() \
            or s.words[0].low in _NOT_SUBJECT or s.words[0].low in _ARTICLES or s.words[0].low in _POSSESSIVES:
        return None
    return (stem(s.words[0].low),)


def _resolve(fact: Fact, who: tuple[str, ...] | None) -> Fact:
    """A later clause's "he" / "she" (or "his" / "her" opening its subject) is the person the
    statement spoke of first ("Sofia remarried; her husband is Luis")."""
    if who is None or not fact.subject or fact.subject[0] not in ("he", "she"):
        return fact
    return replace(fact, subject=who + fact.subject[1:], person=fact.person or len(fact.subject) == 1)


def _empty(words: list[Word]) -> bool:
    """A clause saying nothing to read: a greeting, an interjection, a few words without a verb."""
    return len(words) <= 2


def _gaps(text: str, words: tuple[Word, ...]) -> list[str]:
    """What stands between each word and the one before."""
    out, end = [], 0
    for w in words:
        out.append(text[end:w.start])
        end = w.start + len(w.raw)
    return out


def _clauses(words: list[Word], gaps: list[str]) -> list[list[Word]]:
    """The statement cut at its breaks (see the module docstring); a conjunction stays with its clause."""
    cuts = [0]
    for i in range(1, len(words)):
        gap, low = gaps[i], words[i].low
        if (low in _CONJUNCTIONS and i - cuts[-1] > 1) or (gap != " " and (
                _BREAK_GAP.search(gap) is not None or ("." in gap and words[i - 1].low not in _ABBREVIATIONS)
                or ("," in gap and (low in _PRONOUNS or _PRONOUN_VERB.match(low) is not None)))):
            cuts.append(i)
    cuts.append(len(words))
    return [words[a:b] for a, b in itertools.pairwise(cuts) if b > a]


def _clause(words: list[Word], before: Fact | None) -> list[Fact]:
    """The facts of one clause: its own reading and, for a copula naming an attribute, the inverse."""
    if words and words[0].low in _CONJUNCTIONS:
        words = words[1:]
        if before is not None and words and (_verb_form(words, 0, after_subject=True) or words[0].low in _COPULAS
                                             or words[0].low in _AUXILIARIES or words[0].low == "never"):
            return [f for f in [_fact([], words, 0, before.subject, "", before.person)] if f is not None]
    if len(words) < 2:
        return []
    if words[0].low in ("there", "there's"):
        return _existential(words)
    at = _predicate(words)
    if at is None:
        return []
    head = words[at].low
    if at > 0 and verb_lemma(head) in _REPORTING:  # "Leo says his best friend is Yara": read what he says
        rest = words[at + 1:]
        while rest and rest[0].low in ("me", "us", "that", "him", "her", "them"):
            rest = rest[1:]
        owner = _subject(words[:at], "")
        if owner is None or len(rest) < 2:
            return []
        return [_own(f, owner) for f in _clause(rest, None)]
    contracted = words[0].low if _PRONOUN_VERB.match(words[0].low) else ""
    subject = _subject(words[:at], contracted)
    if subject is None:
        return []
    fact = _fact(words[:at], words, at, subject, contracted)
    if fact is None:
        return []
    inverse = _inverse(fact, words, at)
    return [fact] + ([inverse] if inverse is not None else [])


def _own(fact: Fact, owner: tuple[str, ...]) -> Fact:
    """A reported fact whose subject opens with "his" / "her" / "their": the reporter's."""
    if fact.subject and fact.subject[0] in ("he", "she", "they") and len(fact.subject) > 1:
        return replace(fact, subject=owner + fact.subject[1:])
    if fact.subject in (("he",), ("she",), ("they",)):
        return replace(fact, subject=owner)
    return fact


def _predicate(words: list[Word]) -> int | None:
    """Where the predicate opens: the first copula, auxiliary, negation or verb form after the
    subject's first word (0 for "I'm", "she's")."""
    if _PRONOUN_VERB.match(words[0].low):
        return 0
    if words[0].low in _NOT_SUBJECT or not words[0].raw[:1].isalnum():
        return None
    for i in range(1, min(len(words), MAX_SUBJECT + 1)):
        w = words[i]
        if w.low in _COPULAS or w.low in _AUXILIARIES or w.low in ("never", "not"):
            return i if w.raw.islower() or w.raw.isupper() else None
        if w.low == "no" and i + 1 < len(words) and words[i + 1].low == "longer":
            return i
        if _verb_form(words, i):
            return i
        if w.low in _CONJUNCTIONS or "," in w.raw:
            return None
    return None


def _verb_form(words: list[Word], i: int, *, after_subject: bool = False) -> bool:
    """A known verb in a finite form at `i` (see the module docstring)."""
    w = words[i]
    if not w.raw.islower() or verb_lemma(w.low) is None or w.low.endswith("ing"):
        return False
    prev = words[i - 1].low if i > 0 else ""
    if prev in _ARTICLES or prev in _POSSESSIVES or prev.endswith("'s") or prev in _PREPOSITIONS:
        return False
    if w.low.endswith(("s", "ed")) or irregular(w.low):
        return True  # "lives", "moved", "went", "quit"
    return prev in _PRONOUNS or (after_subject and i == 0)


def _fact(subject_words: list[Word], words: list[Word], at: int, subject: tuple[str, ...],
          contracted: str, person: bool | None = None) -> Fact | None:
    """The fact of a clause whose predicate opens at `at` (see the module docstring)."""
    j, positive, copula, would = (1, True, True, False) if contracted else (at, True, False, False)
    if contracted and not contracted.endswith(("'m", "'re", "'s")):
        copula = False
    while j < len(words):
        w = words[j].low
        if w in _COPULAS:
            copula, positive = True, positive ^ (negation(w) is not None)
        elif w in _AUXILIARIES and not (w in _MAIN_TOO and not _auxiliary(words, j)):
            positive ^= negation(w) is not None
            would = would or w in ("would", "'d")
        elif w in ("not", "never", "cannot"):
            positive = not positive
        elif w == "no" and j + 1 < len(words) and words[j + 1].low == "longer":
            positive, j = not positive, j + 1
        elif w not in _ADVERBS:
            break
        j += 1
    if j >= len(words) and not copula:
        return None
    verb, flip, j = _verb(words, j, copula, would) if j < len(words) else ("be", False, j)
    if not verb:
        return None
    positive ^= flip
    particle = ""
    if j < len(words) and words[j].low in _PARTICLES.get(verb, ()):
        particle, j = words[j].low, j + 1
    rest = words[j:]
    if rest and rest[0].low == "no":  # "has no dog"
        positive, rest = not positive, rest[1:]
    if verb == "be":  # "is a (big) fan of", "is no fan of": likes
        k = 1 if rest and rest[0].low in ("a", "an") else 0
        k += 1 if k < len(rest) and rest[k].low in ("big", "huge", "great") else 0
        if k + 1 < len(rest) and rest[k].low == "fan" and rest[k + 1].low == "of":
            verb, particle, rest = "fan", "of", rest[k + 2:]
    v = read_value(rest)
    relation = _relation(verb, particle, v.opens_with_time)
    if relation in _NAMED_VALUE and len(named := _named_value(rest)) < len(rest):
        rest, v = named, read_value(named)
    subject, relation = _attribute(subject, relation, copula, rest, v)
    if person is None:
        person = bool(contracted) or _person(subject_words, subject)
    single = relation in _SINGLE if relation != "be" else _copula_single(rest, v.amounts, person)
    if verb in _ANTONYMS:
        positive = not positive
    terms, head = v.terms, v.head
    if relation == "be" and head in _OPPOSITES:  # "disabled" is "enabled" denied
        positive, head = not positive, _OPPOSITES[head]
        terms = frozenset(_OPPOSITES.get(t, t) for t in terms)
    vague = bool(rest) and rest[0].low in ("a", "an", "some") and not any(w.raw[:1].isupper() for w in rest)
    return Fact(_speaker_dropped(subject), relation, terms, v.amounts, positive, single, v.when, vague, head,
                " ".join(w.raw for w in rest), person)


def _named_value(rest: list[Word]) -> list[Word]:
    """The words of a `_NAMED_VALUE` relation's value: up to a nominative pronoun (a new clause), or,
    after its first word, a word opening a time ("Porto last week"). A preposition does not end it:
    "a flat in Porto" and "a flat in Lisbon" are two values, "Dubai for 6 years" one."""
    for i, w in enumerate(rest):
        if w.low in _NOMINATIVE or _PRONOUN_VERB.match(w.low) is not None or (i > 0 and w.low in _WHEN_OPENS):
            return rest[:i]
    return rest


def _existential(words: list[Word]) -> list[Fact]:
    """ "There are twelve engineers on the team", "There's no guide in the repo": the place has the thing."""
    j = 1 if words[0].low == "there's" else 2
    if j == 2 and words[1].low not in _COPULAS:
        return []
    at = max((k for k in range(j, len(words)) if words[k].low in ("in", "on", "at")), default=None)
    if at is None or at == j:
        return []
    owner = _subject(words[at + 1:], "")
    if owner is None:
        return []
    thing, positive = words[j:at], True
    if thing and thing[0].low == "no":
        thing, positive = thing[1:], False
    v = read_value(thing)
    return [Fact(_speaker_dropped(owner), "have", v.terms, v.amounts, positive, False, v.when, False, v.head,
                 " ".join(w.raw for w in thing))]


def _auxiliary(words: list[Word], j: int) -> bool:
    """Whether "has", "have", "had" or "got" at `j` is an auxiliary (a participle or "been" follows)."""
    for k in range(j + 1, min(len(words), j + 3)):
        nxt = words[k].low
        if nxt in _ADVERBS or nxt in ("not", "never"):
            continue
        if nxt == "been":
            return True
        return (nxt.endswith("ed") or irregular(nxt)) and verb_lemma(nxt) is not None
    return False


def _verb(words: list[Word], j: int, copula: bool, would: bool) -> tuple[str, bool, int]:
    """(lemma, polarity flip, next index) of the verb at `j`; no lemma when there is none."""
    w = words[j].low
    nxt = words[j + 1].low if j + 1 < len(words) else ""
    if copula:
        lem = lemma(w)
        if w.endswith("ing") and verb_lemma(w) is not None:  # "is coming"
            return lem, False, j + 1
        if w == "born":
            return "bear", False, j + 1
        if nxt in _PARTICLES.get(lem, ()) and (w.endswith(("ed", "n")) or lem in _ADJECTIVES):
            return lem, False, j + 1  # "married to", "based in", "allergic to"
        if (w.endswith("ed") or w in ("set", "held")) and (lem in _MOVERS or w in ("called", "named")):
            return lem, False, j + 1  # "was moved to", "is rescheduled for", "is called"
        return "be", False, j
    if would and w in ("rather", "like"):
        return ("rather" if w == "rather" else "would like"), False, j + 1
    known = verb_lemma(w)
    if known is None:
        return "", False, j
    if known in ENDING and nxt.endswith("ing"):
        return lemma(nxt), True, j + 2  # "quit smoking": smoking, negated
    return known, False, j + 1


def _relation(verb: str, particle: str, opens_with_time: bool) -> str:
    """The relation's name (see the module docstring)."""
    if opens_with_time and verb in _MOVERS:
        return "when"
    if opens_with_time and verb == "bear":
        return "born"
    name = _RELATIONS.get((verb, particle))
    if name is not None:
        return name
    return f"{verb} {particle}" if particle else verb


def _subject(words: list[Word], contracted: str) -> tuple[str, ...] | None:
    """A subject's key (see the module docstring), or None when the words are no subject."""
    if contracted:
        pron = contracted.split("'")[0]
        return ("i",) if pron in _SPEAKER else (pron,)
    key: list[str] = []
    for w in words:
        low = w.low
        if low in _ARTICLES or low in _ADVERBS:
            continue
        if low in _SPEAKER:
            key.append("i")
        elif low in _SPEAKER_OF:
            key.extend(("i", "'s"))
        elif low in ("his", "her", "their"):
            key.extend(({"his": "he", "her": "she"}.get(low, "they"), "'s"))
        elif low.endswith("'s") or (low.endswith("'") and len(low) > 1):
            key.extend((stem(low[:-2] if low.endswith("'s") else low[:-1]), "'s"))
        elif low in _PREPOSITIONS:
            key.append(low)
        else:
            t = stem(low) if low.isalpha() else low
            key.append(_KIN.get(t, t))
    if not key or key[-1] in ("'s", *_PREPOSITIONS):
        return None
    if "of" in key and key.index("of") > 0:  # "the default branch of the repo": the repo's default branch
        k = key.index("of")
        if "'s" not in key[:k] and all(t not in _PREPOSITIONS for t in key[k + 1:]):
            key = key[k + 1:] + ["'s"] + key[:k]
    return tuple(key)


def _speaker_dropped(subject: tuple[str, ...]) -> tuple[str, ...]:
    return subject[2:] if len(subject) > 2 and subject[:2] == ("i", "'s") else subject


def _person(words: list[Word], subject: tuple[str, ...]) -> bool:
    """Whether a subject names a person: a pronoun, the user, a relative or role, or a name (at most
    two words, no article or possessive, capitalised unless the whole text is lowercase)."""
    last = subject[-1]
    if last in _PRONOUNS or last in _PERSONS:
        return True
    if not words or len(words) > 2 or any(w.low in _ARTICLES or w.low in _POSSESSIVES or "'" in w.low for w in words):
        return False
    return all(w.raw[:1].isupper() or w.raw.islower() for w in words)


def _attribute(subject: tuple[str, ...], relation: str, copula: bool, rest: Sequence[Word],
               v: Value) -> tuple[tuple[str, ...], str]:
    """A possessive subject's attribute held once, as its owner's relation ("Maya's home is in
    Berlin"), when the value is of the attribute's kind."""
    if not copula or len(subject) < 3 or subject[-2] != "'s" or relation not in ("be", "when", "name"):
        return subject, relation
    found = _ATTRIBUTES.get(subject[-1])
    if found is None:
        return subject, relation
    name, kind = found
    named = any(w.raw[:1].isupper() and not w.opens for w in rest)
    ok = {"place": named, "name": named, "time": v.when, "number": bool(v.amounts), "any": True}[kind]
    return (subject[:-2], name) if ok else (subject, relation)


def _copula_single(rest: list[Word], amounts: frozenset[str], person: bool) -> bool:
    """Whether a copula's value is the one its subject holds (see the module docstring)."""
    if amounts or not person:
        return True
    if rest and (rest[0].low == "the" or rest[0].low in _POSSESSIVES or rest[0].low.endswith("'s")):
        return True
    return any(w.raw[:1].isupper() and not w.opens and w.raw != "I" for w in rest)  # a named value


def _inverse(fact: Fact, words: list[Word], at: int) -> Fact | None:
    """For "X is my / Y's / the ... of Z <attribute>", the fact that the attribute is X."""
    if fact.relation != "be" or not fact.positive or fact.amounts:
        return None
    j = at + 1
    end = next((k for k in range(j + 1, len(words)) if not words[k].glued), len(words))  # up to a comma
    rest = words[j:end]
    if not rest or not (rest[0].low in _SPEAKER_OF or rest[0].low.endswith("'s") or
                        (rest[0].low == "the" and any(w.low == "of" for w in rest))):
        return None
    described = _subject(rest, "")
    if described is None or len(described) < 2:
        return None
    own = read_value(words[:at])
    described, relation = _attribute(described, "be", True, words[:at], own)
    return Fact(_speaker_dropped(described), relation, own.terms, own.amounts, True, True, own.when, False,
                own.head, " ".join(w.raw for w in words[:at]), fact.person)


_KIN_WORDS: dict[str, tuple[str, ...]] = {kin: (kin, *(w for w, k in _KIN.items() if k == kin)) for kin in _KIN.values()}
_RELATION_WORDS: dict[str, frozenset[str]] = {
    name: frozenset(verb.split()[0] for (verb, _), n in _RELATIONS.items() if n == name) for name in _RELATIONS.values()}
_UNNARROWED = frozenset(("be", "when", "have", stem("get"), stem("go"), stem("take"), stem("make")))


def probes(found: Iterable[Fact]) -> frozenset[str] | None:
    """Pieces of words one of which a statement's normalised text (`analyzer.normalize`) holds when
    it speaks of the subject and relation of one of these facts: the beginning of the subject's
    longest word (a stem without its last letter: "famili" is in "family"); for a pronoun's fact
    the relation's verbs, else the value's first term ("I have a car": "car"), else the speaker's
    copula ("I'm 34": "i'm", "i am"...). None when a fact narrows nothing."""
    out: set[str] = set()
    for fact in found:
        named = [t for t in fact.subject if t.isalpha() and t not in _PRONOUNS and t not in _PREPOSITIONS]
        verb = fact.relation.split()[0]
        if named:
            longest = max(named, key=len)
            out.update(_piece(w) for w in _KIN_WORDS.get(longest, (longest,)))
        elif verb not in _UNNARROWED:
            out.update(_piece(v) for v in _RELATION_WORDS.get(fact.relation, frozenset((verb,))))
        elif fact.head is not None and fact.head.isalpha() and fact.terms:
            out.add(_piece(fact.head))
        elif fact.subject == ("i",) and fact.relation in ("be", "when"):
            out.update(("i'm", "i am", "we're", "we are", "i was", "we were", "i've been", "we've been"))
        else:
            return None
    return frozenset(out)


def _piece(word: str) -> str:
    return word[:max(3, len(word) - 1)]


def keys(text: str) -> frozenset[tuple[tuple[str, ...], str]]:
    """The (subject, relation) pairs a statement's facts speak of: what two statements must share
    to be compared."""
    return frozenset((f.subject, f.relation) for f in read(text).facts)


__all__ = ["Fact", "Reading", "keys", "probes", "read"]

"""Whether two statements speak of different subjects (H5's "same subject", issue 25): two facts
about different things (invoice 1001 and invoice 1002, server A and server B, the kitchen bulb and
the bathroom bulb, Alice and Bob) never contradict, however alike their shape.

A statement's *predicate* opens with the first verb recognised, by one of three rules, most
reliable first:

- a personal pronoun opens it ("I", "we", "she", "je", "ich", "yo", "io", "eu", "ik", ...): the
  word after it ("I paid ...", "we moved ..."); a contraction such as "I'm" is both;
- a copula, auxiliary or modal written in lowercase after the first word, in English, French,
  German, Spanish, Italian, Portuguese or Dutch ("is", "has", "will", "est", "ist", "es", "è",
  "é", "zijn", ...);
- an English verb form after a noun, a name or a labelled number: a lowercase word ending in -s
  or -ed ("Room 14 costs", "Alice lives", "Order 5521 shipped"). When the verb is one the
  short-fact grammar knows (`lexicon.VERBS`: "lives", "works", "moved"...) it is as reliable as a
  pronoun's; else a guess, and what follows it is judged more strictly (below).

The *subject* is what comes before the predicate. An *identifier* is a token holding a digit (a
number or code: "14", "2.3", "3B", "02:00"), a single capital letter ("server A") or a
capitalised word inside a sentence (a name: "Alice", "Paris", "API"). Two statements are about
different subjects when one of them holds an identifier the other never says, and it sits:

- in its subject, or anywhere in a statement with no predicate recognised;
- after a predicate that is not a copula, where it names a thing rather than a quantity: a name,
  a letter or a number a noun labels ("paid invoice 1001", "owe Sam", "booked room 14"), unless
  a preposition introduces it after a reliable predicate ("I live in Paris", "work at Google":
  where, a value). A bare number after any predicate is a quantity ("costs 80", "has 8").

After a copula everything is what the statement says of its subject ("is in Room 14", "is
Alice", "is 1,200"): a value, which a correction changes. Besides identifiers, the subjects'
content words (stemmed, stop words out) are compared as before: both known, they differ when each
holds a word the other statement never says ("kitchen" / "bathroom"); one known, the other must
say all of it, or at least each number of it; neither, the first change of the two texts' words,
in order, opening the statement and followed by the same words ("Alice" / "Bob lives in Paris").
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from dataclasses import dataclass

from ..spaces.analyzer import SNOWBALL_STOPWORDS, Analyzer, negation
from .lexicon import verb_lemma

_ANALYZER = Analyzer()
_NEGATING = frozenset({"stopped", "quit"})
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_WORD = re.compile(r"[^\W_]+(?:['.,:/-][^\W_]+)*")
_BREAK = re.compile(r"[.!?;:\n]")  # a capital after one of these opens a sentence, it names nothing

def _set(*lines: str) -> frozenset[str]:
    return frozenset(" ".join(lines).split())


_AMOUNTS = _set(
    "january february march april may june july august september october november december jan feb mar "
    "apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday zero one "
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million half "
    "dozen once twice first second third")
_COPULAS = _set(
    "am is are was were be been being isn't aren't wasn't weren't "  # en
    "est sont était étaient sera seront fut suis sommes êtes "  # fr
    "ist sind waren wird werden wurde wurden bist "  # de ("war", "bin" are English words too)
    "es está están eran fue fueron será soy eres somos estoy estaba "  # es
    "è sono erano sarà siamo sei "  # it ("era" is an English word too)
    "é são estão eram foi foram sou "  # pt
    "zijn wordt worden")  # nl
_AUXILIARIES = _set(
    "has have had do does did will would shall should can could might must cannot don't doesn't didn't "
    "hasn't haven't hadn't won't wouldn't can't couldn't shouldn't mustn't shan't "  # en
    "ont avait avaient aura peut doit vont "  # fr
    "haben hatte hatten kann muss soll "  # de
    "han había puede debe van "  # es
    "hanno aveva può deve "  # it
    "tem têm tinha pode vai vão "  # pt
    "heeft hebben kan moet zal gaat")  # nl
_PRONOUNS = _set(
    "i you we they he she it je tu nous vous ils elles elle ich er wir sie yo tú él ella nosotros ellos "
    "ellas usted io noi voi lui lei eu ele ela nós eles elas você ik jij hij wij zij")
_PREPOSITIONS = _set(
    "at on in by for to from of with until since into onto over under near via per about after before "
    "during between across through "  # en
    "à au aux en dans sur sous pour par avec chez depuis vers de du des "  # fr
    "im am an auf aus bei mit nach von vom zu zum zur für über unter um bis seit "  # de
    "con por para desde hasta sobre del al "  # es
    "a al nel nella con per su da dal di tra fra "  # it
    "em no na com até do da ao "  # pt
    "op aan bij met van voor naar uit tot sinds")
_ARTICLES = _set(
    "le la les l un une ce cette ces mon ma mes ton ta tes sa ses notre nos votre vos leur leurs et ou mais "
    "qui que der die das den dem des ein eine einen einem einer eines und oder aber mein meine dein deine "
    "sein seine unser unsere el los las unos unas y o pero mi mis tu tus su sus il lo gli le uno e ma os as um "
    "uma ou mas meu minha seu het een en maar mijn")
_APPROXIMATELY = _set(  # what may stand before a quantity: "around 200", "etwa 30"
    "around roughly approximately approx about nearly almost only just exactly over under least most up some "
    "circa ca environ presque etwa ungefähr fast nur cerca casi solo quasi cerca aproximadamente quase ongeveer "
    "bijna")
_FUNCTION = SNOWBALL_STOPWORDS | _PREPOSITIONS | _ARTICLES | _PRONOUNS | _COPULAS | _AUXILIARIES | _APPROXIMATELY


@dataclass(frozen=True, slots=True)
class Word:
    raw: str  # as written (case kept)
    low: str  # lowercased, a number without its thousands separators
    start: int  # offset in the normalised text
    opens: bool  # the first word of a sentence (its capital says nothing)
    glued: bool  # right after the word before (spaces and at most one symbol between: "room 14", "21°C")


@dataclass(frozen=True)
class Statement:
    """A statement's words and its predicate: where it opens (None: no verb recognised) and how it
    was recognised ("pronoun", "copula", "auxiliary", "verb" or "guess")."""

    text: str
    words: tuple[Word, ...]
    predicate: int | None
    kind: str | None

    def subject_text(self) -> str | None:
        if self.predicate is None:
            return None
        return self.text[: self.words[self.predicate].start] if self.predicate > 0 else ""


@functools.lru_cache(maxsize=1 << 14)
def statement(text: str) -> Statement:
    """A text's words and predicate (see the module docstring; cached: a namespace's pairs read
    each text many times)."""
    # three replaces, not str.translate: translate with a dict table costs ~50 us a text
    norm = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'") \
        if not text.isascii() else text
    words: list[Word] = []
    end = 0
    for m in _WORD.finditer(norm):
        start = m.start()
        gap = norm[end:start]
        raw = m.group(0)
        low = raw.lower()
        if "," in low and _NUMBER.fullmatch(low):
            low = re.sub(r"(?<=\d),(?=\d)", "", low)
        if gap == " ":  # most gaps: one space, which neither breaks nor unglues
            words.append(Word(raw, low, start, not words, True))
        else:
            broken = bool(_BREAK.search(gap))
            words.append(Word(raw, low, start, not words or broken,
                              len(gap.strip()) <= 1 and not broken and "," not in gap))
        end = m.end()
    at, kind = _predicate(words)
    return Statement(norm, tuple(words), at, kind)


def _predicate(w: list[Word]) -> tuple[int | None, str | None]:
    if not w:
        return None, None
    first = w[0].low
    if "'" in first and (first in _COPULAS or first in _AUXILIARIES or first in SNOWBALL_STOPWORDS) \
            and first.split("'")[0] in _PRONOUNS | {"that", "there", "here", "what", "who"}:
        return 0, "copula"  # "I'm", "it's", "we've": the pronoun and its verb in one word
    if first in _PRONOUNS and len(w) > 1:
        return 1, "copula" if w[1].low in _COPULAS else "pronoun"
    for i in range(1, len(w)):
        if w[i].raw.islower() and (w[i].low in _COPULAS or w[i].low in _AUXILIARIES):
            return i, "copula" if w[i].low in _COPULAS else "auxiliary"
    for i in range(1, len(w)):
        if _verb_form(w, i):
            return i, "verb" if verb_lemma(w[i].low) is not None else "guess"
    return None, None


def _verb_form(w: list[Word], i: int) -> bool:
    """An English verb form: a lowercase word ending in -s or -ed right after a noun, a name or a
    labelled number ("room 14 costs"); never after a plural (-s) word or a bare number ("3 days")."""
    t = w[i].raw
    if not (t.isalpha() and t.islower() and len(t) >= 4) or t in _FUNCTION or _amount(t) or w[i].opens:
        return False
    if not (t.endswith("ed") or (t.endswith("s") and not t.endswith(("ss", "us", "is")))):
        return False
    prev = w[i - 1]
    if prev.low in _FUNCTION or _amount(prev.low) or prev.low.endswith("'s"):
        return False  # "Ahmed's twins": a possessive's noun
    if prev.low.endswith("s") and prev.low.isalpha() and (prev.opens or not prev.raw[:1].isupper()):
        return False  # after a plural ("room prices", "sales numbers"): a noun more likely than a verb
    if _NUMBER.fullmatch(prev.low):
        return i >= 2 and _nounish(w[i - 2]) and prev.glued
    return True


def _amount(low: str) -> bool:
    """A number word, a month or a weekday ("Mondays" too)."""
    return low in _AMOUNTS or (low.endswith("s") and low[:-1] in _AMOUNTS)


def _nounish(word: Word) -> bool:
    """A word that may be a noun: letters, not a function word, an amount or a month."""
    return word.low.isalpha() and word.low not in _FUNCTION and not _amount(word.low)


def _identifier(w: tuple[Word, ...], i: int) -> bool:
    """A number or code, a single capital letter, or a capitalised word inside a sentence (not a
    unit right after a number: "32 GB", "21°C")."""
    word = w[i]
    if any(c.isdigit() for c in word.low):
        return True
    if word.opens or not word.raw[:1].isupper() or word.raw == "I":
        return False
    if len(word.raw) > 1 and (word.low in _FUNCTION or _amount(word.low)):
        return False  # a capital letter alone is one ("server A"), even when it spells a word
    return not (i > 0 and _NUMBER.fullmatch(w[i - 1].low) and word.glued)


def _names_a_thing(s: Statement, i: int) -> str | None:
    """Why the identifier at `i` names what a statement speaks of (see the module docstring), or
    None when it is a value the statement says."""
    w, p = s.words, s.predicate
    if p is None:
        return "no verb recognised"
    if i < p:
        return "before the predicate"
    if i == p or s.kind == "copula":
        return None
    bare = any(c.isdigit() for c in w[i].low) and not (w[i].glued and i - 1 > p and _nounish(w[i - 1]))
    if bare:
        return None  # a quantity: "costs 80", "has 8"
    if s.kind != "guess" and any(w[k].low in _PREPOSITIONS for k in range(p + 1, i)):
        return None  # where or when: "live in Paris", "work in building 5"
    return "named after the predicate"


def _identifiers_differ(a: Statement, b: Statement) -> str | None:
    said_a, said_b = {x.low for x in a.words}, {x.low for x in b.words}
    found: list[tuple[str, str]] = []
    for s, other in ((a, said_b), (b, said_a)):
        for i, word in enumerate(s.words):
            if word.low not in other and _identifier(s.words, i):
                why = _names_a_thing(s, i)
                if why is not None:
                    found.append((word.raw, why))
    if not found:
        return None
    return f"different subjects ({' / '.join(dict.fromkeys(t for t, _ in found))}: {found[0][1]})"


def different_subjects(a: str, b: str) -> str | None:
    """Why two statements are about different subjects (see the module docstring), or None when
    nothing says they are."""
    sa_, sb_ = statement(a), statement(b)
    why = _content_differs(sa_, sb_, a, b)
    return why if why is not None else _identifiers_differ(sa_, sb_)


def identifiers_differ(a: str, b: str) -> str | None:
    """Why two statements name different things by an identifier (the identifier pass of
    `different_subjects` alone: "I paid invoice 1001" / "... 1002"), or None. For statements whose
    subjects were matched otherwise (`facts`: "my mum" and "my mother" are one subject)."""
    return _identifiers_differ(statement(a), statement(b))


def _content_differs(x: Statement, y: Statement, a: str, b: str) -> str | None:
    """The subjects' content words compared (see the module docstring)."""
    xa, xb = x.subject_text(), y.subject_text()
    sa = None if xa is None else frozenset(_content(xa))
    sb = None if xb is None else frozenset(_content(xb))
    ta, tb = _content(a), _content(b)
    if sa is not None and sb is not None:  # each names its subject: was one replaced by another?
        only_a, only_b = sa - set(tb), sb - set(ta)
        if only_a and only_b:
            return f"different subjects ({' '.join(sorted(only_a))} / {' '.join(sorted(only_b))})"
        return None
    if sa is not None or sb is not None:  # one names its subject: does the other speak of it?
        subject, other = (sa, tb) if sa is not None else (sb, ta)
        assert subject is not None
        missing = subject - set(other)
        if missing and (missing == subject or any(_NUMBER.fullmatch(t) for t in missing)):
            return f"different subjects ({' '.join(sorted(missing))} in one only)"
        return None
    ops = difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes()  # neither: the words in order
    if not ops or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    after = [t for o, a1, a2, *_ in ops[1:] if o == "equal" for t in ta[a1:a2] if not _amount_term(t)]
    if after:  # the statement opens with the change and goes on the same: it says it of another subject
        return f"different subjects ({' '.join(ta[i1:i2])} / {' '.join(tb[j1:j2])})"
    return None


_AMOUNT_TERMS = frozenset(t for w in (*_AMOUNTS, "may") for t in Analyzer(stopwords=()).terms(w))


def _amount_term(term: str) -> bool:
    return bool(_NUMBER.fullmatch(term)) or term in _AMOUNT_TERMS


def _content(text: str) -> list[str]:
    """A text's content terms in order, without negations (a cue, not a subject)."""
    return [t for t in _ANALYZER.terms(text) if negation(t) is None and t not in _NEGATING]


__all__ = ["Statement", "different_subjects", "identifiers_differ", "statement"]

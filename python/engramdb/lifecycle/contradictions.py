"""Contradictions (H5): which newer memory should end an older one, and why; no LLM on the path.

Candidates are pairs of current memories of one namespace whose validity overlaps, newer after
older (valid_from, then learned_at): each memory with its `NEIGHBOURS` nearest in the main space
whose cosine is >= `CANDIDATE_SIMILARITY`, and (issue 29) with the `FACT_NEIGHBOURS` nearest in
time whose short facts share a subject and a relation (`facts.keys`): "Dana lives in Austin" and
"Dana moved to Denver" sit at cosine 0.35 in the hashing space. A detector (any callable; the
built-in `HeuristicDetector`) judges each pair: a score in [0, 1] and a reason, or None. The
built-in rule, SPEC H5's, asks for the same memory_type (two untyped memories count as the same
type) and different content, then:

1. *Short facts* (issue 29, `engramdb.lifecycle.facts`): each statement's clauses read as
   (subject, relation, value, polarity). Two facts of one subject and relation propose:
   - *negation*: the same value said, then denied ("Sam likes cats" / "Sam does not like cats",
     "Emma likes olives" / "Emma dislikes olives"), score 0.9;
   - *number*: the same thing with another number or date ("The team has 4 engineers" / "... 7
     engineers", "The meeting is on Monday" / "The meeting moved to Wednesday"), score 0.85;
   - *update*: another value of a relation holding one ("Maya lives in Berlin" / "Maya lives in
     Munich", "My manager is Helen" / "My manager is Raj"), score 0.8;
   unless the two clauses speak of different things by an identifier (`subjects`: "paid invoice
   1001" / "1002"). When every clause of both was read and no such change shows (they agree: a
   paraphrase, a refinement, a second value of "likes"; or they speak of different subjects or
   relations: "Maya lives in Berlin" / "Maya works in Munich"), there is no contradiction.
2. Else, for what the grammar does not read in full, the cues (issue 25's rule):
   - the same subject (`engramdb.lifecycle.subjects`): two statements about different things
     (invoice 1001 and invoice 1002, server A and server B, the kitchen bulb and the bathroom
     bulb, Alice and Bob) never contradict, however alike their shape. An identifier (a number,
     code, capital letter or name) one statement holds and the other never says means different
     subjects when it sits before the predicate, anywhere in a statement with no verb recognised,
     or after a verb that acts on it ("paid invoice 1001", "owe Sam"); after a copula or a
     known verb's preposition ("is in Room 14", "lives in Paris") it is the value a correction
     changes. Content words of the subjects are compared too ("kitchen" / "bathroom");
   - and one of:
     - *negation*: one says no where the other does not ("I like cats" / "I don't like cats"),
     - *number*: they hold different amounts, written one way (`quantities.amounts`: "1,450" is
       "one thousand four hundred and fifty", "7pm" is "19:00"),
     - *update*: main-space similarity >= 0.75 (the statement said again, differently), each says
       something the other does not, and each names something (a capitalised word inside a
       sentence, not a month or weekday) the other never says: a named value replaced ("GitLab" /
       "GitHub"), not a paraphrase's other words ("closes" / "shuts", which MiniLM puts above 0.75).
     For a negation or a number the two must be the same statement apart from that cue: the
     similarity of the texts with their negations, numbers and dates masked is >= 0.75, and
     neither replaces a word of the other once masked (words added on one side are fine: "Maya
     is 34" / "Maya is 36 now"); two notes of one template with different decisions
     ("Decision: migrate to Postgres 16" / "Decision: hire 2 engineers") are not one statement
     with another number. Such a pair is judged as a possible update instead.
   Scores: negation 0.9, number 0.8, update 0.6, each times how far the (masked) similarity is
   between 0.75 and 1 (x 0.75 at 0.75, x 1 at 1), so a caller can keep the surest with `min_score`.

Applying a proposal is `Store.supersede(old, new)`: the old memory's validity ends where the new one's
starts; nothing is deleted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..model.memory import Memory
from ..spaces.analyzer import Analyzer, negation, normalize, tokenize
from . import fact_changes, facts, quantities
from .subjects import different_subjects, identifiers_differ, statement

MIN_SIMILARITY = 0.75  # SPEC H5
CANDIDATE_SIMILARITY = 0.5  # pairs looked at: a negation or number may sit lower before masking
NEIGHBOURS = 10  # nearest memories per memory looked at
FACT_NEIGHBOURS = 3  # memories sharing a subject and relation per memory looked at, nearest in time
_ANALYZER = Analyzer()
CUE_SCORE = {"negation": 0.9, "number": 0.8, "update": 0.6}
FACT_SCORE = {"negation": 0.9, "number": 0.85, "update": 0.8}  # the grammar read both: surer than the cues
FACT_SAYS = {"negation": "the same fact, denied", "number": "the same fact with another number or date",
             "update": "the same subject and relation, another value"}

_MONTHS = ("january", "february", "march", "april", "june", "july", "august", "september", "october",
           "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
           "dec", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
                 "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred",
                 "thousand", "million", "half", "dozen", "once", "twice", "first", "second", "third")
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_MAY = re.compile(r"\b(?:\d{1,2}(?:st|nd|rd|th)?\s+may|may\s+\d{1,2})\b")  # the month, not the verb
_AMOUNT_WORDS = frozenset(_NUMBER_WORDS) | frozenset(_MONTHS)
# negating verbs and adverbs beyond the analyzer's negation words
_NEGATING = frozenset({"stopped", "quit"})


@dataclass(frozen=True)
class Proposal:
    """A proposed supersede: `new` ends `old` (H5)."""

    old: str
    new: str
    reason: str
    score: float
    similarity: float
    applied: bool = False


Detector = Callable[[Memory, Memory, float], "tuple[float, str] | None"]
Embed = Callable[[Sequence[str]], np.ndarray]  # the main space's embedder (unit rows or not)


def negated(text: str) -> bool:
    """Whether a text says no (a negation word, a contraction such as "don't", "no longer", "stopped")."""
    return any(negation(t) is not None or t in _NEGATING for t in tokenize(text))


def amounts(text: str) -> frozenset[str]:
    """The numbers, number words, dates and weekdays of a text (digits without thousands separators)."""
    low = normalize(text)
    found = {m.group(0).replace(",", "") for m in _NUMBER.finditer(low)}
    found |= {t for t in tokenize(low) if t in _AMOUNT_WORDS}
    if _MAY.search(low):
        found.add("may")
    return frozenset(found)


def masked(text: str) -> str:
    """The text without its negations, numbers and dates: the statement they qualify."""
    words = [t for t in tokenize(_NUMBER.sub(" ", _MAY.sub(" ", normalize(text))))
             if negation(t) is None and t not in _NEGATING and t not in _AMOUNT_WORDS]
    return " ".join(words)


class HeuristicDetector:
    """The built-in rule (see the module docstring). `embed`: the main space's embedder, for the
    similarity of the masked texts."""

    def __init__(self, embed: Embed, min_similarity: float = MIN_SIMILARITY) -> None:
        self.embed, self.min_similarity = embed, min_similarity

    def __call__(self, old: Memory, new: Memory, similarity: float) -> tuple[float, str] | None:
        if old.memory_type != new.memory_type or _same_text(old.content, new.content):
            return None
        ra, rb = facts.read(old.content), facts.read(new.content)
        verdict = fact_changes.judge(ra.facts, rb.facts, keep=_same_subject)
        if verdict is not None and verdict[0] not in ("agree", "apart"):
            cue, why = verdict
            cue = "number" if cue == "date" else cue  # one cue for numbers and dates, as the fallback's
            return FACT_SCORE[cue], f"{cue}: {FACT_SAYS[cue]} ({why})"
        if verdict is not None and ra.complete and rb.complete:
            return None  # every clause was read: they agree, or speak of different things
        if different_subjects(old.content, new.content) is not None:
            return None
        return self._fallback(old, new, similarity)

    def _fallback(self, old: Memory, new: Memory, similarity: float) -> tuple[float, str] | None:
        """Today's rule (H5, issue 25) for statements the grammar does not read in full."""
        cue = None
        if negated(old.content) != negated(new.content):
            cue = "negation"
        else:
            a, b = quantities.amounts(old.content), quantities.amounts(new.content)
            if a and b and a != b:  # written one way: "1,450" is "one thousand four hundred and fifty"
                cue = "number"
        if cue is not None:
            ma, mb = masked(old.content), masked(new.content)
            sim = _cosine(self.embed([ma, mb]))
            if sim < self.min_similarity or _replaced(ma, mb):  # not the same statement apart from the cue
                cue, sim = None, similarity
        else:
            sim = similarity
        if cue is None:
            if similarity < self.min_similarity or not _names_replaced(old.content, new.content):
                return None
            cue = "update"
        strength = 0.75 + 0.25 * min(1.0, max(0.0, (sim - self.min_similarity) / max(1e-9, 1 - self.min_similarity)))
        what = {"negation": "one says no where the other does not",
                "number": f"different numbers or dates ({', '.join(sorted(amounts(old.content)))} -> "
                          f"{', '.join(sorted(amounts(new.content)))})",
                "update": "the same statement said again, differently"}[cue]
        return round(CUE_SCORE[cue] * strength, 4), f"{cue}: {what}; similarity {sim:.2f}"


def _same_subject(a: facts.Fact, b: facts.Fact) -> bool:
    """Two facts of one subject and relation whose clauses name no different thing by an
    identifier ("I paid invoice 1001" / "... 1002" read alike, but the invoices differ)."""
    return identifiers_differ(a.clause, b.clause) is None


def _names_replaced(a: str, b: str) -> bool:
    """Whether each text names something (a capitalised word inside a sentence, not a month or a
    weekday) the other never says: a value replaced ("GitLab" / "GitHub", "Joanna" / "Pieter"),
    not a paraphrase's other words ("closes" / "shuts")."""
    na, nb = _names(a), _names(b)
    return bool(na - nb) and bool(nb - na) and _replaced(a, b)


def _names(text: str) -> set[str]:
    words = statement(text).words
    return {w.low for w in words if w.raw[:1].isupper() and not w.opens and w.raw != "I"
            and w.low not in _AMOUNT_WORDS and not w.low.rstrip("s") in _AMOUNT_WORDS}


def _replaced(a: str, b: str) -> bool:
    """Whether each text holds a content word (stemmed, stop words out) the other does not."""
    ta, tb = set(_ANALYZER.terms(a)), set(_ANALYZER.terms(b))
    return bool(ta - tb) and bool(tb - ta)


def _same_text(a: str, b: str) -> bool:
    return " ".join(tokenize(a)) == " ".join(tokenize(b))


def _cosine(v: np.ndarray) -> float:
    v = np.asarray(v, np.float64).reshape(2, -1)
    n = np.linalg.norm(v, axis=1)
    return float(v[0] @ v[1] / (n[0] * n[1])) if n[0] > 0 and n[1] > 0 else 0.0


def candidate_pairs(vectors: np.ndarray, newer: np.ndarray, overlap: Callable[[int, int], bool],
                    only: np.ndarray | None = None, texts: Sequence[str] | None = None) -> list[tuple[int, int, float]]:
    """(older index, newer index, cosine) of the pairs worth judging: each memory (or each of
    `only`) with its `NEIGHBOURS` nearest whose cosine is >= CANDIDATE_SIMILARITY and whose
    validity overlaps; `newer[i]` orders memories in time (older first). With `texts` (the
    memories' contents), also each memory with up to `FACT_NEIGHBOURS` others, nearest in time,
    whose short facts share a subject and a relation (`facts.keys`): "Maya lives in Berlin" and
    "Maya lives in Munich" may sit far apart in a hashing space."""
    x = np.asarray(vectors, np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    rows = np.arange(len(x)) if only is None else np.asarray(only, np.int64)
    seen: set[tuple[int, int]] = set()
    out = []

    def offer(i: int, j: int, s: float) -> None:
        a, b = (i, j) if newer[i] < newer[j] else (j, i)
        if (a, b) not in seen and overlap(a, b):
            seen.add((a, b))
            out.append((a, b, s))

    for start in range(0, len(rows), 1024):  # blocks: memory stays O(block x n)
        block = rows[start:start + 1024]
        sims = x[block] @ x.T
        sims[np.arange(len(block)), block] = -1.0  # not with itself
        k = min(NEIGHBOURS, len(x) - 1)
        if k <= 0:
            break
        near = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        for r, i in enumerate(block.tolist()):
            for j in near[r].tolist():
                s = float(sims[r, j])
                if s >= CANDIDATE_SIMILARITY:
                    offer(i, j, s)
    if texts is not None and len(x) > 1:
        for i, j in fact_pairs(texts, newer, rows if only is not None else None):
            offer(i, j, float(x[i] @ x[j]))
    return out


def fact_pairs(texts: Sequence[str], newer: np.ndarray, only: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Pairs of memories whose facts share a subject and a relation: each memory (or each of
    `only`) with the `FACT_NEIGHBOURS` of its group before it in time (and, for `only`, after it).
    For `only` (a write's new memories), the others are read only when their text holds one of
    the new facts' `facts.probes`: a write reads the few that may speak of the same thing, not the
    whole namespace."""
    wanted = None if only is None else set(np.asarray(only).tolist())
    read = range(len(texts))
    if wanted is not None:
        found = [f for i in wanted for f in facts.read(texts[i]).facts]
        if not found:
            return []
        pieces = facts.probes(found)
        if pieces is not None:
            read = [i for i, text in enumerate(texts)  # type: ignore[assignment]
                    if i in wanted or any(p in normalize(text) for p in pieces)]
    groups: dict[tuple[tuple[str, ...], str], list[int]] = {}
    for i in read:
        for key in facts.keys(texts[i]):
            groups.setdefault(key, []).append(i)
    pairs: list[tuple[int, int]] = []
    for members in groups.values():
        if len(members) < 2 or (wanted is not None and not wanted.intersection(members)):
            continue
        members.sort(key=lambda m: newer[m])
        for at, i in enumerate(members):
            if wanted is not None and i not in wanted:
                continue
            pairs.extend((j, i) for j in members[max(0, at - FACT_NEIGHBOURS):at])
            if wanted is not None:
                pairs.extend((i, j) for j in members[at + 1:at + 1 + FACT_NEIGHBOURS] if j not in wanted)
    return pairs


__all__ = ["MIN_SIMILARITY", "Detector", "HeuristicDetector", "Proposal", "amounts", "candidate_pairs",
           "different_subjects", "fact_pairs", "masked", "negated"]

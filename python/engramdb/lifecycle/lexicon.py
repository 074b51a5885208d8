"""The English verbs the short-fact grammar knows (issue 29), shared by `facts` (what a statement
says) and `subjects` (where its predicate opens).

A verb is known by its lemma: the analyzer's Snowball stem of the form ("lives", "lived",
"living" -> "live"), or, for an irregular form, the stem of its base form ("went" -> "go",
"taught" -> "teach"). `verb_lemma(word)` is that lemma when it is one of `VERBS`, else None. The
list holds the verbs agents' facts are told with: where one lives and works, whom one is married
to, what one likes, has, speaks, plays, eats, drinks, and when a plan happens. A word of the list
may be a noun too ("work", "rent", "plan"): callers decide from its place in the statement.
"""

from __future__ import annotations

import functools

from ..spaces.analyzer import stem

_IRREGULAR = {
    "went": "go", "gone": "go", "goes": "go", "ran": "run", "ate": "eat", "eaten": "eat", "drank": "drink",
    "drunk": "drink", "drove": "drive", "driven": "drive", "taught": "teach", "spoke": "speak", "spoken": "speak",
    "left": "leave", "came": "come", "met": "meet", "began": "begin", "begun": "begin", "took": "take",
    "taken": "take", "held": "hold", "sold": "sell", "slept": "sleep", "flew": "fly", "flown": "fly",
    "wore": "wear", "worn": "wear", "stood": "stand", "got": "get", "gotten": "get", "made": "make",
    "bought": "buy", "paid": "pay", "kept": "keep", "grew": "grow", "grown": "grow", "knew": "know",
    "known": "know", "saw": "see", "seen": "see", "thought": "think", "born": "bear", "has": "have",
    "had": "have", "felt": "feel", "gave": "give", "given": "give", "led": "lead", "lost": "lose",
    "found": "find", "won": "win", "swam": "swim", "swum": "swim", "rode": "ride", "ridden": "ride",
    "fell": "fall", "sat": "sit", "spent": "spend", "sent": "send", "built": "build", "broke": "break",
    "broken": "break", "chose": "choose", "chosen": "choose", "wrote": "write", "written": "write",
    "read": "read", "quit": "quit", "set": "set", "put": "put", "cut": "cut", "hurt": "hurt", "let": "let",
    "dealt": "deal", "meant": "mean", "heard": "hear", "told": "tell", "said": "say", "brought": "bring",
    "caught": "catch", "fought": "fight", "sought": "seek", "understood": "understand", "became": "become",
}

def word_set(text: str) -> frozenset[str]:
    """The words of a list written as one string (whitespace between them)."""
    return frozenset(text.split())


# lemmas as the Snowball stemmer spells them
VERBS: frozenset[str] = frozenset(stem(w) for w in word_set("""
    live move relocate reside stay rent work study teach drive ride like love enjoy adore hate dislike detest
    loathe prefer want need speak visit have own play eat drink smoke run weigh earn cost take start begin end
    finish leave depart arrive land come meet attend support use follow report bank date marry wear sleep read
    watch cook go commute join include happen sell seat hold close open expire renew ship fly travel volunteer
    get make buy pay keep grow know see stand quit stop avoid bear schedule reschedule postpone push plan book
    shift change bring manage lead coach train swim walk cycle hike vote believe celebrate host earn charge
    last take sit belong practise practice collect deliver graduate retire complete say mention tell think
    add confirm explain note fall occur""")) | frozenset(
    ("bear",))  # "born"

# verbs that ask for the -ing form of the verb they end ("quit smoking", "stopped running")
ENDING = frozenset(stem(w) for w in ("quit", "stop", "give"))


@functools.lru_cache(maxsize=1 << 14)
def lemma(word: str) -> str:
    """The lemma of a lowercased word (see the module docstring), a verb or not."""
    base = _IRREGULAR.get(word)
    return stem(base) if base is not None else stem(word)


def irregular(word: str) -> bool:
    """Whether a lowercased word is an irregular verb form ("went", "taught", "quit", "set")."""
    return word in _IRREGULAR


def verb_lemma(word: str) -> str | None:
    """The lemma of a lowercased verb form whose verb is known (`VERBS`), else None."""
    if not word.isalpha():
        return None
    got = lemma(word)
    return got if got in VERBS else None


__all__ = ["ENDING", "VERBS", "irregular", "lemma", "verb_lemma", "word_set"]

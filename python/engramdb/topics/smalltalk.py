"""Small talk and filler (issue 29): the turns set aside before topics are clustered, and the
words that never label a topic. Model-free, English, kept here as data.

The rule, over the analyzer's tokens (`spaces.analyzer.tokenize(normalize(text))`: lowercased
runs of letters and digits, apostrophes kept inside words): a turn is small talk when it is short
(at most `SHORT` tokens) and, once the set phrases (`PHRASES`: "take care", "long time no
see", "means a lot", "sorry to hear", ...) are taken out, what is left after taking out the
Snowball stop words, the small-talk words below (`SMALL_TALK`: greetings, thanks, reactions,
agreement, farewells, questions back), the discourse and pronoun-like words (`FILLER`) and the
namespace's speaker names is at most `LEFT` tokens, or at most `LEFT_WITH_CHAT` when the turn
holds at least two small-talk words or phrases (a reaction around two words: "Wow, looks great!
Bet it was nice to get away."). "Wow, that's awesome!", "Thanks Mel, you too!", "How about you?" are small talk;
"I adopted a puppy last week!" is not (adopted, puppy, week are left).

Filler (`is_filler`): a word no label shows: a stop word, a small-talk or discourse word (modal
verbs included), a contraction with a verb or "not", a number, or a speaker's name (a name, or
the first three letters or more of one: "mel" for "Melanie").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .._requests_first import give_way
from ..spaces.analyzer import SNOWBALL_STOPWORDS, normalize, tokenize, tokenize_batch


def _words(text: str) -> frozenset[str]:
    """A word list kept as text, one or more a line."""
    return frozenset(text.split())


SHORT = 16  # tokens at most in a small-talk turn
GIVE_WAY_EVERY = 64  # turns tested between two of a worker's chances to give way (~1 ms)
LEFT = 1  # content tokens it may keep ("Congrats on the move!" keeps "move": too little for a topic)
LEFT_WITH_CHAT = 2  # ... when it holds two small-talk words or phrases or more
# Set phrases of small talk, as token runs (the words alone are content elsewhere: "take", "time").
PHRASES: tuple[tuple[str, ...], ...] = tuple(tuple(p.split()) for p in """
    take care|long time no see|long time no talk|long time no chat|been a while|means a lot|mean a lot|meant a lot
    sorry to hear|is there anything i can do|keep you posted|keep me posted|keep you updated|keep me updated
    keep that in mind|keep it in mind|keep this in mind|have to go|got to go|gotta go|talk soon|talk later
    see you|see ya|catch up|what's up|how's it going|how are you|how have you been|how about you|what about you
    hope all is well|hope all is good|you've got this|you got this|good luck|all the best|no worries|no problem
    good to see you|great to see you|good to hear from you|great to hear from you|nice to hear from you
    thank you very much|thanks so much|thank you so much|sounds like fun|sounds like a plan|i'm happy for you
    what's new|anything new|lots has happened|a lot has happened|fill you in
""".replace("\n", "|").split("|") if p.strip())

# Greetings, thanks, reactions, agreement, farewells, questions back: what a turn says when it
# says nothing a topic is about.
SMALL_TALK: frozenset[str] = _words("""
    hi hey hello hiya howdy yo morning evening afternoon greetings welcome
    thanks thank thx ty appreciate appreciated cheers
    bye goodbye later cya farewell night goodnight soon care talk chat catch
    wow whoa woah omg oh ooh ah aw aww awww hmm hm huh yay yeah yep yup yes no nope ok okay k alright
    sure right true totally absolutely definitely exactly indeed course agreed agree
    awesome amazing great good nice cool wonderful fantastic fabulous incredible terrific lovely
    beautiful brilliant sweet neat glad happy excited exciting fun super impressive inspiring
    congrats congratulations proud kudos bravo
    sorry hear heard sounds sound seems looks like love loved sad tough hard
    haha hahaha lol lmao hehe
    how what about you yours doing been going things new up
    see know let mean means well guess think hope wish keep luck
""")

# Discourse and pronoun-like words that the stop list lets through: never a label.
FILLER: frozenset[str] = _words("""
    really also just even still much many lot lots thing things stuff something anything everything
    someone anyone everyone way kind bit pretty quite actually maybe probably always never ever
    get got gets getting go goes went gone make made makes making take took say said tell told
    feel felt feels feeling one ones time times day days today yesterday tomorrow week
    yeah yes oh wow awesome great good nice cool amazing glad happy love sounds
    im i'm i've i'll i'd you're you've you'll you'd it's that's what's there's let's can't don't
    gonna wanna gotta
    can could will would must shall might need needs wait since last long lately back yet next else
    around forward together
""") | SMALL_TALK


_NOT_CONTENT = SNOWBALL_STOPWORDS | SMALL_TALK | FILLER  # what a small-talk turn's content leaves out, one lookup

# A word contracted with a verb or "not" ("how've", "where'd", "they're", "mustn't"): pronoun-like
# or auxiliary, never a label ("'s" is left: "children's" is a word of the topic).
_CONTRACTED = ("'ve", "'re", "'ll", "'d", "'m", "n't")


def _name_words(names: Iterable[str]) -> set[str]:
    """The tokens of the speakers' names ("Caroline", "Dr. Ann Lee" -> caroline, dr, ann, lee)."""
    return {t for n in names if n for t in tokenize(normalize(n)) if len(t) >= 2}


class SmallTalk:
    """The rule of the module docstring for one namespace (its speaker names)."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names = _name_words(names)
        self._named: dict[str, bool] = {}  # word -> is_name, asked once per word

    def is_name(self, word: str) -> bool:
        """A speaker's name, or a short form of one (its first three letters or more)."""
        hit = self._named.get(word)
        if hit is None:
            w = word.lower()
            hit = self._named[word] = w in self.names or (len(w) >= 3 and any(n.startswith(w) for n in self.names))
        return hit

    def is_filler(self, word: str) -> bool:
        """A word no label shows (see the module docstring)."""
        w = word.lower()
        return w in FILLER or w in SNOWBALL_STOPWORDS or self.is_name(w) or w.isdigit() or w.endswith(_CONTRACTED)

    def is_small_talk(self, text: str) -> bool:
        """Whether a turn is small talk (see the module docstring)."""
        return self._of_tokens(tokenize(normalize(text)))

    def _of_tokens(self, tokens: list[str]) -> bool:
        """`is_small_talk` of a turn's tokens."""
        if not tokens or len(tokens) > SHORT:  # no words (an archived row's text is gone): not a turn of chat
            return False
        tokens, phrases = _without_phrases(tokens)
        most = LEFT_WITH_CHAT if phrases + len([t for t in tokens if t in SMALL_TALK]) >= 2 else LEFT
        left = [t for t in tokens if t not in _NOT_CONTENT]
        # a speaker's name is looked up only when the other words alone leave too much
        return len(left) <= most or len([t for t in left if not self.is_name(t)]) <= most

    def set_aside(self, texts: Sequence[str], seen: dict[str, bool] | None = None) -> np.ndarray:
        """Which of these turns are small talk (a bool per text), each text tested once. `seen`:
        text -> verdict of an earlier run for the same speakers; filled with the new texts. The
        new texts are tokenised a chunk at a time in one native pass, and a turn of more than
        `SHORT` tokens is judged by its count alone (a regular expression per text was a quarter
        of a topics run over 100,000 turns, issue 26)."""
        seen = seen if seen is not None else {}
        out = np.empty(len(texts), bool)
        for at in range(0, len(texts), GIVE_WAY_EVERY):  # a worker's run gives way to requests between two
            part = texts[at:at + GIVE_WAY_EVERY]
            new = [t for t in dict.fromkeys(part) if t not in seen]
            if new:
                tb = tokenize_batch([normalize(t) for t in new])  # `tokenize(normalize(t))`: normalised twice, as there
                words, codes, k = tb.words, tb.codes.tolist(), 0
                for text, count in zip(new, tb.counts.tolist()):
                    seen[text] = count <= SHORT and self._of_tokens([words[c] for c in codes[k:k + count]])
                    k += count
            out[at:at + len(part)] = [seen[t] for t in part]
            give_way()
        return out


def _without_phrases(tokens: list[str]) -> tuple[list[str], int]:
    """The tokens with every set phrase taken out, and how many phrases were. A turn without a
    phrase's first word is returned as it is (one set test: a generator per token made this two
    fifths of the small-talk verdicts over a namespace's 100,000 turns, issue 26)."""
    if _FIRSTS.isdisjoint(tokens):
        return tokens, 0
    out: list[str] = []
    found, i, n = 0, 0, len(tokens)
    while i < n:
        hit = 0
        for p in _BY_FIRST.get(tokens[i], ()):  # the longest first
            if tuple(tokens[i:i + len(p)]) == p:
                hit = len(p)
                break
        if hit:
            found += 1
            i += hit
        else:
            out.append(tokens[i])
            i += 1
    return out, found


_BY_FIRST: dict[str, list[tuple[str, ...]]] = {}
for _p in sorted(PHRASES, key=len, reverse=True):  # the longest phrase first
    _BY_FIRST.setdefault(_p[0], []).append(_p)
_FIRSTS = frozenset(_BY_FIRST)





def without(groups: Sequence[tuple[list[int], float]], aside: np.ndarray) -> list[tuple[list[int], float]]:
    """The topics (member indices, confidence) with the memories `aside` taken out; a topic left
    with fewer than three members goes (a topic's least, `clustering.MIN_CLUSTER`)."""
    out = [([i for i in members if not aside[i]], conf) for members, conf in groups]
    return [(m, c) for m, c in out if len(m) >= 3]
__all__ = ["FILLER", "LEFT", "LEFT_WITH_CHAT", "PHRASES", "SHORT", "SMALL_TALK", "SmallTalk", "without"]

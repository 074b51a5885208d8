"""Topic labels: a pluggable labeler; the built-in one names a topic by its most distinctive terms.

Built-in: each analysed term (Snowball stem, stop words out) scores the number of the topic's
memories that hold it times its idf over the namespace (BM25's idf, ln(1 + (N - df + 0.5) /
(df + 0.5))): a word most members share outranks one a few repeat; the `TERMS` best, each shown
as the word the topic uses most for it, joined with " / ". Words that say nothing of a topic never
label it (issue 29): a speaker's name, small talk and filler (`smalltalk.SmallTalk.is_filler`),
numbers and words of fewer than three letters.

A large namespace's labels are read from a sample of its texts (`label_sample`): about
`LABEL_SAMPLE` of them, chosen by a hash of each memory's id, plus every memory the clustering ran
on. The idf is then the sample's, and a topic's words are those of its sampled members (at least
`LABEL_READS` of them, or all it has). Reading all 100,000 texts of a namespace was half of a
topics run (~5 of 11 s), on the worker thread beside the requests (issue 26).
"""

from __future__ import annotations

import heapq
import math
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import TypeVar

from .._requests_first import give_way
from ..spaces.analyzer import Analyzer, normalize, tokenize_batch
from .smalltalk import SmallTalk

TERMS = 3
MORE_TERMS = 3  # terms a label may take past TERMS to differ from another topic's (`labels`)
SORT_TERMS = 64  # a topic's best terms by a sort up to this many terms, else by a heap (`top`)
CHUNK = 128  # texts a pass takes at a time (~2 ms): between two, a worker's run gives way to requests
LABEL_SAMPLE = 20_000  # texts a namespace's labels are read from, about (`label_sample`); all below it
LABEL_READS = 30  # a topic's members read for its label at least (or all it has), sampled or not
Labeler = Callable[[Sequence[str], Sequence[str]], str]  # (the topic's texts, every text of the namespace) -> label
_ANALYZER = Analyzer()
_T = TypeVar("_T")
_K = TypeVar("_K")


class DistinctiveTerms:
    """The built-in labeler over one namespace's texts, analysed once (see the module docstring)."""

    def __init__(self, corpus: Sequence[str], analysed: dict[str, tuple[tuple[str, str], ...]] | None = None,
                 chat: SmallTalk | None = None, contents: dict[str, tuple[str, ...]] | None = None,
                 among: Sequence[int] | None = None) -> None:
        """`analysed`: text -> its (stem, word) pairs from an earlier run; filled with the new texts.
        `chat`: the namespace's small-talk rule (its speakers' names), whose filler never labels.
        `contents`: text -> its terms that may label (`content`) from an earlier run with the same
        speakers' names (they decide what is filler); filled with the new texts.
        `among`: the positions of the texts read (`label_sample`); None: every text."""
        self.chat = chat if chat is not None else SmallTalk()
        self._texts = corpus
        self._contents = contents if contents is not None else {}
        self._skip: dict[str, bool] = {}
        self._cache = cache = analysed if analysed is not None else {}
        read = corpus if among is None else [corpus[i] for i in among]
        _analyse(read, cache)
        pairs_read = [cache[text] for text in read]  # per text read: (stem, surface word)
        # None for a text outside the sample: analysed only when a label needs it
        self.words: list[tuple[tuple[str, str], ...] | None] = \
            list(pairs_read) if among is None else [None] * len(corpus)
        for i, pairs in zip(among if among is not None else (), pairs_read):
            self.words[i] = pairs
        self._sampled = among is not None
        # texts holding each term, counted a chunk at a time (an update per text was a fifth of an
        # increment at 100,000; one pass over them all held the GIL against the requests beside it)
        self.df: Counter[str] = _counted(pairs_read, lambda pairs: {s for s, _ in pairs})
        self.n = len(read)
        self._content: list[tuple[str, ...] | None] = [None] * len(corpus)
        self._idfs: dict[str, float] | None = None

    def label(self, members: Sequence[int], n: int = TERMS) -> str:
        """The label of the texts at these positions: each best term shown as the word the members
        use most for it (on a tie, the word met first)."""
        members = self._read(members)
        best = self._top(members, n)
        # every (stem, word) pair of the members counted in one pass in C (a Python loop over them
        # was most of an increment's cost at 100,000 memories); the pairs keep the order they were
        # first met in, so the first word with the most uses is the one a Counter per term picks
        pairs = _counted(members, self._words)
        shown: dict[str, tuple[str, int]] = {}
        wanted = set(best)
        for (stem, word), k in pairs.items():
            if stem in wanted and (stem not in shown or k > shown[stem][1]) and not self._skipped(word):
                shown[stem] = (word, k)
        return " / ".join(shown[t][0] for t in best) or "(no terms)"

    def labels(self, groups: Sequence[Sequence[int]]) -> list[str]:
        """The labels of several topics of this namespace, no two alike: topics whose `TERMS` best
        terms are the same are each named by more of their own, up to `TERMS + MORE_TERMS` (two
        topics listed as "bowing / cello / covered" told a reader nothing of how they differ)."""
        out = [self.label(g) for g in groups]
        for n in range(TERMS + 1, TERMS + MORE_TERMS + 1):
            seen = Counter(out)
            alike = [i for i, name in enumerate(out) if seen[name] > 1]
            if not alike:
                break
            for i in alike:
                out[i] = self.label(groups[i], n)
        return out

    def top(self, members: Sequence[int], n: int = TERMS) -> list[str]:
        """The `n` best terms (stems) of the texts at these positions, best first: what `label` shows."""
        return self._top(self._read(members), n)

    def _top(self, members: Sequence[int], n: int) -> list[str]:
        """`top` of members already read (`_read`)."""
        tf = _counted(members, self.content)  # members holding the term
        idf = self._idf()
        unseen = math.log1p((self.n + 0.5) / 0.5)  # a term no sampled text holds (read for a label only)

        def key(t: str) -> tuple[float, str]:
            return -tf[t] * idf.get(t, unseen), t

        # sorted()[:n] is heapq.nsmallest(n, ...)'s documented equivalent (the keys are unique); of a
        # few dozen terms (a topic of short notes, twice a refresh: the join, the label) it is 1.5x
        # faster, of thousands 2.5x slower than the heap's loop
        return sorted(tf, key=key)[:n] if len(tf) <= SORT_TERMS else heapq.nsmallest(n, tf, key=key)

    def content(self, i: int) -> tuple[str, ...]:
        """The terms (stems) of text `i` that may label a topic, each once, in text order (found
        once per text; kept between runs for every text of a namespace: a tuple, a fraction of a set's size)."""
        found = self._content[i]
        if found is None:
            text = self._texts[i]
            found = self._contents.get(text)
            if found is None:
                found = self._contents[text] = tuple(dict.fromkeys(stem for stem, word in self._words(i)
                                                                   if not self._skipped(word)))
            self._content[i] = found
        return found

    def _words(self, i: int) -> tuple[tuple[str, str], ...]:
        """Text i's (stem, word) pairs, analysed now when it is outside the sample."""
        found = self.words[i]
        if found is None:
            text = self._texts[i]
            _analyse([text], self._cache)  # nothing to do when an earlier run analysed it
            found = self.words[i] = self._cache[text]
        return found

    def _read(self, members: Sequence[int]) -> Sequence[int]:
        """The members whose words a label reads: all of them, or in a sample the sampled ones, and
        more (in order) until `LABEL_READS` are read or none is left."""
        if not self._sampled:
            return members
        read = [i for i in members if self.words[i] is not None]
        if len(read) < LABEL_READS:
            more = [i for i in members if self.words[i] is None][:LABEL_READS - len(read)]
            for i in more:
                self._words(i)
            read = [i for i in members if self.words[i] is not None]
        return read

    def rows(self, pick: Sequence[int]) -> Rows:
        """These texts alone, numbered from 0 in this order (the memories a clustering runs on)."""
        return Rows(self, pick)

    def _skipped(self, word: str) -> bool:
        """Whether a word never labels (see the module docstring), asked once per word."""
        hit = self._skip.get(word)
        if hit is None:
            hit = self._skip[word] = len(word) < 3 or self.chat.is_filler(word)
        return hit

    def _idf(self) -> dict[str, float]:
        """Each term's BM25 idf over the namespace, computed once for all of its topics."""
        if self._idfs is None:
            self._idfs = {t: math.log1p((self.n - d + 0.5) / (d + 0.5)) for t, d in self.df.items()}
        return self._idfs


def label_sample(ids: Sequence[str], keep: Iterable[int] = ()) -> list[int] | None:
    """The positions of the texts a namespace's labels are read from (the module docstring): each
    memory in or out by a CRC-32 of its id, about `LABEL_SAMPLE` of them (so that a memory sampled
    once stays sampled while the namespace grows, and an increment's analysis cache still serves
    it), and every position in `keep` (the clustered memories: a topic's label reads them). None:
    every text, in a namespace of `LABEL_SAMPLE` memories or fewer."""
    n = len(ids)
    if n <= LABEL_SAMPLE:
        return None
    cut = LABEL_SAMPLE * (1 << 32) // n
    inside = {i for i, mid in enumerate(ids) if zlib.crc32(mid.encode("utf-8", "surrogatepass")) < cut}
    inside.update(keep)
    return sorted(inside)


def _analyse(texts: Sequence[str], cache: dict[str, tuple[tuple[str, str], ...]]) -> None:
    """Each text's (stem, surface word) pairs into `cache`, for the texts not there yet: each word
    of `tokenize(normalize(text))` with its first analysed term, words without one left out. The
    texts are tokenised a chunk at a time and each distinct word analysed once (word by word, the
    first topics run over a namespace of 100,000 chat turns analysed 1.5 million words in ~6 s,
    holding the GIL against the requests beside it: issue 26). Tuples, not lists: the collector
    stops tracking a tuple of strings, and a namespace's cache of 100,000 lists made every full
    collection of the process slower for as long as the store stayed open."""
    new = [t for t in dict.fromkeys(texts) if t not in cache]
    stem_of: dict[str, tuple[str, str] | None] = {}
    for at in range(0, len(new), CHUNK):
        part = new[at:at + CHUNK]
        tb = tokenize_batch([normalize(t) for t in part])  # `tokenize(normalize(text))`, text by text
        pairs = [stem_of[w] if w in stem_of else stem_of.setdefault(w, _pair(w)) for w in tb.words]
        codes = tb.codes.tolist()
        k = 0
        for text, count in zip(part, tb.counts.tolist()):
            cache[text] = tuple(p for p in map(pairs.__getitem__, codes[k:k + count]) if p is not None)
            k += count
        give_way()


def _pair(word: str) -> tuple[str, str] | None:
    """(its first analysed term, the word), or None when it has none (a stop word)."""
    stems = _ANALYZER.terms(word)
    return (stems[0], word) if stems else None


def _counted(items: Sequence[_T], terms: Callable[[_T], Iterable[_K]]) -> Counter[_K]:
    """`Counter(chain.from_iterable(map(terms, items)))`, counted in C a chunk at a time: the same
    counts in the same order (of first appearance); between two chunks a worker's run gives way to
    requests."""
    out: Counter[_K] = Counter()
    for at in range(0, len(items), CHUNK):
        out.update(chain.from_iterable(map(terms, items[at:at + CHUNK])))
        give_way()
    return out


class Rows:
    """`DistinctiveTerms.top` and `.content` over some of its texts, numbered from 0 (the idf
    stays the namespace's): what `clustering.topics_capped` reads to join a memory to a topic."""

    def __init__(self, terms: DistinctiveTerms, pick: Sequence[int]) -> None:
        self.terms, self.pick = terms, list(pick)

    def top(self, members: Sequence[int], n: int = TERMS) -> list[str]:
        return self.terms.top([self.pick[i] for i in members], n)

    def content(self, i: int) -> tuple[str, ...]:
        return self.terms.content(self.pick[i])


def distinctive_terms(members: Sequence[str], corpus: Sequence[str], n: int = TERMS) -> str:
    """The built-in labeler as a `Labeler` (texts in, label out); the store calls `DistinctiveTerms`
    directly so a namespace is analysed once per run."""
    dt = DistinctiveTerms([*corpus, *members])
    return dt.label(range(len(corpus), len(corpus) + len(members)), n) if members else "(no terms)"


__all__ = ["LABEL_READS", "LABEL_SAMPLE", "DistinctiveTerms", "Labeler", "Rows", "distinctive_terms", "label_sample"]

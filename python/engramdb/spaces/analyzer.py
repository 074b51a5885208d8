"""The English analyzer (H1, S5): text -> tokens -> terms -> 31-bit term ids.

Steps, in order:

1. Unicode NFKC (full-width forms, ligatures and compatibility digits fold to their plain form),
   typographic apostrophes (U+2019, U+2018, U+02BC) mapped to ``'``, then ``str.lower()``.
2. Tokens are maximal runs of letters and digits (``[^\\W_]+``): numbers are kept, punctuation,
   whitespace, symbols and underscores split (``snake_case`` -> ``snake``, ``case``; ``3.14`` ->
   ``3``, ``14``). An apostrophe *between* two such runs stays inside the token, so
   ``don't`` -> ``don't`` and ``john's`` -> ``john's``; leading and trailing apostrophes (quotes,
   ``students'``) are dropped. Keeping the apostrophe avoids the false merges that deleting it
   makes (``we'll`` / ``well``, ``she'll`` / ``shell``, ``it's`` / ``its``), lets the stop list
   hold the contractions, and is what the Snowball stemmer expects (it strips a final ``'s``).
3. Stop words: the Snowball English list (`SNOWBALL_STOPWORDS`, 174 words, contractions
   included) is removed; pass ``stopwords=`` to change it (an empty set keeps everything).
4. Stemming: the Snowball English ("Porter2") stemmer of PyStemmer (Snowball's generated C, a
   dependency). Stems feed the term ids, an on-disk format: there is no second stemmer whose
   output could drift from it.
5. Term ids (`term_id`): the first 8 bytes of BLAKE2b (personalised ``engramdb.term``) of the
   term's UTF-8 bytes, little-endian, masked to 31 bits: 0..2^31-1, stable across processes,
   machines and Python versions (never Python's salted ``hash()``).

Collisions: ids are not checked for collisions; two different terms that hash to the same id are
the same term to every consumer (Jaccard, BM25). With V distinct terms about V^2 / 2^32 colliding
pairs are expected: ~2 for a 100,000-term vocabulary, ~230 for 1,000,000. Each collision adds a
little noise to the scores of texts holding one of the two terms; it never loses a match.

All per-token work (stop test, stem, id) is cached in bounded `functools.lru_cache` tables, so a
text costs one NFKC pass, one regex scan and a few cache hits per token.

Batches (`tokenize_batch`, `Analyzer.terms_batch`) go further, as bm25s does: one regex scan per
text, then each *distinct* token of the batch is stopped, stemmed and hashed once, and every
token becomes an index into the distinct ones (C-level dict passes, no Python call per token).
Inside `analysis_scope()` a batch is tokenised once however many spaces embed it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import Stemmer  # PyStemmer

from ..kernels.analysis import blake2b_words, joined_codepoints, tokenize_codepoints
from ..kernels.sets import unique

__all__ = [
    "NEGATIONS",
    "SNOWBALL_STOPWORDS",
    "Analyzer",
    "Tokens",
    "analysis_scope",
    "negation",
    "normalize",
    "stem",
    "term_id",
    "term_ids",
    "tokenize",
    "tokenize_batch",
]

# The Snowball English stop-word list (snowballstem.org, algorithms/english/stop.txt), lowercased.
SNOWBALL_STOPWORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    what which who whom this that these those
    am is are was were be been being have has had having do does did doing
    would should could ought
    i'm you're he's she's it's we're they're i've you've we've they've
    i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll
    isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't
    won't wouldn't shan't shouldn't can't cannot couldn't mustn't
    let's that's who's what's here's there's when's where's why's how's
    a an the and but if or because as until while
    of at by for with about against between into through during before after
    above below to from up down in out on off over under
    again further then once here there when where why how
    all any both each few more most other some such
    no nor not only own same so than too very
    """.split()  # noqa: SIM905 - the list as Snowball lays it out
)

# Words that turn a statement into its opposite. Most are Snowball stop words, so a path that drops
# stop words must keep these (dedup's guard, the v2 hashing embedder): "I like cats" / "I don't".
NEGATIONS: frozenset[str] = frozenset({"not", "no", "never", "nor", "none", "nobody", "nothing", "neither",
                                       "nowhere", "cannot", "without"})


def negation(token: str) -> str | None:
    """The negation a token says (contractions such as "don't", "isn't", "can't" and "cannot" say
    "not"), or None."""
    if token.endswith("n't") or token == "cannot":
        return "not"
    return token if token in NEGATIONS else None


_TOKEN_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_ID_MASK = 0x7FFFFFFF
_CACHE = 1 << 16  # entries per per-token cache (a few MB at most)


# PyStemmer: Snowball's C stemmer. Its own cache (a [stem, count] list per word, 10,000 words) is
# off: every call here is behind an lru_cache already, and its lists, kept for good, were most of the
# long-lived objects an agent's turn left for the garbage collector's full passes (RESULTS stop 40)
_stem_word: Callable[[str], str] = Stemmer.Stemmer("english", 0).stemWord


@functools.lru_cache(maxsize=_CACHE)
def stem(token: str) -> str:
    """The Snowball English stem of one lowercased token (cached)."""
    return str(_stem_word(token))


@functools.lru_cache(maxsize=_CACHE)
def term_id(term: str) -> int:
    """Stable 31-bit id of a term: BLAKE2b-64 (person ``engramdb.term``) masked to 0..2^31-1."""
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8, person=b"engramdb.term").digest()
    return int.from_bytes(digest, "little") & _ID_MASK


_TERM_PERSON = b"engramdb.term"
_term_ids: dict[str, int] = {}  # term -> term_id, for batches (bounded as the caches are)


def term_ids(terms: Sequence[str]) -> np.ndarray:
    """`term_id` of each term (int64): the terms met before from a table, the others hashed in one
    native pass (`kernels.analysis.blake2b_words`, hashlib's digest; a call to hashlib per new term
    was most of a fresh process's first lexical batch), or by `term_id` when one cannot be UTF-8
    (it raises, naming it)."""
    global _term_ids
    table = _term_ids
    got = list(map(table.get, terms, itertools.repeat(-1)))
    out = np.array(got, dtype=np.int64)
    if -1 in got:
        if len(table) > _CACHE:
            table = _term_ids = {}
        at = np.flatnonzero(out < 0)
        new = [terms[i] for i in at.tolist()]
        cp, ptr = joined_codepoints(new)
        h = blake2b_words(cp, ptr, _TERM_PERSON)
        ids = ((h & np.uint64(_ID_MASK)).astype(np.int64) if h is not None
               else np.fromiter(map(term_id, new), dtype=np.int64, count=len(new)))
        table.update(zip(new, ids.tolist()))
        out[at] = ids
    return out


def normalize(text: str) -> str:
    """NFKC, typographic apostrophes to ``'``, lowercase (a run of more than 30 combining marks
    first cut every 30, as Unicode's stream-safe format does: `_stream_safe`)."""
    if not text.isascii():
        if len(text) > _MAX_NON_STARTERS // 2:  # shorter, it cannot hold more than 30 (U+0F73 counts 2)
            text = _stream_safe(text)
        # three str.replace passes, not str.translate: translate looks every character of a
        # non-ASCII text up in its table (~100 ns each: a long non-ASCII turn cost ~1 ms); the same text
        text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'")
    return text.lower()


# NFKC puts each run of combining marks in canonical order by insertion: quadratic in the run's
# length, so one memory of 64 KB of alternating marks (U+0301 U+0316 ...) held the writer 3 s and
# 1 MiB of them (the content limit) ~15 minutes. Unicode's stream-safe text format (UAX #15 sec.
# 13) bounds a run at 30 non-starters by a U+034F COMBINING GRAPHEME JOINER after every 30; text
# already in that form (every real language) is normalised exactly as before, for ~3 us more.
_MAX_NON_STARTERS = 30
_CGJ = "\u034f"


_NS_TABLE = 0x20000  # code points the weights are kept for; none above is a non-starter
_NS_UNKNOWN = 255
_non_starter_table = np.full(_NS_TABLE + 1, _NS_UNKNOWN, np.uint8)
_non_starter_table[:128] = 0  # ASCII: starters
_non_starter_table[_NS_TABLE] = 0  # stands for every code point above (take(mode="clip"))
_non_starter_lock = threading.Lock()


def _non_starter_weight(c: str) -> int:
    """How many non-starters (canonical combining class > 0) the decomposition of `c` starts with
    (a mark 1, U+0F73 2, a starter 0)."""
    combining = unicodedata.combining
    d = unicodedata.normalize("NFKD", c)
    if combining(c) or (d and combining(d[0])):
        return max(1, next((i for i, x in enumerate(d) if not combining(x)), len(d)))
    return 0


def _non_starters(cp: np.ndarray) -> np.ndarray:
    """`_non_starter_weight` of each code point of `cp` (uint8). The table behind it fills in as texts
    bring new characters (one Python call per distinct one, once per process): building it whole for
    the two planes that hold non-starters cost ~0.1 s, in the first ingest of any non-ASCII text."""
    table = _non_starter_table
    weight: np.ndarray = table.take(cp, mode="clip")
    if (weight == _NS_UNKNOWN).any():
        with _non_starter_lock:
            new = unique(cp[weight == _NS_UNKNOWN])
            table[new] = [_non_starter_weight(chr(c)) for c in new.tolist()]
        weight = table.take(cp, mode="clip")
    return weight


def _stream_safe(text: str) -> str:
    """`text` with a U+034F before any non-starter that would make more than 30 in a row (UAX
    #15's stream-safe format, counting a character by the non-starters it decomposes to); `text`
    itself, found by one numpy pass over its code points, when it has no such run."""
    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), "<u4")
    weight = _non_starters(cp)
    if int(weight.sum()) <= _MAX_NON_STARTERS:  # the common case, at a pass and a sum
        return text
    edge = np.flatnonzero(np.diff(np.concatenate(([0], weight > 0, [0])).astype(np.int8)))
    starts, ends = edge[0::2], edge[1::2]
    runs = np.add.reduceat(weight.astype(np.int64), starts) if starts.size else starts
    long_ = np.flatnonzero(runs > _MAX_NON_STARTERS)
    if not long_.size:
        return text
    out, at = [], 0
    for a, b in zip(starts[long_].tolist(), ends[long_].tolist()):
        out.append(text[at:a])
        acc = 0
        for c, w in zip(text[a:b], weight[a:b].tolist()):  # hostile text only: a loop is fine
            if acc + w > _MAX_NON_STARTERS:
                out.append(_CGJ)
                acc = 0
            out.append(c)
            acc += w
        at = b
    out.append(text[at:])
    return "".join(out)


def tokenize(text: str) -> list[str]:
    """The normalised word tokens of `text`, in order, stop words and case included."""
    return _TOKEN_RE.findall(normalize(text))


@dataclass(frozen=True)
class Tokens:
    """A batch of texts as a sequence of items drawn from its own small vocabulary.

    Text r owns items ``sum(counts[:r])`` up to ``sum(counts[:r + 1])``; item j is
    ``words[codes[j]]``. `words` holds each distinct item once, in order of first appearance.
    """

    counts: np.ndarray  # (n,) int64: items per text
    words: list[str]
    codes: np.ndarray  # (total,) int64 indexes into words, texts in order
    # (total,) int64: where each item starts in its normalised text, in code points (tokens only)
    starts: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.counts.flags.writeable = False  # shared by every space of a batch: read-only
        self.codes.flags.writeable = False
        if self.starts is not None:
            self.starts.flags.writeable = False

    def rows(self) -> np.ndarray:
        """The text (row) of each item, int64."""
        return np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)


_scope = threading.local()


@contextlib.contextmanager
def analysis_scope() -> Iterator[None]:
    """Within this block (on this thread) `tokenize_batch` remembers each batch it tokenised, so
    the spaces embedding one batch of new memories scan its texts once between them. The memo is
    dropped when the outermost block ends (it holds the batch's tokens)."""
    if getattr(_scope, "memo", None) is not None:
        yield
        return
    _scope.memo = {}
    try:
        yield
    finally:
        _scope.memo = None


def tokenize_batch(texts: Sequence[str]) -> Tokens:
    """`tokenize` of every text as one `Tokens` (a non-string is named by index: TypeError)."""
    return _memoised(("tokens",), texts, _tokenize_batch)


def _memoised(kind: tuple[object, ...], texts: Sequence[str], make: Callable[[Sequence[str]], Tokens]) -> Tokens:
    """`make(texts)`, remembered under (kind, texts) inside `analysis_scope`."""
    memo: dict[tuple[object, ...], Tokens] | None = getattr(_scope, "memo", None)
    if memo is None or not all(isinstance(t, str) for t in texts):  # a non-string: named by make, never memoised
        return make(texts)
    key = (*kind, tuple(texts))
    got = memo.get(key)
    if got is None:
        got = memo[key] = make(texts)
    return got


def _tokenize_batch(texts: Sequence[str]) -> Tokens:
    normed: list[str] = []
    for r, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{r}] must be str, got {type(text).__name__}")
        normed.append(normalize(text))
    # one native pass over the batch's code points (kernels.tokenize_codepoints: what _TOKEN_RE
    # finds, each distinct token numbered in order of first appearance and made a str once, no str
    # made per token)
    cp, ptr = joined_codepoints(normed)
    got = tokenize_codepoints(cp, ptr, _word_chars(cp))
    return Tokens(got.counts, got.words, got.codes, got.starts)


_WORD_CHARS: np.ndarray | None = None
_WORD_CHARS_LOCK = threading.Lock()


def _new_locks_in_child() -> None:
    """A child forked while another thread filled one of the tables above would wait for ever on
    its lock (that thread is not in the child); the tables are whole entry by entry (an entry not
    filled yet still reads as unknown), so the child goes on with new locks."""
    global _non_starter_lock, _WORD_CHARS_LOCK
    _non_starter_lock, _WORD_CHARS_LOCK = threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_in_child)


def _word_chars(cp: np.ndarray) -> np.ndarray:
    """By code point, 1 for a character of `_TOKEN_RE`'s runs (``[^\\W_]``: ``str.isalnum``, as re
    tests it), 0 for any other, 2 for one not looked at yet; every code point of `cp` looked at. The
    table fills in as texts bring new characters (a batch's distinct non-ASCII ones, one Python call
    each, once per process): building all 1.1 M entries up front would cost ~0.3 s."""
    global _WORD_CHARS
    with _WORD_CHARS_LOCK:
        table = _WORD_CHARS
        if table is None:
            table = np.full(0x110000, 2, np.uint8)
            table[:128] = [chr(c).isalnum() for c in range(128)]
            _WORD_CHARS = table
        wide = cp[cp >= 128]
        if wide.size:
            new = unique(wide)
            new = new[table[new] == 2]
            if new.size:
                table[new] = [chr(c).isalnum() for c in new.tolist()]
    return table


def kept_counts(counts: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Per text, how many of its items `keep` (bool, one per item, texts in order) keeps (int64):
    one running sum read at the texts' ends, not the per-item row numbers and a bincount over them."""
    run = np.zeros(keep.shape[0] + 1, np.int64)
    np.cumsum(keep, out=run[1:])
    ends = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(counts, out=ends[1:])
    out: np.ndarray = np.diff(run[ends])
    return out


class Analyzer:
    """English analyzer: `terms` (stop words removed, stemmed) and their stable `term_ids`.

    Args:
        stopwords: words to drop, compared with the lowercased token before stemming
            (default: `SNOWBALL_STOPWORDS`; give an empty set to keep every token).
        stem: apply the Snowball English stemmer (default True).

    Instances are cheap, immutable and thread-safe; their caches are per instance.
    """

    def __init__(self, stopwords: Iterable[str] | None = None, stem: bool = True) -> None:
        self.stopwords: frozenset[str] = (
            SNOWBALL_STOPWORDS if stopwords is None else frozenset(normalize(w) for w in stopwords)
        )
        self.stem = stem
        stop = self.stopwords
        if stem:

            def term_of(token: str) -> str | None:
                return None if token in stop else str(_stem_word(token))

        else:

            def term_of(token: str) -> str | None:
                return None if token in stop else token

        self._term_of = functools.lru_cache(maxsize=_CACHE)(term_of)

    def __repr__(self) -> str:
        return f"Analyzer(stopwords=<{len(self.stopwords)} words>, stem={self.stem})"

    def terms(self, text: str) -> list[str]:
        """The analysed terms of `text` in order (duplicates kept)."""
        return [t for t in map(self._term_of, _TOKEN_RE.findall(normalize(text))) if t is not None]

    def terms_batch(self, texts: Sequence[str]) -> Tokens:
        """`terms` of every text as one `Tokens` (words: the batch's distinct terms); the same
        terms, in the same order, as `terms` text by text (inside `analysis_scope`, analysers with the
        same stop list and stemming share one result)."""
        return _memoised(("terms", self.stopwords, self.stem), texts, self._terms_batch)

    def _terms_batch(self, texts: Sequence[str]) -> Tokens:
        tb = tokenize_batch(texts)
        # per distinct token: the number of its term among the batch's terms (numbered in order of
        # first appearance), -1 if stopped
        # (C-level passes: the cached term of each token, the terms in order of first appearance,
        # then each token's number among them; a Python step per token cost more)
        term_of = list(map(self._term_of, tb.words))
        firsts = dict.fromkeys(term_of)
        firsts.pop(None, None)
        terms = cast("list[str]", list(firsts))
        number: dict[str | None, int] = dict(zip(terms, range(len(terms))))
        number[None] = -1
        to_term = np.fromiter(map(number.__getitem__, term_of), dtype=np.int64, count=len(term_of))
        per = to_term[tb.codes]
        keep = per >= 0
        return Tokens(kept_counts(tb.counts, keep), terms, per[keep])

    def term_ids(self, text: str) -> list[int]:
        """`term_id` of each of `terms(text)`, in order (duplicates kept)."""
        return [term_id(t) for t in self.terms(text)]

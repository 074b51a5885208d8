"""`HashingEmbedder`: a dense space made by feature hashing, no model (S5).

A text becomes the signed, hashed sum of three kinds of feature, then is L2-normalised:

- word unigrams: each content word w (see below) adds ``W_WORD * e(w)``;
- character n-grams: each word also adds its n = 3, 4, 5 grams of ``"<" + w + ">"``
  (fastText-style boundary markers), each with weight ``W_CHAR / sqrt(m_w)`` (in float32) where
  m_w is the word's n-gram count, so the n-gram part of every word has norm ~W_CHAR whatever its length
  (words longer than `MAX_NGRAM_CHARS` contribute the n-grams of their first `MAX_NGRAM_CHARS`
  characters, without the end marker);
- word bigrams: each pair of adjacent content words adds ``W_BIGRAM * e(w1 w2)``.

Each word's and each bigram's contribution is scaled by its sublinear term frequency in the text,
``1 + ln(tf)`` (a repeated word's n-grams are scaled with it). There is no idf: the embedder is
stateless, so the same text always gives the same vector.

``e(f)`` is signed hashing: the feature's 64-bit hash h puts ``+1`` or ``-1`` (bit 63 of h) in
bucket ``(h mod 2^32) mod dim``, so collisions cancel on average instead of piling up.

Content words are the analyzer's tokens (`analyzer.tokenize`: NFKC, lowercase, letters and
digits, inner apostrophes kept) minus the Snowball English stop words; a text made only of stop
words keeps them all (so "what is it" is not the empty vector). Words are not stemmed: the
character n-grams already bring morphological neighbours close ("meeting" / "meetings").

Versions: version 2 (``hashing2-<dim>``, the default profile's since format 4) keeps negations,
which the stop list would drop: "not", "no", "never" ... stay, and every contraction ("don't",
"isn't", "can't") and "cannot" become "not", so "I don't like cats" and "I do not like cats" share
their features and neither is "I like cats". Version 1 (``hashing-<dim>``) drops them, as stores
made with it expect; a store keeps the version its schema names.

Hashes (all stable across processes, machines and versions of Python and numpy):

- word: BLAKE2b-64 (person ``engramdb.word``) of the word's UTF-8 bytes, little-endian;
- n-gram: over the Unicode code points c_1..c_n, ``h = n * 0x9E3779B97F4A7C15``, then per code
  point ``h = (h xor c_j) * 0x100000001B3`` (FNV-1a steps), then the splitmix64 finaliser;
- bigram: ``splitmix64(h(w1) * 0x9E3779B97F4A7C15 + h(w2))``;
  all arithmetic modulo 2^64. (A bigram's tf is counted per 33-bit code, h mod 2^32 and the sign
  bit: two different bigrams of one text agreeing on those 33 bits, odds 2^-33 a pair, count as one.)

Bitwise determinism: every weighted feature value is rounded to a multiple of 2^-24 before the
sums, which are then exact in float64, and row norms are summed row by row; so a text gives the
same float32 bytes alone or in any batch, in any process, whatever the word table's history.

Speed: every distinct word's features are computed once and kept in a bounded per-embedder table
(cleared when it passes `TABLE_WORDS` words), and the batch is tokenised once (`tokenize_batch`,
shared with the other spaces during ingest); the stop test, the negation rule and the table
look-up run once per distinct token of the batch, then the sums and their normalisation are one
native pass over the batch's tokens (`kernels.hash_embed`), as are a new word's n-grams
(`kernels.word_features`): no Python call per token.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..kernels.analysis import blake2b_words, hash_embed, joined_codepoints
from ..kernels.analysis import word_features as _word_features
from ..kernels.analysis import word_rows as _word_rows
from ..kernels.sets import unique
from . import forking
from .analyzer import (
    NEGATIONS,
    SNOWBALL_STOPWORDS,
    Tokens,
    kept_counts,
    negation,
    normalize,
    tokenize,
    tokenize_batch,
)
from .passages import MIN_CHARS
from .protocol import SpaceKind

__all__ = ["MAX_NGRAM_CHARS", "HashingEmbedder", "ngram_hashes", "splitmix64", "word_hash"]

W_WORD = 1.0
W_CHAR = 1.0
W_BIGRAM = 0.5
NGRAM_SIZES = (3, 4, 5)
MAX_NGRAM_CHARS = 48
TABLE_WORDS = 1 << 16  # words kept in an embedder's feature table (~200 bytes each)

_FNV_PRIME = np.uint64(0x100000001B3)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser on a uint64 array (a bijection that mixes every bit)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    out: np.ndarray = x ^ (x >> np.uint64(31))
    return out


_WORD_PERSON = b"engramdb.word"


def word_hash(word: str) -> int:
    """64-bit BLAKE2b (person ``engramdb.word``) of a word, little-endian."""
    d = hashlib.blake2b(word.encode("utf-8"), digest_size=8, person=_WORD_PERSON).digest()
    return int.from_bytes(d, "little")


def ngram_hashes(words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of the boundary-marked character n-grams of `words`, vectorised over all of them.

    Returns (hashes uint64, owner int64): owner[i] is the index in `words` of hash i's word;
    owners are non-decreasing (hashes grouped by word, n-gram sizes in `NGRAM_SIZES` order).
    """
    if not words:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    marked = ["<" + w + ">" if len(w) <= MAX_NGRAM_CHARS else "<" + w[:MAX_NGRAM_CHARS] for w in words]
    cp = np.frombuffer("".join(marked).encode("utf-32-le"), dtype="<u4").astype(np.uint64)
    lens = np.fromiter((len(m) for m in marked), dtype=np.int64, count=len(marked))
    starts = np.cumsum(lens) - lens
    owners_all = np.arange(len(words), dtype=np.int64)
    hs: list[np.ndarray] = []
    own: list[np.ndarray] = []
    for n in NGRAM_SIZES:
        cnt = np.maximum(lens - n + 1, 0)
        total = int(cnt.sum())
        if total == 0:
            continue
        first = np.cumsum(cnt) - cnt
        pos = np.arange(total, dtype=np.int64) + np.repeat(starts - first, cnt)
        h = np.full(total, (n * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
        for j in range(n):
            h = (h ^ cp[pos + j]) * _FNV_PRIME
        hs.append(splitmix64(h))
        own.append(np.repeat(owners_all, cnt))
    hashes = np.concatenate(hs)
    owner = np.concatenate(own)
    order = np.argsort(owner, kind="stable")
    return hashes[order], owner[order]


def bucket_sign(h: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Bucket ``(h mod 2^32) mod dim`` (int64) and sign (+1.0 / -1.0 from bit 63) of hashes."""
    idx = ((h & _LOW32) % np.uint64(dim)).astype(np.int64)
    sign = 1.0 - 2.0 * (h >> np.uint64(63)).astype(np.float64)
    return idx, sign


def word_features(
    words: Sequence[str], dim: int, w_word: float, w_char: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Signed hashed features of each word on its own (word unigram + its char n-grams).

    Returns (word_hashes uint64 (w,), owner int64, bucket int64, value float64): feature i
    belongs to word owner[i] (non-decreasing: per word its word feature, then its n-grams by size
    and position), adds value[i] to bucket[i]. The word hashes here (BLAKE2b, hashlib), the rest in
    one native pass (kernels.word_features; tests/test_analysis_kernels.py holds it to the numpy
    passes over `ngram_hashes` it replaced).
    """
    cp, ptr, wh = hashed_words(words)
    owner, bucket, value = _word_features(cp, ptr, wh, dim, w_word, w_char, MAX_NGRAM_CHARS)
    return wh, owner, bucket, value


def hashed_words(words: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Words as the kernels read them: their code points, offsets (`joined_codepoints`) and
    `word_hash` of each (uint64)."""
    cp, ptr = joined_codepoints(words)
    # the word hashes in one native pass over the same code points (hashlib's call per new word was
    # a third of a new word's cost); `word_hash` word by word when one cannot be UTF-8 (it raises)
    wh = blake2b_words(cp, ptr, _WORD_PERSON)
    if wh is None:
        wh = np.fromiter((word_hash(w) for w in words), dtype=np.uint64, count=len(words))
    return cp, ptr, wh


_LOG_TF = np.ones(1, np.float64)


def _log_tf(most: int) -> np.ndarray:
    """``1 + ln(k)`` for k = 0 .. at least `most` (entry 0 unused), as numpy's log computes it
    (the sums' weights): grown as longer texts come, never rebuilt."""
    global _LOG_TF
    table = _LOG_TF
    if table.shape[0] <= most:
        size = max(most + 1, 2 * table.shape[0])
        table = np.empty(size, np.float64)
        table[0] = 1.0
        table[1:] = 1.0 + np.log(np.arange(1, size, dtype=np.int64))
        _LOG_TF = table
    return table


def row_norms(mat: np.ndarray) -> np.ndarray:
    """L2 norm of each row, summed in an order fixed by the row alone (numpy's pairwise sum over
    a contiguous row), not by the batch or the memory alignment (as SIMD dot kernels may be)."""
    norms: np.ndarray = np.sqrt(np.add.reduce(mat * mat, axis=1))
    return norms


class _WordTable:
    """Per distinct word: its 64-bit hash and its signed hashed features at one dim (CSR).

    The arrays hold room past what is filled (they double as words come, not copied whole for each
    batch's new words); the filled parts are `hashes`, `starts`, `lens`, `fidx` and `fval`."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.generation = -1
        self.clear()

    def clear(self) -> None:
        self.generation += 1  # slots made before a clear mean nothing after
        self.slots: dict[str, int] = {}
        self.by_token: dict[str, int] = {}  # HashingEmbedder's: token -> its content word's slot, -1
        self._words = 0
        self._features = 0
        self._hashes = np.zeros(0, np.uint64)
        self._starts = np.zeros(0, np.int64)
        self._lens = np.zeros(0, np.int64)
        self._fidx = np.zeros(0, np.int32)
        self._fval = np.zeros(0, np.float32)

    @property
    def hashes(self) -> np.ndarray:
        return self._hashes[: self._words]

    @property
    def starts(self) -> np.ndarray:
        return self._starts[: self._words]

    @property
    def lens(self) -> np.ndarray:
        return self._lens[: self._words]

    @property
    def fidx(self) -> np.ndarray:
        return self._fidx[: self._features]

    @property
    def fval(self) -> np.ndarray:
        return self._fval[: self._features]

    def lookup(self, tokens: list[str]) -> np.ndarray:
        """Slot of each token (int64), adding the words not seen yet."""
        get = self.slots.get
        ids = [get(t, -1) for t in tokens]
        if -1 in ids:
            new = [w for w in dict.fromkeys(tokens) if w not in self.slots]
            self._add(new)
            get = self.slots.get
            ids = [get(t, -1) for t in tokens]
        return np.array(ids, dtype=np.int64)

    def _add(self, words: list[str]) -> None:
        base, at = self._words, self._features
        cp, ptr, wh = hashed_words(words)
        lens, fidx, fval = _word_rows(cp, ptr, wh, self.dim, W_WORD, W_CHAR, MAX_NGRAM_CHARS)
        starts = at + np.cumsum(lens) - lens
        self._hashes, self._starts, self._lens = (_put(a, base, v) for a, v in
                                                  ((self._hashes, wh), (self._starts, starts), (self._lens, lens)))
        self._fidx, self._fval = _put(self._fidx, at, fidx), _put(self._fval, at, fval)
        self._words, self._features = base + len(words), at + len(fidx)
        self.slots.update(zip(words, range(base, base + len(words))))


def _put(a: np.ndarray, at: int, values: np.ndarray) -> np.ndarray:
    """`a` with `values` written from `at` on: `a` itself when it has room, else a copy of its first
    `at` entries with at least twice the room."""
    end = at + len(values)
    if end > len(a):
        grown = np.empty(max(end, 2 * len(a), 1024), a.dtype)
        grown[:at] = a[:at]
        a = grown
    a[at:end] = values
    return a


_ROW_SHIFT = 32  # a text's offsets fit below (content is at most a few MiB), its row above


@dataclass(frozen=True)
class _Recent:
    """The last batch's tokens as word-table slots (-1: a stop word), kept for its long texts'
    passages: a passage's tokens are the run of its text's tokens that start inside it."""

    generation: int  # the word table's when the slots were made
    rows: dict[str, int]  # each long ASCII text of the batch -> its row
    keys: np.ndarray  # (tokens,) int64, ascending: each token's row << _ROW_SHIFT | where it starts in its text
    slots: np.ndarray  # (tokens,) int64


def _content_word_v1(token: str) -> str | None:
    """Version 1's word for one token: the token, None for a stop word."""
    return None if token in SNOWBALL_STOPWORDS else token


def _content_word_v2(token: str) -> str | None:
    """Version 2's word for one token: "not" for a negation's contraction, None for a stop word that
    is no negation, else the token."""
    neg = negation(token)
    if neg is not None:
        return neg
    return None if token in SNOWBALL_STOPWORDS else token


def _content_words(tokens: list[str], version: str) -> list[str | None]:
    """`_content_word_v1` / `_v2` of each token, the rules inline (a batch's new tokens: a call each
    through the per-token cache cost more than the rule)."""
    stop = SNOWBALL_STOPWORDS
    if version == "1":
        return [None if t in stop else t for t in tokens]
    negs = NEGATIONS
    return ["not" if t.endswith("n't") or t == "cannot" else t if t in negs else None if t in stop else t
            for t in tokens]


def _same_offsets(text: str) -> bool:
    """Whether `normalize(text)` has each character where `text` has it: NFKC leaves it as it is,
    and the apostrophes (one for one) and the lowercase (one for one or more) keep its length."""
    return text.isascii() or (unicodedata.is_normalized("NFKC", text) and len(normalize(text)) == len(text))


def _passage_text(texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]], k: int) -> str:
    """The text of the k-th passage of `embed_passages`' arguments."""
    for text, sp in zip(texts, spans):
        if k < len(sp):
            a, b = sp[k]
            return text[a:b]
        k -= len(sp)
    raise IndexError(k)


class HashingEmbedder:
    """Dense feature-hashing embedder: word unigrams + bigrams + char 3-5-grams, signed, tf-log.

    Deterministic and stateless in output (its word table is only a cache). Empty text (or text
    without a letter or digit) gives a zero row; every other row has unit L2 norm. `version` 2
    (the default) keeps negations and is named ``hashing2-<dim>``; version 1 drops them with the
    other stop words and is named ``hashing-<dim>`` (see the module docstring).
    """

    kind: SpaceKind = "dense"
    # Its vectors are made of the text's own words (the words, their character n-grams, their
    # bigrams): a memory near a query here shares the query's words, which BM25 over the same text
    # recalls deeper (1,000 candidates). The hybrid search therefore recalls by BM25 alone and scores
    # every candidate by both (retrieval/scored.py): the index's own recall changed no question's
    # recall on any LoCoMo view, nor among 100,000 other memories, and took a third of the search.
    words_only = True

    def __init__(self, dim: int = 384, version: int = 2) -> None:
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        if version not in (1, 2):
            raise ValueError(f"version must be 1 or 2, got {version!r}")
        self.dim = dim
        self.version = str(version)
        self.name = f"hashing-{dim}" if version == 1 else f"hashing2-{dim}"
        # per distinct token, cached across batches (a C-level hit instead of a Python call)
        self._content_word = functools.lru_cache(maxsize=TABLE_WORDS)(_content_word_v1 if version == 1
                                                                       else _content_word_v2)
        self._table = _WordTable(dim)
        self._recent: _Recent | None = None
        self._lock = threading.Lock()
        forking.renewed_in_child(self)

    def _after_fork_in_child(self) -> None:
        """A child forked while another thread embedded: that thread is not in the child, so its
        lock would be held for ever (every embed, every search waited); the word table it was
        filling may be half written, so the child starts it afresh (a cache: the same vectors)."""
        self._lock = threading.Lock()
        self._table = _WordTable(self.dim)
        self._recent = None

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim}, version={self.version})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised (zero rows for empty texts)."""
        return self._embed(texts, remember=True)

    def _embed(self, texts: Sequence[str], remember: bool) -> np.ndarray:
        n = len(texts)
        if n == 1 and isinstance(texts[0], str):  # a query: a few words, fewer numpy passes
            tokens = tokenize(texts[0])
            words = [w for w in map(self._content_word, tokens) if w is not None] or tokens
            with self._lock:
                if len(self._table.slots) > TABLE_WORDS:
                    self._table.clear()
                return self._embed_slots(1, np.array([len(words)], np.int64), self._table.lookup(words))
        tb = tokenize_batch(texts)
        with self._lock:
            if len(self._table.slots) > TABLE_WORDS:
                self._table.clear()
            slot_u = self._token_slots(tb.words)
            # per token its slot, -1 for a stop word: a gather, a test, a running sum and a compress
            # over the batch's tokens (the row of every token, made for the rare text of stop words
            # alone, cost as much as the rest of this method)
            per = slot_u[tb.codes]
            kept = per >= 0
            counts = kept_counts(tb.counts, kept)
            only_stop = (counts == 0) & (tb.counts > 0)
            if remember:
                self._remember(texts, tb, per, only_stop)
            if not only_stop.any():
                return self._embed_slots(n, counts, per[kept])
            # a text made only of stop words keeps all its tokens, as they are
            rows = tb.rows()
            bare = ~(np.bincount(rows[kept], minlength=n) > 0)[rows]
            take = kept | bare
            raw = unique(tb.codes[bare])
            slot_raw = np.full(len(tb.words), -1, dtype=np.int64)
            slot_raw[raw] = self._table.lookup([tb.words[i] for i in raw.tolist()])
            slots = np.where(bare, slot_raw[tb.codes], per)[take]
            counts = np.bincount(rows[take], minlength=n).astype(np.int64)
            return self._embed_slots(n, counts, slots)

    def _token_slots(self, tokens: list[str]) -> np.ndarray:
        """Per distinct token of a batch, the table slot of the content word it stands for (a
        negation as "not" in version 2), -1 for a stop word (int64). Kept per token with the table
        (cleared with it): a batch's tokens cost one C-level dict look-up each, and only a token met
        for the first time the stop test, the negation rule and the table's own look-up."""
        known = self._table.by_token
        got = list(map(known.get, tokens))
        if None in got:
            missing = [t for t, s in zip(tokens, got) if s is None]
            words = _content_words(missing, self.version)
            slots = iter(self._table.lookup([w for w in words if w is not None]).tolist())
            known.update((t, -1 if w is None else next(slots)) for t, w in zip(missing, words))
            got = list(map(known.get, tokens))
        return np.array(got, dtype=np.int64)

    def _remember(self, texts: Sequence[str], tb: Tokens, per: np.ndarray, only_stop: np.ndarray) -> None:
        """Keep this batch's slots for `embed_passages` (its long texts whose normalised form keeps
        every character's offset: ASCII, or already NFKC with a lowercase of the same length; not
        one of stop words alone, whose vector is made of them); the batch before is dropped."""
        rows = {t: r for r, t in enumerate(texts)
                if MIN_CHARS <= len(t) < 1 << _ROW_SHIFT and not only_stop[r] and _same_offsets(t)}
        if not rows or tb.starts is None:
            self._recent = None
            return
        keys = (tb.rows() << _ROW_SHIFT) | tb.starts
        self._recent = _Recent(self._table.generation, rows, keys, per)

    def embed_passages(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]) -> np.ndarray:
        """`embed` of every passage ``texts[i][a:b]`` for (a, b) in ``spans[i]``, in order: the same
        float32 rows, bit for bit. A long text of the batch embedded last (an ingest's, whose
        passages are embedded right after it) is not tokenised again: each passage is the run of its
        text's token slots that start inside it (a passage starts and ends at whitespace, so a token
        is inside it or outside). Other texts, and a passage of stop words alone, are embedded."""
        total = sum(len(sp) for sp in spans)
        out = np.zeros((total, self.dim), np.float32)
        hit_rows: list[int] = []
        hit_spans: list[Sequence[tuple[int, int]]] = []
        at_hit: list[int] = []
        rest: list[str] = []
        at_rest: list[int] = []
        with self._lock:
            recent = self._recent
            if recent is not None and recent.generation != self._table.generation:
                recent = None
            at = 0
            for text, sp in zip(texts, spans):
                r = recent.rows.get(text) if recent is not None and isinstance(text, str) else None
                if r is None or not sp:
                    rest.extend(text[a:b] for a, b in sp)
                    at_rest.extend(range(at, at + len(sp)))
                else:
                    hit_rows.append(r)
                    hit_spans.append(sp)
                    at_hit.extend(range(at, at + len(sp)))
                at += len(sp)
            if hit_rows and recent is not None:
                # every passage's first and last token at once: one search among the batch's tokens
                # keyed by (row, start) (a search per text, and its arrays, cost more than the sums)
                ab = np.array(list(itertools.chain.from_iterable(hit_spans)), np.int64).reshape(-1, 2)
                np.clip(ab, 0, (1 << _ROW_SHIFT) - 1, out=ab)  # an offset outside the text: its end, as before
                rows = np.repeat(np.array(hit_rows, np.int64), [len(sp) for sp in hit_spans]) << _ROW_SHIFT
                first = np.searchsorted(recent.keys, rows | ab[:, 0])
                last = np.searchsorted(recent.keys, rows | ab[:, 1])
                sizes = last - first
                ends = np.cumsum(sizes)
                pick = np.repeat(first - (ends - sizes), sizes) + np.arange(int(ends[-1]) if len(ends) else 0)
                run = recent.slots[pick]
                kept = run >= 0
                counts = kept_counts(sizes, kept)
                vecs = self._embed_slots(len(sizes), counts, run[kept])
                hit = np.array(at_hit, np.int64)
                bare = (counts == 0) & (sizes > 0)  # stop words alone: the passage keeps them, as embed does
                out[hit[~bare]] = vecs[~bare]
                for j in np.flatnonzero(bare).tolist():
                    rest.append(_passage_text(texts, spans, at_hit[j]))
                    at_rest.append(at_hit[j])
        if rest:  # embedded as `embed` does, the batch kept for later passages left as it was
            out[np.array(at_rest, np.int64)] = self._embed(rest, remember=False)
        return out

    def _embed_slots(self, n: int, counts: np.ndarray, slots: np.ndarray) -> np.ndarray:
        tab = self._table
        # the words' and bigrams' fixed-point sums and their L2 normalisation in one native pass
        # (kernels.hash_embed: what the numpy passes of tests/test_analysis_kernels.py's reference
        # make, and row_norms, bit for bit)
        most = int(counts.max()) if n else 0
        return hash_embed(counts, slots, tab.starts, tab.lens, tab.hashes, tab.fidx, tab.fval, _log_tf(most),
                          W_BIGRAM, self.dim)

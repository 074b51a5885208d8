"""The per-token passes of a batch's text analysis (cpp/include/engramdb/analysis.h): a batch's
tokens, the hashing space's feature sums and vectors, and long texts' passages, each one pass over
the batch in the core.

The word-level decisions (which characters make words, stop words, stems, hashes) are the caller's
(engramdb.spaces), made once per distinct code point or word; these do what is done once per token.
Checks here are the O(1) ones (dtype, layout, lengths, scalars); every value the core reads through
(offsets, code points, slots, table entries, buckets, counts) is checked by the core before use: a
bad one is a ValueError, never a read out of range.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import _core
from .. import _validate as v
from ._common import exact, index_array

MAX_DIM = 1 << 24  # the widest hashing vectors the sums make (16,777,216 columns)


def codepoints(text: str) -> np.ndarray:
    """A text's code points as uint32, what the passes below read (ASCII without the UTF-32
    encode; lone surrogates kept as they are)."""
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), np.uint8).astype(np.uint32)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), "<u4")


def joined_codepoints(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Texts as one run of code points and the int64 offsets where each starts (and the last ends)."""
    ptr = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, texts), np.int64, count=len(texts)), out=ptr[1:])
    return codepoints("".join(texts)), ptr


class TokenCodes(NamedTuple):
    """A batch's tokens: `counts` (int64, per text), `codes` (int64, per token: its distinct token),
    per distinct token, in order of first appearance, `first` (int64: where in the code points it
    first appears), `length` (int64, in code points) and `words` (the token as a str); and `starts`
    (int64, per token: where it starts, in code points from its text's start)."""

    counts: np.ndarray
    codes: np.ndarray
    first: np.ndarray
    length: np.ndarray
    words: list[str]
    starts: np.ndarray


def tokenize_codepoints(codepoints: Any, text_ptr: Any, word_char: Any) -> TokenCodes:
    """The tokens of texts given as code points: maximal runs of word characters, an apostrophe
    (U+0027) between two runs kept inside the token (the analyzer's ``[^\\W_]+(?:'[^\\W_]+)*``).

    Args:
        codepoints: (total,) uint32, every text's code points one after the other, C-contiguous.
        text_ptr: (n + 1,) int64 offsets: text r is ``codepoints[text_ptr[r]:text_ptr[r + 1]]``
            (starting at 0, non-decreasing, within `codepoints`).
        word_char: uint8 by code point: 1 a word character, 0 not; every code point of the texts
            must have an entry of 0 or 1 (anything else means "not classified": a ValueError).
    """
    cp = index_array("codepoints", codepoints, np.uint32)
    ptr = index_array("text_ptr", text_ptr, np.int64)
    if ptr.shape[0] < 1:
        raise ValueError("text_ptr needs at least one entry (0)")
    table = index_array("word_char", word_char, np.uint8)
    return TokenCodes(*_core.tokenize_codepoints(cp, ptr, table))


def word_features(codepoints: Any, word_ptr: Any, word_hashes: Any, dim: int, w_word: float, w_char: float,
                  max_chars: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The signed hashed features of words on their own (engramdb.spaces.hashing.word_features).

    Word w is ``codepoints[word_ptr[w]:word_ptr[w + 1]]`` (uint32; `word_ptr` int64 as `text_ptr` in
    `tokenize_codepoints`) with its 64-bit hash ``word_hashes[w]`` (uint64, one per word). Per word,
    in order: its word feature (bucket ``hash mod 2^32 mod dim``, value ``+-w_word`` by bit 63), then
    the n-grams (n = 3, 4, 5, each by position) of ``"<" + word + ">"`` (longer than `max_chars` code
    points: ``"<" + word[:max_chars]``), each hashed as in `ngram_hashes`, value ``+-w_char / sqrt(m)``
    with m the word's n-gram count. Returns (owner int64, bucket int64, value float64).
    """
    cp, ptr, wh, d, m = _word_args(codepoints, word_ptr, word_hashes, dim, w_word, w_char, max_chars)
    owner, bucket, value = _core.word_features(cp, ptr, wh, d, float(w_word), float(w_char), m)
    return owner, bucket, value


def word_rows(codepoints: Any, word_ptr: Any, word_hashes: Any, dim: int, w_word: float, w_char: float,
              max_chars: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`word_features` as the hashing space's word table keeps them: per word its feature count
    (lens, int64), then every feature's bucket (int32) and value (float32, the float64 value rounded),
    in `word_features`' order; without its owner per feature and the conversions. Arguments as
    `word_features` (dim at most 2**31 - 1)."""
    cp, ptr, wh, d, m = _word_args(codepoints, word_ptr, word_hashes, dim, w_word, w_char, max_chars)
    lens, bucket, value = _core.word_rows(cp, ptr, wh, d, float(w_word), float(w_char), m)
    return lens, bucket, value


def word_vectors(codepoints: Any, word_ptr: Any, word_hashes: Any, dim: int, w_word: float, w_char: float,
                 max_chars: int) -> np.ndarray:
    """Each word's `word_features` summed into a row of `dim` columns, then L2-normalised (a word
    without features, never the case, would stay zero), as float32 (n_words, dim): what
    ``np.bincount(owner * dim + bucket, weights=value)`` reshaped, divided by `row_norms` and cast
    make, bit for bit, without the (n_words, dim) float64 temporaries. Arguments as `word_features`.
    """
    cp, ptr, wh, d, m = _word_args(codepoints, word_ptr, word_hashes, dim, w_word, w_char, max_chars)
    out: np.ndarray = _core.word_vectors(cp, ptr, wh, d, float(w_word), float(w_char), m)
    return out


def _word_args(codepoints: Any, word_ptr: Any, word_hashes: Any, dim: int, w_word: float, w_char: float,
               max_chars: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """`word_features`' and `word_vectors`' arguments checked."""
    cp = index_array("codepoints", codepoints, np.uint32)
    ptr = index_array("word_ptr", word_ptr, np.int64)
    if ptr.shape[0] < 1:
        raise ValueError("word_ptr needs at least one entry (0)")
    wh = index_array("word_hashes", word_hashes, np.uint64, ptr.shape[0] - 1)
    d = v.integer("dim", dim, 1)
    m = v.integer("max_chars", max_chars, 1)
    for name, w in (("w_word", w_word), ("w_char", w_char)):
        if isinstance(w, bool) or not isinstance(w, (int, float, np.floating)):
            raise TypeError(f"{name} must be a number, got {type(w).__name__}")
        if not np.isfinite(w):
            raise ValueError(f"{name} must be finite, got {w!r}")
    return cp, ptr, wh, d, m


def blake2b_words(codepoints: Any, word_ptr: Any, person: bytes) -> np.ndarray | None:
    """The 64-bit BLAKE2b of each word's UTF-8, little-endian (uint64), as
    ``int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8, person=person).digest(),
    "little")``; word w is ``codepoints[word_ptr[w]:word_ptr[w + 1]]`` (as in `word_features`).
    None when a word holds a code point UTF-8 cannot encode (a lone surrogate): the caller's
    ``str.encode`` then says which, as it always did."""
    cp = index_array("codepoints", codepoints, np.uint32)
    ptr = index_array("word_ptr", word_ptr, np.int64)
    if ptr.shape[0] < 1:
        raise ValueError("word_ptr needs at least one entry (0)")
    if not isinstance(person, bytes) or len(person) > 16:
        raise ValueError(f"person must be at most 16 bytes, got {person!r}")
    if cp.size and int(cp.max()) > 0x10FFFF:
        return None
    surrogate = (cp >= 0xD800) & (cp <= 0xDFFF)
    if surrogate.any():
        return None
    out: np.ndarray = _core.blake2b_words(cp, ptr, person)
    return out


def cut_passages(codepoints: Any, text_ptr: Any, space: Any, words: int, overlap: int) -> tuple[np.ndarray, np.ndarray]:
    """Passages of texts given as code points (engramdb.spaces.passages' cut, every text at once).

    Words are maximal runs of code points that are not whitespace (``space[c] == 1``; every code
    point from ``len(space) - 1`` up is ``space[-1]``). Word i starts a sentence when word i - 1
    ends in . ! or ? followed only by closing quotes and brackets, or a line feed lies between them.
    A text of at most `words` words is one passage; otherwise each passage ends at the last sentence
    start within its last half, else after `words` words, and the next starts at the first sentence
    start within the `overlap` words before that end, else `overlap` words before it; a tail of at
    most ``overlap // 2`` words joins the passage before it.

    Args:
        codepoints: (total,) uint32, the texts one after the other; `text_ptr` (n + 1,) int64
            offsets as in `tokenize_codepoints`; space: uint8 by code point (at least one entry).
        words, overlap: ints, >= 1 and >= 0.
    Returns (span_ptr (n + 1,) int64, spans (k, 2) int64): text r's passages are
    ``spans[span_ptr[r]:span_ptr[r + 1]]``, (start, end) code point offsets within the text.
    """
    cp = index_array("codepoints", codepoints, np.uint32)
    ptr = index_array("text_ptr", text_ptr, np.int64)
    if ptr.shape[0] < 1:
        raise ValueError("text_ptr needs at least one entry (0)")
    table = index_array("space", space, np.uint8)
    w = v.integer("words", words, 1)
    o = v.integer("overlap", overlap, 0)
    span_ptr, spans = _core.cut_passages(cp, ptr, table, w, o)
    return span_ptr, spans


def hash_feature_sums(
    counts: Any,
    slots: Any,
    tab_start: Any,
    tab_len: Any,
    hashes: Any,
    fidx: Any,
    fval: Any,
    log_tf: Any,
    bigram_weight: float,
    dim: int,
) -> np.ndarray:
    """The hashing space's unnormalised sums (engramdb.spaces.hashing), (n, dim) float64.

    Text r's tokens are ``slots[sum(counts[:r]):sum(counts[:r + 1])]``, indexes into a word table:
    slot s owns the features ``tab_start[s]:tab_start[s] + tab_len[s]`` of `fidx` (int32 buckets <
    dim) and `fval` (float32 values), and the 64-bit word hash ``hashes[s]``. Each distinct slot of a
    text adds ``rint(fval * log_tf[tf] * 2^24)`` to its buckets (tf: its count in the text); each
    pair of adjacent slots makes a bigram ``splitmix64(h1 * 0x9E3779B97F4A7C15 + h2)`` that adds
    ``rint(sign * bigram_weight * log_tf[tf] * 2^24)`` to bucket ``(h mod 2^32) mod dim`` (sign -1
    when bit 63 is set; tf counted per 33-bit code). `log_tf[k]` is ``1 + ln(k)``, as numpy computes
    it, for every count a text can have (its length + 1 entries at least). All arrays 1-D and
    C-contiguous of exactly these dtypes: counts, slots, tab_start, tab_len int64; hashes uint64;
    log_tf float64.
    """
    out: np.ndarray = _core.hash_feature_sums(*_hash_args(counts, slots, tab_start, tab_len, hashes, fidx, fval,
                                                          log_tf, bigram_weight, dim))
    return out


def hash_embed(
    counts: Any,
    slots: Any,
    tab_start: Any,
    tab_len: Any,
    hashes: Any,
    fidx: Any,
    fval: Any,
    log_tf: Any,
    bigram_weight: float,
    dim: int,
) -> np.ndarray:
    """`hash_feature_sums` L2-normalised per text, (n, dim) float32, as
    ``(sums / norm).astype(np.float32)`` with ``norm = np.sqrt(np.add.reduce(sums * sums, axis=1))``
    (numpy's pairwise order) computes it, bit for bit; a text without features is a zero row."""
    out: np.ndarray = _core.hash_embed(*_hash_args(counts, slots, tab_start, tab_len, hashes, fidx, fval, log_tf,
                                                   bigram_weight, dim))
    return out


def _hash_args(counts: Any, slots: Any, tab_start: Any, tab_len: Any, hashes: Any, fidx: Any, fval: Any,
               log_tf: Any, bigram_weight: Any, dim: Any) -> tuple[Any, ...]:
    c = index_array("counts", counts, np.int64)
    s = index_array("slots", slots, np.int64)
    st = index_array("tab_start", tab_start, np.int64)
    ln = index_array("tab_len", tab_len, np.int64, st.shape[0])
    h = index_array("hashes", hashes, np.uint64, st.shape[0])
    fi = index_array("fidx", fidx, np.int32)
    fv = exact("fval", fval, (np.float32,))
    if fv.shape != fi.shape:
        raise ValueError(f"fval has {fv.shape[0]} entries but fidx has {fi.shape[0]}")
    lt = exact("log_tf", log_tf, (np.float64,))
    d = v.integer("dim", dim, 1)
    if d > MAX_DIM:  # an (n, dim) result: a huge dim is a mistake, not a MemoryError to meet
        raise ValueError(f"dim must be <= {MAX_DIM:,}, got {d:,}")
    if isinstance(bigram_weight, bool) or not isinstance(bigram_weight, (int, float, np.floating)):
        raise TypeError(f"bigram_weight must be a number, got {type(bigram_weight).__name__}")
    if not np.isfinite(bigram_weight):
        raise ValueError(f"bigram_weight must be finite, got {bigram_weight!r}")
    return c, s, st, ln, h, fi, fv, lt, float(bigram_weight), d


__all__ = ["TokenCodes", "blake2b_words", "cut_passages", "hash_embed", "hash_feature_sums", "tokenize_codepoints", "word_features",
           "word_rows", "word_vectors"]

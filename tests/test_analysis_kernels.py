"""The batch analysis passes in the core (engramdb.kernels.analysis, issue 28): a batch's tokens
are what the analyzer's regex finds text by text, the hashing space's vectors are their float64
reference's bit for bit, long texts are cut into the passages the word-by-word cut made, and every
argument a caller controls is checked before the core reads it."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from collections import Counter
from typing import Any

import numpy as np
import pytest
from engramdb import kernels
from engramdb.spaces.analyzer import SNOWBALL_STOPWORDS, negation, normalize, tokenize, tokenize_batch
from engramdb.spaces.hashing import (
    MAX_NGRAM_CHARS,
    HashingEmbedder,
    bucket_sign,
    ngram_hashes,
    splitmix64,
    word_hash,
)
from engramdb.spaces.passages import OVERLAP as PASSAGE_OVERLAP
from engramdb.spaces.passages import SPACE_CODEPOINTS, passages
from engramdb.spaces.passages import WORDS as PASSAGE_WORDS
from engramdb.spaces.token_space import W_TOKEN_CHAR, W_TOKEN_WORD
from hypothesis import given, settings
from hypothesis import strategies as st

# letters, digits, the apostrophes and underscores that join or split tokens, combining marks, wide
# and compatibility forms NFKC folds, CJK, an emoji, whitespace and punctuation
CHARS = st.sampled_from(list("aZ9_'’‘ʼ -.,\n\t") + ["\u0301", "\u0316", "\uff21", "\ufb01", "\u00e9", "\u0130",
                                                       "\u65e5", "\U0001f600", "\u0663", "\u2167", "\u00bd",
                                                       "\U00010400", "\u0f73", "\u00df"])
TEXTS = st.lists(st.text(CHARS, max_size=40), max_size=8)


def _rows(tb: Any) -> list[list[str]]:
    out, at = [], 0
    for c in tb.counts.tolist():
        out.append([tb.words[i] for i in tb.codes[at : at + c].tolist()])
        at += c
    return out


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_a_batch_has_the_tokens_the_regex_finds_text_by_text(texts: list[str]) -> None:
    tb = tokenize_batch(texts)
    assert _rows(tb) == [tokenize(t) for t in texts]
    assert tb.words == list(dict.fromkeys(w for t in texts for w in tokenize(t)))  # first appearance, once


def test_lone_surrogates_and_characters_past_the_basic_plane_tokenise_as_the_regex_does() -> None:
    texts = ["a\ud800b", "\U00010400\U00010401's x", "\U0001d7d8\u00b2 _x_ y''z 'q' r'"]
    assert _rows(tokenize_batch(texts)) == [tokenize(t) for t in texts]


def reference_word_features(words: list[str], dim: int, w_word: float,
                            w_char: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """spaces/hashing.py's word_features as numpy passes over `ngram_hashes` (as it was written before
    the core made them)."""
    wh = np.fromiter((word_hash(w) for w in words), dtype=np.uint64, count=len(words))
    gh, gown = ngram_hashes(words)
    m = np.bincount(gown, minlength=len(words)).astype(np.float64)
    widx, wsign = bucket_sign(wh, dim)
    gidx, gsign = bucket_sign(gh, dim)
    gval = gsign * (w_char / np.sqrt(np.maximum(m, 1.0)))[gown]
    owner = np.concatenate([np.arange(len(words), dtype=np.int64), gown])
    bucket = np.concatenate([widx, gidx])
    value = np.concatenate([wsign * w_word, gval])
    order = np.argsort(owner, kind="stable")
    return wh, owner[order], bucket[order], value[order]


def _content(token: str, version: int) -> str | None:
    if version == 2 and negation(token) is not None:
        return negation(token)
    return None if token in SNOWBALL_STOPWORDS else token


def reference_hashing(texts: list[str], dim: int, version: int) -> np.ndarray:
    """The hashing space by its formula (spaces/hashing.py's docstring), text by text, in float64:
    each distinct word's features times 1 + ln(tf), each distinct bigram's signed W_BIGRAM times
    1 + ln(tf), every value rounded to a multiple of 2^-24 before the sum, then L2-normalised."""
    out = np.zeros((len(texts), dim), np.float64)
    for r, text in enumerate(texts):
        tokens = tokenize(text)
        words = [w for w in (_content(t, version) for t in tokens) if w is not None] or tokens
        distinct = list(dict.fromkeys(words))
        if not distinct:
            continue
        wh, owner, bucket, value = reference_word_features(distinct, dim, 1.0, 1.0)
        value32 = value.astype(np.float32).astype(np.float64)  # the word table keeps them as float32
        tf = Counter(words)
        log_tf = 1.0 + np.log(np.array([tf[w] for w in distinct], np.int64))
        for j in range(len(distinct)):
            sel = owner == j
            np.add.at(out[r], bucket[sel], np.rint(value32[sel] * log_tf[j] * 16777216.0))
        hash_of = dict(zip(distinct, wh.tolist()))
        pairs = np.array([(hash_of[a] * 0x9E3779B97F4A7C15 + hash_of[b]) % 2**64 for a, b in itertools.pairwise(words)],
                         np.uint64)
        codes = Counter((int(h) >> 63, int(h) & 0xFFFFFFFF) for h in splitmix64(pairs))
        for (sign_bit, low), k in codes.items():
            w = (-1.0 if sign_bit else 1.0) * 0.5 * (1.0 + np.log(np.array([k], np.int64)))[0]
            out[r, low % dim] += np.rint(w * 16777216.0)
    norms = np.sqrt(np.add.reduce(out * out, axis=1))
    np.divide(out, norms[:, None], out=out, where=norms[:, None] > 0)
    return out.astype(np.float32)


WORDS = st.sampled_from(["cats", "cat", "don't", "not", "the", "is", "running", "x", "caf\u00e9", "a" * 60, "42",
                         "what", "it", ",", "\n"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(WORDS, max_size=60).map(" ".join), min_size=1, max_size=6), st.sampled_from([1, 2]),
       st.sampled_from([7, 64, 384]))
def test_the_hashing_space_is_its_float64_reference_bit_for_bit(texts: list[str], version: int, dim: int) -> None:
    emb = HashingEmbedder(dim=dim, version=version)
    want = reference_hashing(texts, dim, version)
    assert emb.embed(texts).tobytes() == want.tobytes()
    assert np.concatenate([emb.embed([t]) for t in texts]).tobytes() == want.tobytes()  # the query path


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(CHARS, max_size=60), max_size=12), st.sampled_from([1, 7, 128, 384]),
       st.sampled_from([(1.0, 1.0), (W_TOKEN_WORD, W_TOKEN_CHAR), (0.3, 2.5)]))
def test_word_features_are_the_numpy_passes_over_ngram_hashes(words: list[str], dim: int,
                                                               weights: tuple[float, float]) -> None:
    # any words: empty, one letter, past MAX_NGRAM_CHARS (no end marker), outside the basic plane
    words = [*words, "a" * (MAX_NGRAM_CHARS + 5), "b" * MAX_NGRAM_CHARS, ""]
    wh, owner, bucket, value = reference_word_features(words, dim, *weights)
    cp = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), "<u4")
    ptr = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
    got = kernels.word_features(cp, ptr, wh, dim, *weights, MAX_NGRAM_CHARS)
    for a, b in zip(got, (owner, bucket, value)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize(("field", "value", "error", "says"), [
    ("codepoints", np.array([97, 98], np.int32), TypeError, "codepoints"),
    ("word_ptr", np.array([0, 3], np.int64), ValueError, "word_ptr"),
    ("word_ptr", np.array([1, 2], np.int64), ValueError, "word_ptr"),
    ("word_ptr", np.array([], np.int64), ValueError, "word_ptr"),
    ("word_hashes", np.array([1, 2], np.uint64), ValueError, "word_hashes"),
    ("word_hashes", np.array([1], np.int64), TypeError, "word_hashes"),
    ("dim", 0, ValueError, "dim"),
    ("w_word", float("inf"), ValueError, "w_word"),
    ("w_char", None, TypeError, "w_char"),
    ("max_chars", 0, ValueError, "max_chars"),
])
def test_word_features_refuses_bad_arguments_naming_them(field: str, value: Any, error: type[Exception],
                                                         says: str) -> None:
    args: dict[str, Any] = {"codepoints": np.array([97, 98], np.uint32), "word_ptr": np.array([0, 2], np.int64),
                            "word_hashes": np.array([2**63 + 5], np.uint64), "dim": 4, "w_word": 1.0, "w_char": 1.0,
                            "max_chars": 48}
    owner, bucket, value_ = kernels.word_features(**args)
    assert owner.tolist() == [0, 0, 0, 0] and bucket[0] == 1 and value_[0] == -1.0  # "<ab>": 2 + 1 + 0 n-grams
    args[field] = value
    with pytest.raises(error, match=says):
        kernels.word_features(**args)


def test_the_hashing_space_stays_its_reference_as_its_tables_start_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    # a word table of 8 words: batches and one-text queries in turn clear it over and over (and the
    # tokens' remembered slots with it: a stale slot would name another word's row), and many
    # negations that all say "not" fill the token slots without growing the table
    from engramdb.spaces import hashing

    monkeypatch.setattr(hashing, "TABLE_WORDS", 8)
    emb = HashingEmbedder(dim=64)
    # a batch remembers its tokens' slots; queries then fill the table past 8 and start it afresh;
    # the same batch again must not read the old slots
    sequence = [["alpha beta gamma", "delta epsilon"], ["zeta eta theta iota kappa"], ["lambda"],
                ["alpha beta gamma", "delta epsilon"]]
    for texts in sequence:
        assert emb.embed(texts).tobytes() == reference_hashing(texts, 64, 2).tobytes()
    rng = np.random.default_rng(3)
    vocab = ["cats", "dogs", "run", "the", "not", "blue", "sky", "sea", "x1", "y2", "z3", "w4", "q5", "don't", "is"]
    for step in range(60):
        texts = [" ".join(rng.choice(vocab, int(rng.integers(0, 9)))) for _ in range(int(rng.integers(1, 4)))]
        texts.append(" ".join(f"w{step}x{i}n't" for i in range(20)))
        assert emb.embed(texts).tobytes() == reference_hashing(texts, 64, 2).tobytes()
        one = [texts[0]]
        assert emb.embed(one).tobytes() == reference_hashing(one, 64, 2).tobytes()


def _table(rng: np.random.Generator, words: int, dim: int) -> dict[str, np.ndarray]:
    lens = rng.integers(0, 9, words).astype(np.int64)
    return {"tab_start": (np.cumsum(lens) - lens).astype(np.int64), "tab_len": lens,
            "hashes": rng.integers(0, 2**63, words, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, words, dtype=np.uint64),
            "fidx": rng.integers(0, dim, int(lens.sum())).astype(np.int32),
            "fval": rng.standard_normal(int(lens.sum())).astype(np.float32)}


def _sums_reference(counts: np.ndarray, slots: np.ndarray, t: dict[str, np.ndarray], log_tf: np.ndarray,
                    dim: int) -> np.ndarray:
    out = np.zeros((len(counts), dim))
    at = 0
    for r, c in enumerate(counts.tolist()):
        row = slots[at : at + c].tolist()
        at += c
        for s, k in Counter(row).items():
            a, n = int(t["tab_start"][s]), int(t["tab_len"][s])
            for f in range(a, a + n):
                out[r, t["fidx"][f]] += np.rint(float(t["fval"][f]) * log_tf[k] * 16777216.0)
        h = t["hashes"]
        pairs = splitmix64(np.array([(int(h[x]) * 0x9E3779B97F4A7C15 + int(h[y])) % 2**64 for x, y in itertools.pairwise(row)],
                                    np.uint64))
        for (sb, low), k in Counter((int(p) >> 63, int(p) & 0xFFFFFFFF) for p in pairs).items():
            out[r, low % dim] += np.rint((-1.0 if sb else 1.0) * 0.25 * log_tf[k] * 16777216.0)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_hash_feature_sums_are_the_formula_summed_one_feature_at_a_time(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # seeds 6 and 7: a table far larger than the texts (a query's case: counted by a sort, not a
    # counter per slot)
    dim, words = [1, 5, 64, 384, 7, 100, 384, 3][seed], (30 if seed < 6 else 5000)
    t = _table(rng, words, dim)
    counts = rng.integers(0, 50, 7).astype(np.int64)
    counts[seed % 7] = 0  # a text without tokens
    slots = rng.integers(0, 1 + seed * 5, int(counts.sum())).astype(np.int64)  # few slots: tf and bigram repeats
    log_tf = np.concatenate([[1.0], 1.0 + np.log(np.arange(1, 60, dtype=np.int64))])
    args = (counts, slots, t["tab_start"], t["tab_len"], t["hashes"], t["fidx"], t["fval"], log_tf, 0.25, dim)
    got = kernels.hash_feature_sums(*args)
    assert got.dtype == np.float64 and got.shape == (len(counts), dim)
    want = _sums_reference(counts, slots, t, log_tf, dim)
    assert got.tobytes() == want.tobytes()
    # normalised in the core as spaces/hashing.py's numpy passes did it: row_norms' pairwise sum,
    # a division per value, float32
    norms = np.sqrt(np.add.reduce(want * want, axis=1))
    np.divide(want, norms[:, None], out=want, where=norms[:, None] > 0)
    unit = kernels.hash_embed(*args)
    assert unit.dtype == np.float32 and unit.shape == (len(counts), dim)
    assert unit.tobytes() == want.astype(np.float32).tobytes()


@pytest.mark.parametrize("dim", [*range(1, 140), 255, 256, 257, 384, 1000, 1031])
def test_hash_embed_unit_rows_are_numpys_bytes_at_every_width(dim: int) -> None:
    # widths through every branch of numpy's pairwise sum of the squares (under 8 values, up to 128,
    # halves of halves), on sums whose squares round (whole numbers up to 2^40). (A float32 row
    # rarely shows which order the norm was summed in: a last-bit change of the float64 norm moves a
    # float32 value only near a rounding tie. The core sums in numpy's order all the same.)
    rng = np.random.default_rng(dim)
    t = {"tab_start": np.arange(dim, dtype=np.int64), "tab_len": np.ones(dim, np.int64),
         "hashes": np.zeros(dim, np.uint64), "fidx": np.arange(dim, dtype=np.int32),
         "fval": (rng.standard_normal(dim) * 2.0**16).astype(np.float32)}
    counts = np.array([dim], np.int64)
    slots = np.arange(dim, dtype=np.int64)
    log_tf = np.ones(dim + 1)  # the bigrams (all one code: the hashes are equal) weigh 0
    args = (counts, slots, t["tab_start"], t["tab_len"], t["hashes"], t["fidx"], t["fval"], log_tf, 0.0, dim)
    sums = kernels.hash_feature_sums(*args)
    norms = np.sqrt(np.add.reduce(sums * sums, axis=1))
    assert kernels.hash_embed(*args).tobytes() == (sums / norms[:, None]).astype(np.float32).tobytes()


def _good(dim: int = 4) -> dict[str, Any]:
    return {"counts": np.array([2, 1], np.int64), "slots": np.array([1, 1, 0], np.int64),
            "tab_start": np.array([0, 1], np.int64), "tab_len": np.array([1, 1], np.int64),
            "hashes": np.array([3, 5], np.uint64), "fidx": np.array([0, 3], np.int32),
            "fval": np.array([0.5, -1.0], np.float32), "log_tf": np.array([1.0, 1.0, 1.7], np.float64),
            "bigram_weight": 0.5, "dim": dim}


@pytest.mark.parametrize(("field", "value", "error", "says"), [
    ("counts", np.array([2, 1], np.int32), TypeError, "counts"),
    ("counts", np.array([2, 2], np.int64), ValueError, "sum to len"),
    ("counts", np.array([-1, 4], np.int64), ValueError, ">= 0"),
    ("slots", np.array([0, 2, 1], np.int64), ValueError, "slot"),
    ("slots", np.array([0, 1, 1, 1, 1, 1], np.int64)[::2], ValueError, "slots"),  # not contiguous
    ("tab_start", np.array([0, 2], np.int64), ValueError, "table entry"),
    ("tab_start", np.array([0, -1], np.int64), ValueError, "table entry"),
    ("tab_len", np.array([1], np.int64), ValueError, "tab_len"),
    ("tab_len", np.array([1, 2**62], np.int64), ValueError, "table entry"),
    ("hashes", np.array([3, 5], np.int64), TypeError, "hashes"),
    ("fidx", np.array([0, 4], np.int32), ValueError, "bucket"),
    ("fidx", np.array([-1, 3], np.int32), ValueError, "bucket"),
    ("fval", np.array([0.5], np.float32), ValueError, "fval"),
    ("fval", np.array([0.5, 1.0], np.float64), TypeError, "fval"),
    ("log_tf", np.array([1.0, 1.0], np.float64), ValueError, "log_tf"),
    ("bigram_weight", float("nan"), ValueError, "bigram_weight"),
    ("bigram_weight", "0.5", TypeError, "bigram_weight"),
    ("dim", 0, ValueError, "dim"),
    ("dim", 2**62, ValueError, "dim must be <="),
    ("dim", 2**24 + 1, ValueError, "dim must be <="),
])
@pytest.mark.parametrize("kernel", [kernels.hash_feature_sums, kernels.hash_embed])
def test_hash_feature_sums_refuses_bad_arguments_naming_them(field: str, value: Any, error: type[Exception],
                                                           says: str, kernel: Any) -> None:
    args = _good()
    assert kernel(**args).shape == (2, 4)
    args[field] = value
    with pytest.raises(error, match=says):
        kernel(**args)


def _word_chars() -> np.ndarray:
    table = np.zeros(128, np.uint8)
    table[[ord(c) for c in "abcdefghijklmnopqrstuvwxyz0123456789"]] = 1
    return table


@pytest.mark.parametrize(("field", "value", "error", "says"), [
    ("codepoints", np.array([97, 98], np.int32), TypeError, "codepoints"),
    ("codepoints", np.array([97, 200, 98], np.uint32), ValueError, "not classified"),
    ("codepoints", np.array([[97, 98]], np.uint32), ValueError, "codepoints"),
    ("text_ptr", np.array([1, 2], np.int64), ValueError, "text_ptr"),
    ("text_ptr", np.array([0, 3], np.int64), ValueError, "text_ptr"),
    ("text_ptr", np.array([0, 2, 1], np.int64), ValueError, "text_ptr"),
    ("text_ptr", np.array([], np.int64), ValueError, "text_ptr"),
    ("text_ptr", np.array([0, 2], np.uint64), TypeError, "text_ptr"),
    ("word_char", np.full(128, 3, np.uint8), ValueError, "not classified"),
    ("word_char", np.zeros(128, np.bool_), TypeError, "word_char"),
])
def test_tokenize_codepoints_refuses_bad_arguments_naming_them(field: str, value: Any, error: type[Exception],
                                                             says: str) -> None:
    args: dict[str, Any] = {"codepoints": np.array([97, 98], np.uint32), "text_ptr": np.array([0, 2], np.int64),
                            "word_char": _word_chars()}
    good = kernels.tokenize_codepoints(**args)
    assert good.counts.tolist() == [1] and good.words == ["ab"] and good.first.tolist() == [0]
    args[field] = value
    with pytest.raises(error, match=says):
        kernels.tokenize_codepoints(**args)


ARRAYS = st.builds(lambda dt, vals: np.array(vals).astype(dt),
                   st.sampled_from([np.int64, np.int32, np.uint64, np.uint32, np.uint8, np.float32, np.float64]),
                   st.lists(st.integers(-3, 300), max_size=12))


@settings(max_examples=300, deadline=None)
@given(st.lists(ARRAYS, min_size=8, max_size=8), st.integers(-2, 70))
def test_hostile_arguments_raise_or_succeed_never_crash(arrays: list[np.ndarray], dim: int) -> None:
    names = ["counts", "slots", "tab_start", "tab_len", "hashes", "fidx", "fval", "log_tf"]
    for kernel in (kernels.hash_feature_sums, kernels.hash_embed):
        try:
            kernel(**dict(zip(names, arrays)), bigram_weight=0.5, dim=dim)
        except (TypeError, ValueError):
            pass
    try:
        kernels.tokenize_codepoints(*arrays[:3])
    except (TypeError, ValueError):
        pass
    try:
        kernels.cut_passages(arrays[0], arrays[1], arrays[2], words=dim, overlap=dim - 3)
    except (TypeError, ValueError):
        pass
    try:
        kernels.word_features(arrays[0], arrays[1], arrays[2], dim, 1.0, 1.0, dim - 20)
    except (TypeError, ValueError):
        pass


def test_normalising_a_first_non_ascii_text_looks_only_at_its_own_characters() -> None:
    # the combining classes are looked up per distinct character a text brings, not for the ~130,000
    # code points of two planes up front (that cost ~0.1 s inside the first ingest of a process)
    code = (
        "import unicodedata\n"
        "calls = 0\n"
        "combining = unicodedata.combining\n"
        "def counted(c):\n"
        "    global calls\n"
        "    calls += 1\n"
        "    return combining(c)\n"
        "unicodedata.combining = counted\n"
        "from engramdb.spaces.analyzer import normalize\n"
        "out = normalize('Caf\\u00e9 de la ru\\u0301e, \\uff26\\uff55\\uff4c\\uff4c stra\\u00dfe ' * 3)\n"
        "print(calls, ascii(out))\n"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(got[0]) < 100
    assert " ".join(got[1:]) == ascii(normalize("Caf\u00e9 de la ru\u0301e, \uff26\uff55\uff4c\uff4c stra\u00dfe " * 3))


_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")


def _cut_reference(text: str, words_per: int, overlap: int) -> list[tuple[int, int]]:
    """The passage cut as first written, one match object per word (spaces/passages.py's rule with
    any passage length and overlap)."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    n = len(words)
    if n <= words_per:
        return [(0, len(text))]
    starts = [i == 0 or bool(_SENTENCE_END.search(text[words[i - 1][0]:words[i - 1][1]]))
              or "\n" in text[words[i - 1][1]:words[i][0]] for i in range(n)]
    spans = []
    s = 0
    while True:
        end = s + words_per
        if end >= n:
            spans.append((words[s][0], words[n - 1][1]))
            break
        cut = next((j for j in range(end, s + words_per // 2, -1) if starts[j]), end)
        spans.append((words[s][0], words[cut - 1][1]))
        if n - cut <= overlap // 2:
            spans[-1] = (words[s][0], words[n - 1][1])
            break
        lo = max(s + 1, cut - overlap)
        s = next((j for j in range(lo, cut) if starts[j]), lo)
    return spans


PIECES = ["w", "ab", "x.", "y!", "z?", '."', "?)", "!]'", ")", ".x", "\u2026", "\u00e9.", "\u65e5\u672c", "a\U0001f600.",
          "\ud800.", "'", '"', "]", "..", "?!"]
GAPS = [" ", "\n", "  ", "\t", "\u00a0", "\u3000", " \n ", "\x1c", "\r\n", "\u2009", "\u3001", "\u2028", "\u0085"]
CUT_TEXTS = st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(GAPS)), max_size=120).map(
    lambda ps: "".join(p + g for p, g in ps))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", " ", "\n\n"]), CUT_TEXTS), min_size=1, max_size=5),
       st.integers(1, 12), st.integers(0, 9))
def test_cut_passages_is_the_word_by_word_cut(texts: list[tuple[str, str]], words: int, overlap: int) -> None:
    whole = [lead + t for lead, t in texts]
    cp = np.frombuffer("".join(whole).encode("utf-32-le", "surrogatepass"), "<u4")
    ptr = np.concatenate([[0], np.cumsum([len(t) for t in whole])]).astype(np.int64)
    space = np.isin(np.arange(max(SPACE_CODEPOINTS) + 2), SPACE_CODEPOINTS).astype(np.uint8)
    span_ptr, spans = kernels.cut_passages(cp, ptr, space, words, overlap)
    for r, text in enumerate(whole):
        got = [(a, b) for a, b in spans[span_ptr[r] : span_ptr[r + 1]].tolist()]
        assert got == _cut_reference(text, words, overlap)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(GAPS)), min_size=190, max_size=900),
       st.sampled_from(["", " ", "\n\n"]))
def test_a_long_memory_is_cut_where_the_word_by_word_cut_did(pieces: list[tuple[str, str]], lead: str) -> None:
    text = lead + "".join(p + g for p, g in pieces)
    assert passages(text) == _cut_reference(text, PASSAGE_WORDS, PASSAGE_OVERLAP)


@pytest.mark.parametrize(("field", "value", "error", "says"), [
    ("codepoints", np.array([97, 32, 98], np.int64), TypeError, "codepoints"),
    ("text_ptr", np.array([0, 4], np.int64), ValueError, "text_ptr"),
    ("text_ptr", np.array([1, 3], np.int64), ValueError, "text_ptr"),
    ("text_ptr", np.array([], np.int64), ValueError, "text_ptr"),
    ("space", np.array([], np.uint8), ValueError, "space"),
    ("space", np.array([0, 1], np.int8), TypeError, "space"),
    ("words", 0, ValueError, "words"),
    ("words", 2.5, TypeError, "words"),
    ("overlap", -1, ValueError, "overlap"),
])
def test_cut_passages_refuses_bad_arguments_naming_them(field: str, value: Any, error: type[Exception],
                                                        says: str) -> None:
    args: dict[str, Any] = {"codepoints": np.array([97, 32, 98], np.uint32), "text_ptr": np.array([0, 3], np.int64),
                            "space": np.isin(np.arange(34), [32]).astype(np.uint8), "words": 1, "overlap": 0}
    assert kernels.cut_passages(**args)[1].tolist() == [[0, 1], [2, 3]]
    args[field] = value
    with pytest.raises(error, match=says):
        kernels.cut_passages(**args)

"""Issue 28, ingest fourth pass: the same output, less work per batch.

- The token space's batch holds its tokens as rows of the batch's distinct terms
  (`TokenBatch.of_rows`): checking and storing it read the table and gather the int8 codes, the
  float matrix of every token is made only when read; the stored column is byte for byte what the
  plain tokens give, and a bad table is refused as bad tokens are.
- A batch's long texts are cut into passages in one native pass (`passages_many`), the same spans
  as `passages` text by text.
- The hashing space and the analyzer count each text's kept tokens by one running sum
  (`kept_counts`), the same vectors and terms as the per-token row numbers gave.
- New words' BLAKE2b hashes in one native pass (`kernels.analysis.blake2b_words`), hashlib's value
  for every word; a word UTF-8 cannot encode is left to hashlib's path, which names it.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
from engramdb.kernels.analysis import blake2b_words, joined_codepoints
from engramdb.spaces.analyzer import Analyzer, kept_counts, tokenize
from engramdb.spaces.batches import concat, take
from engramdb.spaces.hashing import HashingEmbedder, word_features, word_hash
from engramdb.spaces.passages import passages, passages_many
from engramdb.spaces.protocol import TokenBatch
from engramdb.spaces.schema import SpaceError, default_schema
from engramdb.spaces.token_space import TokenEmbedder
from engramdb.storage.vectors import from_arrow, quantize_tokens, to_arrow

SPACE = default_schema()["tokens"]
TEXTS = [
    "I adopted a rescue dog named Biscuit last spring, and Biscuit loves the beach.",
    "",
    "the of and",  # stop words only: no terms, and the hashing space keeps them as they are
    "Running, runner, runs: the runner ran a running race. " * 20,
    "Ünïcödé naïve café résumé 東京 2026",
    "what is it? I don't know",
]


def plain(batch: TokenBatch) -> TokenBatch:
    """The same tokens as one float matrix (no table, no codes): what storage quantises itself."""
    return TokenBatch(np.array(batch.tokens), np.array(batch.offsets))


def test_token_batches_are_rows_of_their_distinct_terms_and_store_the_same_column() -> None:
    emb = TokenEmbedder()
    emb.embed(["a first batch fills the table: dog beach race"])  # then hits and new terms mixed
    batch = emb.embed(TEXTS)
    assert batch.table is not None and batch.table_rows is not None
    assert len(batch.table) < batch.size  # the long text's terms repeat: fewer rows than tokens
    checked = SPACE.check(batch, len(TEXTS))
    assert isinstance(checked, TokenBatch) and checked.table is not None  # checked without a gather
    col = to_arrow(SPACE, checked)
    assert col.equals(to_arrow(SPACE, plain(batch)))
    q, scale = quantize_tokens(batch.tokens)
    assert checked.codes is not None
    assert np.array_equal(checked.codes[0], q) and checked.codes[1].tobytes() == scale.tobytes()
    for t, text in enumerate(TEXTS):  # each text's tokens are its terms' vectors, in order
        terms = Analyzer().terms(text)
        assert checked.row(t).shape == (len(terms), SPACE.dim)
        if terms:
            assert np.array_equal(checked.row(t), emb.embed([text]).tokens)
    back = from_arrow(SPACE, col)
    assert isinstance(back, TokenBatch)
    assert np.allclose(back.tokens, batch.tokens, atol=1 / 254)


def test_joined_and_sliced_table_batches_store_the_same_column() -> None:
    emb = TokenEmbedder()
    whole = emb.embed(TEXTS)
    joined = concat([emb.embed(TEXTS[:3]), emb.embed(TEXTS[3:])])
    assert isinstance(joined, TokenBatch) and joined.table is not None
    assert np.array_equal(joined.tokens, whole.tokens) and np.array_equal(joined.offsets, whole.offsets)
    assert to_arrow(SPACE, SPACE.check(joined, len(TEXTS))).equals(to_arrow(SPACE, plain(whole)))
    mixed = concat([emb.embed(TEXTS[:3]), plain(emb.embed(TEXTS[3:]))])  # one part a plain matrix
    assert to_arrow(SPACE, SPACE.check(mixed, len(TEXTS))).equals(to_arrow(SPACE, plain(whole)))
    some = take(whole, [3, 0])
    assert isinstance(some, TokenBatch)
    assert to_arrow(SPACE, some).equals(to_arrow(SPACE, plain(some)))


@pytest.mark.parametrize(("bad", "want"), [
    ("nan", "tokens contain NaN or inf"),
    ("wide", r"tokens must be float of shape \(T, 128\)"),
    ("ints", "tokens must be float"),
    ("row", "token rows must be integers within the table's 3 rows"),
    ("negative", "token rows must be integers within the table's 3 rows"),
    ("offsets", "offsets must rise from 0 to len"),
])
def test_a_bad_table_batch_is_refused_as_bad_tokens_are(bad: str, want: str) -> None:
    table = np.full((3, SPACE.dim), 0.05, np.float32)
    rows = np.array([0, 2, 1, 2], np.int64)
    offsets = np.array([0, 1, 4], np.int64)
    if bad == "nan":
        table[1, 7] = np.nan
    elif bad == "wide":
        table = np.zeros((3, SPACE.dim + 1), np.float32)
    elif bad == "ints":
        table = np.zeros((3, SPACE.dim), np.int32)
    elif bad == "row":
        rows = np.array([0, 3, 1, 2], np.int64)
    elif bad == "negative":
        rows = np.array([0, -1, 1, 2], np.int64)
    else:
        offsets = np.array([0, 1, 3], np.int64)
    with pytest.raises(SpaceError, match=want):
        SPACE.check(TokenBatch.of_rows(table, rows, offsets), 2)


def test_codes_for_another_table_are_not_written() -> None:
    emb = TokenEmbedder()
    batch, other = emb.embed(TEXTS), emb.embed(TEXTS[:1])
    assert batch.table is not None and batch.table_rows is not None and other.table_codes is not None
    wrong = TokenBatch.of_rows(batch.table, batch.table_rows, batch.offsets, other.table_codes)
    assert to_arrow(SPACE, SPACE.check(wrong, len(TEXTS))).equals(to_arrow(SPACE, plain(batch)))
    # a table the check converts (float64 given) is a new array: the codes made for the old one dropped
    stale = TokenBatch.of_rows(batch.table.astype(np.float64) * 0.5, batch.table_rows, batch.offsets,
                               batch.table_codes)
    checked = SPACE.check(stale, len(TEXTS))
    assert isinstance(checked, TokenBatch) and checked.table_codes is None
    assert to_arrow(SPACE, checked).equals(to_arrow(SPACE, plain(checked)))


def test_a_batch_of_long_texts_is_cut_as_each_text_alone() -> None:
    sentence = "We walked the dog along the beach. It was cold! Then home? "
    texts = [
        sentence * 40,  # several passages, cut at sentence ends
        "word " * 205,  # a few words over: one passage that starts at the first word
        " " + "w " * 210,  # leading whitespace: the passage starts at the word
        "short text",
        "x" * 500,  # long, one word
        "",
        "naïve café. " * 120 + "東京\u3000" * 60,  # non-ASCII letters and a wide space
        "\ud800 " + "a " * 300,  # a lone surrogate: offsets by code point still
        "line\n" * 450,
    ]
    got = passages_many(texts)
    assert got == [passages(t) for t in texts]
    assert len(got[0]) > 1 and got[3] == [(0, len(texts[3]))]
    with pytest.raises(TypeError, match=r"texts\[1\] must be str"):
        passages_many(["fine", b"bytes"])  # type: ignore[list-item]


def test_kept_counts_is_the_per_text_count_of_kept_items() -> None:
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 6, 50).astype(np.int64)
    counts[[0, 9, 49]] = 0  # empty texts at the ends and inside
    keep = rng.random(int(counts.sum())) < 0.6
    rows = np.repeat(np.arange(len(counts)), counts)
    want = np.bincount(rows[keep], minlength=len(counts))
    got = kept_counts(counts, keep)
    assert got.dtype == np.int64 and np.array_equal(got, want)
    assert kept_counts(np.zeros(0, np.int64), np.zeros(0, bool)).shape == (0,)


def test_hashing_batches_with_stop_word_texts_match_text_by_text() -> None:
    """Texts of stop words alone keep their tokens (the slower branch), the others their content
    words: a mixed batch gives each text the vector it gets alone."""
    emb = HashingEmbedder()
    batch = emb.embed(TEXTS + ["no", "it is what it is"])
    for t, text in enumerate(TEXTS + ["no", "it is what it is"]):
        alone = emb.embed([text])
        assert batch[t].tobytes() == alone[0].tobytes(), text
    assert np.abs(batch[2]).sum() > 0 and tokenize(TEXTS[2])  # "the of and": its stop words, kept
    without = emb.embed([t for t in TEXTS if t != "the of and"])  # the common branch: no such text
    assert without.tobytes() == np.delete(emb.embed(TEXTS), 2, axis=0).tobytes()


def test_blake2b_words_is_hashlibs_digest_of_each_words_utf8() -> None:
    rng = random.Random(3)
    pool = [chr(c) for c in (*range(32, 127), 0xE9, 0x6771, 0x4EAC, 0x1F600, 0x10FFFF, 0xE000, 0xFFFF)]
    words = ["", "a", "naïve", "東京", "😀", "x" * 127, "x" * 128, "x" * 129, "é" * 64, "w" * 300]
    words += ["".join(rng.choice(pool) for _ in range(rng.randint(0, 150))) for _ in range(500)]
    cp, ptr = joined_codepoints(words)
    for person in (b"engramdb.word", b"engramdb.term", b"", b"0123456789abcdef"):
        got = blake2b_words(cp, ptr, person)
        assert got is not None and got.dtype == np.uint64
        want = [int.from_bytes(hashlib.blake2b(w.encode("utf-8"), digest_size=8, person=person).digest(), "little")
                for w in words]
        assert got.tolist() == want
    with pytest.raises(ValueError, match="person must be at most 16 bytes"):
        blake2b_words(cp, ptr, b"x" * 17)
    with pytest.raises(ValueError, match="word_ptr"):
        blake2b_words(cp, np.array([0, len(cp) + 1], np.int64), b"p")
    lone = ["fine", "a\ud800b"]
    assert blake2b_words(*joined_codepoints(lone), b"p") is None  # hashlib's path names it


def test_new_words_features_carry_hashlibs_word_hashes() -> None:
    words = ["biscuit", "naïve", "東京", "don't", "x" * 60]
    wh, owner, _, _ = word_features(words, 384, 1.0, 1.0)
    assert wh.tolist() == [word_hash(w) for w in words]
    assert owner.tolist() == sorted(owner.tolist())
    with pytest.raises(UnicodeEncodeError):
        word_features(["a\ud800b"], 384, 1.0, 1.0)  # refused as before, by str.encode


def test_normalize_maps_typographic_apostrophes_as_the_table_did() -> None:
    """A guard of the rewrite (three str.replace passes instead of str.translate): the same text as
    the translation table gave, for every apostrophe form, in ASCII and non-ASCII texts."""
    import unicodedata

    from engramdb.spaces.analyzer import normalize

    table = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
    for text in ["Don\u2019t", "\u2018quoted\u2019 na\u00efve", "it\u02bcs CAF\u00c9 \ufb01le", "plain ASCII Text's",
                 "\u2019\u2018\u02bc", "\uff21\u2019\uff42", "x\u0301" * 40 + "\u2019s"]:
        want = unicodedata.normalize("NFKC", text).translate(table).lower() if not text.isascii() else text.lower()
        assert normalize(text) == want, text
    assert tokenize("I\u2019m sure it\u02bcs John\u2018s") == ["i'm", "sure", "it's", "john's"]


LONG = [
    "We walked the dog along the beach. It was cold! Then we went home? " * 30,
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u2014 Don\u2019t worry. " * 60,  # NFKC already, same length lowercased
    "\ufb01le \ufb02ow. " * 150,  # NFKC folds the ligatures: offsets move, embedded from its text
    "\u0130stanbul ISTANBUL. " * 120,  # U+0130 lowercases to two characters: embedded from its text
    "word " * 150 + "the of and " * 250 + "end.",  # a passage of stop words alone keeps them
    "short and plain",
    "the of and " * 150,  # a long text of stop words alone
]


def _passage_texts(texts: list[str]) -> tuple[list[str], list[list[tuple[int, int]]]]:
    cuts = passages_many(texts)
    long = [(t, c) for t, c in zip(texts, cuts) if len(c) > 1]
    return [t for t, _ in long], [c for _, c in long]


def test_passages_embedded_from_their_memorys_tokens_are_the_passage_texts_vectors(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from engramdb.spaces import hashing
    from engramdb.spaces.analyzer import analysis_scope

    texts, cuts = _passage_texts(LONG)
    want = HashingEmbedder().embed([t[a:b] for t, c in zip(texts, cuts) for a, b in c])
    assert len(texts) == 6 and len(want) > 12
    cold = HashingEmbedder()  # no batch embedded yet: every passage from its text
    assert cold.embed_passages(texts, cuts).tobytes() == want.tobytes()
    emb = HashingEmbedder()
    with analysis_scope():
        emb.embed(LONG + ["the of and"])  # a text of stop words alone: the batch's slower branch
    copies = ["".join(list(t)) for t in texts]  # equal texts, other objects (as read back from a segment)
    assert emb.embed_passages(copies, cuts).tobytes() == want.tobytes()
    # the plain ASCII text's passages come from the batch's tokens: no tokenising needed for them
    seen: list[int] = []
    from engramdb.spaces.analyzer import tokenize_batch as real

    def spy(batch: list[str]) -> object:
        seen.append(len(batch))
        return real(batch)

    monkeypatch.setattr(hashing, "tokenize_batch", spy)
    got = emb.embed_passages(copies[:1], cuts[:1])
    assert got.tobytes() == want[: len(cuts[0])].tobytes() and seen == []
    emb.embed_passages(copies[2:3], cuts[2:3])  # the ligatures' text: tokenised again, its passages
    assert seen == [len(cuts[2])]


def test_passages_after_the_word_table_is_cleared_are_embedded_from_their_text(monkeypatch: pytest.MonkeyPatch) -> None:
    from engramdb.spaces import hashing

    texts, cuts = _passage_texts(LONG[:1])
    want = HashingEmbedder().embed([texts[0][a:b] for a, b in cuts[0]])
    emb = HashingEmbedder()
    emb.embed(LONG[:1] + ["x"])
    monkeypatch.setattr(hashing, "TABLE_WORDS", 0)  # the next embed clears the table: old slots mean nothing
    emb.embed(["another batch", "of two texts"])
    monkeypatch.setattr(hashing, "TABLE_WORDS", 1 << 16)
    assert emb.embed_passages(texts, cuts).tobytes() == want.tobytes()


def test_token_starts_are_where_the_analyzers_regex_finds_each_token() -> None:
    import re

    from engramdb.spaces.analyzer import normalize, tokenize_batch

    pattern = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
    texts = ["Hi there, don't go", "", "  x  yy'z 'q' 3.14", "Caf\u00e9 \u6771\u4eac 2026", "__a_b__"]
    tb = tokenize_batch(texts)
    assert tb.starts is not None
    want = [m.start() for t in texts for m in pattern.finditer(normalize(t))]
    assert tb.starts.tolist() == want


def test_token_slots_kept_across_batches_and_cleared_with_the_word_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A guard of the per-token slot cache (a token's content word and table slot looked up once
    across batches): later batches, and batches after the table is cleared, give every text the
    vector a fresh embedder gives it."""
    from engramdb.spaces import hashing

    first = ["I don't like cats, not at all", "the of and", "Cats and dogs: dogs chase cats."]
    later = ["dogs don't chase cats", "What is it?", "cats"]
    emb = HashingEmbedder()
    emb.embed(first)
    assert emb.embed(later).tobytes() == HashingEmbedder().embed(later).tobytes()
    monkeypatch.setattr(hashing, "TABLE_WORDS", 0)  # every embed from now clears the table first
    assert emb.embed(later + first).tobytes() == HashingEmbedder().embed(later + first).tobytes()
    assert emb.embed(first).tobytes() == HashingEmbedder().embed(first).tobytes()
    terms = Analyzer().terms_batch(first + later)
    assert [terms.words[c] for c in terms.codes] == [t for x in first + later for t in Analyzer().terms(x)]

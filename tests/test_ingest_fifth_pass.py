"""Issue 28, ingest fifth pass: the same output, less work per batch.

- The hashing space's sums count a text's bigram codes in a table reused from text to text (not a
  sort of every text's codes), and every text of a batch large enough for a counter per table slot
  counts its words with it (a text shorter than the table's size / 16 sorted a copy): the words and
  codes come in another order, and the sums, whole numbers, are the same bit for bit.
- The tokenizer checks each code point of the texts as its scan meets it (not in a pass of its own
  over all of them first): a code point the word table does not classify is refused wherever it is.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from engramdb import kernels
from engramdb.spaces.analyzer import tokenize, tokenize_batch
from engramdb.spaces.hashing import HashingEmbedder, splitmix64

LOG_TF = np.concatenate([[1.0], 1.0 + np.log(np.arange(1, 5000, dtype=np.int64))])


def _table(rng: np.random.Generator, words: int, dim: int) -> dict[str, np.ndarray]:
    lens = rng.integers(0, 9, words).astype(np.int64)
    return {"tab_start": (np.cumsum(lens) - lens).astype(np.int64), "tab_len": lens,
            "hashes": rng.integers(0, 2**63, words, dtype=np.uint64) * np.uint64(2)
            + rng.integers(0, 2, words, dtype=np.uint64),
            "fidx": rng.integers(0, dim, int(lens.sum())).astype(np.int32),
            "fval": rng.standard_normal(int(lens.sum())).astype(np.float32)}


def _reference(counts: np.ndarray, slots: np.ndarray, t: dict[str, np.ndarray], dim: int, bigram: float) -> np.ndarray:
    """The sums feature by feature and code by code, in sorted order (what the kernel did before)."""
    out = np.zeros((len(counts), dim))
    at = 0
    for r, c in enumerate(counts.tolist()):
        row = slots[at : at + c].tolist()
        at += c
        for s, k in sorted(Counter(row).items()):
            a, n = int(t["tab_start"][s]), int(t["tab_len"][s])
            for f in range(a, a + n):
                out[r, t["fidx"][f]] += np.rint(float(t["fval"][f]) * LOG_TF[k] * 16777216.0)
        h = t["hashes"]
        pairs = splitmix64(np.array([(int(h[x]) * 0x9E3779B97F4A7C15 + int(h[y])) % 2**64
                                     for x, y in itertools.pairwise(row)], np.uint64))
        for (sb, low), k in sorted(Counter((int(p) >> 63, int(p) & 0xFFFFFFFF) for p in pairs).items()):
            out[r, low % dim] += np.rint((-1.0 if sb else 1.0) * bigram * LOG_TF[k] * 16777216.0)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_sums_of_long_and_short_texts_in_one_batch_are_the_formulas(seed: int) -> None:
    # a batch whose texts range from none and one token to thousands (the bigram table grows for a
    # long text and shrinks after it), short texts counted by the per-slot counter (the batch is
    # large for the table), bigrams repeated many times (few slots) or all distinct (many)
    rng = np.random.default_rng(seed)
    dim = [7, 64, 384, 1, 100, 384][seed]
    words = [40, 300, 2000, 5, 50, 3000][seed]
    t = _table(rng, words, dim)
    counts = np.array([0, 1, 2, 3000, 5, 17, 0, 4000, 2, 60, 1, 700], np.int64)
    rng.shuffle(counts)
    slots = rng.integers(0, words if seed % 2 else min(words, 6), int(counts.sum())).astype(np.int64)
    args = (counts, slots, t["tab_start"], t["tab_len"], t["hashes"], t["fidx"], t["fval"], LOG_TF, 0.25, dim)
    want = _reference(counts, slots, t, dim, 0.25)
    assert kernels.hash_feature_sums(*args).tobytes() == want.tobytes()
    norms = np.sqrt(np.add.reduce(want * want, axis=1))
    np.divide(want, norms[:, None], out=want, where=norms[:, None] > 0)
    assert kernels.hash_embed(*args).tobytes() == want.astype(np.float32).tobytes()


def test_a_text_embeds_the_same_alone_and_in_a_large_batch() -> None:
    # alone, a text's words are counted by a sort; in a large batch by the per-slot counter, in order
    # of first appearance: the same float32 bytes either way
    texts = [" ".join(f"w{i % k} x{(i * 7) % (k + 3)}" for i in range(n)) for k, n in ((3, 40), (50, 900), (7, 9))]
    texts += ["the of and", "", "I don't like cats, I do not like dogs"] * 3
    big = HashingEmbedder().embed(texts)
    for i, text in enumerate(texts):
        assert HashingEmbedder().embed([text]).tobytes() == big[i].tobytes(), tokenize(text)[:5]


def _word_chars() -> np.ndarray:
    table = np.zeros(128, np.uint8)  # 2: "not looked at yet" (the analyzer's table fills in as texts come)
    table[[ord(c) for c in "abcdefghijklmnopqrstuvwxyz0123456789"]] = 1
    table[ord("~")] = 2
    return table


@pytest.mark.parametrize("at", range(12))
def test_a_code_point_the_table_does_not_classify_is_refused_wherever_it_is(at: int) -> None:
    # texts "ab c'd" and "ef'" then one code point after the last text: a bad code point in a
    # word, between words, after an apostrophe, at a text's end, past the last text, or past the
    # table (200) raises; the same arrays without it tokenise
    cp = np.array([ord(c) for c in "ab c'd" "ef'" "x"], np.uint32)
    ptr = np.array([0, 6, 9], np.int64)
    good = kernels.tokenize_codepoints(cp, ptr, _word_chars())
    assert good.words == ["ab", "c'd", "ef"] and good.counts.tolist() == [2, 1]
    bad = cp.copy()
    bad[at % len(cp)] = ord("~") if at < len(cp) else 200
    with pytest.raises(ValueError, match="not classified"):
        kernels.tokenize_codepoints(bad, ptr, _word_chars())


def test_apostrophes_at_the_ends_of_texts_and_runs_tokenise_as_the_regex_does() -> None:
    texts = ["'", "a'", "'a", "a'b", "a''b", "a'b'c'", "it's' 'tis", "x' y", "don't'", "''", "a' ", " 'a'b"]
    tb = tokenize_batch(texts)
    rows = np.repeat(np.arange(len(texts)), tb.counts)
    for r, text in enumerate(texts):
        assert [tb.words[c] for c in tb.codes[rows == r]] == tokenize(text), text

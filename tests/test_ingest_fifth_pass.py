"""Issue 28, ingest fifth pass: the same output, less work per batch.

- The hashing space's sums count a text's bigram codes in a table reused from text to text (not a
  sort of every text's codes), and every text of a batch large enough for a counter per table slot
  counts its words with it (a text shorter than the table's size / 16 sorted a copy): the words and
  codes come in another order, and the sums, whole numbers, are the same bit for bit.
- The tokenizer checks each code point of the texts as its scan meets it (not in a pass of its own
  over all of them first): a code point the word table does not classify is refused wherever it is.
- The token space's term vectors are made in one native pass (`kernels.word_vectors`: each term's
  features summed per bucket, normalised, float32), the bytes numpy's bincount, row norms and divide
  made; its term table grows by doubling (not copied whole for each batch) and is read by C-level
  look-ups: the same token batches.
- HDC's open signs (the products within the float32 error bound of 0) are settled in float64 by one
  native pass (`kernels.near_signs`), not numpy gathers of their rows and columns: the same codes.
- The hashing space's word table takes new words' features as it keeps them (`kernels.word_rows`:
  counts, int32 buckets, float32 values) into arrays that double as they fill, and a batch's new
  tokens get their content words by the rules inline: the same vectors.
- A long memory's passages find their tokens by one search among the batch's tokens keyed by (row,
  start), not a search per text: the same passage vectors.
- HDC's rows' norms (for the float32 sign bound) are summed in float32, rows too small or too large
  for that in float64: the same codes at every scale.
- The lexical space's term ids come from a table, the new terms' hashed in one native pass
  (`analyzer.term_ids`): `term_id`'s values.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import numpy as np
import pytest
from engramdb import kernels
from engramdb.spaces.analyzer import analysis_scope, term_id, term_ids, tokenize, tokenize_batch
from engramdb.spaces.hashing import MAX_NGRAM_CHARS, HashingEmbedder, row_norms, splitmix64, word_features
from engramdb.spaces.hdc import DEFAULT_SEED, BinaryHDCEmbedder, projection_matrix
from engramdb.spaces.passages import passages_many
from engramdb.spaces.token_space import W_TOKEN_CHAR, W_TOKEN_WORD, TokenEmbedder, term_vectors

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


def _term_vectors_reference(terms: list[str], dim: int) -> np.ndarray:
    """The numpy passes term_vectors made before (bincount of the features, row norms, divide)."""
    n = len(terms)
    _, owner, bucket, value = word_features(terms, dim, W_TOKEN_WORD, W_TOKEN_CHAR)
    mat = np.bincount(owner * dim + bucket, weights=value, minlength=n * dim).reshape(n, dim)
    norms = row_norms(mat)
    np.divide(mat, norms[:, None], out=mat, where=norms[:, None] > 0)
    return mat.astype(np.float32)


TERMS = ["run", "a", "ab", "don't", "café", "東京", "x" * (MAX_NGRAM_CHARS - 1), "y" * MAX_NGRAM_CHARS,
         "z" * (MAX_NGRAM_CHARS + 1), "naïve" * 30, "2026", "𝔘𝔫𝔦", "aaaaaaaaaaaa", "abababab"]


@pytest.mark.parametrize("dim", [1, 2, 3, 7, 8, 9, 64, 127, 128, 129, 300, 1031])
def test_term_vectors_are_the_numpy_passes_bit_for_bit(dim: int) -> None:
    # widths through every branch of numpy's pairwise sum of the squares, buckets shared by many
    # features (dim 1: every feature in one), words shorter than an n-gram and longer than
    # MAX_NGRAM_CHARS, characters past the basic plane
    rng = np.random.default_rng(dim)
    words = TERMS + ["".join(rng.choice(list("abcdefgh'0é"), size=int(rng.integers(1, 60)))) for _ in range(200)]
    got = term_vectors(words, dim)
    assert got.dtype == np.float32 and got.shape == (len(words), dim)
    assert got.tobytes() == _term_vectors_reference(words, dim).tobytes()
    assert term_vectors([], dim).shape == (0, dim)


def test_token_batches_across_table_growth_and_clearing_are_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    # batches whose new terms grow the table past its room several times, then past TABLE_TERMS (the
    # table starts afresh): every batch's table rows and codes are its terms' reference vectors
    import engramdb.spaces.token_space as ts

    monkeypatch.setattr(ts, "TABLE_TERMS", 700)
    emb = TokenEmbedder(dim=32)
    for b in range(12):
        texts = [" ".join(f"t{b}x{i}y{j}" for j in range(k % 7 + 1)) for k, i in enumerate(range(b * 40, b * 40 + 90))]
        texts += ["the cat sat", "", "running runs"]
        with analysis_scope():
            batch = emb.embed(texts)
            terms = emb.analyzer.terms_batch(texts)
        want = _term_vectors_reference(terms.words, 32)
        assert np.asarray(batch.tokens).tobytes() == want[terms.codes].tobytes()
        assert batch.offsets.tolist() == [0, *np.cumsum(terms.counts).tolist()]


@pytest.mark.parametrize(("field", "value", "error", "says"), [
    ("codepoints", np.array([97, 98], np.int32), TypeError, "codepoints"),
    ("word_ptr", np.array([1, 2], np.int64), ValueError, "word_ptr"),
    ("word_ptr", np.array([0, 3], np.int64), ValueError, "word_ptr"),
    ("word_ptr", np.array([], np.int64), ValueError, "word_ptr"),
    ("word_hashes", np.array([1, 2], np.uint64), ValueError, "word_hashes"),
    ("dim", 0, ValueError, "dim"),
    ("w_word", float("nan"), ValueError, "w_word"),
    ("w_char", "1", TypeError, "w_char"),
    ("max_chars", 0, ValueError, "max_chars"),
])
def test_word_vectors_refuses_bad_arguments_naming_them(field: str, value: Any, error: type[Exception],
                                                        says: str) -> None:
    args: dict[str, Any] = {"codepoints": np.array([97, 98], np.uint32), "word_ptr": np.array([0, 2], np.int64),
                            "word_hashes": np.array([7], np.uint64), "dim": 4, "w_word": 0.5, "w_char": 1.0,
                            "max_chars": 48}
    assert kernels.word_vectors(**args).shape == (1, 4)
    args[field] = value
    with pytest.raises(error, match=says):
        kernels.word_vectors(**args)


def test_near_signs_are_the_float64_products_signs() -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((40, 24)).astype(np.float32)
    cols = rng.standard_normal((70, 24))
    # rows made nearly orthogonal to some columns (products ~1e-8: float32 cannot settle them)
    for r in range(0, 40, 3):
        c = cols[r]
        v = x[r].astype(np.float64) - (x[r].astype(np.float64) @ c) / (c @ c) * c
        x[r] = v.astype(np.float32)
    near = np.sort(rng.choice(40 * 70, 500, replace=False)).astype(np.int64)
    near = np.union1d(near, np.arange(0, 40, 3) * 70 + np.arange(0, 40, 3)).astype(np.int64)
    r, c = np.divmod(near, 70)
    exact = np.einsum("ij,ij->i", x[r].astype(np.float64), cols[c])
    got = kernels.near_signs(x, cols, near)
    assert got.dtype == np.bool_ and got.tolist() == (exact > 0).tolist()
    assert kernels.near_signs(x, cols, np.zeros(0, np.int64)).shape == (0,)


@pytest.mark.parametrize(("x", "cols", "near", "error", "says"), [
    (np.zeros((2, 3), np.float32), np.zeros((4, 3)), np.array([8], np.int64), ValueError, "out of range"),
    (np.zeros((2, 3), np.float32), np.zeros((4, 3)), np.array([-1], np.int64), ValueError, "out of range"),
    (np.zeros((2, 3), np.float32), np.zeros((4, 2)), np.array([0], np.int64), ValueError, "width"),
    (np.zeros((2, 3), np.float64), np.zeros((4, 3)), np.array([0], np.int64), TypeError, "x"),
    (np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32), np.array([0], np.int64), TypeError, "cols"),
    (np.zeros((2, 3), np.float32), np.zeros((4, 3)), np.array([0], np.int32), TypeError, "near"),
])
def test_near_signs_refuses_bad_operands_naming_them(x: np.ndarray, cols: np.ndarray, near: np.ndarray,
                                                     error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        kernels.near_signs(x, cols, near)


@pytest.mark.parametrize("dim", [1, 7, 384, 2**20])
def test_word_rows_are_word_features_as_the_table_keeps_them(dim: int) -> None:
    words = TERMS + ["", "q"]
    cp, ptr = kernels.analysis.joined_codepoints(words)
    wh = np.arange(len(words), dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    owner, bucket, value = kernels.word_features(cp, ptr, wh, dim, 1.0, 1.0, MAX_NGRAM_CHARS)
    lens, fidx, fval = kernels.word_rows(cp, ptr, wh, dim, 1.0, 1.0, MAX_NGRAM_CHARS)
    assert lens.tolist() == np.bincount(owner, minlength=len(words)).tolist()
    assert fidx.dtype == np.int32 and fidx.tobytes() == bucket.astype(np.int32).tobytes()
    assert fval.dtype == np.float32 and fval.tobytes() == value.astype(np.float32).tobytes()
    with pytest.raises(ValueError, match="dim"):
        kernels.word_rows(cp, ptr, wh, 2**31, 1.0, 1.0, MAX_NGRAM_CHARS)


@pytest.mark.parametrize("version", [1, 2])
def test_a_batchs_new_tokens_content_words_are_a_single_texts(version: int) -> None:
    # a batch's new tokens take their content words by the rules inline, a single text (a query) by
    # the cached per-token rule: negations, contractions, stop words and plain words alike
    texts = ["I don't like cats", "cannot stop, won't stop", "not no never nor", "the of and", "it's what i'll do",
             "nothing without nobody shan't", "isn't n't", "cats and dogs"]
    batch = HashingEmbedder(version=version).embed(texts)
    for i, text in enumerate(texts):
        assert HashingEmbedder(version=version).embed([text]).tobytes() == batch[i].tobytes(), text


def test_hashing_batches_across_table_growth_and_clearing_embed_as_texts_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # many batches of new words: the table's arrays grow several times, then pass TABLE_WORDS and
    # start afresh; every text's vector is the one it has alone in a new embedder
    import engramdb.spaces.hashing as hs

    monkeypatch.setattr(hs, "TABLE_WORDS", 900)
    emb = HashingEmbedder()
    for b in range(8):
        texts = [" ".join(f"w{b}x{i}y{j} don't the" for j in range(i % 5 + 1)) for i in range(120)] + ["the of", ""]
        got = emb.embed(texts)
        for i in range(0, len(texts), 17):
            assert HashingEmbedder().embed([texts[i]]).tobytes() == got[i].tobytes()


def test_passages_of_many_texts_found_by_one_search_are_their_texts_vectors() -> None:
    # a batch of short and long texts (plain, accented with the same offsets, ligatures that NFKC
    # changes, one of stop words alone): asked in another order, with repeats and a text the batch
    # did not hold, every passage's vector is its text's
    rng = np.random.default_rng(5)
    vocab = ["alpha", "beta", "gamma", "delta", "the", "of", "Ünïcödé", "naïve", "ﬁle", "don't", "x1", "end."]
    texts = []
    for i in range(60):
        n = int(rng.integers(3, 400)) if i % 3 else 2
        texts.append(" ".join(rng.choice(vocab, n)) + ("\n\nNew line here." if i % 5 == 0 else ""))
    texts.append(" ".join(["the of and"] * 200))
    emb = HashingEmbedder()
    with analysis_scope():
        emb.embed(texts)
    cuts = passages_many(texts)
    ask = [i for i in rng.permutation(len(texts)).tolist() if len(cuts[i]) > 1]
    ask = ask + ask[:3]
    outsider = " ".join(rng.choice(vocab, 500))
    asked = ["".join(list(texts[i])) for i in ask] + [outsider]
    spans = [cuts[i] for i in ask] + passages_many([outsider])
    want = HashingEmbedder().embed([t[a:b] for t, sp in zip(asked, spans) for a, b in sp])
    assert len(want) > 40
    assert emb.embed_passages(asked, spans).tobytes() == want.tobytes()


@pytest.mark.parametrize("scale", [1e-30, 1e-22, 1e-16, 1e-8, 1.0, 1e8, 1e18, 1e19, 3e19])
def test_hdc_codes_are_the_float64_signs_at_every_scale(scale: float) -> None:
    # rows far below 1 (their float32 squares subnormal or zero), near 1, and so large their float32
    # squared norm overflows; with a zero row and rows nearly orthogonal to a column (signs the float32
    # bound leaves open): every bit is the sign of the float64 product
    base = HashingEmbedder(384)
    e = BinaryHDCEmbedder(base, 1024)
    proj = projection_matrix(f"{base.name}\x00{base.version}", 384, 1024, DEFAULT_SEED)
    rng = np.random.default_rng(int(np.log10(scale) + 40))
    x = rng.standard_normal((40, 384))
    r = proj.T[rng.integers(0, 1024, 40)]
    x[::2] -= (np.einsum("ij,ij->i", x, r))[::2, None] * r[::2]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x32 = (x * scale).astype(np.float32)
    x32[7] = 0.0
    want = np.packbits(x32.astype(np.float64) @ proj > 0, axis=1)
    assert e.project(x32).tobytes() == want.tobytes()


def test_term_ids_are_term_id_for_new_and_known_terms() -> None:
    terms = ["run", "café", "東京", "𝔘𝔫𝔦", "x" * 300, "naïve" * 40, "don't", "2026", "run", "a"]
    rng = np.random.default_rng(9)
    terms += ["".join(rng.choice(list("abcdeé'z9"), size=int(rng.integers(1, 40)))) for _ in range(300)]
    want = [term_id(t) for t in terms]
    assert term_ids(terms).tolist() == want  # hashed here (the new ones)
    assert term_ids(terms).tolist() == want  # from the table
    assert term_ids(terms[:3] + ["brand-new-term"]).tolist() == [*want[:3], term_id("brand-new-term")]
    assert term_ids([]).shape == (0,)
    with pytest.raises(UnicodeEncodeError):  # a term UTF-8 cannot encode: named by term_id, as before
        term_ids(["ok", "bad\ud800"])

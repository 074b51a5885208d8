"""S5: the built-in embedders (analyzer, hashing dense, lexical sparse, HDC binary, token multivector)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import unicodedata

import numpy as np
import pytest
from engramdb import kernels
from engramdb.spaces import Embedder, SparseBatch, TokenBatch, hashing, token_space
from engramdb.spaces import analyzer as an
from engramdb.spaces.builtin import (
    BinaryHDCEmbedder,
    HashingEmbedder,
    LexicalEmbedder,
    TokenEmbedder,
    default_embedders,
)
from hypothesis import given, settings
from hypothesis import strategies as st

KINDS = {"dense": "dense", "lexical": "sparse", "hdc": "binary", "tokens": "multivector"}
DIMS = {"dense": 384, "lexical": 2**31, "hdc": 1024, "tokens": 128}

TEXTS = [
    "I moved to Berlin last year for a new job at a startup.",
    "My favourite food is sushi, especially salmon nigiri!",
    "The quarterly budget meeting was moved to Thursday at 3pm.",
    "We adopted a small dog named Biscuit from the shelter",
    "Don't forget: John's birthday party is on the 14th.",
    "what is it",
    "",
    "   ...!!! ---   ",
    "Ｆｕｌｌｗｉｄｔｈ text, ﬁne ligatures, café, naïve, Ελληνικά, русский, 日本語のテキスト 🎉",
]

VOCAB = [
    "berlin",
    "coffee",
    "dentist",
    "email",
    "friday",
    "garden",
    "holiday",
    "invoice",
    "jacket",
    "kitchen",
    "lunch",
    "meeting",
    "novel",
    "office",
    "python",
    "quarter",
    "river",
    "sushi",
    "ticket",
    "umbrella",
    "violin",
    "weather",
    "yoga",
    "zebra",
    "budget",
    "dinner",
    "flight",
    "hotel",
    "music",
    "alpha",
]


def random_texts(n: int, seed: int) -> list[str]:
    """Texts over a small Zipf vocabulary: pairs range from unrelated to near-identical."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, len(VOCAB) + 1)
    p /= p.sum()
    return [" ".join(rng.choice(VOCAB, size=int(rng.integers(3, 12)), p=p)) for _ in range(n)]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    def rank(x: np.ndarray) -> np.ndarray:
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x))
        return r

    return float(np.corrcoef(rank(a), rank(b))[0, 1])


@pytest.fixture(scope="module")
def embs() -> dict[str, Embedder]:
    return default_embedders()


def as_bytes(out: object) -> bytes:
    """Every array of an embedding's output, concatenated (for bitwise comparisons)."""
    if isinstance(out, np.ndarray):
        return out.tobytes()
    if isinstance(out, SparseBatch):
        return out.indptr.tobytes() + out.indices.tobytes() + out.weights.tobytes()
    assert isinstance(out, TokenBatch)
    return out.tokens.tobytes() + out.offsets.tobytes()


def check_invariants(space: str, emb: Embedder, out: object, texts: list[str]) -> None:
    """The protocol's promises for each kind, for any batch."""
    n = len(texts)
    if emb.kind == "dense":
        assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == (n, emb.dim)
        assert out.flags.c_contiguous and np.isfinite(out).all()
        norms = np.linalg.norm(out.astype(np.float64), axis=1)
        for t, nrm in zip(texts, norms):
            assert abs(nrm - 1.0) < 1e-5 if an.tokenize(t) else nrm == 0.0
    elif emb.kind == "sparse":
        assert isinstance(out, SparseBatch) and len(out) == n
        assert (
            out.indptr.dtype == np.int64 and out.indices.dtype == np.int32 and out.weights.dtype == np.float32
        )
        assert out.indptr[0] == 0 and out.indptr[-1] == out.indices.size == out.weights.size
        assert (np.diff(out.indptr) >= 0).all()
        assert (out.indices >= 0).all() and (out.weights > 0).all()
        for t in range(n):
            ids, _ = out.row(t)
            assert (np.diff(ids.astype(np.int64)) > 0).all()
    elif emb.kind == "binary":
        assert isinstance(out, np.ndarray) and out.dtype == np.uint8 and out.shape == (n, emb.dim // 8)
        assert out.flags.c_contiguous
    else:
        assert isinstance(out, TokenBatch) and len(out) == n
        assert out.tokens.dtype == np.float32 and out.tokens.ndim == 2 and out.tokens.shape[1] == emb.dim
        assert (
            out.offsets.dtype == np.int64 and out.offsets[0] == 0 and out.offsets[-1] == out.tokens.shape[0]
        )
        assert (np.diff(out.offsets) >= 0).all()
        if out.tokens.size:
            np.testing.assert_allclose(np.linalg.norm(out.tokens, axis=1), 1.0, atol=1e-5)


# --- protocol ---------------------------------------------------------------------------------


@pytest.mark.parametrize("space", list(KINDS))
def test_protocol_conformance(embs: dict[str, Embedder], space: str) -> None:
    e = embs[space]
    assert isinstance(e, Embedder)
    assert e.kind == KINDS[space] and e.dim == DIMS[space] and e.version == ("2" if space == "dense" else "1")
    assert isinstance(e.name, str) and e.name and e.name.isprintable()
    out = e.embed(TEXTS)
    check_invariants(space, e, out, TEXTS)


def test_default_profile(embs: dict[str, Embedder]) -> None:
    assert list(embs) == ["dense", "lexical", "hdc", "tokens"]
    hdc = embs["hdc"]
    assert isinstance(hdc, BinaryHDCEmbedder) and hdc.base is embs["dense"]
    assert {k: e.name for k, e in embs.items()} == {
        "dense": "hashing2-384",
        "lexical": "lexical",
        "hdc": "hdc-1024-of-hashing2-384-v2",
        "tokens": "tokens-128",
    }
    schema = pytest.importorskip("engramdb.spaces.schema")
    for space in schema.default_schema().spaces.values():  # the default schema names these embedders
        e = embs[space.name]
        assert (space.embedder, space.kind, space.dim) == (e.name, e.kind, e.dim)
    assert HashingEmbedder(256).name != HashingEmbedder(384).name != HashingEmbedder(384, version=1).name
    assert BinaryHDCEmbedder(embs["dense"], 1024, seed=1).name != hdc.name
    assert LexicalEmbedder(an.Analyzer(stem=False)).name != LexicalEmbedder().name


@pytest.mark.parametrize("space", list(KINDS))
def test_empty_batch_and_empty_texts(embs: dict[str, Embedder], space: str) -> None:
    e = embs[space]
    check_invariants(space, e, e.embed([]), [])
    blank = ["", "   ", "?!.,;", "\n\t"]
    out = e.embed(blank)
    check_invariants(space, e, out, blank)
    if isinstance(out, SparseBatch):
        assert out.indices.size == 0
    elif isinstance(out, TokenBatch):
        assert out.tokens.shape[0] == 0
    else:
        assert not out.any()  # zero dense rows, all-zero codes


@pytest.mark.parametrize("space", list(KINDS))
def test_rejects_non_strings(embs: dict[str, Embedder], space: str) -> None:
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        embs[space].embed(["fine", b"bytes"])  # type: ignore[list-item]


@pytest.mark.parametrize("space", list(KINDS))
def test_row_does_not_depend_on_batch_or_history(space: str) -> None:
    e = default_embedders()[space]
    alone = [e.embed([t]) for t in TEXTS]
    e.embed(random_texts(300, seed=3))  # grow the caches in another order
    # a large batch (its arrays are allocated and aligned differently from a one-text batch)
    head = list(reversed(TEXTS)) + random_texts(3000, seed=4)
    batch = e.embed(head + TEXTS)
    for t, one in enumerate(alone):
        row = len(head) + t
        if isinstance(batch, SparseBatch):
            assert isinstance(one, SparseBatch)
            ids, w = batch.row(row)
            assert ids.tobytes() + w.tobytes() == one.indices.tobytes() + one.weights.tobytes()
        elif isinstance(batch, TokenBatch):
            assert isinstance(one, TokenBatch)
            assert batch.row(row).tobytes() == one.tokens.tobytes()
        else:
            assert isinstance(one, np.ndarray)
            assert batch[row].tobytes() == one[0].tobytes()


_SUBPROCESS = """
import hashlib, json, sys
from engramdb.spaces.builtin import default_embedders
from engramdb.spaces.protocol import SparseBatch, TokenBatch
import numpy as np
texts = json.loads(sys.stdin.read())
out = {}
for k, e in default_embedders().items():
    r = e.embed(texts)
    if isinstance(r, SparseBatch):
        b = r.indptr.tobytes() + r.indices.tobytes() + r.weights.tobytes()
    elif isinstance(r, TokenBatch):
        b = r.tokens.tobytes() + r.offsets.tobytes()
    else:
        b = r.tobytes()
    out[k] = hashlib.sha256(b).hexdigest()
print(json.dumps(out))
"""


def test_deterministic_across_processes() -> None:
    texts = TEXTS + random_texts(200, seed=11)
    here = default_embedders()
    for e in here.values():  # a different history from the child's: other texts first
        e.embed(random_texts(100, seed=12))
    mine = {k: hashlib.sha256(as_bytes(e.embed(texts))).hexdigest() for k, e in here.items()}
    env = dict(os.environ, PYTHONHASHSEED="12345")
    res = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    theirs = json.loads(res.stdout.strip().splitlines()[-1])
    assert theirs == mine


# --- analyzer ---------------------------------------------------------------------------------


def test_analyzer_terms() -> None:
    a = an.Analyzer()
    text = "Don't you think John's RUNNING shoes (size 10.5) are the best? I'll buy them; snake_case"
    assert a.terms(text) == [
        "think",
        "john",
        "run",
        "shoe",
        "size",
        "10",
        "5",
        "best",
        "buy",
        "snake",
        "case",
    ]
    assert a.terms("the and of to it was") == []  # stop words only
    assert a.terms("Don\u2019t \u2018quoted\u2019 students' work") == ["quot", "student", "work"]
    assert a.terms("we'll see the shell") == ["see", "shell"]  # "we'll" is not "well"
    assert a.terms("connection connected connecting connects") == ["connect"] * 4
    assert an.Analyzer(stem=False).terms("Running shoes") == ["running", "shoes"]
    assert an.Analyzer(stopwords=[]).terms("The cats") == ["the", "cat"]
    assert an.Analyzer(stopwords=["Cats"]).terms("The cats") == ["the"]


def test_analyzer_unicode() -> None:
    a = an.Analyzer()
    assert a.terms("Ｆｕｌｌｗｉｄｔｈ ﬁne") == a.terms("fullwidth fine") == ["fullwidth", "fine"]
    assert a.terms(unicodedata.normalize("NFD", "café naïve")) == a.terms("café naïve")
    assert a.terms("Ελληνικά русский 日本語 🎉") == ["ελληνικά", "русский", "日本語"]
    assert an.tokenize("x²") == ["x2"]  # NFKC folds superscripts


def test_stop_words_are_the_snowball_list() -> None:
    sw = an.SNOWBALL_STOPWORDS
    assert len(sw) == 174
    assert {"the", "and", "don't", "i'm", "ourselves", "cannot", "not"} <= sw
    assert not {"us", "mine", "will", "can", "just"} & sw  # the Snowball list keeps these
    assert all(w == w.lower() and an.tokenize(w) == [w] for w in sw)


def test_term_ids_are_stable_31_bit() -> None:
    # pinned: the ids are an on-disk format (BLAKE2b-64, person "engramdb.term", masked to 31 bits)
    assert [an.term_id(t) for t in ["run", "berlin", "café", ""]] == [
        1992315691,
        148598944,
        1104448535,
        1486179428,
    ]
    a = an.Analyzer()
    ids = a.term_ids("Running runners run quickly")
    assert ids == [an.term_id(t) for t in a.terms("Running runners run quickly")]
    assert ids[0] == ids[2] == an.term_id("run")
    rng = np.random.default_rng(0)
    many = [an.term_id(f"w{i}") for i in rng.integers(0, 10**9, 5000)]
    assert all(0 <= i < 2**31 for i in many)


# --- dense ------------------------------------------------------------------------------------


def test_dense_paraphrase_ranks_first(embs: dict[str, Embedder]) -> None:
    docs = TEXTS[:4]
    dense = embs["dense"]
    D = dense.embed(docs)
    Q = dense.embed(
        [
            "Last year I relocated to Berlin because I got a new job",
            "sushi is my favorite food",
            "when is the budget meeting? Thursday?",
            "our dog Biscuit came from an animal shelter",
        ]
    )
    assert isinstance(D, np.ndarray) and isinstance(Q, np.ndarray)
    top = kernels.topk(Q, D, 1, "dot")
    np.testing.assert_array_equal(top.indices[:, 0], [0, 1, 2, 3])
    assert (top.scores[:, 0] > 0.3).all()


def test_dense_features() -> None:
    e = HashingEmbedder(384)
    X = e.embed(["meeting", "meetings", "banana", "what is it", "what is it"])
    cos = X @ X.T
    assert cos[0, 1] > 0.3 > abs(cos[0, 2])  # char n-grams bring morphological neighbours close
    assert cos[3, 4] == pytest.approx(1.0) and np.linalg.norm(X[3]) > 0  # stop-word-only text kept
    # word order matters through bigrams, tf is sublinear
    Y = e.embed(["new york pizza", "york new pizza", "pizza", "pizza pizza pizza"])
    assert 0.5 < float(Y[0] @ Y[1]) < 0.999
    # "pizza pizza pizza" = (1 + ln 3) * v(pizza) + W_BIGRAM * (1 + ln 2) * e("pizza pizza")
    _, _, bucket, value = hashing.word_features(["pizza"], 384, hashing.W_WORD, hashing.W_CHAR)
    expect = np.bincount(bucket, weights=value, minlength=384) * (1 + np.log(3))
    h = np.array([hashing.word_hash("pizza")], np.uint64)
    b, sign = hashing.bucket_sign(hashing.splitmix64(h * np.uint64(0x9E3779B97F4A7C15) + h), 384)
    expect[b] += sign * hashing.W_BIGRAM * (1 + np.log(2))
    np.testing.assert_allclose(Y[3], expect / np.linalg.norm(expect), atol=1e-6)
    single = np.bincount(bucket, weights=value, minlength=384)
    np.testing.assert_allclose(Y[2], single / np.linalg.norm(single), atol=1e-6)
    # pinned values of one text (the hashing scheme is an on-disk format)
    d = e.embed(["The quick brown fox"])[0]
    nz = np.flatnonzero(d)
    np.testing.assert_array_equal(nz[:6], [4, 27, 28, 33, 47, 59])
    np.testing.assert_allclose(
        d[nz[:6]], [-0.121051, -0.121051, 0.121051, -0.121051, -0.121051, 0.121051], atol=1e-6
    )


def test_ngram_hashes_vectorised_match_definition() -> None:
    words = ["a", "hi", "naïve", "x" * 60]
    h, owner = hashing.ngram_hashes(words)
    expect: list[int] = []
    mask = (1 << 64) - 1
    for w in words:
        m = "<" + w + ">" if len(w) <= hashing.MAX_NGRAM_CHARS else "<" + w[: hashing.MAX_NGRAM_CHARS]
        for n in hashing.NGRAM_SIZES:
            for p in range(len(m) - n + 1):
                x = (n * 0x9E3779B97F4A7C15) & mask
                for ch in m[p : p + n]:
                    x = ((x ^ ord(ch)) * 0x100000001B3) & mask
                x ^= x >> 30
                x = (x * 0xBF58476D1CE4E5B9) & mask
                x ^= x >> 27
                x = (x * 0x94D049BB133111EB) & mask
                x ^= x >> 31
                expect.append(x)
    assert h.tolist() == expect
    assert (np.diff(owner) >= 0).all() and owner[-1] == 3


def test_dense_table_reset_keeps_results(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = random_texts(200, seed=5) + TEXTS
    ref = HashingEmbedder().embed(texts)
    monkeypatch.setattr(hashing, "TABLE_WORDS", 5)
    e = HashingEmbedder()
    for a in range(0, len(texts), 20):
        np.testing.assert_array_equal(e.embed(texts[a : a + 20]), ref[a : a + 20])
    assert len(e._table.slots) < 200


# --- lexical ----------------------------------------------------------------------------------


def test_lexical_weights_are_raw_tf(embs: dict[str, Embedder]) -> None:
    out = embs["lexical"].embed(["Running runners run quickly", "the of and"])
    assert isinstance(out, SparseBatch)
    ids, w = out.row(0)
    got = dict(zip(ids.tolist(), w.tolist()))
    assert got == {an.term_id("run"): 2.0, an.term_id("runner"): 1.0, an.term_id("quick"): 1.0}
    assert out.row(1)[0].size == 0  # stop words removed


def test_lexical_stemmed_variant_matches(embs: dict[str, Embedder]) -> None:
    docs = [
        "She runs every morning before work",
        "The cat sleeps on the sofa",
        "Connecting the printer to the network",
        "We talked about the weather",
    ]
    lex = embs["lexical"]
    D = lex.embed(docs)
    assert isinstance(D, SparseBatch)
    for query, want in [("running in the mornings", 0), ("sleeping cats", 1), ("printer connections", 2)]:
        q = lex.embed([query])
        assert isinstance(q, SparseBatch)
        top = kernels.jaccard_topk(q.indices, D.indptr, D.indices, 2)
        assert top.indices[0] == want and top.scores[0] > 0 and top.scores[1] < top.scores[0]
        wtop = kernels.jaccard_topk(
            q.indices, D.indptr, D.indices, 1, weights=D.weights, query_weights=q.weights
        )
        assert wtop.indices[0] == want


def test_lexical_long_text(embs: dict[str, Embedder]) -> None:
    text = " ".join(random_texts(20_000, seed=2))
    out = embs["lexical"].embed([text])
    assert isinstance(out, SparseBatch)
    assert out.weights.sum() == len(an.Analyzer().terms(text))


# --- HDC --------------------------------------------------------------------------------------


def test_hdc_hamming_tracks_dense_angle(embs: dict[str, Embedder]) -> None:
    texts = random_texts(200, seed=7)
    dense, hdc = embs["dense"], embs["hdc"]
    D = dense.embed(texts)
    H = hdc.embed(texts)
    assert isinstance(D, np.ndarray) and isinstance(H, np.ndarray)
    iu = np.triu_indices(len(texts), 1)
    cos = (D.astype(np.float64) @ D.T.astype(np.float64))[iu]
    ham = kernels.hamming_distances(H, H).astype(np.float64)[iu]
    assert cos.max() - cos.min() > 0.8  # the texts do span near and far pairs
    assert spearman(cos, -ham) > 0.8
    # E[hamming / bits] = angle / pi, with sd <= sqrt(0.25 / 1024) ~ 0.016
    angle = np.arccos(np.clip(cos, -1, 1)) / np.pi
    assert abs(float(np.mean(ham / 1024 - angle))) < 0.02  # one projection draw: pairs share its errors
    assert float(np.abs(ham / 1024 - angle).max()) < 0.1


def test_hdc_projection(embs: dict[str, Embedder]) -> None:
    hdc = embs["hdc"]
    assert isinstance(hdc, BinaryHDCEmbedder)
    D = embs["dense"].embed(TEXTS)
    assert isinstance(D, np.ndarray)
    codes = hdc.project(D)
    np.testing.assert_array_equal(codes, hdc.embed(TEXTS))
    ref = np.packbits(D.astype(np.float64) @ hdc._proj64 > 0, axis=1)  # float64 signs, packbits order
    np.testing.assert_array_equal(codes, ref)
    assert not codes[TEXTS.index("")].any()
    other = BinaryHDCEmbedder(embs["dense"], 256, seed=99).embed(TEXTS[:2])
    assert other.shape == (2, 32) and (other != codes[:2, :32]).any()
    with pytest.raises(ValueError, match="dense"):
        hdc.project(D[:, :10])
    with pytest.raises(ValueError, match="NaN"):
        hdc.project(np.full((1, 384), np.nan, np.float32))


def test_hdc_near_zero_projections_use_float64() -> None:
    e = BinaryHDCEmbedder(HashingEmbedder(384), 1024)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 384))
    r = e._cols64[rng.integers(0, 1024, 64)]
    x -= (np.einsum("ij,ij->i", x, r))[:, None] * r  # orthogonal to one column each: projection ~ 0
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x32 = x.astype(np.float32)
    ref = np.packbits(x32.astype(np.float64) @ e._proj64 > 0, axis=1)
    np.testing.assert_array_equal(e.project(x32), ref)
    for t in range(0, 64, 7):
        np.testing.assert_array_equal(e.project(x32[t : t + 1]), ref[t : t + 1])


def test_hdc_checks_arguments(embs: dict[str, Embedder]) -> None:
    with pytest.raises(ValueError, match="dense"):
        BinaryHDCEmbedder(embs["lexical"])
    with pytest.raises(ValueError, match="multiple of 8"):
        BinaryHDCEmbedder(embs["dense"], 1001)
    assert BinaryHDCEmbedder(embs["dense"]).name == embs["hdc"].name  # same config, same space


# --- tokens -----------------------------------------------------------------------------------


def test_tokens_per_term(embs: dict[str, Embedder]) -> None:
    tok = embs["tokens"]
    words = ["run", "running", "runner", "apple", "happiness", "happy", "unhappy"]
    out = tok.embed(words + ["the of and"])
    assert isinstance(out, TokenBatch)
    np.testing.assert_array_equal(out.offsets, np.arange(len(words) + 2).clip(max=len(words)))
    V = out.tokens
    cos = V @ V.T
    assert cos[0, 1] == pytest.approx(1.0)  # same stem, same vector
    assert cos[4, 5] == pytest.approx(1.0)  # happiness / happy -> "happi"
    assert cos[0, 2] > 0.15 > abs(cos[0, 3])  # runner shares n-grams with run, apple does not
    assert cos[5, 6] > 0.3  # unhappy / happy
    text = "The runner's shoes, the runner's socks"
    t2 = tok.embed([text])
    assert isinstance(t2, TokenBatch)
    assert t2.tokens.shape[0] == len(an.Analyzer().terms(text)) == 4


def test_tokens_maxsim_paraphrase_ranks_first(embs: dict[str, Embedder]) -> None:
    docs = TEXTS[:4]
    tok = embs["tokens"]
    D = tok.embed(docs)
    assert isinstance(D, TokenBatch)
    for query, want in [
        ("Last year I relocated to Berlin because I got a new job", 0),
        ("sushi is my favorite food", 1),
        ("when is the budget meeting?", 2),
        ("our dog came from an animal shelter", 3),
    ]:
        q = tok.embed([query])
        assert isinstance(q, TokenBatch)
        scores = kernels.maxsim(q.tokens, D.tokens, D.offsets)
        assert int(np.argmax(scores)) == want


def test_tokens_table_reset_keeps_results(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = random_texts(100, seed=6) + TEXTS
    ref = TokenEmbedder().embed(texts)
    monkeypatch.setattr(token_space, "TABLE_TERMS", 3)
    e = TokenEmbedder()
    got = [e.embed(texts[a : a + 10]) for a in range(0, len(texts), 10)]
    np.testing.assert_array_equal(np.concatenate([g.tokens for g in got]), ref.tokens)


# --- robustness -------------------------------------------------------------------------------


@pytest.mark.parametrize("space", list(KINDS))
def test_unicode_and_long_text(embs: dict[str, Embedder], space: str) -> None:
    e = embs[space]
    texts = [
        "Ｃａｆé ﬁle",
        "Cafe\u0301 file",  # NFD accent, plain letters: same tokens as the line above after NFKC
        "Ελληνικά русский 日本語のテキスト 🎉 \u200b\u0000 \ud7ff",
        " ".join(random_texts(10_000, seed=9)),  # ~70,000 words
        "x" * 100_000,  # one very long token
        "a" * 5 + "'" * 5 + "b",
    ]
    out = e.embed(texts)
    check_invariants(space, e, out, texts)
    one, two = (e.embed([texts[0]]), e.embed([texts[1]]))
    assert as_bytes(one) == as_bytes(two)


def test_thread_safe(embs: dict[str, Embedder]) -> None:
    texts = random_texts(400, seed=8)
    fresh = default_embedders()
    ref = {k: as_bytes(e.embed(texts)) for k, e in default_embedders().items()}
    got: dict[tuple[str, int], bytes] = {}

    def work(k: str, i: int) -> None:
        got[(k, i)] = as_bytes(fresh[k].embed(texts))

    threads = [threading.Thread(target=work, args=(k, i)) for k in fresh for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[(k, i)] == ref[k] for k in fresh for i in range(3))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abcde fgh'.,ÉéßIİ0123", max_size=40), min_size=1, max_size=4))
def test_lexical_single_text_path_equals_the_batch_path(texts: list[str]) -> None:
    emb = LexicalEmbedder()
    batch = emb.embed(texts)
    for i, text in enumerate(texts):
        one = emb.embed([text])  # the one-text (query) path
        ids, w = batch.row(i)
        assert one.indices.tolist() == ids.tolist() and one.weights.tolist() == w.tolist()
        assert one.indices.dtype == np.int32 and one.weights.dtype == np.float32 and one.indptr.dtype == np.int64

"""Ingest analyses a batch once, in whole-batch passes (issue 28), and stores exactly what the
text-by-text path stored: the same terms, the same vectors bit for bit, the same passages."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

import engramdb
import numpy as np
from engramdb.ingest.embedding import vectors_for
from engramdb.model.tuning import Tuning
from engramdb.spaces.analyzer import Analyzer, analysis_scope, tokenize, tokenize_batch
from engramdb.spaces.hashing import HashingEmbedder
from engramdb.spaces.lexical_space import LexicalEmbedder
from engramdb.spaces.passages import SPACE_CODEPOINTS, passages
from engramdb.spaces.protocol import Embedding, SparseBatch
from engramdb.spaces.schema import Schema, Space
from engramdb.spaces.token_space import TokenEmbedder
from engramdb.storage.vectors import quantize_tokens
from hypothesis import given, settings
from hypothesis import strategies as st

WORDS = ["the", "of", "I", "don't", "Don\u2019t", "not", "never", "cannot", "what", "is", "it", "cats", "running",
         "runs", "caf\u00e9", "\uff26\uff55\uff4c\uff4c", "snake_case", "3.14", "john's", "students'", "we'll",
         "\u65e5\u672c\u8a9e", "x", "!", "?", ".", "\n", "I'm", "none", "a" * 60]
TEXTS = st.lists(st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join), min_size=1, max_size=12)


class _Counted(str):
    """A text that counts how often it is lowercased (the analyzer's first step on every pass)."""

    passes = 0

    def lower(self) -> str:
        type(self).passes += 1
        return str.lower(self)


def test_a_batch_is_tokenised_once_for_every_space_that_reads_its_words() -> None:
    db = engramdb.open()
    try:
        texts = [_Counted("I don't like the running cats, said John"), _Counted("what is it")]
        _Counted.passes = 0
        vectors_for(db.schema, db.embedders, texts, [{}] * len(texts), Tuning())
        # hashing (dense), lexical and tokens all read the analyzer's tokens: one pass, not three
        assert _Counted.passes == len(texts)
    finally:
        db.close()


def test_the_batch_memo_lives_only_inside_the_scope() -> None:
    texts = ["one text", "another text"]
    with analysis_scope():
        first = tokenize_batch(texts)
        assert tokenize_batch(list(texts)) is first
        with analysis_scope():  # nested: the outer memo still answers
            assert tokenize_batch(texts) is first
        assert tokenize_batch(texts) is first
        terms = Analyzer().terms_batch(texts)
        assert Analyzer().terms_batch(texts) is terms  # the lexical and token spaces share their terms
        assert Analyzer(stem=False).terms_batch(texts) is not terms
    assert tokenize_batch(texts) is not first
    assert [first.words[c] for c in first.codes] == tokenize(texts[0]) + tokenize(texts[1])
    assert first.counts.tolist() == [2, 2]


@settings(max_examples=60, deadline=None)
@given(TEXTS)
def test_batch_analysis_gives_what_text_by_text_analysis_gives(texts: list[str]) -> None:
    for analyzer in (Analyzer(), Analyzer(stopwords=(), stem=False), Analyzer(stopwords={"Cats", "the"})):
        tb = analyzer.terms_batch(texts)
        per = [analyzer.terms(t) for t in texts]
        assert tb.counts.tolist() == [len(p) for p in per]
        assert [tb.words[c] for c in tb.codes] == [t for p in per for t in p]
        lex = LexicalEmbedder(analyzer).embed(texts)
        for r, text in enumerate(texts):
            one = LexicalEmbedder(analyzer).embed([text])  # the query path: a dict count per text
            a, b = lex.indptr[r], lex.indptr[r + 1]
            assert lex.indices[a:b].tobytes() == one.indices.tobytes()
            assert lex.weights[a:b].tobytes() == one.weights.tobytes()
    for version in (1, 2):
        emb = HashingEmbedder(dim=64, version=version)
        batch = emb.embed(texts)
        alone = np.concatenate([HashingEmbedder(dim=64, version=version).embed([t]) for t in texts])
        assert batch.tobytes() == alone.tobytes()
    tok = TokenEmbedder(dim=16).embed(texts)
    for r, text in enumerate(texts):
        alone_tok = TokenEmbedder(dim=16).embed([text])
        assert tok.tokens[tok.offsets[r]:tok.offsets[r + 1]].tobytes() == alone_tok.tokens.tobytes()


def test_a_stop_word_only_text_keeps_its_words_in_the_hashing_space_only_by_itself() -> None:
    # "what is it" is all stop words: it keeps them; its neighbours in the batch keep only content words
    emb = HashingEmbedder(dim=64)
    texts = ["what is it", "I don't like cats", "the of", ""]
    batch = emb.embed(texts)
    assert batch.tobytes() == np.concatenate([HashingEmbedder(dim=64).embed([t]) for t in texts]).tobytes()
    assert np.count_nonzero(batch[3]) == 0 and all(np.linalg.norm(batch[i]) > 0.99 for i in range(3))


def test_space_codepoints_are_what_str_and_re_call_whitespace() -> None:
    space = re.compile(r"\s")
    assert list(SPACE_CODEPOINTS) == [c for c in range(0x110000) if chr(c).isspace()]
    assert list(SPACE_CODEPOINTS) == [c for c in range(0x110000) if space.match(chr(c))]


_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")


def _passages_reference(text: str) -> list[tuple[int, int]]:
    """The cut as first written, one match object per word (the oracle the numpy passes must equal)."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    n = len(words)
    if n <= 200:
        return [(0, len(text))]
    starts = [i == 0 or bool(_SENTENCE_END.search(text[words[i - 1][0]:words[i - 1][1]]))
              or "\n" in text[words[i - 1][1]:words[i][0]] for i in range(n)]
    spans = []
    s = 0
    while True:
        end = s + 200
        if end >= n:
            spans.append((words[s][0], words[n - 1][1]))
            break
        cut = next((j for j in range(end, s + 100, -1) if starts[j]), end)
        spans.append((words[s][0], words[cut - 1][1]))
        if n - cut <= 25:
            spans[-1] = (words[s][0], words[n - 1][1])
            break
        lo = max(s + 1, cut - 50)
        s = next((j for j in range(lo, cut) if starts[j]), lo)
    return spans


PIECES = ["w", "ab", "x.", "y!", "z?", '."', "?)", "!]'", ")", ".x", "\u2026", "\u00e9.", "\u65e5\u672c", "a\U0001F600."]
GAPS = [" ", "\n", "  ", "\t", "\u00a0", "\u3000", " \n ", "\x1c", "\r\n", "\u2009", "\u3001", "\u2028"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(GAPS)), min_size=150, max_size=700),
       st.sampled_from(["", " ", "\n\n"]))
def test_passages_cut_where_the_word_by_word_cut_did(pieces: list[tuple[str, str]], lead: str) -> None:
    text = lead + "".join(p + g for p, g in pieces)
    assert passages(text) == _passages_reference(text)


def _quantize_reference(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(tokens, np.float32)
    scale = (np.abs(x).max(axis=1) / np.float32(127.0)) if len(x) else np.zeros(0, np.float32)
    q = np.divide(x, scale[:, None], out=np.zeros_like(x), where=scale[:, None] > 0)
    return np.clip(np.rint(q), -127, 127).astype(np.int8), scale.astype(np.float32)


def test_token_codes_and_scales_are_the_bytes_they_were() -> None:
    rng = np.random.default_rng(7)
    cases = [rng.standard_normal((300, 32)).astype(np.float32), np.zeros((2, 8), np.float32),
             -np.zeros((2, 8), np.float32), np.zeros((0, 8), np.float32),
             (rng.standard_normal((50, 8)) * 1e-44).astype(np.float32),
             np.array([[127, -127, 63.5, 0.5], [1, -1, 0.5, -0.5], [-5, 0, 0, 0]], np.float32),
             TokenEmbedder(dim=32).embed(["the quick brown fox jumps over the lazy dog", "it's not cats"]).tokens]
    blocks = rng.standard_normal((9000, 8)).astype(np.float32)  # several blocks, zero rows across a boundary
    blocks[4090:4100] = 0.0
    cases.append(blocks)
    for x in cases:
        (q, s), (rq, rs) = quantize_tokens(x), _quantize_reference(x)
        assert q.dtype == rq.dtype and q.shape == rq.shape and q.tobytes() == rq.tobytes()
        assert s.dtype == rs.dtype and s.tobytes() == rs.tobytes()


def _long_memory(i: int) -> str:
    sentences = [f"Turn {i} sentence {j} talks about {topic} and the garden {i % 3}." for j, topic in
                 enumerate(["tomatoes", "rain", "a cat", "the bus", "soup", "chess"] * 12)]
    return " ".join(sentences)  # ~700 words: several passages each


def test_bm25_over_passages_is_the_same_indexed_together_or_one_memory_at_a_time() -> None:
    texts = [_long_memory(i) for i in range(6)] + ["a short turn about chess", "tomatoes in the rain"]
    together, apart = engramdb.open(), engramdb.open()
    try:
        ids_t = together.add_many([{"content": t, "namespace": "n", "id": f"m{i}"} for i, t in enumerate(texts)])
        for i, t in enumerate(texts):  # a search after each add: the index takes one new row at a time
            apart.add_many([{"content": t, "namespace": "n", "id": f"m{i}"}])
            apart.search("garden", namespace="n", k=3)
        assert list(ids_t) == [f"m{i}" for i in range(len(texts))]
        for q in ("turn 3 sentence 40 chess", "garden 2 soup", "tomatoes rain", "the bus cat"):
            a = [(h.id, h.score) for h in together.search(q, namespace="n", k=8)]
            b = [(h.id, h.score) for h in apart.search(q, namespace="n", k=8)]
            assert a == b and len(a) == 8
    finally:
        together.close()
        apart.close()


class _CountingLexical(LexicalEmbedder):
    """The lexical space's embedder, counting its calls."""

    calls = 0

    def embed(self, texts: Sequence[str]) -> SparseBatch:
        type(self).calls += 1
        return super().embed(texts)


def test_the_bm25_index_analyses_a_syncs_long_memories_in_one_call() -> None:
    base = engramdb.open()
    embedders = {**base.embedders, "lexical": _CountingLexical()}
    base.close()
    db = engramdb.open(embedders=embedders)
    try:
        db.add_many([{"content": _long_memory(i), "namespace": "n"} for i in range(6)])
        _CountingLexical.calls = 0
        hits = db.search("garden 2 soup", namespace="n", k=3)  # the first search builds the BM25 index
        assert len(hits) == 3
        # the query's terms, and every long memory's passages at once (a call per memory before: 7)
        assert _CountingLexical.calls <= 2
    finally:
        db.close()


class _CountingSpace(Space):
    """A space counting how often a batch is checked against it."""

    checks = 0

    def check(self, value: Any, n: int) -> Embedding:
        type(self).checks += 1
        return super().check(value, n)


def test_each_space_checks_a_new_batch_once() -> None:
    db = engramdb.open()
    try:
        schema = Schema([_CountingSpace(**dataclasses.asdict(s)) for s in db.schema], main=db.schema.main)
        texts = ["I don't like the running cats", "what is it", "soup in the rain"]
        _CountingSpace.checks = 0
        got = vectors_for(schema, db.embedders, texts, [{}] * len(texts), Tuning())
        assert list(got) == list(schema.spaces) and all(len(v) == len(texts) for v in got.values())
        assert _CountingSpace.checks == len(schema.spaces)  # twice each before: every token read again
    finally:
        db.close()

"""Passages (C7): the cut of a long memory, BM25 over passages, passage vectors, and the hit's offsets."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import engramdb
import numpy as np
from engramdb.index.bm25 import Bm25Index
from engramdb.spaces.passages import OVERLAP, WORDS, passages
from hypothesis import given, settings
from hypothesis import strategies as st

FILLER = "The market report covered rain in the hills and traffic on the ring road that week. "


def _words(text: str, span: tuple[int, int]) -> list[str]:
    return text[span[0]:span[1]].split()


def test_a_short_text_is_one_passage() -> None:
    assert passages("") == [(0, 0)]
    assert passages("one two three.") == [(0, 14)]
    text = " ".join(["w"] * WORDS)
    assert passages(text) == [(0, len(text))]


def test_a_long_text_is_cut_at_sentence_ends_with_overlap() -> None:
    text = FILLER * 60  # 16 words a sentence, 960 words
    spans = passages(text)
    assert len(spans) >= 5
    assert spans[0][0] == 0 and spans[-1][1] == len(text.rstrip())
    for i, (a, b) in enumerate(spans):
        n = len(_words(text, (a, b)))
        assert n <= WORDS + OVERLAP // 2 and (n >= WORDS // 2 or i == len(spans) - 1)  # the tail may be short
        assert text[b - 1] == "."  # every passage ends a sentence
        assert a == 0 or text[a - 2] == "."  # and starts one
    for (a0, b0), (a1, _) in itertools.pairwise(spans):
        shared = len(_words(text, (a1, b0)))
        assert a0 < a1 < b0 and 0 < shared <= OVERLAP


def test_without_sentences_the_cut_is_by_count() -> None:
    text = " ".join(f"w{i}" for i in range(500))
    spans = passages(text)
    assert [_words(text, s)[0] for s in spans] == ["w0", "w150", "w300"]
    assert [len(_words(text, s)) for s in spans] == [200, 200, 200]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.sampled_from([".", "!", "?", "", "", ","]),
                          st.sampled_from([" ", "\n", "  "])), min_size=1, max_size=80))
def test_passages_cover_every_word_in_order(sentences: list[tuple[int, str, str]]) -> None:
    text = "".join(" ".join(f"x{i}" for i in range(n)) + end + sep for n, end, sep in sentences)
    spans = passages(text)
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    covered = {i for a, b in spans for i, (s, e) in enumerate(words) if a <= s and e <= b}
    assert covered == set(range(len(words)))
    assert all(a0 < a1 and b0 < b1 for (a0, b0), (a1, b1) in itertools.pairwise(spans))
    assert passages(text) == spans  # a pure function: a hit's offsets are recomputed from content


def _bm25_reference(docs: list[dict[int, float]], keys: list[int], q: dict[int, float], k1: float, b: float
                    ) -> dict[int, float]:
    """Lucene BM25 in float64 over passage documents, each key at its best passage."""
    n = len(docs)
    avg = sum(sum(d.values()) for d in docs) / n
    out: dict[int, float] = {}
    for d, key in zip(docs, keys):
        s = 0.0
        for t, qc in q.items():
            df = sum(1 for e in docs if t in e)
            if t in d:
                idf = np.log1p((n - df + 0.5) / (df + 0.5))
                tf = d[t]
                s += qc * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * sum(d.values()) / avg))
        out[key] = max(out.get(key, 0.0), s)
    return out


def test_bm25_over_passages_scores_each_key_by_its_best_passage() -> None:
    rng = np.random.default_rng(5)
    docs, keys, parts = [], [], []
    for key in range(40):
        for part in range(int(rng.integers(1, 4))):  # a key's passages are consecutive documents
            terms = rng.choice(30, size=int(rng.integers(1, 8)), replace=False)
            docs.append({int(t): float(rng.integers(1, 4)) for t in terms})
            keys.append(100 + key)
            parts.append(part)
    ix = Bm25Index()
    half = len(docs) // 2
    while keys[half] == keys[half - 1]:
        half += 1
    for lo, hi in ((0, half), (half, len(docs))):  # two chunks
        rows = docs[lo:hi]
        ptr = np.cumsum([0] + [len(d) for d in rows])
        terms = np.array([t for d in rows for t in sorted(d)], np.int32)
        counts = np.array([d[t] for d in rows for t in sorted(d)], np.float32)
        ix.add(np.array(keys[lo:hi]), ptr, terms, counts, np.array(parts[lo:hi]))
    q = {3: 1.0, 7: 2.0, 11: 1.0}
    want = _bm25_reference(docs, keys, q, ix.k1, ix.b)
    qt, qc = np.array(list(q), np.int32), np.array(list(q.values()), np.float32)
    got_k, got_s, got_p = ix.search_parts(qt, qc, 10)
    assert len(set(got_k.tolist())) == len(got_k) == 10  # each key once
    best = sorted(want.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    np.testing.assert_allclose(got_s, [s for _, s in best], rtol=1e-5)
    every = np.array(sorted(want), np.int64)
    scores, sparts = ix.score_keys(qt, qc, np.concatenate([every, [999]]))
    np.testing.assert_allclose(scores[:-1], [want[k] for k in every.tolist()], rtol=1e-5)
    assert scores[-1] == 0.0  # a key not indexed
    for k, p in zip(got_k.tolist(), got_p.tolist()):  # search and score_keys agree on the passage
        assert sparts[every.tolist().index(k)] == p
    again = Bm25Index.from_arrays(ix.arrays())  # the passage numbers survive a save
    np.testing.assert_array_equal(again.search_parts(qt, qc, 10)[2], got_p)


def _store(path: Path) -> engramdb.Store:
    return engramdb.open(path, dedup="off")


def test_a_long_memory_is_found_by_its_passage_and_the_hit_says_where(tmp_path: Path) -> None:
    long = FILLER * 30 + "Later she said the violin teacher moved to Lisbon in March. " + FILLER * 20
    with _store(tmp_path / "s") as db:
        db.add_many([{"id": "long", "content": long, "namespace": "n"},
                     *({"id": f"s{i}", "content": f"note {i} about gardens and tomatoes", "namespace": "n"}
                       for i in range(20))])
        hits = db.search("Where did the violin teacher move to?", namespace="n", k=3, explain=True)
        assert hits[0].id == "long" and hits[0].passage is not None
        a, b = hits[0].passage
        assert "violin teacher moved to Lisbon" in long[a:b] and b - a < len(long) // 2
        assert hits[0].explain is not None and isinstance(hits[0].explain["passage"], int)
        assert all(h.passage is None for h in hits[1:])  # short memories are one passage
        assert db.stats()["passages"]["dense"]["passages"] == len(passages(long))
    with _store(tmp_path / "s") as db:  # saved and adopted, the same answer
        again = db.search("Where did the violin teacher move to?", namespace="n", k=3)
        assert [(h.id, h.passage) for h in again] == [(h.id, h.passage) for h in hits]
        assert db.stats()["index_files"]["passages-dense"] == "adopted"
        assert db.stats()["index_files"]["bm25-lexical"] == "adopted"


def test_passage_vectors_pick_the_nearest_passage(tmp_path: Path) -> None:
    """The dense method alone (BM25 weighed out): the long memory's best passage is the one about
    the query, and its similarity is that passage's own, not the whole text's."""
    topic = "The orchestra rehearsed the violin concerto with the new conductor on Friday. "
    long = FILLER * 25 + topic * 3 + FILLER * 25
    with _store(tmp_path / "s") as db:
        db.add_many([{"id": "long", "content": long, "namespace": "n"},
                     {"id": "short", "content": "traffic was heavy", "namespace": "n"}])
        hit = db.search("orchestra violin concerto conductor rehearsal", namespace="n", k=1, explain=True,
                        weights={"bm25": 0.0})[0]
        whole = db.search("orchestra violin concerto conductor rehearsal", namespace="n", k=2,
                          strategy="dense_only", explain=True)
    assert hit.id == "long" and hit.passage is not None
    assert "orchestra" in long[hit.passage[0]:hit.passage[1]]
    assert hit.explain is not None and whole[0].explain is not None
    own = next(h for h in whole if h.id == "long").explain
    assert own is not None
    assert hit.explain["methods"]["vector"]["score"] > own["raw"] + 0.05  # the passage beats the blur


def test_maxsim_scores_a_long_memory_by_its_best_window() -> None:
    """The pipeline's MaxSim rerank: a long memory holding the query's two words 400 terms apart
    does not match them both (no window holds both), while a short memory saying both does."""
    filler = " ".join(f"topic{i} market report covered rain" for i in range(80))
    db = engramdb.open(None)
    db.add_many([{"id": "short", "content": "violin lessons", "namespace": "n"},
                 {"id": "long", "content": "violin " + filler + " lessons", "namespace": "n"},
                 *({"id": f"x{i}", "content": f"garden {i} tomatoes", "namespace": "n"} for i in range(10))])
    hits = {h.id: h for h in db.search("violin lessons", namespace="n", k=3, strategy="pipeline", explain=True)}
    maxsim = {i: h.explain["methods"]["maxsim"]["score"] for i, h in hits.items() if h.explain is not None}
    assert maxsim["short"] > 0.99
    assert 0.4 < maxsim["long"] < 0.8  # one of the two words matched exactly, not both
    db.close()

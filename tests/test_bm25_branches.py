"""BM25's shared buffers (H1, issue 26: an append writes past the newest version's rows in place)
attacked as the store uses them (stop 39 adversary): two versions appended from one older version
with DIFFERENT documents (the second must copy, never write over the first's rows; with the same
documents an overwrite would pass unseen), and readers of older versions (snapshots) searching
while a writer appends in another thread. Every version must answer as an index built at once
from its own documents, bit for bit, with and without a filter."""

from __future__ import annotations

import threading

import numpy as np
from engramdb.index.bm25 import Bm25Index
from test_bm25 import csr

Docs = list[tuple[np.ndarray, np.ndarray]]


def docs_of(rng: np.random.Generator, n: int, vocab: tuple[int, int]) -> Docs:
    lo, hi = vocab
    out = []
    for _ in range(n):
        t = np.unique(rng.integers(lo, hi, rng.integers(1, 8))).astype(np.int32)
        out.append((t, rng.integers(1, 5, len(t)).astype(np.float32)))
    return out


def built(docs: Docs) -> Bm25Index:
    ix = Bm25Index()
    ix.add(np.arange(len(docs)), *csr(docs))
    return ix


def answers(ix: Bm25Index, mask: np.ndarray) -> list[bytes]:
    out = []
    for q in (np.array([1, 5, 9], np.int32), np.array([40, 41, 42, 43], np.int32), np.arange(0, 60, 7, dtype=np.int32)):
        qc = np.ones(len(q), np.float32)
        for allowed in (None, mask):
            out += [x.tobytes() for x in ix.search_parts(q, qc, 25, allowed=allowed)]
        out += [x.tobytes() for x in ix.score_keys(q, qc, np.arange(len(ix)))]
    return out


def test_two_branches_from_one_version_each_read_only_their_own_documents() -> None:
    rng = np.random.default_rng(3)
    base_docs = docs_of(rng, 40, (0, 30))
    base = Bm25Index()
    for a in range(0, 40, 8):  # grown by appends: its buffers have room past its rows
        base = base.added(np.arange(a, a + 8), *csr(base_docs[a:a + 8]))
    mask = rng.random(200) < 0.7
    x_docs, y_docs = docs_of(rng, 6, (0, 30)), docs_of(rng, 6, (30, 60))  # different terms
    x = base.added(np.arange(40, 46), *csr(x_docs))
    x_answers = answers(x, mask)
    y = base.added(np.arange(40, 46), *csr(y_docs))  # from the same version: must not write over x's rows
    assert answers(y, mask) == answers(built(base_docs + y_docs), mask)
    assert answers(x, mask) == x_answers == answers(built(base_docs + x_docs), mask)
    assert answers(base, mask) == answers(built(base_docs), mask)
    # each branch grown again, and the base once more: still their own documents
    xx = x.added(np.arange(46, 50), *csr(docs_of(rng, 4, (0, 60))))
    yy_docs = docs_of(rng, 4, (0, 60))
    yy = y.added(np.arange(46, 50), *csr(yy_docs))
    z_docs = docs_of(rng, 3, (0, 60))
    z = base.added(np.arange(40, 43), *csr(z_docs))
    assert answers(yy, mask) == answers(built(base_docs + y_docs + yy_docs), mask)
    assert answers(z, mask) == answers(built(base_docs + z_docs), mask)
    assert answers(x, mask) == x_answers
    assert len(xx) == 50


def test_readers_of_older_versions_beside_an_appending_writer() -> None:
    rng = np.random.default_rng(5)
    docs = docs_of(rng, 600, (0, 60))
    cuts = np.unique(np.concatenate([[0, 600], rng.integers(1, 600, 80)]))
    mask = rng.random(600) < 0.8
    expected = {int(c): answers(built(docs[:c]), mask) for c in cuts[1:]}  # each version's answers, built at once
    published: list[Bm25Index] = []
    done = threading.Event()
    wrong: list[int] = []

    def writer() -> None:
        ix = Bm25Index()
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            ix = ix.added(np.arange(a, b), *csr(docs[a:b]))
            published.append(ix)
            if len(published) % 9 == 0:  # a branch from an older version meanwhile, never published
                older = published[len(published) // 2]
                older.added(np.arange(len(older), len(older) + 2), *csr(docs_of(rng, 2, (0, 60))))
        done.set()

    def reader(seed: int) -> None:
        pick = np.random.default_rng(seed)
        while not done.is_set() or pick.random() < 0.5:
            if not published:
                continue
            v = published[int(pick.integers(len(published)))]
            if answers(v, mask) != expected[len(v)]:
                wrong.append(len(v))

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(published) == len(cuts) - 1
    assert wrong == []
    for v in published:  # and every version once more, the writer done
        assert answers(v, mask) == expected[len(v)]

"""BM25 over one corpus (H1): an incremental inverted index scored by the N3 kernel.

Documents arrive as sparse term-count rows (the lexical space: Snowball-stemmed, stop words
removed, 31-bit term ids; see `engramdb.spaces.analyzer`) under caller keys (the store uses global
row numbers). Postings live in a few immutable CSR chunks, merged like a log-structured tree: a
new batch is a chunk, and whenever the newest chunk is at least a quarter of the one before they
merge. Adding is then amortised O(log n) per posting and a query scores O(log n) chunks, while
corpus statistics (N, document frequency, average length) always cover every chunk, so scores
match a from-scratch index exactly.

A document may be one passage of a longer memory (C7, spaces/passages.py): the passages of one
key are consecutive documents, each with its passage number (`parts`), and a key scores as its
best passage (searches return each key once).

Scoring is Lucene's BM25: idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (never negative),
tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avgdl)), summed over query terms, each term
weighted by how often the query holds it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import kernels

K1 = 1.2
B = 0.75
MERGE_RATIO = 4  # merge the newest chunk into the one before once it is at least 1/4 of its size
_EXACT_SUM = 1 << 24  # whole numbers up to this add exactly in float32 (Bm25Index._avgdl)


@dataclass
class Chunk:
    """Postings of a contiguous run of documents: term -> (doc numbers ascending, tf)."""

    terms: np.ndarray  # int32 (T,), sorted unique term ids
    indptr: np.ndarray  # int64 (T + 1,)
    docs: np.ndarray  # int32 (P,), index-local doc numbers
    tf: np.ndarray  # float32 (P,)
    n_docs: int

    @staticmethod
    def from_rows(first_doc: int, indptr: np.ndarray, terms: np.ndarray, counts: np.ndarray) -> Chunk:
        """Invert CSR document rows (doc i of the batch is doc number first_doc + i)."""
        n = len(indptr) - 1
        doc_of = np.repeat(np.arange(first_doc, first_doc + n, dtype=np.int32), np.diff(indptr))
        uniq, inv = np.unique(terms, return_inverse=True)
        order = np.argsort(inv, kind="stable")  # stable: docs stay ascending within a term
        ptr = np.zeros(len(uniq) + 1, np.int64)
        np.cumsum(np.bincount(inv, minlength=len(uniq)), out=ptr[1:])
        return Chunk(uniq.astype(np.int32), ptr, doc_of[order], counts[order].astype(np.float32), n)

    @staticmethod
    def merge(a: Chunk, b: Chunk) -> Chunk:
        """One chunk holding both (b's docs follow a's)."""
        ta = np.repeat(a.terms, np.diff(a.indptr))
        tb = np.repeat(b.terms, np.diff(b.indptr))
        terms = np.concatenate([ta, tb])
        docs = np.concatenate([a.docs, b.docs])
        tf = np.concatenate([a.tf, b.tf])
        uniq, inv = np.unique(terms, return_inverse=True)
        order = np.argsort(inv, kind="stable")  # a's postings precede b's within a term: docs ascend
        ptr = np.zeros(len(uniq) + 1, np.int64)
        np.cumsum(np.bincount(inv, minlength=len(uniq)), out=ptr[1:])
        return Chunk(uniq.astype(np.int32), ptr, docs[order], tf[order], a.n_docs + b.n_docs)

    def rows_of(self, terms: np.ndarray) -> np.ndarray:
        """The posting row of each term (-1 where this chunk lacks it)."""
        pos = np.searchsorted(self.terms, terms)
        pos = np.minimum(pos, max(len(self.terms) - 1, 0))
        hit = (self.terms[pos] == terms) if len(self.terms) else np.zeros(len(terms), bool)
        return np.where(hit, pos, -1).astype(np.int64)

    def df(self, rows: np.ndarray) -> np.ndarray:
        if len(self.terms) == 0:  # a chunk of empty documents
            return np.zeros(len(rows), np.int64)
        safe = np.maximum(rows, 0)
        return np.where(rows >= 0, self.indptr[safe + 1] - self.indptr[safe], 0)


class _Columns:
    """The per-document arrays (keys, lengths, passage numbers) in buffers grown by doubling, shared
    by an index and the versions `added` makes from it: each version reads its own first n rows,
    and an append writes past the newest rows in place when the version appending holds them all
    (a version that is not the newest copies first). One append then costs O(its documents)
    amortised, not a copy of every document's arrays."""

    def __init__(self, keys: np.ndarray, lengths: np.ndarray, parts: np.ndarray, capacity: int) -> None:
        n = len(keys)
        self.keys = np.empty(capacity, np.int64)
        self.lengths = np.empty(capacity, np.float32)
        self.parts = np.empty(capacity, np.int32)
        self.keys[:n], self.lengths[:n], self.parts[:n] = keys, lengths, parts
        self.used = n  # rows written: the newest version holds exactly these
        self.lock = threading.Lock()  # two versions appending at once: one claims the room

    def claim(self, n: int, more: int) -> bool:
        """Take rows [n, n + more) for the version holding the first n rows (False: taken, or no room)."""
        with self.lock:
            if self.used != n or n + more > len(self.keys):
                return False
            self.used = n + more
            return True


class Bm25Index:
    """BM25 over documents added in batches; keys are the caller's int64 document keys."""

    def __init__(self, *, k1: float = K1, b: float = B) -> None:
        if not (k1 >= 0 and np.isfinite(k1)):
            raise ValueError(f"k1 must be finite and >= 0, got {k1!r}")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be in [0, 1], got {b!r}")
        self.k1, self.b = float(k1), float(b)
        self.chunks: list[Chunk] = []
        self.keys = np.empty(0, np.int64)
        self.lengths = np.empty(0, np.float32)
        self.parts = np.empty(0, np.int32)  # passage number of each document (0: the first or only one)
        self.extra = 0  # documents beyond the first of their key (passages after the first)
        self._columns: _Columns | None = None  # the buffers keys, lengths and parts are views of (None: copy on add)
        self._total: int | None = 0  # the documents' lengths summed, while all are whole numbers (else None)
        self._ascending = True  # keys never decrease (the store adds rows in key order): no argsort to find a key
        self._norm: np.ndarray | None = None
        self._sorter: np.ndarray | None = None  # argsort of keys (docs_of), built on first use
        self._mask_cache: tuple[np.ndarray, int, np.ndarray] | None = None  # (filter, documents, by doc)
        self._mask_before: tuple[np.ndarray, int, np.ndarray] | None = None  # the version grown from's

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def postings(self) -> int:
        return sum(len(c.docs) for c in self.chunks)

    def add(self, keys: np.ndarray, indptr: np.ndarray, terms: np.ndarray, counts: np.ndarray,
            parts: np.ndarray | None = None) -> None:
        """Index documents: row i (terms[indptr[i]:indptr[i+1]] with their counts) under keys[i].

        Within a row, term ids must be unique (the lexical space's rows are); counts > 0.
        `parts`: each row's passage number; a key's passages are consecutive rows numbered from 0
        (default: every row its key's only document).
        """
        keys = np.asarray(keys, np.int64)
        parts = np.zeros(len(keys), np.int32) if parts is None else np.asarray(parts, np.int32)
        if len(parts) != len(keys):
            raise ValueError(f"add: {len(keys)} keys but {len(parts)} passage numbers")
        indptr = np.asarray(indptr, np.int64)
        terms = np.asarray(terms, np.int32)
        counts = np.asarray(counts, np.float32)
        if len(indptr) != len(keys) + 1 or indptr[0] != 0 or indptr[-1] != len(terms) or len(counts) != len(terms):
            raise ValueError(f"add: {len(keys)} keys need indptr of {len(keys) + 1} offsets from 0 to len(terms)")
        if len(counts) and not (np.isfinite(counts).all() and (counts > 0).all()):
            raise ValueError("add: term counts must be finite and > 0")
        if len(keys) == 0:
            return
        first = len(self.keys)
        self._ascending = self._ascending and bool((np.diff(keys) >= 0).all()) and (
            first == 0 or int(keys[0]) >= int(self.keys[-1]))
        row_of = np.repeat(np.arange(len(keys)), np.diff(indptr))
        lengths = np.bincount(row_of, weights=counts, minlength=len(keys))
        lengths = lengths.astype(np.float32)
        self._total = _summed(self._total, lengths)
        self._append(keys, lengths, parts)
        self.extra += int(np.count_nonzero(parts))
        self.chunks.append(Chunk.from_rows(first, indptr, terms, counts))
        while len(self.chunks) > 1 and MERGE_RATIO * self.chunks[-1].n_docs >= self.chunks[-2].n_docs:
            b = self.chunks.pop()
            self.chunks[-1] = Chunk.merge(self.chunks[-1], b)
        self._norm = None

    def _append(self, keys: np.ndarray, lengths: np.ndarray, parts: np.ndarray) -> None:
        """Append per-document rows (in the shared buffers when this version is their newest)."""
        n, m = len(self.keys), len(keys)
        cols = self._columns
        if cols is None or not cols.claim(n, m):
            cols = self._columns = _Columns(self.keys, self.lengths, self.parts, max(2 * (n + m), 64))
            cols.used = n + m
        cols.keys[n:n + m], cols.lengths[n:n + m], cols.parts[n:n + m] = keys, lengths, parts
        self.keys, self.lengths, self.parts = cols.keys[:n + m], cols.lengths[:n + m], cols.parts[:n + m]

    def added(self, keys: np.ndarray, indptr: np.ndarray, terms: np.ndarray, counts: np.ndarray,
              parts: np.ndarray | None = None) -> Bm25Index:
        """A new index holding these documents too; this one is left as it was (searches reading
        it meanwhile are unaffected: the two share every chunk neither changes)."""
        new = self._copy()
        new.add(keys, indptr, terms, counts, parts)
        return new

    def prefix(self, n: int) -> Bm25Index:
        """A new index of the first n documents only (for a snapshot older than this index)."""
        if n >= len(self.keys):
            return self
        new = Bm25Index(k1=self.k1, b=self.b)
        new.keys, new.lengths, new.parts = self.keys[:n], self.lengths[:n], self.parts[:n]
        new.extra = int(np.count_nonzero(new.parts))
        new._ascending = self._ascending
        new._total = _summed(0, new.lengths)
        first = 0
        for c in self.chunks:  # chunks hold consecutive runs of documents, oldest first
            if first >= n:
                break
            keep = c.docs < n
            term_of = np.repeat(np.arange(len(c.terms)), np.diff(c.indptr))
            per_term = np.bincount(term_of[keep], minlength=len(c.terms))
            live = per_term > 0
            ptr = np.zeros(int(live.sum()) + 1, np.int64)
            np.cumsum(per_term[live], out=ptr[1:])
            new.chunks.append(Chunk(c.terms[live], ptr, c.docs[keep], c.tf[keep], min(c.n_docs, n - first)))
            first += c.n_docs
        return new

    def renumbered(self, kept: np.ndarray, key_of: np.ndarray) -> Bm25Index:
        """A new index without the documents whose key a purge removed (`kept[key]` False), the
        others under their new keys (`key_of[key]`) in the same order: the postings, lengths and
        corpus statistics of an index made from the kept documents alone (`prefix`'s filter over
        every document, not the first n)."""
        stay = kept[self.keys]
        new_doc = np.cumsum(stay, dtype=np.int64) - 1  # an old document number's new one, where it stays
        new = Bm25Index(k1=self.k1, b=self.b)
        new.keys = key_of[self.keys[stay]].astype(np.int64)
        new.lengths, new.parts = self.lengths[stay], self.parts[stay]
        new.extra = int(np.count_nonzero(new.parts))
        new._ascending = self._ascending
        new._total = _summed(0, new.lengths)
        first = 0
        for c in self.chunks:  # chunks hold consecutive runs of documents, oldest first
            keep = stay[c.docs]
            term_of = np.repeat(np.arange(len(c.terms)), np.diff(c.indptr))
            per_term = np.bincount(term_of[keep], minlength=len(c.terms))
            live = per_term > 0  # a term only purged documents held leaves the vocabulary
            ptr = np.zeros(int(live.sum()) + 1, np.int64)
            np.cumsum(per_term[live], out=ptr[1:])
            n_docs = int(stay[first:first + c.n_docs].sum())
            first += c.n_docs
            if n_docs:
                new.chunks.append(Chunk(c.terms[live], ptr, new_doc[c.docs[keep]].astype(np.int32), c.tf[keep], n_docs))
        return new

    def _copy(self) -> Bm25Index:
        new = Bm25Index(k1=self.k1, b=self.b)
        new.chunks = list(self.chunks)
        new.keys, new.lengths, new.parts, new.extra = self.keys, self.lengths, self.parts, self.extra
        new._columns, new._ascending, new._total = self._columns, self._ascending, self._total
        new._mask_before = self._mask_cache or self._mask_before
        return new

    def norm(self) -> np.ndarray:
        """k1 * (1 - b + b * len / avgdl) per document (cached until the next add).

        Made again for every document after an add: the average length moves with each document,
        and in float32 len / avgdl then changes for nearly every length, so an exact score needs
        every norm anew (in place: four passes over one array, not five arrays)."""
        if self._norm is None:
            self._norm = self._norms(self.lengths)
        return self._norm

    def _avgdl(self) -> float:
        """`lengths.mean()`, bit for bit, without a pass over every document when the lengths are
        whole numbers summing below 2^24: float32 then adds them exactly in any order, so numpy's
        sum is the exact one, which the index keeps as it grows."""
        n = len(self.lengths)
        if n == 0:
            return 1.0
        total = self._total
        if total is None or total > _EXACT_SUM:
            return float(self.lengths.mean())
        # as `mean` divides: its float32 sum by the count (an intp: the quotient is float64), as float32
        return float(np.float32(np.float64(np.float32(total)) / np.intp(n)))

    def _norms(self, lengths: np.ndarray) -> np.ndarray:
        """`norm()` of some documents' lengths: the same float32 operations element by element, so
        a document's value is the one the whole array holds."""
        avgdl = self._avgdl()
        out: np.ndarray = np.multiply(lengths, self.b, dtype=np.float32)  # b * len first, as written above
        out /= max(avgdl, 1e-9)
        out += 1 - self.b
        out *= self.k1
        return out

    def score_keys(self, terms: np.ndarray, counts: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(score, passage) of each caller key: the BM25 score of its best document and that
        document's passage number, read from the postings (0 and 0 for a key not indexed here or
        matching no term). Exactly what `search` would say of it, for any keys."""
        keys = np.asarray(keys, np.int64)
        scores, parts = np.zeros(len(keys)), np.zeros(len(keys), np.int32)
        terms = np.asarray(terms, np.int32).reshape(-1)
        if len(self.keys) == 0 or len(keys) == 0 or len(terms) == 0:
            return scores, parts
        if self._ascending:  # keys in document order already (the store's): no sort of every key
            sorted_keys = self.keys
        else:
            if self._sorter is None or len(self._sorter) != len(self.keys):
                self._sorter = np.argsort(self.keys, kind="stable")
            sorted_keys = self.keys[self._sorter]
        lo = np.searchsorted(sorted_keys, keys, "left")
        n_docs = np.searchsorted(sorted_keys, keys, "right") - lo
        owner = np.repeat(np.arange(len(keys)), n_docs)  # every document of every key
        docs = np.repeat(lo - np.cumsum(n_docs) + n_docs, n_docs) + np.arange(int(n_docs.sum()))
        if not self._ascending:
            docs = self._sorter[docs]  # type: ignore[index]
        weight = self.idf(terms) * np.asarray(counts, np.float64).reshape(-1)
        # only these documents' norms (element-wise the same): a lookup after an add does not make
        # every document's
        norm = (self._norm[docs] if self._norm is not None else self._norms(self.lengths[docs])).astype(np.float64)
        got = np.zeros(len(docs))
        for c in self.chunks:
            for row, w in zip(c.rows_of(terms).tolist(), weight.tolist()):
                if row < 0:
                    continue
                a, b = int(c.indptr[row]), int(c.indptr[row + 1])
                posting = c.docs[a:b]  # ascending
                pos = np.minimum(np.searchsorted(posting, docs), b - a - 1)
                hit = posting[pos] == docs
                tf = c.tf[a + pos[hit]].astype(np.float64)
                got[hit] += w * tf * (self.k1 + 1) / (tf + norm[hit])
        if len(docs):  # each key's best document (the first passage among equals)
            best = np.lexsort((self.parts[docs], -got, owner))
            first = np.ones(len(best), bool)
            first[1:] = owner[best][1:] != owner[best][:-1]
            pick = best[first]
            scores[owner[pick]] = got[pick]
            parts[owner[pick]] = self.parts[docs[pick]]
        return scores, parts

    def df(self, terms: np.ndarray) -> np.ndarray:
        """How many documents of the whole index hold each term (int64)."""
        terms = np.asarray(terms, np.int32)
        df = np.zeros(len(terms), np.int64)
        for c in self.chunks:
            df += c.df(c.rows_of(terms))
        return df

    def idf(self, terms: np.ndarray) -> np.ndarray:
        """Lucene's idf of each term over the whole index (float64)."""
        df = self.df(terms)
        n = len(self.keys)
        out: np.ndarray = np.log1p((n - df + 0.5) / (df + 0.5))
        return out

    def search(
        self,
        terms: np.ndarray,
        counts: np.ndarray,
        k: int,
        *,
        allowed: np.ndarray | Callable[[np.ndarray], np.ndarray] | None = None,
        sorted_k: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(keys, scores) of the k best keys for a query's term ids and counts, best first
        (`search_parts` also says which passage of each scored).

        `allowed`: a bool array indexed by key, or a function from keys to bools; documents it
        refuses are never returned (filtered inside the scan, before the top-k cut).
        `sorted_k`: only the first sorted_k need to be in order (the rest follow, unordered, each
        worse than those): a candidate stage that ranks only its head skips sorting its tail.
        """
        keys, scores, _ = self.search_parts(terms, counts, k, allowed=allowed, sorted_k=sorted_k)
        return keys, scores

    def search_parts(
        self,
        terms: np.ndarray,
        counts: np.ndarray,
        k: int,
        *,
        allowed: np.ndarray | Callable[[np.ndarray], np.ndarray] | None = None,
        sorted_k: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keys, scores, passage numbers) of the k best keys, each key once at its best passage
        (see `search`)."""
        terms = np.asarray(terms, np.int32).reshape(-1)
        counts = np.asarray(counts, np.float32).reshape(-1)
        if len(terms) != len(counts):
            raise ValueError(f"terms has {len(terms)} entries but counts has {len(counts)}")
        if k < 1 or len(self.keys) == 0 or len(terms) == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32), np.empty(0, np.int32)
        n = len(self.keys)
        want = k  # documents to take: k keys may need k + every extra passage
        if self.extra:
            k, sorted_k = min(n, k + self.extra), None
        df = self.df(terms) if len(self.chunks) > 1 else None  # idf counts documents over every chunk
        mask = None
        if callable(allowed):
            mask = np.ascontiguousarray(allowed(self.keys), dtype=bool).view(np.uint8)
        elif allowed is not None:
            # a store passes the same filter array while nothing changes: gather it per document
            # once (holding the array itself, so a new one can never pass for it)
            cached = self._mask_cache
            if cached is None or cached[0] is not allowed or cached[1] != len(self.keys):
                cached = self._mask_cache = (allowed, len(self.keys), self._gathered(allowed))
                self._mask_before = None
            mask = cached[2]
        norm = self.norm()
        found_d, found_s = [], []
        for c in self.chunks:
            # one native call: term lookup, idf, scoring and the top-k cut
            idx, sc = kernels.bm25_query(terms, counts, c.terms, c.indptr, c.docs, c.tf, norm, self.k1, int(k), n,
                                         df_total=df, mask=mask, sorted_k=sorted_k if len(self.chunks) == 1 else None)
            found_d.append(idx)
            found_s.append(sc)
        if len(found_d) == 1:  # one chunk: the kernel's order is already final
            docs, scores = found_d[0], found_s[0]
        else:
            docs, scores = np.concatenate(found_d), np.concatenate(found_s)
            order = np.lexsort((docs, -scores))[:k]
            docs, scores = docs[order], scores[order]
        if self.extra:  # best first: a key's first document is its best passage
            _, first = np.unique(self.keys[docs], return_index=True)
            first = np.sort(first)[:want]
            docs, scores = docs[first], scores[first]
        return self.keys[docs], scores, self.parts[docs]

    def _gathered(self, allowed: np.ndarray) -> np.ndarray:
        """`allowed` per document (uint8). After an append, the version grown from gathered its
        documents' already: kept when the new filter starts with that one's every value (a write
        adds keys; one that closes a version changes an old key's value, and then all are read)."""
        before = self._mask_before
        if before is not None:
            old, docs, by_doc = before
            if docs <= len(self.keys) and len(old) <= len(allowed) and np.array_equal(allowed[:len(old)], old):
                out = np.empty(len(self.keys), np.uint8)
                out[:docs] = by_doc
                out[docs:] = np.asarray(allowed[self.keys[docs:]], dtype=bool).view(np.uint8)
                return out
        return np.ascontiguousarray(allowed[self.keys], dtype=bool).view(np.uint8)

    # ------------------------------------------------------------------------------ persistence
    def compact(self) -> None:
        """Merge every chunk into one (one CSR per corpus). The list is replaced, not edited: a
        search iterating the old one meanwhile reads it whole."""
        self.chunks = self._merged()

    def _merged(self) -> list[Chunk]:
        chunks = list(self.chunks)
        while len(chunks) > 1:
            b = chunks.pop()
            chunks[-1] = Chunk.merge(chunks[-1], b)
        return chunks

    def arrays(self) -> dict[str, np.ndarray]:
        """The whole index as flat arrays (one chunk), for an Arrow row (the index is unchanged)."""
        chunks = self._merged()
        c = chunks[0] if chunks else Chunk(np.empty(0, np.int32), np.zeros(1, np.int64),
                                                     np.empty(0, np.int32), np.empty(0, np.float32), 0)
        return {"terms": c.terms, "indptr": c.indptr, "docs": c.docs, "tf": c.tf, "keys": self.keys,
                "lengths": self.lengths, "parts": self.parts}

    @staticmethod
    def from_arrays(a: dict[str, np.ndarray], *, k1: float = K1, b: float = B) -> Bm25Index:
        """The inverse of `arrays` (checked: offsets, doc numbers and lengths must agree)."""
        ix = Bm25Index(k1=k1, b=b)
        keys, lengths = np.asarray(a["keys"], np.int64), np.asarray(a["lengths"], np.float32)
        terms, indptr = np.asarray(a["terms"], np.int32), np.asarray(a["indptr"], np.int64)
        docs, tf = np.asarray(a["docs"], np.int32), np.asarray(a["tf"], np.float32)
        if len(keys) != len(lengths) or len(indptr) != len(terms) + 1 or len(docs) != len(tf):
            raise ValueError("BM25 arrays disagree in length")
        if indptr[0] != 0 or indptr[-1] != len(docs) or (np.diff(indptr) < 0).any():
            raise ValueError("BM25 posting offsets are not a valid CSR")
        if len(docs) and (docs.min() < 0 or docs.max() >= len(keys)):
            raise ValueError("BM25 postings name a document that does not exist")
        parts = np.asarray(a["parts"], np.int32) if "parts" in a else np.zeros(len(keys), np.int32)
        if len(parts) != len(keys) or (len(parts) and parts.min() < 0):
            raise ValueError("BM25 passage numbers disagree with the documents")
        ix.keys, ix.lengths, ix.parts, ix.extra = keys, lengths, parts, int(np.count_nonzero(parts))
        ix._ascending = bool((np.diff(keys) >= 0).all())
        ix._total = _summed(0, lengths)
        if len(keys):
            ix.chunks = [Chunk(terms, indptr, docs, tf, len(keys))]
        return ix


def _summed(total: int | None, lengths: np.ndarray) -> int | None:
    """`total` plus these lengths, exactly, while every length is a whole number (else None)."""
    if total is None or not len(lengths):
        return total
    if not (lengths == np.floor(lengths)).all() or lengths.min() < 0:
        return None
    return total + int(lengths.astype(np.float64).sum())  # whole float32 values: exact in float64 below 2^53

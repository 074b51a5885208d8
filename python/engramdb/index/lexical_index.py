"""The store's BM25 indexes (H1): one per namespace over a sparse lexical space's term counts.

Keys are global row numbers across *all* segments in order (committed files, then the rows still
in the WAL): a checkpoint turns the WAL's rows into one file in the same order and compaction
concatenates files, so keys survive both; a purge renumbers rows and bumps the row epoch, which
resets the index. New rows are indexed incrementally before a search needs them (`sync`), so BM25
sees a memory the moment it is added.

Versions: a sync publishes a new `LexicalVersion` whose namespace indexes share every chunk with
the old one (`Bm25Index.added`), so searches never wait for it. A search scores against exactly
its snapshot's documents: when the published version holds newer documents of its namespace,
it reads a prefix of that namespace's index (corpus statistics included).

A memory longer than a passage (C7, spaces/passages.py) is indexed as its passages, each
analysed by the lexical space's own embedder: a key then scores as its best passage.

Saved, like the trees, as derived data: `index/bm25-<space>.arrow` (one row per namespace: the
postings as one CSR, the document keys and lengths) with a JSON sidecar (format, epoch, rows
covered, size, CRC-32). A missing, stale or corrupt file is rebuilt from the segments.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow_numpy import array_of, lists_of, numpy_of
from ..kernels.sets import unique
from ..spaces.protocol import Embedder, SparseBatch
from ..storage.derived_files import DerivedFiles, bytes_table, table_bytes
from ..storage.renumbering import Renumbering
from ..storage.segment import Segment
from ..storage.view import View
from .bm25 import K1, B, Bm25Index
from .passage_vectors import long_rows

log = logging.getLogger("engramdb.bm25")

BM25_FORMAT = 2  # 2: passages (a document's passage number in "parts")
_COLUMNS = {"terms": pa.int32(), "indptr": pa.int64(), "docs": pa.int32(), "tf": pa.float32(), "keys": pa.int64(),
            "lengths": pa.float32(), "parts": pa.int32()}


@dataclass(frozen=True)
class LexicalVersion:
    """Every namespace's BM25 index as of `covered` keys (immutable once published)."""

    epoch: int
    covered: int
    indexes: Mapping[str, Bm25Index] = field(default_factory=dict)

    def namespace(self, namespace: str, rows: int) -> Bm25Index | None:
        """The namespace's index as of the first `rows` keys (None: no document there)."""
        ix = self.indexes.get(namespace)
        if ix is None or not len(ix) or self.covered <= rows or int(ix.keys[-1]) < rows:
            return ix
        return ix.prefix(int(np.searchsorted(ix.keys, rows)))  # keys ascend: they were added in order


class StoreBm25:
    """BM25 over one sparse space, per namespace, kept in step with the segments."""

    kind = "bm25"

    def __init__(self, space: str, *, k1: float = K1, b: float = B, embedder: Embedder | None = None) -> None:
        self.space = space
        self.embedder = embedder  # analyses long memories' passages (None: every memory one document)
        self.k1, self.b = k1, b
        self.current = LexicalVersion(epoch=-1, covered=0)
        self.dirty = False
        self.load_state: str | None = None  # "adopted" (from its file) or why it was rebuilt; None: never loaded
        self._lock = threading.Lock()  # one sync at a time; searches never take it
        self._save_lock = threading.Lock()  # one save at a time

    def sync(self, view: View, *, wait: bool = True) -> LexicalVersion:
        """A version holding every row of the view (the published one, or a newer one)."""
        v = self.current
        if v.epoch == view.epoch and v.covered >= view.rows:
            return v
        if v.epoch > view.epoch:  # a snapshot from before a purge: its own index, never published
            return self._advanced(LexicalVersion(epoch=view.epoch, covered=0), view)
        with self._lock:  # incremental: only the rows since the last sync (a WAL's worth)
            v = self.current
            if v.epoch == view.epoch and v.covered >= view.rows:
                return v
            if v.epoch > view.epoch:  # a purge renumbered the rows while this waited: as above,
                # never published (it would put back the purged rows, and a close would save them)
                return self._advanced(LexicalVersion(epoch=view.epoch, covered=0), view)
            if v.epoch != view.epoch:
                v = LexicalVersion(epoch=view.epoch, covered=0)
            self.current = self._advanced(v, view)
            self.dirty = True
            return self.current

    def _advanced(self, v: LexicalVersion, view: View) -> LexicalVersion:
        """`v` with the view's rows from `v.covered` on indexed."""
        bases = view.bases
        indexes = dict(v.indexes)
        for si, seg in enumerate(view.segments):
            lo, hi = max(v.covered, int(bases[si])), int(bases[si + 1])
            if lo >= hi:
                continue
            sb = seg.vectors(view.schema, self.space)
            assert isinstance(sb, SparseBatch)
            rows = np.arange(lo - int(bases[si]), hi - int(bases[si]))
            codes = seg.ns_index[rows]
            long = self._passages(seg, rows)
            for code in unique(codes):
                mine = rows[codes == code]
                ptr, terms, counts = _rows(sb, mine)
                keys, parts = mine + bases[si], None
                if long:
                    keys, parts, ptr, terms, counts = _with_passages(mine, keys, ptr, terms, counts, long)
                ns = seg.ns_names[int(code)]
                ix = indexes.get(ns) or Bm25Index(k1=self.k1, b=self.b)
                indexes[ns] = ix.added(keys, ptr, terms, counts, parts)
        return LexicalVersion(epoch=view.epoch, covered=view.rows, indexes=indexes)

    def renumber(self, moved: Renumbering) -> bool:
        """Carry the indexes over a purge (`moved`: which rows it kept, and their new keys;
        `Bm25Index.renumbered`: the same index as one made from the rows kept, without analysing
        them again: 0.4 s of the first search after a purge at 100,000 memories). False, and
        nothing changed, when the indexes cannot follow (`Renumbering.follows`)."""
        with self._lock:
            v = self.current
            if not moved.follows(v.epoch, v.covered):
                return False
            indexes = {ns: ix.renumbered(moved.kept, moved.key_of) for ns, ix in v.indexes.items()}
            self.current = LexicalVersion(epoch=moved.new_epoch, covered=moved.covered_after(v.covered),
                                          indexes={ns: ix for ns, ix in indexes.items() if len(ix)})
            self.dirty = True  # its file went with the purge
            self.load_state = "carried over a purge"
            return True

    def _passages(self, seg: Segment, rows: np.ndarray) -> dict[int, SparseBatch]:
        """Row -> the term rows of its passages, for the given rows longer than one passage."""
        if self.embedder is None or len(rows) == 0:
            return {}
        found = long_rows(seg, int(rows[0]), int(rows[-1]) + 1)
        if not found:
            return {}
        # every passage of every long row in one embed call (one pass over the batch, not a call
        # per row); a row's passages are then its slice of the rows (a view on the same arrays)
        sb = self.embedder.embed([text[a:b] for _, spans, text in found for a, b in spans])
        assert isinstance(sb, SparseBatch)
        out: dict[int, SparseBatch] = {}
        at = 0
        for row, spans, _ in found:
            out[row] = SparseBatch(sb.indptr[at : at + len(spans) + 1], sb.indices, sb.weights)
            at += len(spans)
        return out

    def drop(self, epoch: int = -1) -> None:
        """Forget every index (the rows they index are gone); empty at row epoch `epoch`."""
        with self._lock:
            self.current = LexicalVersion(epoch=epoch, covered=0)
            self.dirty = False

    # ------------------------------------------------------------------------------ files
    def names(self) -> tuple[str, str]:
        return f"bm25-{self.space}.arrow", f"bm25-{self.space}.json"

    def save(self, files: DerivedFiles) -> None:
        """Write every namespace's index (one CSR each) and the sidecar, file first."""
        # its own lock: a version never changes, so searches and syncs go on while it is written
        with self._save_lock:
            v = self.current
            data, side = self.names()
            names = sorted(v.indexes)
            arrays = [v.indexes[ns].arrays() for ns in names]
            cols: dict[str, pa.Array] = {"namespace": array_of(names, pa.string())}
            for col, typ in _COLUMNS.items():
                cols[col] = lists_of([a[col] for a in arrays], typ, large=True)
            entry = files.write(data, table_bytes(pa.table(cols)))
            files.write_sidecar(side, {"format": BM25_FORMAT, "epoch": v.epoch, "covered": v.covered, "k1": self.k1,
                                       "b": self.b, **entry})
            self.dirty = self.current is not v  # a sync published a newer one meanwhile

    def saved_behind(self, files: DerivedFiles, view: View) -> int | None:
        """How many of the view's committed rows the saved indexes lack, or None when they cannot be
        used (missing, stale, built otherwise, or a data file gone or of another size than its sidecar
        says). Read from the sidecar and the data file's size alone: the bytes are not checked."""
        data, side = self.names()
        meta = files.sidecar_checked(side, BM25_FORMAT, view.epoch, view.committed_rows, {"k1": self.k1, "b": self.b})
        if isinstance(meta, str) or files.size(data) != meta.get("bytes"):
            return None
        return view.committed_rows - int(meta.get("covered", 0))

    def load(self, files: DerivedFiles, view: View) -> bool:
        """Adopt the saved indexes when whole and current; else say why and start empty."""
        data, side = self.names()
        got = files.read_checked(data, side, BM25_FORMAT, view.epoch, view.committed_rows, {"k1": self.k1, "b": self.b})
        reason = got if isinstance(got, str) else None
        if not isinstance(got, str):
            raw, meta = got
            try:
                table = bytes_table(raw)
                indexes = {}
                for i, ns in enumerate(table.column("namespace").to_pylist()):
                    arrays = {c: numpy_of(table.column(c)[i].values) for c in _COLUMNS}
                    indexes[ns] = Bm25Index.from_arrays(arrays, k1=self.k1, b=self.b)
                if any(len(ix.keys) and int(ix.keys[-1]) >= int(meta["covered"]) for ix in indexes.values()):
                    # rows past what the sidecar says it covers: adopted, a sync would index them twice
                    raise ValueError(f"it holds rows past the {meta['covered']} it says it covers")
                with self._lock:
                    self.current = LexicalVersion(epoch=view.epoch, covered=int(meta["covered"]), indexes=indexes)
                self.load_state = "adopted"
                return True
            except (ValueError, KeyError, TypeError) as exc:
                reason = f"unreadable ({exc})"
            except Exception as exc:  # noqa: BLE001 - pyarrow's errors: a derived file is never trusted
                reason = f"unreadable ({type(exc).__name__}: {exc})"
        self.load_state = reason
        log.info("BM25 index %s: %s; rebuilding from the segments", data, reason)
        return False

    def describe(self) -> dict[str, Any]:
        """Per namespace: documents, postings, chunks (of the indexes built or loaded so far)."""
        return {ns: {"documents": len(ix), "postings": ix.postings, "chunks": len(ix.chunks)}
                for ns, ix in self.current.indexes.items()}


def text_bytes(view: View, start: int) -> int:
    """The bytes of content of the view's committed rows from row `start` on: what indexing them
    costs (a few long memories cost what thousands of short ones do)."""
    total = 0
    bases = view.bases
    for si, seg in enumerate(view.committed_segments):
        lo, hi = max(start, int(bases[si])), int(bases[si + 1])
        total += seg.content_bytes(lo - int(bases[si]), hi - int(bases[si]))
    return total


def _with_passages(rows: np.ndarray, keys: np.ndarray, ptr: np.ndarray, terms: np.ndarray, counts: np.ndarray,
                   long: dict[int, SparseBatch]) -> tuple[np.ndarray, ...]:
    """The CSR of `rows` with each long row replaced by its passages' rows (keys repeated,
    passage numbers from 0)."""
    out_keys, out_parts, out_terms, out_counts, lens = [], [], [], [], []
    for i, (row, key) in enumerate(zip(rows.tolist(), keys.tolist())):
        sb = long.get(row)
        if sb is None:
            a, b = int(ptr[i]), int(ptr[i + 1])
            row_parts = [(0, terms[a:b], counts[a:b])]
        else:
            row_parts = [(j, *sb.row(j)) for j in range(len(sb.indptr) - 1)]
        for j, t, w in row_parts:
            out_keys.append(key)
            out_parts.append(j)
            out_terms.append(t)
            out_counts.append(w)
            lens.append(len(t))
    new_ptr = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=new_ptr[1:])
    return (np.array(out_keys, np.int64), np.array(out_parts, np.int32), new_ptr,
            np.concatenate(out_terms).astype(np.int32), np.concatenate(out_counts).astype(np.float32))


def _rows(sb: SparseBatch, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR (indptr, term ids, counts) of some rows of a sparse batch."""
    starts, ends = sb.indptr[rows], sb.indptr[rows + 1]
    lens = ends - starts
    ptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lens, out=ptr[1:])
    take = np.repeat(starts - ptr[:-1], lens) + np.arange(int(ptr[-1]))
    return ptr, sb.indices[take], sb.weights[take]

"""The passage vectors of one dense space (C7): a long memory's passages, each embedded.

A memory's own vector reads its whole text (a model that truncates reads only its start; a
hashing space blurs a 1,000-word turn into its average), so the hybrid scores a long memory in a
dense space as the best of its own vector and its passages' (spaces/passages.py). Only memories
longer than one passage have any; the passages are embedded by the space's embedder the first
time an index sync meets the row (a search after the write, `build_index`, or a checkpoint), not
on the write path.

Keys are global row numbers, as for BM25 (index/lexical_index.py): the versions are immutable (a sync
appends a chunk), saved as `index/passages-<space>.arrow` (key, passage number, unit vector) with
a JSON sidecar (format, epoch, rows covered, embedder, size, CRC-32); a missing, stale or
corrupt file is rebuilt from the segments.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._arrow_numpy import arrow_of, numpy_of, whole
from ..spaces.passages import MIN_CHARS, passages_many
from ..spaces.protocol import Embedder
from ..storage.derived_files import DerivedFiles, bytes_table, table_bytes
from ..storage.renumbering import Renumbering
from ..storage.segment import Segment
from ..storage.view import View

log = logging.getLogger("engramdb.passages")

PASSAGES_FORMAT = 1


@dataclass(frozen=True)
class PassageChunk:
    """Passages of a run of keys: keys ascending (one entry per passage), unit vectors."""

    keys: np.ndarray  # int64
    parts: np.ndarray  # int32, passage number within its memory
    vectors: np.ndarray  # float32 (n, dim), each row of norm 1 (or 0 for an empty passage)


@dataclass(frozen=True)
class PassageVersion:
    """Every passage vector as of `covered` keys (immutable once published)."""

    epoch: int
    covered: int
    chunks: tuple[PassageChunk, ...] = ()

    def best(self, query: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(best cosine, its passage number) of each key over its passages (NaN, -1 where a key
        has none)."""
        keys = np.asarray(keys, np.int64)
        best, part = np.full(len(keys), np.nan), np.full(len(keys), -1, np.int32)
        q = np.asarray(query, np.float64).reshape(-1)
        qn = float(np.linalg.norm(q))
        if not self.chunks or len(keys) == 0 or qn == 0:
            return best, part
        for c in self.chunks:
            lo = np.searchsorted(c.keys, keys, "left")
            n = np.searchsorted(c.keys, keys, "right") - lo
            if not n.any():
                continue
            owner = np.repeat(np.arange(len(keys)), n)
            at = np.repeat(lo - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
            sims = c.vectors[at].astype(np.float64) @ q / qn
            order = np.lexsort((c.parts[at], -sims, owner))  # per key its best passage first
            first = np.ones(len(order), bool)
            first[1:] = owner[order][1:] != owner[order][:-1]
            pick = order[first]
            better = ~(sims[pick] <= best[owner[pick]])  # no passage yet (NaN), or a better one
            best[owner[pick[better]]] = sims[pick[better]]
            part[owner[pick[better]]] = c.parts[at[pick[better]]]
        return best, part

    def topk(self, query: np.ndarray, allowed: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(keys, cosines) of the k keys whose best passage is nearest the query, among the keys
        `allowed` (a bool array by key) admits; an exact scan of their passages."""
        q = np.asarray(query, np.float32).reshape(-1)
        qn = float(np.linalg.norm(q))
        keys, sims = [], []
        for c in self.chunks:
            ok = c.keys < len(allowed)
            ok[ok] = allowed[c.keys[ok]]
            if qn > 0 and ok.any():
                keys.append(c.keys[ok])
                sims.append(c.vectors[ok] @ (q / qn))
        if not keys:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        all_keys, all_sims = np.concatenate(keys), np.concatenate(sims).astype(np.float64)
        order = np.lexsort((all_keys, -all_sims))
        _, first = np.unique(all_keys[order], return_index=True)  # each key at its best passage
        pick = order[np.sort(first)][:k]
        return all_keys[pick], all_sims[pick]

    @property
    def size(self) -> int:
        return sum(len(c.keys) for c in self.chunks)


class StorePassages:
    """The passage vectors of one dense space, kept in step with the segments."""

    kind = "passages"

    def __init__(self, space: str, dim: int, embedder: Embedder) -> None:
        self.space, self.dim, self.embedder = space, dim, embedder
        self.current = PassageVersion(epoch=-1, covered=0)
        self.dirty = False
        self.load_state: str | None = None
        self._lock = threading.Lock()  # one sync at a time; searches never take it
        self._save_lock = threading.Lock()

    def sync(self, view: View, *, wait: bool = True) -> PassageVersion:
        """A version holding every row of the view (the published one, or a newer one)."""
        v = self.current
        if v.epoch == view.epoch and v.covered >= view.rows:
            return v
        if v.epoch > view.epoch:  # a snapshot from before a purge: its own, never published
            return self._advanced(PassageVersion(epoch=view.epoch, covered=0), view)
        with self._lock:
            v = self.current
            if v.epoch == view.epoch and v.covered >= view.rows:
                return v
            if v.epoch > view.epoch:  # a purge renumbered the rows while this waited: as above,
                # never published (it would put back the purged rows, and a close would save them)
                return self._advanced(PassageVersion(epoch=view.epoch, covered=0), view)
            if v.epoch != view.epoch:
                v = PassageVersion(epoch=view.epoch, covered=0)
            self.current = self._advanced(v, view)
            self.dirty = True
            return self.current

    def _advanced(self, v: PassageVersion, view: View) -> PassageVersion:
        keys: list[int] = []
        parts: list[int] = []
        texts: list[str] = []
        cuts: list[list[tuple[int, int]]] = []
        bases = view.bases
        for si, seg in enumerate(view.segments):
            lo, hi = max(v.covered, int(bases[si])), int(bases[si + 1])
            if lo < hi:
                for row, spans, text in long_rows(seg, lo - int(bases[si]), hi - int(bases[si])):
                    keys.extend([row + int(bases[si])] * len(spans))
                    parts.extend(range(len(spans)))
                    texts.append(text)
                    cuts.append(spans)
        chunks = v.chunks
        if texts:
            # an embedder that can embed passages from their memory's tokens (the hashing space:
            # the batch just written was tokenised a moment ago) is asked for them by span
            by_span = getattr(self.embedder, "embed_passages", None)
            made = by_span(texts, cuts) if callable(by_span) else \
                self.embedder.embed([t[a:b] for t, sp in zip(texts, cuts) for a, b in sp])
            vecs = np.asarray(made, np.float32).reshape(len(keys), -1)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            vecs = np.divide(vecs, norms, out=np.zeros_like(vecs), where=norms > 0)
            chunks = (*chunks, PassageChunk(np.array(keys, np.int64), np.array(parts, np.int32), vecs))
        return PassageVersion(epoch=view.epoch, covered=view.rows, chunks=chunks)

    def drop(self, epoch: int = -1) -> None:
        """Forget every passage (the rows they belong to were renumbered); empty at row epoch `epoch`."""
        with self._lock:
            self.current = PassageVersion(epoch=epoch, covered=0)
            self.dirty = False

    def renumber(self, moved: Renumbering) -> bool:
        """Carry the passages over a purge (`moved`: which rows it kept, and their new keys): the
        purged rows' vectors dropped, the others re-keyed, nothing embedded again (a model embedder
        took minutes to re-embed a store's long memories after every purge). False, and nothing
        changed, when the passages cannot follow (`Renumbering.follows`)."""
        with self._lock:
            v = self.current
            if not moved.follows(v.epoch, v.covered):
                return False
            chunks = []
            for c in v.chunks:
                stay = moved.kept[c.keys]
                if stay.any():
                    chunks.append(PassageChunk(moved.key_of[c.keys[stay]], c.parts[stay], c.vectors[stay]))
            self.current = PassageVersion(epoch=moved.new_epoch, covered=moved.covered_after(v.covered),
                                          chunks=tuple(chunks))
            self.dirty = True  # its file went with the purge
            self.load_state = "carried over a purge"
            return True

    # ------------------------------------------------------------------------------ files
    def names(self) -> tuple[str, str]:
        return f"passages-{self.space}.arrow", f"passages-{self.space}.json"

    def save(self, files: DerivedFiles) -> None:
        """Write every passage (one table) and the sidecar, file first."""
        with self._save_lock:
            v = self.current
            data, side = self.names()
            cs = v.chunks
            vecs = np.concatenate([c.vectors for c in cs]) if cs else np.zeros((0, self.dim), np.float32)
            table = pa.table({
                "key": arrow_of(np.concatenate([c.keys for c in cs]).astype(np.int64) if cs else np.empty(0, np.int64)),
                "part": arrow_of(np.concatenate([c.parts for c in cs]).astype(np.int32) if cs else np.empty(0, np.int32)),
                "vector": pa.FixedSizeListArray.from_arrays(arrow_of(vecs.reshape(-1).astype(np.float32)), self.dim)})
            entry = files.write(data, table_bytes(table))
            files.write_sidecar(side, {"format": PASSAGES_FORMAT, "epoch": v.epoch, "covered": v.covered,
                                       "embedder": self.embedder.name, "dim": self.dim, **entry})
            self.dirty = self.current is not v

    def load(self, files: DerivedFiles, view: View) -> bool:
        """Adopt the saved passages when whole and current; else say why and start empty."""
        data, side = self.names()
        got = files.read_checked(data, side, PASSAGES_FORMAT, view.epoch, view.committed_rows,
                                 {"embedder": self.embedder.name, "dim": self.dim})
        reason = got if isinstance(got, str) else None
        if not isinstance(got, str):
            raw, meta = got
            try:
                chunk = _chunk_of(bytes_table(raw), self.dim)
                with self._lock:
                    self.current = PassageVersion(epoch=view.epoch, covered=int(meta["covered"]),
                                                  chunks=(chunk,) if len(chunk.keys) else ())
                self.load_state = "adopted"
                return True
            except (ValueError, KeyError, TypeError) as exc:
                reason = f"unreadable ({exc})"
            except Exception as exc:  # noqa: BLE001 - pyarrow's errors: a derived file is never trusted
                reason = f"unreadable ({type(exc).__name__}: {exc})"
        self.load_state = reason
        log.info("passage vectors %s: %s; rebuilding from the segments", data, reason)
        return False

    def describe(self) -> dict[str, Any]:
        return {"passages": self.current.size}


def long_rows(seg: Segment, lo: int, hi: int) -> list[tuple[int, list[tuple[int, int]], str]]:
    """(row, passage spans, content) of each row in [lo, hi) longer than one passage."""
    col = seg.table.column("content").slice(lo, hi - lo)
    lengths = np.asarray(numpy_of(pc.utf8_length(col), fill=0))
    offs = np.flatnonzero(lengths >= MIN_CHARS)
    if not offs.size:
        return []
    # the long rows' passages in one native cut (a call and a ``str.split`` per row were a sixth
    # of a long-turn ingest's passage work); a scalar's as_py per row (pyarrow's `take` costs more:
    # ~2 ms a call, its first in a process ~7)
    texts: list[str] = [col[off].as_py() for off in offs.tolist()]
    return [(lo + off, spans, text) for off, spans, text in zip(offs.tolist(), passages_many(texts), texts)
            if len(spans) > 1]


def _chunk_of(table: pa.Table, dim: int) -> PassageChunk:
    """A saved table as one chunk (checked: keys ascending, vectors of the space's width)."""
    keys = np.asarray(numpy_of(table.column("key")), np.int64)
    parts = np.asarray(numpy_of(table.column("part")), np.int32)
    flat = numpy_of(whole(table.column("vector")).flatten())
    if len(flat) != len(keys) * dim or len(parts) != len(keys):
        raise ValueError(f"passage vectors disagree with their keys ({len(flat)} values for {len(keys)} x {dim})")
    if len(keys) and ((np.diff(keys) < 0).any() or parts.min() < 0 or not np.isfinite(flat).all()):
        raise ValueError("passage keys out of order, a negative passage number or a non-finite value")
    return PassageChunk(keys, parts, np.asarray(flat, np.float32).reshape(len(keys), dim))


__all__ = ["PassageVersion", "StorePassages", "long_rows"]

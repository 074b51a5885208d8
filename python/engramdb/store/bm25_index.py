"""The store's BM25 indexes (H1): one per namespace over a sparse lexical space's term counts.

Keys are global row numbers across *all* segments in order (committed files, then the rows still
in the WAL): a checkpoint turns the WAL's rows into one file in the same order and compaction
concatenates files, so keys survive both; a purge renumbers rows and bumps the manifest's
`row_epoch`, which resets the index. New rows are indexed incrementally before each search
(`sync`), so BM25 sees a memory the moment it is added.

Saved, like the trees, as derived data: `index/bm25-<space>.arrow` (one row per namespace: the
postings as one CSR, the document keys and lengths) with a JSON sidecar (format, epoch, rows
covered, size, CRC-32). A missing, stale or corrupt file is rebuilt from the segments.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..retrieval.bm25 import Bm25Index
from ..spaces.protocol import SparseBatch
from ..spaces.schema import Schema
from .derived import fingerprint, read_checked, write_sidecar
from .segment import Segment, write_segment

log = logging.getLogger("engramdb.bm25")

BM25_FORMAT = 1
_COLUMNS = {"terms": pa.int32(), "indptr": pa.int64(), "docs": pa.int32(), "tf": pa.float32(), "keys": pa.int64(),
            "lengths": pa.float32()}


class StoreBm25:
    """BM25 over one sparse space, per namespace, kept in step with the segments."""

    def __init__(self, space: str, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.space = space
        self.k1, self.b = k1, b
        self.indexes: dict[str, Bm25Index] = {}
        self.covered = 0
        self.epoch = 0
        self.dirty = False
        self.rebuilt_reason: str | None = None

    def sync(self, segments: list[Segment], schema: Schema, epoch: int) -> np.ndarray:
        """Index rows added since the last call; returns the key base of each segment (+ total)."""
        bases = np.zeros(len(segments) + 1, np.int64)
        np.cumsum([len(s) for s in segments], out=bases[1:])
        total = int(bases[-1])
        if epoch != self.epoch or self.covered > total:
            self.indexes, self.covered, self.epoch = {}, 0, epoch
        if self.covered == total:
            return bases
        for si, seg in enumerate(segments):
            lo, hi = max(self.covered, int(bases[si])), int(bases[si + 1])
            if lo >= hi:
                continue
            sb = seg.vectors(schema, self.space)
            assert isinstance(sb, SparseBatch)
            rows = np.arange(lo - int(bases[si]), hi - int(bases[si]))
            codes = seg.ns_index[rows]
            for code in np.unique(codes):
                mine = rows[codes == code]
                ptr, terms, counts = _rows(sb, mine)
                ns = seg.ns_names[int(code)]
                ix = self.indexes.get(ns)
                if ix is None:
                    ix = self.indexes[ns] = Bm25Index(k1=self.k1, b=self.b)
                ix.add(mine + bases[si], ptr, terms, counts)
        self.covered = total
        self.dirty = True
        return bases

    # ------------------------------------------------------------------------------ files
    def paths(self, folder: Path) -> tuple[Path, Path]:
        return folder / "index" / f"bm25-{self.space}.arrow", folder / "index" / f"bm25-{self.space}.json"

    def save(self, folder: Path) -> None:
        """Write every namespace's index (one CSR each) and the sidecar, file first."""
        data, side = self.paths(folder)
        data.parent.mkdir(exist_ok=True)
        names = sorted(self.indexes)
        arrays = [self.indexes[ns].arrays() for ns in names]
        cols: dict[str, pa.Array] = {"namespace": pa.array(names, pa.string())}
        for col, typ in _COLUMNS.items():
            cols[col] = pa.array([a[col] for a in arrays], pa.large_list(typ))
        write_segment(data, pa.table(cols))
        meta = {"format": BM25_FORMAT, "epoch": self.epoch, "covered": self.covered, "k1": self.k1, "b": self.b,
                **fingerprint(data.read_bytes())}
        write_sidecar(side, meta)
        self.dirty = False

    def load(self, folder: Path, epoch: int, committed: int) -> bool:
        """Adopt the saved indexes when whole and current; else say why and start empty."""
        data, side = self.paths(folder)
        got = read_checked(data, side, BM25_FORMAT, epoch, committed, {"k1": self.k1, "b": self.b})
        reason = got if isinstance(got, str) else None
        if not isinstance(got, str):
            raw, meta = got
            try:
                table = pa.ipc.open_file(pa.py_buffer(raw)).read_all()
                indexes = {}
                for i, ns in enumerate(table.column("namespace").to_pylist()):
                    arrays = {c: table.column(c)[i].values.to_numpy(zero_copy_only=False) for c in _COLUMNS}
                    indexes[ns] = Bm25Index.from_arrays(arrays, k1=self.k1, b=self.b)
                self.indexes, self.covered, self.epoch = indexes, int(meta["covered"]), epoch
                return True
            except (ValueError, KeyError, pa.ArrowException) as exc:
                reason = f"unreadable ({exc})"
        self.rebuilt_reason = reason
        log.info("BM25 index %s: %s; rebuilding from the segments", data.name, reason)
        return False


def _rows(sb: SparseBatch, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR (indptr, term ids, counts) of some rows of a sparse batch."""
    starts, ends = sb.indptr[rows], sb.indptr[rows + 1]
    lens = ends - starts
    ptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lens, out=ptr[1:])
    take = np.repeat(starts - ptr[:-1], lens) + np.arange(int(ptr[-1]))
    return ptr, sb.indices[take], sb.weights[take]

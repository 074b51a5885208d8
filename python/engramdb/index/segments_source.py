"""Vectors of one dense space by global key, over a run of segments (what trees and graphs read).

Keys are global row numbers across the segments in order; see storage/ids.py for why they are
stable. A source holds the segments' vector matrices (memory-mapped Arrow columns, no copy).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import kernels
from ..kernels.sets import unique
from ..spaces.schema import Schema
from ..storage.segment import Segment


class SegmentsSource:
    """Vectors of one dense space by global key, over the given segments."""

    def __init__(self, segments: Sequence[Segment], schema: Schema, space: str) -> None:
        self.segments = tuple(segments)
        self.mats = [np.asarray(s.vectors(schema, space)) for s in segments]
        self.bases = np.zeros(len(segments) + 1, np.int64)
        np.cumsum([len(s) for s in segments], out=self.bases[1:])

    def matrices(self) -> tuple[list[np.ndarray], np.ndarray]:
        """The segments' matrices and where each starts in key space (for the native descent)."""
        return [np.ascontiguousarray(m, dtype=np.float32) for m in self.mats], self.bases

    @property
    def total(self) -> int:
        return int(self.bases[-1])

    def locate(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(segment index, row) of each key."""
        seg = np.searchsorted(self.bases, keys, side="right") - 1
        return seg, keys - self.bases[seg]

    def take(self, keys: np.ndarray) -> np.ndarray:
        seg, row = self.locate(np.asarray(keys, np.int64))
        out = np.empty((len(keys), self.mats[0].shape[1] if self.mats else 0), np.float32)
        for s in unique(seg):
            sel = seg == s
            out[sel] = self.mats[int(s)][row[sel]]
        return out

    def topk(self, query: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        seg, row = self.locate(np.asarray(keys, np.int64))
        found_k, found_s = [], []
        for s in unique(seg):
            idx, sc = kernels.topk(query, self.mats[int(s)], k, "cosine", mask=row[seg == s], threads=1)
            found_k.append(idx + self.bases[int(s)])
            found_s.append(sc)
        return kernels.merge_topk(found_k, found_s, k)

    def namespaces_of(self, keys: np.ndarray) -> dict[str, np.ndarray]:
        """The given keys grouped by their rows' namespace."""
        seg, row = self.locate(keys)
        out: dict[str, list[np.ndarray]] = {}
        present = set(unique(seg).tolist())
        for s, sg in enumerate(self.segments):
            if s not in present:
                continue
            sel = seg == s
            codes = sg.ns_index[row[sel]]
            for code in unique(codes):
                out.setdefault(sg.ns_names[int(code)], []).append(keys[sel][codes == code])
        return {ns: np.concatenate(parts) for ns, parts in out.items()}

    def keys_of(self, namespace: str) -> np.ndarray:
        """Every key of one namespace, ascending."""
        parts = []
        for i, sg in enumerate(self.segments):
            code = sg.ns_codes.get(namespace)
            if code is not None:
                parts.append(np.flatnonzero(sg.ns_index == code) + self.bases[i])
        return np.concatenate(parts) if parts else np.empty(0, np.int64)


def newest(recent: np.ndarray | None, keys: np.ndarray, n: int) -> np.ndarray:
    """The last `n` of `recent` followed by `keys` (a namespace's hot rows)."""
    joined = keys if recent is None else np.concatenate([recent, keys])
    return joined[len(joined) - n :] if n > 0 else joined[:0]

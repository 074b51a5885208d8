"""Small segment files merged as they pile up (S6).

Every process that writes and closes (a hook's writer at the end of each session, a script, a
service restarted) folds its WAL into a segment file of its own, however few rows it holds, and a
request pays per segment: filters, scans, the first touch of a file. Sixty sessions of one turn
each left sixty one-row files, and nothing merged them but an explicit `compact()`.

After each checkpoint, each run of `MOST` or more neighbouring committed segments that hold fewer
rows than a checkpoint (`Tuning.checkpoint_rows`) and are of one size tier (1-7 rows, 8-63, 64-511,
...) is merged into one file: a row is rewritten once a tier, so a store of one-row sessions keeps
at most a few files a tier and writes each row a handful of times. The rows are concatenated in
order, so every row keeps its key: the id index and the derived indexes
(trees, BM25, passages), which address rows by key, stay valid, as after `compact()`. One atomic
commit replaces the runs' files (storage/rewrites.py's protocol: new files first, the manifest as
the commit point, old files deleted after); each file's checksum is verified before it is copied.
A failure (a full disk, a damaged file) leaves the files as they were: the checkpoint itself has
committed already, and the merge is tried again after the next one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from ..model.tuning import Tuning
from ..spaces.schema import Schema
from .checksum import check_file
from .manifest import Manifest
from .segment import Segment
from .vectors import conform
from .view import View


class Rewriting(Protocol):
    """What a merge needs of the engine (storage/engine.py calls it, so it cannot import it)."""

    @property
    def view(self) -> View: ...
    @property
    def manifest(self) -> Manifest: ...
    tuning: Tuning
    schema: Schema
    path: Path | None

    def atomic(self) -> AbstractContextManager[None]: ...
    def new_segment(self, table: pa.Table, **how: Any) -> Segment: ...
    def commit(self, unlisted: Sequence[str] = ()) -> None: ...
    def publish(self, **changes: Any) -> View: ...


MOST = 8  # small committed segments a store keeps before it merges their runs


def holders(table: pa.Table, archived: Mapping[str, str]) -> list[str]:
    """The archive files holding content of a segment's rows (its stripped rows'): a rewritten
    segment requires them (storage/describe.py), so a repair never takes it without them."""
    if not archived:
        return []
    return sorted({archived[i] for i in set(table.column("id").to_pylist()) if i in archived})


def tier(rows: int) -> int:
    """A segment's size tier: 1-7 rows are tier 0, 8-63 tier 1, 64-511 tier 2 (powers of `MOST`)."""
    t = 0
    while rows >= MOST:
        rows //= MOST
        t += 1
    return t


def small_runs(rows: list[int], small: int) -> list[tuple[int, int]]:
    """[start, end) of each run of `MOST` or more neighbours under `small` rows and of one size tier.
    By tiers, not every small file at once: a merged run is small again until it reaches `small`,
    and merged with every later run it would be rewritten each time (one-row sessions wrote 32x the
    store's bytes by the 400th); by tiers a row is rewritten once a tier, a handful of times."""
    runs, start = [], 0
    for i in range(1, len(rows) + 1):
        if i < len(rows) and rows[i] < small and rows[start] < small and tier(rows[i]) == tier(rows[start]):
            continue
        if rows[start] < small and i - start >= MOST:
            runs.append((start, i))
        start = i
    return runs


def coalesce(engine: Rewriting) -> int:
    """Merge the runs of small committed segments (see the module docstring); call with the
    engine's lock held, after a checkpoint. Returns how many files were merged away."""
    view = engine.view
    n = view.committed
    committed = view.segments[:n]
    runs = small_runs([len(s) for s in committed], engine.tuning.checkpoint_rows)
    m = engine.manifest
    if not runs or [e["file"] for e in m.segments] != [str(s.file) for s in committed]:
        return 0  # nothing to merge, or a manifest that does not list the view's files one to one
    segments: list[Segment] = list(committed)
    entries = list(m.segments)
    replaced: list[str] = []
    with engine.atomic():  # a failure leaves the committed files and the engine as they were
        for a, b in reversed(runs):  # from the end: the earlier runs' positions stay put
            run = committed[a:b]
            old = [str(s.file) for s in run]
            assert engine.path is not None  # a folder store: only they checkpoint
            for name, entry in zip(old, m.segments[a:b]):
                # on disk now, not as mapped at open: a file damaged since (the writer maps it, so it
                # reads the new bytes) would be copied under a fresh checksum, its damage hidden
                check_file(engine.path / name, dict(entry))
            table = pa.concat_tables([conform(s.checked(), engine.schema) for s in run])
            orders = [s.order for s in run if s.order is not None]
            merged = engine.new_segment(table, replaces=old, requires=holders(table, view.archived),
                                        order=min(orders) if orders else None)
            merged.sys_end = np.concatenate([s.sys_end for s in run])
            segments[a:b], entries[a:b] = [merged], [merged.entry()]
            replaced += old
        m.segments = entries
        engine.commit(replaced)
    engine.publish(segments=(*segments, *view.segments[n:]))
    return len(replaced)


__all__ = ["MOST", "Rewriting", "coalesce", "holders", "small_runs", "tier"]

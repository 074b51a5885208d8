"""The curiosity queue (K7) as Arrow rows in the store folder's `access/` (`curiosity-*.arrow`).

One row per waiting item: the hop that surprised the navigator (its memory, the memory and seed
it was reached from, the link's kind), the query, the expected and actual scores, and when. The
rows are an `ArrowLog` (storage/arrow_log.py): checksummed file names, atomic writes, a damaged
file reported and left out. Queued rows are written at once (the queue outlives the process:
a curiosity agent may read it after this store is closed); consuming an item removes its row
(the log's purge: the files holding it are rewritten without it). A read-only store reads the
queue and never writes it; a store kept in memory keeps its queue in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .arrow_log import ArrowLog

CURIOSITY_SCHEMA = pa.schema([
    ("seq", pa.int64()),
    ("item_id", pa.string()),
    ("namespace", pa.string()),
    ("memory_id", pa.string()),
    ("parent_id", pa.string()),
    ("seed_id", pa.string()),
    ("via", pa.string()),
    ("query", pa.string()),
    ("expected", pa.float64()),
    ("actual", pa.float64()),
    ("at", pa.timestamp("us", tz="UTC")),
])


MAX_FILES = 8  # the queue's files, at most, before they are merged into one


class CuriosityLog:
    """The queue's rows in one store (see the module docstring). `folder` None keeps them in memory."""

    def __init__(self, folder: Path | None, *, writable: bool) -> None:
        self.writable = writable
        # every append is flushed by hand, so the log's own batching never holds a row back; its
        # files (a few rows each) merged past MAX_FILES: every open reads the whole queue (22 files
        # of 237 rows were 11 ms of a first context at 100,000 memories), and a merge of so few
        # rows costs next to nothing
        self._log = ArrowLog(folder, "curiosity", CURIOSITY_SCHEMA, writable=writable, flush_rows=1 << 30,
                             flush_seconds=float("inf"), max_files=MAX_FILES)

    def on_crowded(self, hand: Callable[[Callable[[], int]], None] | None) -> None:
        """Hand the merge of too many files to `hand` (a worker) instead of the appender (see
        storage/arrow_log.py `on_crowded`; None: the appender): a context that queues an item
        appends one file."""
        self._log.on_crowded = hand

    def append(self, rows: Iterable[Mapping[str, Any]], *, write: bool = True) -> int:
        """Write rows (every column but `seq`) at once, as one file; returns how many. `write`
        False only buffers them (listed, purged; `flush` writes them)."""
        rows = list(rows)
        if not rows:
            return 0
        self._check()
        self._log.append(rows)
        if write:
            self._log.flush()
        return len(rows)

    def unwritten(self) -> bool:
        """Whether rows wait to be written (buffered, or a flush is writing them now)."""
        return self._log.waiting() > 0

    def flush(self) -> None:
        """Write the rows an append could not (a full disk kept them buffered), if any."""
        self._check()
        self._log.flush()

    def rows(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """The waiting rows (of one namespace), oldest first."""
        table = self._log.read()
        if namespace is not None:
            table = table.filter(pc.equal(table.column("namespace"), namespace))
        out: list[dict[str, Any]] = table.to_pylist()
        return out

    def links(self) -> list[tuple[str, str, str, str, str]]:
        """(namespace, parent id, memory id, link kind, item id) of every waiting row, oldest
        first: what a store keeps to queue one item per link, read from five columns (the rows
        as dicts, their times made datetimes, were a third of the queue's load at open)."""
        table = self._log.read()
        cols = [table.column(c).to_pylist() for c in ("namespace", "parent_id", "memory_id", "via", "item_id")]
        return list(zip(*cols))

    def remove(self, item_ids: Iterable[str]) -> int:
        """Remove the rows of these items; returns how many went."""
        ids = {i for i in item_ids if isinstance(i, str)}
        if not ids:
            return 0
        self._check()
        return self._log.purge("item_id", ids)

    def forget_memories(self, memory_ids: Iterable[str], namespaces: Iterable[str] = ()) -> int:
        """Remove every row naming one of these memories (as the hop, its parent or its seed), and
        every row of these namespaces (their queries' text): what a purge must leave no trace of;
        returns how many rows went (one pass over the files)."""
        ids, spaces = set(memory_ids), set(namespaces)
        if not ids and not spaces:
            return 0
        self._check()
        return self._log.purge_any({"memory_id": ids, "parent_id": ids, "seed_id": ids, "namespace": spaces})

    def describe(self) -> dict[str, Any]:
        """Files, the next seq, damaged files (the log's own description)."""
        return self._log.describe()

    def _check(self) -> None:
        if not self.writable:
            raise PermissionError("this store is read-only: its curiosity queue can be listed, not changed")


__all__ = ["CURIOSITY_SCHEMA", "CuriosityLog"]

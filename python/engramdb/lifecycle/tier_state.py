"""Each memory's lifecycle tier (H7) and the history of consolidation runs, saved beside the indexes.

`index/lifecycle-tiers.arrow` holds (memory id, tier, since) for memories promoted to long-term (a
memory not listed is short-term; an archived one is known from the store's archive map); its JSON
sidecar holds the format, size, CRC-32 and the last runs' summaries. A missing or damaged file
starts every memory short-term again: promotion is re-earned by the next run, nothing is lost.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from .._arrow_numpy import table_of
from ..storage.derived_files import DerivedFiles, bytes_table, table_bytes

TIERS_FORMAT = 1
DATA, SIDE = "lifecycle-tiers.arrow", "lifecycle-tiers.json"
RUNS_KEPT = 50
_SCHEMA = pa.schema([("memory_id", pa.string()), ("tier", pa.string()), ("since_us", pa.int64())])


class TierState:
    """memory id -> (tier, since), and the recent runs (newest last)."""

    def __init__(self) -> None:
        self.by_id: dict[str, tuple[str, int]] = {}
        self.runs: list[dict[str, Any]] = []
        self.state = "new"  # "adopted" or why the saved state was not read

    def tier(self, memory_id: str) -> str:
        return self.by_id.get(memory_id, ("short_term", 0))[0]

    def set(self, memory_id: str, tier: str, since_us: int) -> None:
        if tier == "short_term":
            self.by_id.pop(memory_id, None)
        else:
            self.by_id[memory_id] = (tier, since_us)

    def forget(self, ids: Iterable[str]) -> bool:
        """Drop purged memories; returns whether any was listed."""
        gone = [mid for mid in ids if mid in self.by_id]
        for mid in gone:
            del self.by_id[mid]
        return bool(gone)

    def record(self, run: dict[str, Any]) -> None:
        self.runs = [*self.runs, run][-RUNS_KEPT:]

    def save(self, files: DerivedFiles) -> None:
        if not files.writable:
            return
        ids = sorted(self.by_id)
        table = table_of({"memory_id": ids, "tier": [self.by_id[i][0] for i in ids],
                          "since_us": [self.by_id[i][1] for i in ids]}, _SCHEMA)
        entry = files.write(DATA, table_bytes(table))
        files.write_sidecar(SIDE, {"format": TIERS_FORMAT, "runs": self.runs, **entry})

    @staticmethod
    def load(files: DerivedFiles) -> TierState:
        out = TierState()
        meta = files.read_sidecar(SIDE)
        if isinstance(meta, str):
            out.state = meta
            return out
        if meta.get("format") != TIERS_FORMAT:
            out.state = f"format {meta.get('format')!r}"
            return out
        raw = files.read(DATA, meta)
        if isinstance(raw, str):
            out.state = raw
            return out
        try:
            table = bytes_table(raw)
            if not table.schema.equals(_SCHEMA):
                out.state = "unexpected columns"
                return out
            for mid, tier, since in zip(*(table.column(c).to_pylist() for c in _SCHEMA.names)):
                if isinstance(mid, str) and tier in ("long_term", "archived"):
                    out.by_id[mid] = (tier, int(since or 0))
            runs = meta.get("runs", [])
            out.runs = [r for r in runs if isinstance(r, dict)][-RUNS_KEPT:] if isinstance(runs, list) else []
            out.state = "adopted"
        except Exception as exc:  # noqa: BLE001 - a derived file is never trusted
            out.by_id, out.state = {}, f"unreadable ({type(exc).__name__})"
        return out


__all__ = ["TierState"]

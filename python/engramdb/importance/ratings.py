"""Every rated memory's ELO and use counts, and the access-log position they cover (E2-E5, C5).

Ratings are derived data: the batch update (importance/batch.py) makes them from the access log,
and they are saved beside the indexes as `index/elo-ratings.arrow` with a JSON sidecar (format,
watermark, size, CRC-32). A missing or damaged file, one a purge removed, or one of an older
format, is rebuilt by replaying the log from its start, so losing it never loses or corrupts a
memory. Format 2: ratings start at 1400 (format 1's started at 1200, the MEDIUM/LOW boundary:
its values are on another scale, so such a file is replayed, not adopted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from .._arrow_numpy import table_of
from ..storage.derived_files import DerivedFiles, bytes_table, table_bytes
from .elo import DAY_US, INITIAL_ELO, decayed, importance, tier

RATINGS_FORMAT = 2
DATA, SIDE = "elo-ratings.arrow", "elo-ratings.json"
_SCHEMA = pa.schema([("memory_id", pa.string()), ("namespace", pa.string()), ("elo", pa.float64()),
                     ("updates", pa.int64()), ("shown", pa.int64()), ("used", pa.int64()),
                     ("first_seen_us", pa.int64()), ("last_shown_us", pa.int64()), ("last_used_us", pa.int64())])


@dataclass
class Rating:
    """One memory's rating as of its last update (decay is applied when it is read)."""

    namespace: str
    elo: float = INITIAL_ELO
    updates: int = 0  # ELO updates so far (K drops from 16 to 8 at 30)
    shown: int = 0  # times a logged search returned it
    used: int = 0  # times a caller reported it used (or a context injected it)
    first_seen_us: int = 0
    last_shown_us: int = 0
    last_used_us: int = 0

    def since_access_us(self) -> int:
        """When decay starts: its last use, or when it was first seen if never used."""
        return max(self.last_used_us, self.first_seen_us)

    def elo_at(self, now_us: int) -> float:
        """The rating decayed to `now_us`."""
        return decayed(self.elo, (now_us - self.since_access_us()) / DAY_US)


@dataclass(frozen=True)
class Importance:
    """What `Store.importance(id)` says of one memory: its ELO now, tier, counts and C5 importance."""

    id: str
    elo: float
    tier: str
    updates: int
    shown: int
    used: int
    importance: float  # C5: saturated log(1 + accesses) x 45-day half-life decay since the last access
    last_used_us: int | None


class Ratings:
    """memory id -> Rating, and the access-log seq they cover up to (`watermark`)."""

    def __init__(self) -> None:
        self.by_id: dict[str, Rating] = {}
        self.watermark = 0  # every log row with seq <= watermark is in these ratings

    def __len__(self) -> int:
        return len(self.by_id)

    def elo_now(self, memory_id: str, now_us: int) -> float:
        """A memory's rating decayed to now (`INITIAL_ELO` when never rated)."""
        r = self.by_id.get(memory_id)
        return r.elo_at(now_us) if r is not None else INITIAL_ELO

    def describe(self, memory_id: str, now_us: int) -> Importance:
        """The importance record of one memory (a never-seen one: the initial rating, no use)."""
        r = self.by_id.get(memory_id)
        if r is None:
            return Importance(memory_id, INITIAL_ELO, tier(INITIAL_ELO), 0, 0, 0, 0.0, None)
        elo = r.elo_at(now_us)
        days = (now_us - max(r.last_used_us, r.last_shown_us, r.first_seen_us)) / DAY_US
        return Importance(memory_id, elo, tier(elo), r.updates, r.shown, r.used, importance(r.shown + r.used, days),
                          r.last_used_us or None)

    def forget(self, ids: set[str], namespaces: set[str] | frozenset[str] = frozenset()) -> int:
        """Drop the ratings of purged memories, and every rating of purged namespaces; returns how
        many went."""
        gone = {i for i in ids if i in self.by_id}
        if namespaces:
            gone |= {i for i, r in self.by_id.items() if r.namespace in namespaces}
        for i in gone:
            del self.by_id[i]
        return len(gone)

    # ------------------------------------------------------------------------------ files
    def save(self, files: DerivedFiles) -> None:
        """Write the ratings and their sidecar (data first)."""
        if not files.writable:
            return
        ids = sorted(self.by_id)
        rs = [self.by_id[i] for i in ids]
        table = table_of({
            "memory_id": ids, "namespace": [r.namespace for r in rs], "elo": [r.elo for r in rs],
            "updates": [r.updates for r in rs], "shown": [r.shown for r in rs], "used": [r.used for r in rs],
            "first_seen_us": [r.first_seen_us for r in rs], "last_shown_us": [r.last_shown_us for r in rs],
            "last_used_us": [r.last_used_us for r in rs]}, _SCHEMA)
        # the watermark travels inside the CRC-checked bytes too: a damaged sidecar cannot move it
        table = table.replace_schema_metadata({"watermark": str(self.watermark)})
        entry = files.write(DATA, table_bytes(table))
        files.write_sidecar(SIDE, {"format": RATINGS_FORMAT, "watermark": self.watermark, **entry})

    @staticmethod
    def load(files: DerivedFiles) -> tuple[Ratings, str]:
        """The saved ratings and "adopted", or empty ratings and why (they are then replayed)."""
        meta = files.read_sidecar(SIDE)
        if isinstance(meta, str):
            return Ratings(), meta
        if meta.get("format") != RATINGS_FORMAT:
            return Ratings(), f"format {meta.get('format')!r}"
        raw = files.read(DATA, meta)
        if isinstance(raw, str):
            return Ratings(), raw
        try:
            table = bytes_table(raw)
            if not table.schema.remove_metadata().equals(_SCHEMA):
                return Ratings(), "unexpected columns"
            mark = (table.schema.metadata or {}).get(b"watermark", b"")
            if not mark.isdigit():
                return Ratings(), "no watermark in the ratings file"
            # column by column (a Python loop over the rows was most of a first context's ratings
            # load); plain lists, as pyarrow's numpy and scalar conversions import pandas when
            # it is installed (hook processes refuse it)
            ids, elos = table.column("memory_id").to_pylist(), table.column("elo").to_pylist()
            if None in ids or None in elos or not all(map(math.isfinite, elos)):
                i = next(i for i, (mid, elo) in enumerate(zip(ids, elos))
                         if mid is None or elo is None or not math.isfinite(elo))  # the first, in file order
                return Ratings(), f"a bad row ({ids[i]!r}, elo {elos[i]!r})"
            # a missing namespace reads "", a missing count or time 0; a later row of an id wins
            cols: list[list[Any]] = [_filled(table.column(c), "" if c == "namespace" else 0)
                                     for c in _SCHEMA.names[1:] if c != "elo"]
            # counts and times are never negative as a writer makes them (a negative count made
            # exploration's Beta draw raise on every search that reached the memory)
            if ids and min(map(min, cols[1:])) < 0:
                names = _SCHEMA.names[3:]
                i, c = next((i, c) for i, row in enumerate(zip(*cols[1:])) for c, v in zip(names, row) if v < 0)
                return Ratings(), f"a bad row ({ids[i]!r}, {c} {cols[1 + names.index(c)][i]!r})"
            out = Ratings()
            out.by_id = dict(zip(ids, map(Rating, cols[0], elos, *cols[1:])))
            out.watermark = int(mark)
            return out, "adopted"
        except Exception as exc:  # noqa: BLE001 - a derived file is never trusted
            return Ratings(), f"unreadable ({type(exc).__name__}: {exc})"


def _filled(col: pa.ChunkedArray, missing: Any) -> list[Any]:
    """A column's values, `missing` where a value is missing."""
    values = col.to_pylist()
    return values if not col.null_count else [missing if v is None else v for v in values]


__all__ = ["Importance", "Rating", "Ratings"]

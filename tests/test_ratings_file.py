"""E2-E5: the saved ratings file read back column by column: the same ratings as written, a row
with a missing count or namespace read as 0 or "", a later row of an id winning, and a bad row
(no id, no ELO, an ELO that is not finite) refusing the whole file with the first such row named."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from engramdb.importance.ratings import DATA, RATINGS_FORMAT, SIDE, Rating, Ratings
from engramdb.storage.derived_files import DerivedFiles, table_bytes

_COUNTS = ("updates", "shown", "used", "first_seen_us", "last_shown_us", "last_used_us")


def _write(files: DerivedFiles, rows: list[dict[str, Any]], watermark: int = 7) -> None:
    """A ratings file holding exactly these rows (None: a missing value), as a damaged or foreign
    writer could leave it: the reader must not assume `Ratings.save` wrote it."""
    schema = pa.schema([("memory_id", pa.string()), ("namespace", pa.string()), ("elo", pa.float64())]
                       + [(c, pa.int64()) for c in _COUNTS])
    table = pa.table({f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in schema}, schema=schema)
    table = table.replace_schema_metadata({"watermark": str(watermark)})
    entry = files.write(DATA, table_bytes(table))
    files.write_sidecar(SIDE, {"format": RATINGS_FORMAT, "watermark": watermark, **entry})


def test_saved_ratings_load_back_as_written(tmp_path: Path) -> None:
    files = DerivedFiles(tmp_path, writable=True)
    r = Ratings()
    r.by_id = {f"m{i}": Rating(f"ns{i % 3}", 1400.0 + i / 7, i, 2 * i, i % 5, 10**15 + i, 10**15 + 2 * i,
                               10**15 + 3 * i) for i in range(300)}
    r.watermark = 123
    r.save(files)
    back, state = Ratings.load(files)
    assert state == "adopted"
    assert back.watermark == 123
    assert back.by_id == r.by_id
    assert all(type(getattr(x, c)) is int for x in back.by_id.values() for c in _COUNTS)
    empty = Ratings()
    empty.save(files)
    assert Ratings.load(files)[0].by_id == {}


def test_missing_counts_read_zero_and_a_later_row_of_an_id_wins(tmp_path: Path) -> None:
    files = DerivedFiles(tmp_path, writable=True)
    _write(files, [{"memory_id": "a", "namespace": "n", "elo": 1500.0, "updates": 3, "shown": 4},
                   {"memory_id": "b", "namespace": None, "elo": 1300.0, "used": None, "last_used_us": 9},
                   {"memory_id": "a", "namespace": "n2", "elo": 1450.5, "updates": 1}])
    back, state = Ratings.load(files)
    assert state == "adopted" and back.watermark == 7
    assert back.by_id == {"a": Rating("n2", 1450.5, 1, 0, 0, 0, 0, 0), "b": Rating("", 1300.0, 0, 0, 0, 0, 0, 9)}


@pytest.mark.parametrize(("bad", "said"), [
    ({"memory_id": None, "elo": 1400.0}, "a bad row (None, elo 1400.0)"),
    ({"memory_id": "x", "elo": None}, "a bad row ('x', elo None)"),
    ({"memory_id": "x", "elo": math.nan}, "a bad row ('x', elo nan)"),
    ({"memory_id": "x", "elo": -math.inf}, "a bad row ('x', elo -inf)"),
])
def test_a_bad_row_refuses_the_file_naming_the_first_one(tmp_path: Path, bad: dict[str, Any], said: str) -> None:
    files = DerivedFiles(tmp_path, writable=True)
    later_bad = {"memory_id": None, "elo": math.inf}
    _write(files, [{"memory_id": "ok", "namespace": "n", "elo": 1400.0}, bad, later_bad])
    back, state = Ratings.load(files)
    assert state == said
    assert back.by_id == {} and back.watermark == 0  # replayed from the log's start instead

"""Issue 24: the fault-injection matrix, a bounded sample. Every public operation that writes
(tests/fault_matrix.py lists them: add, add_many, update, supersede, link, forget, checkpoint,
compact, purge, archive, unarchive, consolidate, topics, ratings, the access log, the open that
replays the WAL and takes the spool in, backup, repair) is failed by ENOSPC, by EIO and by a
crash at its first and last I/O call and at points between; after each case the store opens by
itself, `verify` is ok, nothing acknowledged is lost or doubled, and the operation is all or
nothing. `python bench/fault_matrix.py` runs every call of every operation (bench/RELIABILITY.md)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from fault_matrix import OPS, run_matrix

POINTS = 5  # I/O calls per operation and fault, the first and last among them


def sample(op: str, calls: int) -> list[int]:
    rng = random.Random(f"{op}-{calls}")
    chosen = {1, calls} | {rng.randint(1, calls) for _ in range(POINTS - 2)} if calls else {1}
    return sorted(chosen)


def test_every_operation_survives_a_fault_at_sampled_io_calls(tmp_path: Path) -> None:
    result = run_matrix(tmp_path, sample)
    counts = result["counts"]
    assert set(counts) == set(OPS)
    for name, c in counts.items():
        assert c["calls"] >= 1, f"{name} made no I/O call through the seam: it cannot be tested"
    assert not result["failures"], "\n".join(f"{op} {fault} at call {at}: {why}"
                                             for op, fault, at, why in result["failures"][:20])


@pytest.mark.parametrize("op", ["supersede", "spool_ingest"])
def test_an_operation_failed_at_every_call_is_all_or_nothing(tmp_path: Path, op: str) -> None:
    """Two operations, every one of their I/O calls: supersede (new versions and an edge in one
    write) and the spool's ingestion at open (captures taken in exactly once)."""
    result = run_matrix(tmp_path, lambda name, calls: list(range(1, calls + 1)), ops=[op])
    assert result["counts"][op]["cases"] >= 3 * result["counts"][op]["calls"]
    assert not result["failures"], result["failures"][:10]

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

# Each fault is tried at an operation's first I/O call (nothing written yet) and its last (the
# commit), and at one call between: the calls between (2 .. calls-1) are cut into four equal
# strides, a seeded call drawn from each, one stride per fault, ordered so the two faults that
# raise (ENOSPC, EIO) and the two that kill (crash, powerloss) each hold a stride in either half.
# An operation gets 4 distinct calls between, spread over its whole run, where every fault had
# repeated the same 3 random ones (which could coincide); 12 cases per operation instead of 20,
# and every fault still meets the first, the last and the middle of every operation. What the
# repeats added was one call under two faults alike (ENOSPC and EIO take one path, an OSError;
# crash and powerloss one, a kill). `python bench/fault_matrix.py` runs every call of every fault.
STRIDES = ("ENOSPC", "crash", "EIO", "powerloss")


def sample(op: str, calls: int) -> dict[str, list[int]]:
    rng = random.Random(f"{op}-{calls}")
    between = list(range(2, calls))
    out = {}
    for i, fault in enumerate(STRIDES):
        stride = (between[i * len(between) // len(STRIDES):(i + 1) * len(between) // len(STRIDES)]
                  if len(between) >= len(STRIDES) else between[i % max(len(between), 1):][:1])  # fewer: in turn
        out[fault] = sorted({1, max(calls, 1)} | ({rng.choice(stride)} if stride else set()))
    return out


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

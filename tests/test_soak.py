"""Soak (tests/soak_harness.py), bounded: a writer checkpointing and compacting while 4 reader
processes reopen continuously for ~10 s; every open finds every batch acknowledged before it."""

from __future__ import annotations

from pathlib import Path

import soak_harness

# 10 s: measured here (load ~3) 12 s gave 223 batches (a checkpoint every 10, a compaction every
# 25), 696 reopens and 13,238 reads, each over four times the floors asserted below: in 10 s every
# one of ~18 checkpoints and ~7 compactions runs with four readers reopening beside it, as in the
# 20 s this ran. bench/soak.py runs it for longer.
SECONDS = 10


def test_readers_reopening_beside_a_checkpointing_compacting_writer_miss_nothing(tmp_path: Path) -> None:
    got = soak_harness.soak(tmp_path / "store", seconds=SECONDS, readers=4)
    assert got["misses"] == []
    assert got["batches"] >= 50 and got["opens"] >= 40 and got["checks"] >= 800, got

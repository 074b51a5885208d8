"""Soak (tests/soak_harness.py), bounded: a writer checkpointing and compacting while 4 reader
processes reopen continuously for ~20 s; every open finds every batch acknowledged before it."""

from __future__ import annotations

from pathlib import Path

import soak_harness


def test_readers_reopening_beside_a_checkpointing_compacting_writer_miss_nothing(tmp_path: Path) -> None:
    got = soak_harness.soak(tmp_path / "store", seconds=20, readers=4)
    assert got["misses"] == []
    assert got["batches"] >= 50 and got["opens"] >= 40 and got["checks"] >= 800, got

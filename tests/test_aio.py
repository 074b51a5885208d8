"""The asyncio facade behaves like an asyncio library (issue 25 item 13): `close()` never stalls
the loop, calls after close raise the store's own `StoreError`, and a cancelled write either did
not happen or is reported with what it stored, so a retry never stores a record twice.

A gate embedder holds a call inside the store (in its worker thread) until the test releases it,
so "a call is running" is a fact here, not a timing; a fallback timer releases it too, so a loop
that stalls makes the test fail instead of hanging."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import engramdb
import engramdb.aio
import numpy as np
import pytest
from engramdb import StoreError
from store_helpers import ToyBits, ToyDense, toy_schema


class Gate(ToyDense):
    """ToyDense that holds any batch with "block" in a text until `release` is set."""

    def __init__(self) -> None:
        super().__init__(8)
        self.started = threading.Event()
        self.release = threading.Event()
        self.by_timer = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any("block" in t for t in texts):
            self.started.set()
            self.release.wait(timeout=60)
        return super().embed(texts)

    def fallback(self, seconds: float) -> threading.Timer:
        """Release after `seconds` from a thread of its own (only a stalled loop lets it fire)."""

        def fire() -> None:
            self.by_timer = True
            self.release.set()

        timer = threading.Timer(seconds, fire)
        timer.start()
        return timer


async def _open(path: Path | None, gate: Gate, workers: int = 2) -> engramdb.aio.AsyncStore:
    return await engramdb.aio.open(path, schema=toy_schema(), embedders={"dense": gate, "bits": ToyBits()},
                                   workers=workers)


async def _started(gate: Gate) -> None:
    """Wait (off the loop) until a call is held inside the gate."""
    assert await asyncio.get_running_loop().run_in_executor(None, gate.started.wait, 30)


def _records(n: int, *, ids: bool) -> list[dict[str, Any]]:
    return [{"content": f"block record {i}", "namespace": "n", **({"id": f"r{i}"} if ids else {})} for i in range(n)]


def test_close_lets_the_loop_run_while_a_call_finishes() -> None:
    gate = Gate()

    async def main() -> tuple[bool, int, list[str]]:
        db = await _open(None, gate)
        await db.add("something to find", namespace="n")
        search = asyncio.create_task(db.search("block this search", namespace="n", k=1))
        await _started(gate)
        timer = gate.fallback(20)
        closing = asyncio.create_task(db.close())
        ticks = 0
        while not closing.done():  # the loop keeps turning while close waits for the search
            ticks += 1
            if ticks == 50:
                gate.release.set()  # from the loop: reached only while close leaves it free
            await asyncio.sleep(0.01)
        timer.cancel()
        hits = await search  # the call made before close finished and answered
        await closing
        return gate.by_timer, ticks, [h.memory.content for h in hits]

    by_timer, ticks, hits = asyncio.run(main())
    assert not by_timer and ticks >= 50  # released by the loop, not by the fallback timer
    assert hits == ["something to find"]


def test_calls_after_close_raise_store_error_and_close_is_idempotent(tmp_path: Path) -> None:
    async def main() -> None:
        db = await _open(tmp_path / "db", Gate())
        await db.add("kept", namespace="n", id="k1")
        await asyncio.gather(db.close(), db.close())
        await db.close()
        assert db.closed
        for call in (db.get("k1"), db.add("late", namespace="n"), db.update("k1", content="x"), db.stats()):
            with pytest.raises(StoreError, match="the store is closed"):
                await call

    asyncio.run(main())
    with engramdb.open(tmp_path / "db", schema=toy_schema(), embedders={"dense": ToyDense(), "bits": ToyBits()}) as db:
        assert [m.content for m in db.list("n")] == ["kept"]  # closed properly: the lock is free


def test_a_write_cancelled_while_it_runs_finishes_and_reports_its_ids(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    gate = Gate()

    async def main() -> engramdb.aio.AsyncStore:
        db = await _open(tmp_path / "db", gate)
        write = asyncio.create_task(db.add_many(_records(20, ids=False)))
        await _started(gate)
        write.cancel()
        with pytest.raises(asyncio.CancelledError):
            await write
        gate.release.set()
        await db.close()  # the calls made before close finish first
        return db

    with caplog.at_level(logging.WARNING, logger="engramdb"):
        db = asyncio.run(main())
    [done] = db.cancelled_writes
    assert done.verb == "add_many" and done.error is None and len(done.result) == 20
    assert "add_many was cancelled while it ran; it finished" in caplog.text
    with engramdb.open(tmp_path / "db", schema=toy_schema(), embedders={"dense": ToyDense(), "bits": ToyBits()}) as s:
        assert sorted(m.id for m in s.list("n", limit=100)) == sorted(done.result)  # the caller can learn its ids


def test_a_write_cancelled_before_it_starts_never_happens(tmp_path: Path) -> None:
    gate = Gate()

    async def main() -> engramdb.aio.AsyncStore:
        db = await _open(tmp_path / "db", gate, workers=1)
        busy = asyncio.create_task(db.search("block the only thread", namespace="n", k=1))
        await _started(gate)
        queued = asyncio.create_task(db.add_many([{"content": "never", "namespace": "n", "id": "q1"}]))
        await asyncio.sleep(0)  # submitted, waiting for the thread
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        gate.release.set()
        await busy
        assert await db.get("q1") is None
        await db.close()
        return db

    assert not asyncio.run(main()).cancelled_writes


def test_a_cancelled_then_retried_write_with_caller_ids_stores_each_record_once(tmp_path: Path) -> None:
    gate = Gate()
    records = _records(30, ids=True)

    async def main() -> int:
        db = await _open(tmp_path / "db", gate)
        first = asyncio.create_task(db.add_many(records))
        await _started(gate)
        first.cancel()  # while it runs: it will land
        with pytest.raises(asyncio.CancelledError):
            await first
        gate.release.set()
        with pytest.raises(StoreError, match="id 'r0' already exists"):
            await db.add_many(records)  # the retry is refused whole, never a second copy
        # and a timeout at any moment (queued, running or done) followed by a retry: each once
        more = [{**r, "id": f"t{i}"} for i, r in enumerate(records)]
        try:
            await asyncio.wait_for(db.add_many(more), 0.001)
        except TimeoutError:
            try:
                await db.add_many(more)
            except StoreError as exc:
                assert "already exists" in str(exc)
        count = len(await db.list("n", limit=1000))
        await db.close()
        return count

    assert asyncio.run(main()) == 60

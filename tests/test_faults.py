"""Fault injection: a full disk (ENOSPC) or an I/O error (EIO) at the k-th fsync or rename a
workload makes (WAL appends, segment and edge files, manifest swaps, compaction, purge): the
failing call raises, nothing acknowledged is lost, nothing unacknowledged half-appears, and the
store reopens clean. The faults are injected at the operating system's seam (`os.fsync`,
`os.replace`), which every durable write of the storage layer goes through."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import engramdb
import pytest
from store_helpers import toy_embedders, toy_schema

TUNING = engramdb.Tuning(checkpoint_rows=30)


def open_store(path: Path) -> engramdb.Store:
    return engramdb.open(path, schema=toy_schema(), embedders=toy_embedders(), tuning=TUNING)  # type: ignore[arg-type]


def steps() -> list[tuple[str, Any]]:
    """The workload: (what, call) pairs; a call returns {id: content} it acknowledged (or purged ids)."""
    out: list[tuple[str, Any]] = []
    for b in range(6):
        rows = [{"content": f"memory {b}-{j}", "namespace": "n", "id": f"m{b}-{j}"} for j in range(12 if b % 2 else 40)]
        out.append(("add_many", lambda db, rows=rows: (db.add_many(rows), {r["id"]: r["content"] for r in rows})[1]))
        out.append(("update", lambda db, b=b: (db.update(f"m{b}-0", content=f"memory {b}-0 edited"),
                                                {f"m{b}-0": f"memory {b}-0 edited"})[1]))
        out.append(("link", lambda db, b=b: (db.link(f"m{b}-1", f"m{b}-2", "CAUSED_BY", confidence=0.9), {})[1]))
    out.append(("checkpoint", lambda db: (db.admin.checkpoint(), {})[1]))
    out.append(("compact", lambda db: (db.admin.compact(), {})[1]))
    out.append(("purge", lambda db: (db.purge("m3-3"), {"m3-3": None})[1]))
    out.append(("add", lambda db: (db.add("the last one", namespace="n", id="last"), {"last": "the last one"})[1]))
    return out


def workload(db: engramdb.Store, acked: dict[str, str | None]) -> int:
    """Every step, going on after a failed one (an application keeps writing); returns failures."""
    failed = 0
    for _, step in steps():
        try:
            acked.update(step(db))
        except OSError:
            failed += 1
        except engramdb.StoreError:  # a step that needs what a failed one would have written
            failed += 1
    return failed


class Faulty:
    """`os.fsync` / `os.replace` that fail once, at their k-th call, with the given errno."""

    def __init__(self, name: str, k: int, code: int) -> None:
        self.name, self.k, self.code, self.calls, self.fired = name, k, code, 0, False
        self.real: Callable[..., Any] = getattr(os, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == self.k:
            self.fired = True
            raise OSError(self.code, os.strerror(self.code))
        return self.real(*args, **kwargs)


def count_calls(tmp_path: Path, name: str) -> int:
    """How many calls of os.<name> the workload makes without faults."""
    probe = Faulty(name, 0, errno.EIO)
    mp = pytest.MonkeyPatch()
    mp.setattr(os, name, probe)
    try:
        db = open_store(tmp_path / "count")
        assert workload(db, {}) == 0
        db.close()
    finally:
        mp.undo()
    return probe.calls


@pytest.mark.parametrize("call", ["fsync", "replace"])
def test_a_fault_at_any_durable_step_loses_nothing_acknowledged(tmp_path: Path, call: str) -> None:
    total = count_calls(tmp_path, call)
    assert total > 20
    fired = failures = 0
    for k in range(1, total + 1, max(1, total // 25)):  # ~25 points spread over the whole workload
        for code in (errno.ENOSPC, errno.EIO):
            folder = tmp_path / f"{call}-{k}-{code}"
            acked: dict[str, str | None] = {}
            fault = Faulty(call, k, code)
            mp = pytest.MonkeyPatch()
            db = open_store(folder)
            mp.setattr(os, call, fault)
            try:
                failures += workload(db, acked)
                db.close()
            except OSError as exc:  # close's own checkpoint met the fault
                assert exc.errno == code
            finally:
                mp.undo()
            fired += fault.fired
            db.close()  # idempotent: releases the writer lock
            again = open_store(folder)  # reopens clean
            for mid, content in acked.items():
                m = again.get(mid)
                if content is None:  # an acknowledged purge
                    assert again.get(mid, include_forgotten=True) is None, (call, k, code, mid)
                else:
                    assert m is not None and m.content == content, (call, k, code, mid)
            assert engramdb.verify(folder)["ok"], engramdb.verify(folder)
            assert len(again) == sum(1 for c in acked.values() if c is not None)  # nothing unacknowledged
            again.close()
    assert fired >= 40 and failures >= 20  # faults fired, and many of them failed a step that went on

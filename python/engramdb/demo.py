"""`engramdb demo`: a store built from a multi-session conversation, asked questions, left on disk.

The conversation (four sessions, two friends, facts that change) ships in `demo_data`. Every
turn becomes a memory stamped with its session's time; one fact is superseded by a later one so
the demo can show the present and the past. Timings are measured here, now.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from .demo_data.conversation import QUESTIONS, SESSIONS
from .store import Store
from .store import open as open_store

NAMESPACE = "maya-and-sam"


def _ingest(db: Store, echo: Callable[[str], None]) -> None:
    total = 0
    t0 = time.perf_counter()
    for k, (start, turns) in enumerate(SESSIONS, 1):
        records = [
            {
                "id": f"s{k}-t{i}",
                "content": f"{speaker}: {text}",  # the speaker's name is part of what was said to whom
                "namespace": NAMESPACE,
                "session_id": f"session-{k}",  # seq (the turn's place) is counted by the store
                "role": speaker,
                "memory_type": "turn",
                "valid_from": start + timedelta(minutes=i),
            }
            for i, (speaker, text) in enumerate(turns)
        ]
        db.add_many(records)
        total += len(records)
    dt = time.perf_counter() - t0
    # Session 4 changes a fact from session 2: the bakery job ends when the market stall starts.
    db.supersede("s2-t0", "s4-t0")
    echo(f"stored {total} turns from {len(SESSIONS)} sessions in {dt * 1e3:.0f} ms (first use included), "
         f"each embedded in four spaces by the built-in embedders")


def _when(h: Any) -> str:
    return h.memory.valid_from.date().isoformat() if h.memory.valid_from else "?"


def _why(h: Any, ranks: dict[str, int] | None = None) -> str:
    """Which methods matched, or the hit a neighbouring turn came with (its score is its own)."""
    why = h.explain or {}
    if h.via is not None:
        at = (ranks or {}).get(h.via)
        return f"next to hit #{at} in its conversation" if at else "next to a hit in its conversation"
    expanded = why.get("expanded")
    if expanded and expanded["inherited"] >= why.get("own", 0):
        return f"{expanded['method']} of a hit"
    scaled = why.get("scaled", {})
    return "+".join(m for m, v in scaled.items() if v > 0) or "weak match"


def run_demo(path: str | Path = "engramdb-demo", echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Build (or reopen) the demo store at `path`, ask the demo questions, print hits and timings."""
    folder = Path(path)
    if folder.exists() and any(folder.iterdir()) and not (folder / "manifest.json").exists():
        raise SystemExit(f"engramdb demo: {folder} exists and is not an engramdb store; pass --path elsewhere")
    reuse = (folder / "manifest.json").exists()
    db = open_store(folder)
    try:
        if reuse and db.get("s1-t0") is not None:
            echo(f"reusing the demo store at {folder} ({len(db)} memories)")
        else:
            _ingest(db, echo)
        echo("")
        latencies: list[float] = []
        first = 0
        for q, answer in QUESTIONS:
            echo(f"Q: {q}")
            t0 = time.perf_counter()
            hits = db.search(q, namespace=NAMESPACE, k=3, explain=True)  # the default call: hybrid
            latencies.append(time.perf_counter() - t0)
            first += bool(hits) and hits[0].id == answer
            ranks = {h.id: rank for rank, h in enumerate(hits, 1)}
            for rank, h in enumerate(hits, 1):
                echo(f"   #{rank} {h.score:5.2f}  [{_when(h)}] {h.memory.content}  <- {_why(h, ranks)}")
            echo("")
        then = datetime(2025, 4, 20, tzinfo=timezone.utc)
        q = "Where does Maya work?"
        now_hits = db.search(q, namespace=NAMESPACE, k=1)
        then_hits = db.search(q, namespace=NAMESPACE, k=1, as_of=then)
        echo(f"Q: {q}  (the bakery job was superseded on 2025-05-03 by the market stall: now vs. as of {then.date()})")
        for label, hs in (("now", now_hits), (f"as of {then.date()}", then_hits)):
            if hs:
                echo(f"   {label:>16}: {hs[0].memory.content}")
        echo("")
        echo(f"right memory first for {first} of {len(QUESTIONS)} questions")
        lat = sorted(latencies)
        echo("")
        echo(f"search latency over {len(lat)} queries (query embedding included): "
             f"p50 {lat[len(lat) // 2] * 1e3:.2f} ms, max {lat[-1] * 1e3:.2f} ms")
        stats = db.stats()
        echo(f"store: {stats['memories']} memories, {stats['versions']} versions, left on disk at {folder.resolve()}")
        echo(f"try:   engramdb search 'Biscuit the cat' --path {folder} --namespace {NAMESPACE} --explain")
        return {"latencies": lat, "stats": stats, "first": first, "now": now_hits, "then": then_hits}
    finally:
        db.close()

"""The agent-loop bench's 1,000-turn replay (test_bench_agent_loop.py), as one function, so the same
loop runs in the test runner's process and in a process of its own (`python bench/_replay.py FOLDER`:
an agent's process holds engramdb and its imports, not the test runner's and the peers' heaps).

Each turn: `add_messages` of one message into its session (sessions of 20, user and assistant
alternating, chat-like sentences of _corpus.py), then `context(max_tokens=1000)` for a question; every
call timed. The interpreter's full collections (generation 2) are watched through `gc.callbacks`: a
full collection pauses the whole process for as long as it takes to walk every object the process
holds, so each call over 100 ms says how much of it was one.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from pathlib import Path
from typing import Any, Self

import engramdb

SESSION = 20
NS = "user-1"
TURNS = 1_000


class Collections:
    """The interpreter's collections while inside `with`: (generation, start, end) of each, in
    perf_counter seconds, through `gc.callbacks`."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, float, float]] = []
        self._began: list[float] = []

    def _watch(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began.append(time.perf_counter())
        elif self._began:
            self.seen.append((int(info["generation"]), self._began.pop(), time.perf_counter()))

    def __enter__(self) -> Self:
        gc.callbacks.append(self._watch)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._watch)

    def full(self) -> list[tuple[float, float]]:
        """(start, end) of each full collection (generation 2)."""
        return [(s, e) for gen, s, e in self.seen if gen == 2]


def replay(folder: Path, texts: list[str], questions: list[str]) -> dict[str, Any]:
    """The replay into a new store at `folder`: each call's milliseconds and the calls over 100 ms."""
    add_ms: list[float] = []
    ctx_ms: list[float] = []
    slow: list[dict[str, Any]] = []
    with Collections() as seen, engramdb.open(folder / "mem") as db:
        for i, text in enumerate(texts):
            sid = f"s{i // SESSION}"
            t0 = time.perf_counter()
            db.add_messages([{"role": "user" if i % SESSION % 2 == 0 else "assistant", "content": text}],
                            namespace=NS, session_id=sid)
            t1 = time.perf_counter()
            db.context(questions[i % len(questions)], namespace=NS, max_tokens=1000, session_id=sid)
            t2 = time.perf_counter()
            add_ms.append((t1 - t0) * 1e3)
            ctx_ms.append((t2 - t1) * 1e3)
            for call, a, b in (("add", t0, t1), ("context", t1, t2)):
                if b - a > 0.1:
                    gc_ms = sum(min(b, e) - max(a, s) for s, e in seen.full() if s < b and e > a) * 1e3
                    slow.append({"turn": i, "call": call, "ms": round((b - a) * 1e3, 1),
                                 "full_gc_ms": round(gc_ms, 1)})
    full_gc = seen.full()
    return {"add_ms": add_ms, "context_ms": ctx_ms, "slow_calls": slow, "full_collections": len(full_gc),
            "full_collection_max_ms": round(max(((e - s) * 1e3 for s, e in full_gc), default=0.0), 1),
            "tracked_objects_after": len(gc.get_objects())}


def pool() -> tuple[list[str], list[str]]:
    """The replay's 1,000 turns and 400 questions never stored (the bench's `_pool(1_000)`)."""
    import _corpus

    s = _corpus.sentences(2_000 + 400)
    return s[:TURNS], s[-400:]


if __name__ == "__main__":  # a process of its own: the replay's figures as JSON on stdout
    texts, questions = pool()
    print(json.dumps(replay(Path(sys.argv[1]), texts, questions)))

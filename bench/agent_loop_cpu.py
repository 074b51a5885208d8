"""The agent loop's cost in CPU time, beside its wall time: what a change to the request path saves,
measured so that two trees can be compared on a shared, noisy machine (issue 26).

The same data and calls as bench/test_bench_agent_loop.py's `test_add_then_context` (one user turn
added to the live session, then `context(max_tokens=1000)` for the next question; default profile,
default arguments), on a copy of a store built once. Per round: the calling thread's CPU time
(`time.thread_time`: what the request itself computed, whatever else the machine runs) and the wall
time; then warm `search(k=10)` calls, CPU only. Also the cyclic garbage collector's pauses during
the rounds (`gc.callbacks`): a full collection (generation 2) is 20-65 ms at 100,000 memories.

    python bench/agent_loop_cpu.py --memories 100000 [--store FOLDER] [--rounds 80] [--json OUT]

`--store` keeps the built store there (built when the folder is missing) and reuses it: each run
works on a copy (it writes). Run it
alternately under two trees (each installed in a venv of its own, or one with PYTHONPATH) and
compare the medians; the wall times are only as quiet as the machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _corpus
import engramdb
from _replay import Collections

SESSION = 20
NS = "user-1"


def build(folder: Path, n: int) -> None:
    """A store of n turns in sessions of 20 (user and assistant alternating), as the loop bench."""
    texts = _corpus.sentences(max(n, 2_000) + 400)[:n]
    with engramdb.open(folder) as db:
        for a in range(0, n, SESSION):
            db.add_messages([{"role": "user" if i % 2 == 0 else "assistant", "content": t}
                             for i, t in enumerate(texts[a:a + SESSION])], namespace=NS, session_id=f"s{a // SESSION}")


def pcts(xs: list[float]) -> dict[str, float]:
    q = statistics.quantiles(xs, n=20)
    return {"p50": round(statistics.median(xs), 2), "p95": round(q[18], 2), "max": round(max(xs), 2)}


def run(store: Path, n: int, rounds: int) -> dict[str, Any]:
    questions = _corpus.sentences(max(n, 2_000) + 400)[-400:]
    extra = _corpus.sentences(3_000)[-300:]  # turns to add: never among the stored ones nor the questions
    logging.disable(logging.WARNING)  # a copied folder takes an id of its own: said once, at open
    with engramdb.open(store) as db:
        db.context(questions[399], namespace=NS, max_tokens=1000)
        db.admin.settle()
        for i in range(10):  # warm: the live session exists, its first writes and contexts are done
            db.add(extra[i], namespace=NS, session_id="live", role="user")
            db.context(questions[300 + i], namespace=NS, max_tokens=1000, session_id="live")
        cpu, wall = [], []
        with Collections() as seen:
            for i in range(rounds):
                t0, c0 = time.perf_counter(), time.thread_time()
                db.add(extra[(i + 100) % len(extra)], namespace=NS, session_id="live", role="user")
                db.context(questions[i % 300], namespace=NS, max_tokens=1000, session_id="live")
                cpu.append((time.thread_time() - c0) * 1e3)
                wall.append((time.perf_counter() - t0) * 1e3)
        search = []
        for i in range(60):
            c0 = time.thread_time()
            db.search(questions[200 + i % 100], namespace=NS, k=10)
            search.append((time.thread_time() - c0) * 1e3)
    full = [(e - s) * 1e3 for s, e in seen.full()]
    return {"memories": n, "rounds": rounds, "engramdb": engramdb.__file__,
            "add_then_context_cpu_ms": pcts(cpu), "add_then_context_wall_ms": pcts(wall),
            "search_cpu_ms": pcts(search), "full_collections": len(full),
            "full_collection_ms": [round(x, 1) for x in full]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=80)
    ap.add_argument("--store", type=Path, help="where the built store is kept (built there when missing; "
                                               "copied before each run); a temporary folder when not given")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="engramdb-loop-cpu-"))
    try:
        source = args.store if args.store is not None else tmp / "built"
        if not source.exists():
            t0 = time.perf_counter()
            build(source, args.memories)
            print(f"built {args.memories:,} memories in {time.perf_counter() - t0:.1f} s into {source}", file=sys.stderr)
        shutil.copytree(source, tmp / "run")
        out = run(tmp / "run", args.memories, args.rounds)
        print(json.dumps(out, indent=1))
        if args.json:
            args.json.write_text(json.dumps(out, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

"""The loop a chat or coding agent runs, as one (issue "[3 of 7] The agent loop"): store the turn,
ask for context, answer, ask again; at 1,000, 10,000 and 100,000 memories of chat-like text in one
namespace, default profile, default arguments.

Data: sessions of 20 turns, user and assistant alternating, each turn one English sentence found
on this machine (_corpus.py), stored as a user stores a conversation: `add_messages` one session at
a time (role, content; session id; no prefixes). The questions are other sentences of the same pool
(never stored). Building the store is outside the timing (it says so: "build_s" in extra_info),
and so is letting its worker catch up ("settle_s": the topics computed and stored, as in a store
that has been in use); every timed call runs on a store reopened after that, as an agent's process
finds it, but for `test_add_then_context_unsettled` (see below).

Per size (p50 / p95 and max in extra_info, milliseconds):
- `test_search`: `db.search(q, namespace=...)`, 200 questions.
- `test_context`: `db.context(q, namespace=..., max_tokens=1000)`, 100 questions, no write between.
- `test_add_then_context`: 60 rounds of "add one user turn to the live session, then
  context(max_tokens=1000) for the next question": the call an agent makes after every turn;
  `test_add_then_context_unsettled`: the same on the store as its build left it (its topics never
  computed: the rounds run beside the worker's first topics run).
- `test_first_context_after_open`: a new Python process opens the store and asks for one context
  (the cold path, timed inside the child: `open`, with the store's modules it imports, and the
  call), 5 processes.
- `test_replay_1000_turns` (one size): 1,000 turns into a new store, each followed by a context;
  the slowest call and how many took over 100 ms (bench/_replay.py), in the test runner's process;
  `test_replay_1000_turns_own_process`: the same in a process of its own (an agent's process holds
  engramdb and its imports, not the runner's and the peers' heaps, which every full collection walks).

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python -m pytest bench/test_bench_agent_loop.py -q -p no:cacheprovider --benchmark-json=/tmp/bench_loop.json`
(`ENGRAMDB_BENCH_LOOP_SIZES=1000,10000` runs fewer sizes.)
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _corpus
import _replay
import engramdb
import pytest

SIZES = [int(s) for s in os.environ.get("ENGRAMDB_BENCH_LOOP_SIZES", "1000,10000,100000").split(",")]
SESSION, NS = _replay.SESSION, _replay.NS


def _pool(n: int) -> tuple[list[str], list[str]]:
    """n sentences to store and 400 others to ask."""
    s = _corpus.sentences(max(n, 2_000) + 400)
    return s[:n], s[-400:]


def _sessions(texts: list[str], start: int = 0) -> Iterator[tuple[str, list[dict[str, str]]]]:
    for a in range(0, len(texts), SESSION):
        yield f"s{start + a // SESSION}", [{"role": "user" if i % 2 == 0 else "assistant", "content": t}
                                           for i, t in enumerate(texts[a:a + SESSION])]


@pytest.fixture(scope="module", params=SIZES, ids=lambda n: f"{n // 1000}k")
def loop_store(request: Any) -> Iterator[tuple[int, Path, list[str], float]]:
    """The store as an agent's process finds it after a while in use: built, then its worker let
    catch up (its topics computed and stored, its indexes saved: `db.admin.settle()`), outside the
    timing ("settle_s" in extra_info). `unsettled_store` is the same store as the build left it."""
    n = request.param
    texts, questions = _pool(n)
    folder = Path(tempfile.mkdtemp(prefix="engramdb-bench-loop-"))
    t0 = time.perf_counter()
    with engramdb.open(folder / "mem") as db:
        for sid, msgs in _sessions(texts):
            db.add_messages(msgs, namespace=NS, session_id=sid)
    build = time.perf_counter() - t0
    shutil.copytree(folder / "mem", folder / "unsettled")
    with engramdb.open(folder / "unsettled"):  # the copy takes its own id now (a write), not in a timed call
        pass
    t1 = time.perf_counter()
    with engramdb.open(folder / "mem") as db:
        db.context(questions[0], namespace=NS, max_tokens=1000)  # a request asks the worker for the topics
        assert db.admin.settle(timeout=900)
    _SETTLE[n] = round(time.perf_counter() - t1, 1)
    yield n, folder / "mem", questions, round(build, 1)
    shutil.rmtree(folder, ignore_errors=True)


_SETTLE: dict[int, float] = {}


@pytest.fixture(scope="module")
def unsettled_store(loop_store: tuple[int, Path, list[str], float]) -> tuple[int, Path, list[str], float]:
    """The store as its build left it: a bulk import closed before its worker computed the topics
    (every timed call then runs beside the worker's first topics run, a close stopping it)."""
    n, path, questions, build = loop_store
    return n, path.with_name("unsettled"), questions, build


def _pcts(ms: list[float]) -> dict[str, float]:
    # inclusive: a p95 of a few calls lies between the two slowest, never beyond the slowest
    q = statistics.quantiles(ms, n=20, method="inclusive") if len(ms) > 1 else [ms[0]] * 19
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(q[18], 2), "max_ms": round(max(ms), 2),
            "calls": len(ms)}


def _info(n: int, build: float, settled: bool = True) -> dict[str, Any]:
    return {"memories": n, "build_s": build, "settled": settled} | ({"settle_s": _SETTLE.get(n)} if settled else {})


def _timed(benchmark: Any, calls: list[Any], extra: dict[str, Any]) -> None:
    """Each call timed; the full collections of the interpreter that landed in the timed calls
    said in extra_info (in the test runner's process they walk its whole heap: the runner's, the
    peers', the earlier fixtures'). The garbage the set-up left is collected before the timing."""
    ms: list[float] = []

    def one_round() -> None:
        for fn in calls:
            t0 = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - t0) * 1e3)

    gc.collect()
    with _replay.Collections() as seen:
        benchmark.pedantic(one_round, rounds=1, iterations=1)
    full = [(e - s) * 1e3 for s, e in seen.full()]
    benchmark.extra_info.update(extra, **_pcts(ms), full_collections=len(full),
                                full_collection_max_ms=round(max(full), 1) if full else 0.0)


def test_search(benchmark: Any, loop_store: tuple[int, Path, list[str], float]) -> None:
    n, path, questions, build = loop_store
    with engramdb.open(path) as db:
        db.search(questions[0], namespace=NS)
        _timed(benchmark, [lambda q=q: db.search(q, namespace=NS) for q in questions[:200]],
               _info(n, build))


def test_context(benchmark: Any, loop_store: tuple[int, Path, list[str], float]) -> None:
    n, path, questions, build = loop_store
    with engramdb.open(path) as db:
        db.context(questions[0], namespace=NS, max_tokens=1000)
        _timed(benchmark, [lambda q=q: db.context(q, namespace=NS, max_tokens=1000) for q in questions[200:300]],
               _info(n, build))


def _add_then_context(benchmark: Any, store: tuple[int, Path, list[str], float], settled: bool) -> None:
    n, path, questions, build = store
    with engramdb.open(path) as db:
        db.context(questions[0], namespace=NS, max_tokens=1000)
        sid = f"s{n // SESSION - 1}"  # the newest session goes on

        def turn(i: int) -> None:
            db.add_messages([{"role": "user", "content": questions[300 + i]}], namespace=NS, session_id=sid)
            db.context(questions[301 + i], namespace=NS, max_tokens=1000, session_id=sid)

        _timed(benchmark, [lambda i=i: turn(i) for i in range(60)], _info(n, build, settled))


def test_add_then_context(benchmark: Any, loop_store: tuple[int, Path, list[str], float]) -> None:
    _add_then_context(benchmark, loop_store, settled=True)


def test_add_then_context_unsettled(benchmark: Any, unsettled_store: tuple[int, Path, list[str], float]) -> None:
    """The same rounds right after a bulk import, beside the worker's first topics run."""
    _add_then_context(benchmark, unsettled_store, settled=False)


_CHILD = """
import sys, time, json
import engramdb
t0 = time.perf_counter()
db = engramdb.open(sys.argv[1])
t1 = time.perf_counter()
c = db.context(sys.argv[2], namespace=sys.argv[3], max_tokens=1000)
t2 = time.perf_counter()
db.close()
print(json.dumps({"open_ms": (t1 - t0) * 1e3, "context_ms": (t2 - t1) * 1e3, "items": len(c.items)}))
"""


def test_first_context_after_open(benchmark: Any, loop_store: tuple[int, Path, list[str], float]) -> None:
    n, path, questions, build = loop_store
    runs: list[dict[str, float]] = []

    def one_round() -> None:
        for q in questions[380:385]:
            out = subprocess.run([sys.executable, "-c", _CHILD, str(path), q, NS], capture_output=True, text=True,
                                 check=True)
            runs.append(json.loads(out.stdout))

    benchmark.pedantic(one_round, rounds=1, iterations=1)
    benchmark.extra_info.update(_info(n, build),
                                open=_pcts([r["open_ms"] for r in runs]),
                                **_pcts([r["context_ms"] for r in runs]),
                                open_plus_context=_pcts([r["open_ms"] + r["context_ms"] for r in runs]))


def _replay_info(benchmark: Any, out: dict[str, Any]) -> None:
    add_ms, ctx_ms = out["add_ms"], out["context_ms"]
    both = [a + c for a, c in zip(add_ms, ctx_ms)]
    benchmark.extra_info.update(turns=len(both), add=_pcts(add_ms), context=_pcts(ctx_ms), **_pcts(both),
                                over_100ms=sum(1 for x in add_ms + ctx_ms if x > 100),
                                **{k: out[k] for k in ("slow_calls", "full_collections", "full_collection_max_ms",
                                                       "tracked_objects_after")})


def test_replay_1000_turns(benchmark: Any) -> None:
    """In the test runner's process: its heap (pytest, the peers the bench imports, the stores of
    the tests before) is walked by every full collection that lands in a call."""
    texts, questions = _replay.pool()
    folder = Path(tempfile.mkdtemp(prefix="engramdb-bench-replay-"))
    out: dict[str, Any] = {}
    try:
        benchmark.pedantic(lambda: out.update(_replay.replay(folder, texts, questions)), rounds=1, iterations=1)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    _replay_info(benchmark, out)


def test_replay_1000_turns_own_process(benchmark: Any) -> None:
    """The same replay in a process of its own, as an agent's process runs it (engramdb and its
    imports; the timing inside the child)."""
    folder = Path(tempfile.mkdtemp(prefix="engramdb-bench-replay-"))
    out: dict[str, Any] = {}
    script = Path(__file__).with_name("_replay.py")

    def run() -> None:
        done = subprocess.run([sys.executable, str(script), str(folder)], capture_output=True, text=True, check=True)
        out.update(json.loads(done.stdout))

    try:
        benchmark.pedantic(run, rounds=1, iterations=1)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    _replay_info(benchmark, out)

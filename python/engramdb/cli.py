"""The `engramdb` command line: demo, add, search, stats, metrics, consolidate, index, infer-edges, archive,
export, verify, backup, repair, capabilities; mcp and hook (agent surfaces), ingest (file capture)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ._capabilities import capabilities


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="engramdb", description="engramdb: long-term memory engine for AI agents")
    sub = p.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="build a store from a demo conversation, ask it questions, keep it on disk")
    demo.add_argument("--path", default="engramdb-demo", help="store folder (default ./engramdb-demo)")
    demo.add_argument("--kernels", action="store_true", help="time the native kernels on real sizes instead")
    demo.add_argument("--rows", type=int, default=100_000, help="with --kernels: vectors to scan")
    demo.add_argument("--dim", type=int, default=384, help="with --kernels: dimensions")
    demo.add_argument("--repeat", type=int, default=5, help="with --kernels: timed runs per kernel")

    def store_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--path", default="memory", help="store folder (default ./memory)")

    add = sub.add_parser("add", help="add one memory")
    store_args(add)
    add.add_argument("content")
    add.add_argument("--namespace", required=True)
    add.add_argument("--session-id")
    add.add_argument("--role")
    add.add_argument("--type", dest="memory_type")
    add.add_argument("--valid-from", help="ISO time with a zone, e.g. 2025-03-02T18:05:00+00:00")

    search = sub.add_parser("search", help="search one namespace")
    store_args(search)
    search.add_argument("query")
    search.add_argument("--namespace", required=True)
    search.add_argument("-k", type=int, default=10)
    search.add_argument("--space", help="space to search (default: the main dense space)")
    search.add_argument("--as-of", help="valid time, ISO with a zone")
    search.add_argument("--json", action="store_true", help="print JSON lines")
    search.add_argument("--known-at", help="system time: what the store believed then (ISO with a zone)")
    search.add_argument("--strategy", choices=["hybrid", "dense_only", "exact", "tree", "hnsw", "bm25", "rrf",
                                               "multi_space", "pipeline"],
                        help="default hybrid: BM25 and the main dense space scored on one [0, 1] scale, then the "
                             "neighbouring turns and edge hops of the best; dense_only/exact/tree/hnsw: the main "
                             "dense space alone (also the default with --space); bm25; rrf: dense + BM25 + "
                             "expansion fused by rank; multi_space: rrf + routed enhancer spaces; pipeline: "
                             "sparse -> dense -> RRF -> MaxSim rerank")
    search.add_argument("--min-score", type=float, default=0.0, help="leave out hits scoring under this (0..1)")
    search.add_argument("--type", dest="types", action="append", help="only this memory_type (repeatable)")
    search.add_argument("--weight", action="append", default=[], metavar="METHOD=W",
                        help="RRF weight of a method, e.g. --weight bm25=0.8 (repeatable)")
    search.add_argument("--stage", action="append", default=[], metavar="NAME=N",
                        help="pipeline stage size, e.g. --stage feedback=10 or --stage sparse=2000 (repeatable)")
    search.add_argument("--explain", action="store_true", help="print how each hit was found")
    search.add_argument("--stats", action="store_true",
                        help="print what the search did (strategy, snapshot, index work, stage times) as a last "
                             "JSON line")

    stats = sub.add_parser("stats", help="a store at a glance: sizes, ELO and lifecycle tiers, top memories, "
                                         "recent activity, consolidation runs (E9)")
    store_args(stats)
    stats.add_argument("folder", nargs="?", help="the store folder (instead of --path)")
    stats.add_argument("--json", action="store_true", help="print the numbers as JSON instead")
    stats.add_argument("--top", type=int, default=10, help="memories listed by ELO (default 10)")
    topics = sub.add_parser("topics", help="what a namespace is about: topics (C4) by the agreement of its spaces' "
                                           "clusterings, or themes (H8)")
    store_args(topics)
    topics.add_argument("folder", nargs="?", help="the store folder (instead of --path)")
    topics.add_argument("--namespace", required=True)
    topics.add_argument("--themes", action="store_true", help="the content themes (DBSCAN) instead")
    topics.add_argument("--json", action="store_true", help="print each as a JSON line")
    ctx = sub.add_parser("context", help="the context block for a prompt: the best memories under a token budget")
    ctx.add_argument("folder", help="the store folder")
    ctx.add_argument("query")
    ctx.add_argument("--namespace", required=True)
    ctx.add_argument("--max-tokens", type=int, default=1000)
    ctx.add_argument("--session-id")
    ctx.add_argument("--as-of", help="valid time, ISO with a zone")
    ctx.add_argument("--tokenizer", default=None, help="cl100k_base (default when installed), o200k_base or estimate")
    ctx.add_argument("--json", action="store_true", help="print the items and stats as JSON instead")
    metrics = sub.add_parser("metrics", help="print the store's metrics in the Prometheus text format")
    store_args(metrics)
    metrics.add_argument("folder", nargs="?", help="the store folder (instead of --path)")
    cons = sub.add_parser("consolidate", help="report (with --apply: apply) a consolidation: the access log applied "
                                              "to the ELO ratings, memories promoted, compressed and archived by "
                                              "their priority and ELO (H7, E7); no current memory is deleted, "
                                              "memories a person forgot over 30 days ago are purged")
    store_args(cons)
    cons.add_argument("folder", nargs="?", help="the store folder (instead of --path)")
    mode = cons.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="report every decision, change nothing (the default)")
    mode.add_argument("--apply", action="store_true", help="apply the decisions (what a cron line wants)")
    cons.add_argument("--namespace")
    cons.add_argument("--decay", choices=["exponential", "ebbinghaus", "linear"], default="exponential")
    cons.add_argument("--json", action="store_true", help="print every decision as a JSON line")
    index = sub.add_parser("index", help="build (or update) the search index of every large namespace")
    store_args(index)
    index.add_argument("--kind", choices=["tree", "tree-packed", "hnsw"], default="tree")
    infer = sub.add_parser("infer-edges", help="propose typed edges between memories with the built-in heuristic "
                                                "and store those with confidence >= 0.7 (H2)")
    store_args(infer)
    infer.add_argument("--namespace", help="every live memory of this namespace")
    infer.add_argument("--id", dest="ids", action="append", help="this memory (repeatable; instead of --namespace)")
    infer.add_argument("--candidates", type=int, default=10, help="nearest memories shown per memory (default 10)")
    infer.add_argument("--min-confidence", type=float, default=0.7, help="store edges at least this sure (>= 0.7)")
    infer.add_argument("--json", action="store_true", help="print each stored edge as a JSON line")
    archive = sub.add_parser("archive", help="move the content of memories learned before a time to an archive file")
    store_args(archive)
    archive.add_argument("--older-than", required=True, help="ISO time with a zone")
    archive.add_argument("--namespace")
    export = sub.add_parser("export", help="write memories to .jsonl or .arrow")
    store_args(export)
    export.add_argument("out")
    export.add_argument("--namespace")
    verify = sub.add_parser("verify", help="check every file of a store (checksums, frames, index files); "
                                           "exit 1 when any is damaged")
    store_args(verify)
    back = sub.add_parser("backup", help="copy a store, every version, edge and archive, while a writer runs; "
                                         "open the copy to restore")
    store_args(back)
    back.add_argument("dest", help="a new or empty folder")
    fix = sub.add_parser("repair", help="rebuild a lost or damaged manifest from the store's own files; "
                                        "changes nothing when that would lose data (exit 1)")
    store_args(fix)
    fix.add_argument("--dry-run", action="store_true", help="report what would be done, write nothing")
    fix.add_argument("--accept-loss", action="store_true",
                     help="rebuild from the intact files even when damaged ones are left out (never deleted)")
    sub.add_parser("capabilities", help="print what the native core runs on, as JSON")
    mcp = sub.add_parser("mcp", help="serve a store to agents over MCP (stdio); needs engramdb[mcp]")
    mcp.add_argument("folder", nargs="?", help="store folder (or --path)")
    mcp.add_argument("--path", default="memory", help="store folder (default ./memory)")
    mcp.add_argument("--namespace", default="default", help="the namespace a tool call without one uses")
    mcp.add_argument("--profile", default=None, help="schema profile of a new store (default or minilm)")
    hook = sub.add_parser("hook", help="a coding agent's hook (Claude Code's contract): JSON on stdin, context on stdout")
    hook.add_argument("event", help="SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStop or "
                                    "SessionEnd ($ENGRAMDB_HOOK_BUDGET_MS overrides every event's time budget)")
    hook.add_argument("--path", default=None, help="store folder (default $ENGRAMDB_PATH, else ./.engramdb)")
    hook.add_argument("--namespace", default=None, help="namespace (default $ENGRAMDB_NAMESPACE, else the project "
                                                         "folder's name)")
    hook.add_argument("--max-chars", type=int, default=8000, help="cap on the injected context (default 8000)")
    ingest = sub.add_parser("ingest", help="capture markdown/text files as memories (200-word chunks, 50 overlap); "
                                           "a changed file supersedes its old chunks, an unchanged one is skipped")
    ingest.add_argument("folder", help="store folder")
    ingest.add_argument("files", nargs="+", help="files to capture")
    ingest.add_argument("--namespace", default="default")
    return p


def _time(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise SystemExit(f"engramdb: {name} {value!r} is not an ISO time") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `engramdb` console script."""
    args = _parser().parse_args(argv)
    if getattr(args, "folder", None):  # `engramdb stats PATH` as well as `--path PATH`
        args.path = args.folder
    if args.command == "capabilities":
        print(json.dumps(capabilities(), indent=2))
        return 0
    if args.command == "mcp":
        from .agents.mcp_server import main as serve_mcp

        return serve_mcp(args.folder or args.path, namespace=args.namespace, profile=args.profile)
    if args.command == "hook":
        from .agents.hooks import main as run_hook

        return run_hook(args.event, path=args.path, namespace=args.namespace, max_chars=args.max_chars)
    if args.command == "demo":
        if args.kernels:
            if args.rows < 1000 or args.dim < 8 or args.repeat < 1:
                print("engramdb demo: --rows must be >= 1000, --dim >= 8, --repeat >= 1", file=sys.stderr)
                return 2
            from .kernel_demo import run_demo as run_kernels

            run_kernels(rows=args.rows, dim=args.dim, repeat=args.repeat)
            return 0
        from .demo import run_demo

        run_demo(args.path)
        return 0

    from .store import backup as backup_store
    from .store import open as open_store
    from .store import repair as repair_store
    from .store import verify as verify_store

    if args.command == "backup":
        try:
            print(json.dumps(backup_store(args.path, args.dest)))
        except (ValueError, RuntimeError) as exc:
            print(f"engramdb backup: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "repair":
        try:
            done = repair_store(args.path, accept_loss=args.accept_loss, dry_run=args.dry_run)
        except (ValueError, RuntimeError) as exc:
            print(f"engramdb repair: {exc}", file=sys.stderr)
            return 1
        print(json.dumps(done, indent=2))
        return 0 if done["ok"] else 1
    if args.command == "verify":
        checked = verify_store(args.path)
        print(json.dumps(checked, indent=2))
        return 0 if checked["ok"] else 1
    try:
        if args.command == "add":
            with open_store(args.path) as db:
                m = db.add(args.content, namespace=args.namespace, session_id=args.session_id, role=args.role,
                           memory_type=args.memory_type, valid_from=_time(args.valid_from, "--valid-from"))
                print(m.id)
            return 0
        if args.command == "ingest":
            with open_store(args.folder) as db:
                for f in args.files:
                    print(json.dumps(db.add_file(f, namespace=args.namespace)))
            return 0
        if args.command == "index":
            with open_store(args.path, index=args.kind) as db:
                t0 = time.perf_counter()
                built = db.build_index()
                print(json.dumps({"kind": args.kind, "namespaces": built, "seconds": round(time.perf_counter() - t0, 2)}))
            return 0
        if args.command == "infer-edges":
            with open_store(args.path) as db:
                report = db.infer_edges(args.ids, namespace=args.namespace, candidates=args.candidates,
                                        min_confidence=args.min_confidence)
                for e in report.stored:
                    if args.json:
                        print(json.dumps({"src": e.src, "dst": e.dst, "type": e.type, "confidence": e.confidence,
                                          "reason": e.reason}))
                    else:
                        print(f"{e.src} -[{e.type} {e.confidence:.2f}]-> {e.dst}  {e.reason}")
                print(report.summary(), file=sys.stderr if args.json else sys.stdout)
            return 0
        if args.command == "consolidate":
            with open_store(args.path, read_only=not args.apply) as db:
                run = db.consolidate(namespace=args.namespace, dry_run=not args.apply, decay=args.decay)
                if args.json:
                    for d in run.decisions:
                        print(json.dumps(dataclasses.asdict(d)))
                else:
                    for d in run.decisions:
                        if d.action != "keep":
                            print(f"{d.action:<9} {d.id}  {d.reason}")
                    for mid in run.purged:
                        print(f"{'purge':<9} {mid}  forgotten more than 30 days ago")
                    for mid, why in run.held.items():
                        print(f"{'hold':<9} {mid}  {why}")
                print(run.summary(), file=sys.stderr if args.json else sys.stdout)
            return 0
        if args.command == "archive":
            older = _time(args.older_than, "--older-than")
            with open_store(args.path) as db:
                print(json.dumps(db.archive(older, namespace=args.namespace)))
            return 0
        with open_store(args.path, read_only=True) as db:
            if args.command == "search":
                hits = db.search(args.query, namespace=args.namespace, k=args.k, space=args.space,
                                 as_of=_time(args.as_of, "--as-of"), known_at=_time(args.known_at, "--known-at"),
                                 strategy=args.strategy, explain=args.explain, types=args.types, min_score=args.min_score,
                                 weights=_weights(args.weight) or None, stages=_stages(args.stage) or None)
                for h in hits:
                    text = "(archived)" if h.archived else h.memory.content
                    if h.passage is not None and not h.archived:  # a long memory: the passage that matched
                        a, b = h.passage
                        text = f"[{a}:{b}] ...{h.memory.content[a:b]}..."
                    if args.json:
                        row = {"id": h.id, "score": h.score, "content": h.memory.content, "archived": h.archived,
                               "passage": list(h.passage) if h.passage is not None else None, "via": h.via}
                        if args.explain:
                            row["explain"] = h.explain
                        print(json.dumps(row))
                    else:
                        # a turn shown as context of another hit says whose (its score is its own match)
                        print(f"{h.score:8.4f}  {h.id}  {text}" + (f"  (via {h.via})" if h.via else ""))
                        if args.explain:
                            print(f"          {json.dumps(h.explain)}")
                if args.stats:
                    print(json.dumps({"stats": dataclasses.asdict(hits.stats)}))
            elif args.command == "stats":
                board = db.dashboard(top=args.top)
                if args.json:
                    print(json.dumps({**db.stats(), "usage": board}, indent=2, default=str))
                else:
                    from .dashboard import render

                    render(db.stats(), board)
            elif args.command == "topics":
                if args.themes:
                    for th in db.themes(args.namespace):
                        print(json.dumps(dataclasses.asdict(th)) if args.json else
                              f"{len(th.members):5d}  {th.label:<40}  confidence {th.confidence:.2f}, "
                              f"silhouette {th.silhouette:.2f}")
                else:
                    found = db.topics(args.namespace)
                    for t in found:
                        print(json.dumps(dataclasses.asdict(t)) if args.json else
                              f"{len(t.members):5d}  {t.label:<40}  confidence {t.confidence:.2f}, {t.phase}, id {t.id}")
                    if not args.json:
                        print(f"{len(found)} topics; churn {found.churn:.2f}, entropy {found.entropy:.2f}"
                              f"{', consolidation due' if found.consolidation_due else ''}")
            elif args.command == "context":
                block = db.context(args.query, namespace=args.namespace, max_tokens=args.max_tokens,
                                   session_id=args.session_id, as_of=_time(args.as_of, "--as-of"),
                                   tokenizer=args.tokenizer, log=False)
                if args.json:
                    print(json.dumps({"text": block.text, "items": [dataclasses.asdict(i) for i in block.items],
                                      "stats": block.stats}, default=str))
                else:
                    print(block.text)
                    print(f"({block.stats['tokens']} of {block.stats['budget']} tokens, {block.stats['tokenizer']})",
                          file=sys.stderr)
            elif args.command == "metrics":
                from .metrics import exposition

                print(exposition(db), end="")
            elif args.command == "export":
                print(f"wrote {db.export(args.out, namespace=args.namespace)} memories to {args.out}")
        return 0
    except (ValueError, RuntimeError, ImportError) as exc:
        print(f"engramdb {args.command}: {exc}", file=sys.stderr)
        return 1


def _pairs(pairs: list[str], option: str, kind: type[float | int], example: str) -> dict[str, Any]:
    """NAME=VALUE options as a dict (a malformed one names itself and the option)."""
    out: dict[str, Any] = {}
    for p in pairs:
        name, sep, value = p.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = kind(value)
        except ValueError:
            what = "NUMBER" if kind is float else "INTEGER"
            raise ValueError(f"{option} must be NAME={what}, e.g. {example}, got {p!r}") from None
    return out


def _weights(pairs: list[str]) -> dict[str, float]:
    """--weight METHOD=W options."""
    return _pairs(pairs, "--weight", float, "bm25=0.8")


def _stages(pairs: list[str]) -> dict[str, int]:
    """--stage NAME=N options."""
    return _pairs(pairs, "--stage", int, "feedback=10")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

"""Commands that keep a store in shape: consolidate, index, infer-edges, archive."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from contextlib import nullcontext
from typing import Any

from .common import (
    Command,
    after_write,
    emit,
    json_option,
    old_folder_argument,
    store_option,
    take_old_folder,
    time_option,
)


def _build_consolidate(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    old_folder_argument(sp)
    json_option(sp)
    mode = sp.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="report every decision, change nothing (the default)")
    mode.add_argument("--apply", action="store_true", help="apply the decisions (what a cron line wants)")
    sp.add_argument("--namespace", help="only this namespace (default: all)")
    sp.add_argument("--decay", choices=["exponential", "ebbinghaus", "linear"], default="exponential",
                    help="how unused memories fade (default exponential)")


def _consolidate(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    with open_store(args.path, read_only=not args.apply) as db:
        run = db.lifecycle.consolidate(namespace=args.namespace, dry_run=not args.apply, decay=args.decay)
    with after_write("consolidate", run.summary()) if args.apply else nullcontext():
        return _say_consolidate(args, run)


def _say_consolidate(args: argparse.Namespace, run: Any) -> int:
    if args.json:
        emit({**dataclasses.asdict(run), "summary": run.summary()})
        print(run.summary(), file=sys.stderr)  # what a cron log keeps
        return 0
    for d in run.decisions:
        if d.action != "keep":
            print(f"{d.action:<9} {d.id}  {d.reason}")
    for mid in run.purged:
        print(f"{'purge':<9} {mid}  forgotten more than 30 days ago")
    for mid, why in run.held.items():
        print(f"{'hold':<9} {mid}  {why}")
    print(run.summary())
    return 0


def _build_index(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("--kind", choices=["tree", "tree-packed", "hnsw"], default="tree",
                    help="tree (default), tree-packed (faster scans, more disk) or hnsw (slow to build)")


def _index(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    with open_store(args.path, index=args.kind) as db:
        t0 = time.perf_counter()
        built = db.admin.build_index()
        seconds = round(time.perf_counter() - t0, 2)
        floor = db.tuning.tree_min_rows
    with after_write("index", f"built the {args.kind} index of {len(built)} namespaces"):
        _say_index(args, built, seconds, floor)
    return 0


def _say_index(args: argparse.Namespace, built: dict[str, int], seconds: float, floor: int) -> None:
    if args.json:
        emit({"kind": args.kind, "namespaces": built, "seconds": seconds})
    elif not built:
        print(f"no namespace has {floor:,} memories or more: searches scan every memory, no {args.kind} index "
              f"is needed (keyword index built, {seconds} s)")
    else:
        names = ", ".join(f"{ns} ({n:,} memories)" for ns, n in built.items())
        print(f"built the {args.kind} index of {len(built)} namespaces in {seconds} s: {names}")


def _build_infer(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("--namespace", help="every current memory of this namespace")
    sp.add_argument("--id", dest="ids", action="append", help="this memory (repeatable; instead of --namespace)")
    sp.add_argument("--candidates", type=int, default=10, help="nearest memories looked at per memory (default 10)")
    sp.add_argument("--min-confidence", type=float, default=0.7, help="store links at least this sure (>= 0.7)")


def _infer(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    with open_store(args.path) as db:
        report = db.admin.infer_edges(args.ids, namespace=args.namespace, candidates=args.candidates,
                                min_confidence=args.min_confidence)
    stored = [{"src": e.src, "dst": e.dst, "type": e.type, "confidence": e.confidence, "reason": e.reason}
              for e in report.stored]
    with after_write("infer-edges", report.summary()):
        return _say_infer(args, report, stored)


def _say_infer(args: argparse.Namespace, report: Any, stored: list[dict[str, Any]]) -> int:
    if args.json:
        emit({"stored": stored, "below_threshold": len(report.below_threshold), "rejected": len(report.rejected),
              "failed": report.failed, "memories": report.memories, "summary": report.summary()})
        print(report.summary(), file=sys.stderr)
        return 0
    for e in stored:
        print(f"{e['src']} -[{e['type']} {e['confidence']:.2f}]-> {e['dst']}  {e['reason']}")
    print(report.summary())
    return 0


def _build_archive(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("--older-than", required=True, help="memories learned before this: ISO time with a zone")
    sp.add_argument("--namespace", help="only this namespace (default: all)")


def _archive(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    older = time_option(args.older_than, "--older-than")
    with open_store(args.path) as db:
        done = db.lifecycle.archive(older, namespace=args.namespace)
    with after_write("archive", f"archived {done['memories']} memories" + (f" to {done['file']}" if done["file"] else "")):
        _say_archive(args, done)
    return 0


def _say_archive(args: argparse.Namespace, done: dict[str, Any]) -> None:
    if args.json:
        emit(done)
    elif not done["memories"]:
        print(f"nothing to archive: no current memory was learned before {args.older_than}")
    else:
        print(f"archived {done['memories']} memories to {done['file']}")


COMMANDS = [
    Command("consolidate", "rate memories by use and age and say which to promote, compress or archive "
                           "(--apply does it; nothing current is deleted)", _build_consolidate, _consolidate,
            legacy=take_old_folder),
    Command("index", "build or update the search index of every large namespace", _build_index, _index),
    Command("infer-edges", "find and store links (cause, follow-up, ...) between related memories", _build_infer,
            _infer),
    Command("archive", "move the text of memories learned before a time to an archive file", _build_archive,
            _archive),
]

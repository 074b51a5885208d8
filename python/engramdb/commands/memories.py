"""Commands that store and find memories: add, ingest, search, context."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from .common import (
    CliError,
    Command,
    after_write,
    emit,
    first_of_two,
    held,
    is_store,
    json_option,
    links,
    note,
    second_from_extras,
    store_option,
    time_option,
)

STRATEGIES = ["hybrid", "dense_only", "exact", "tree", "hnsw", "bm25", "rrf", "multi_space", "pipeline"]


def _build_add(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("content", help="the memory's text")
    sp.add_argument("--namespace", required=True, help="whose memories these are (a user, an agent, a project)")
    sp.add_argument("--session-id", help="the conversation it came from")
    sp.add_argument("--role", help="who said it (user, assistant, ...)")
    sp.add_argument("--type", dest="memory_type", help="what kind of memory (fact, event, preference, ...)")
    sp.add_argument("--valid-from", help="when it became true: ISO time with a zone, e.g. 2025-03-02T18:05:00+00:00")


def _add(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    valid_from = time_option(args.valid_from, "--valid-from")
    with open_store(args.path) as db:
        m = db.add(args.content, namespace=args.namespace, session_id=args.session_id, role=args.role,
                   memory_type=args.memory_type, valid_from=valid_from)
    with after_write("add", f"stored memory {m.id} in namespace {args.namespace}"):
        if args.json:
            emit(dataclasses.asdict(m))
        else:
            print(m.id)
    return 0


def _build_ingest(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("files", nargs="+", metavar="FILE", help="markdown or text files to store")
    sp.add_argument("--namespace", default="default", help="the namespace they go to (default: default)")


def _ingest_old_folder(args: argparse.Namespace) -> str | None:
    """`ingest FOLDER FILE...` (the old form): the first of two or more names the store only when it
    is a folder holding a store. Anything else is a file: a missing one (`ingest NOTES README` with
    NOTES mistyped) is an error naming it, never a new store made under its name."""
    if args.path is not None or len(args.files) < 2:
        return None
    if is_store(args.files[0]):
        folder: str = args.files.pop(0)
        return folder
    return None


def _more_files(args: argparse.Namespace, extras: list[str]) -> bool:
    if any(e.startswith("-") for e in extras):
        return False
    args.files.extend(extras)
    return True


def _ingest(args: argparse.Namespace) -> int:
    for f in args.files:  # every file checked before anything is written
        links(f)
        if not Path(f).is_file():
            raise CliError(f"{f} is not a file to ingest: " + ("it is a folder (the store folder goes in --path)"
                                                              if Path(f).is_dir() else "no such file") + _OLD_FORM)
    from ..store import open as open_store

    done: list[dict[str, Any]] = []
    with open_store(args.path) as db:
        for f in args.files:
            report = db.add_file(f, namespace=args.namespace)
            done.append(report)
            if not args.json:
                with after_write("ingest", _ingested(done, args.namespace)):
                    print(f"{f}: unchanged, skipped" if report["skipped"] else
                          f"{f}: {report['chunks']} chunks, {report['added']} added, {report['superseded']} "
                          "superseded")
    if args.json:
        with after_write("ingest", _ingested(done, args.namespace)):
            emit({"namespace": args.namespace, "files": done})
    return 0


# the old `ingest FOLDER FILE...` form names an existing store only: said where a name is not a file
_OLD_FORM = " (nothing was written; a store folder goes in --path FOLDER)"


def _ingested(done: list[dict[str, Any]], namespace: str) -> str:
    """What an ingest wrote so far, for stderr when its output cannot be written (a re-run skips
    the unchanged files)."""
    names = ", ".join(f"{r['file']} ({r['added']} added)" for r in done)
    return f"ingested into namespace {namespace}: {names}"


def _build_search(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("query", help="what to look for")
    sp.add_argument("--namespace", required=True, help="the namespace to search")
    sp.add_argument("-k", type=int, default=10, help="how many memories to show (default 10)")
    sp.add_argument("--space", help="the vector space to search (default: the main one)")
    sp.add_argument("--as-of", help="what was true then: ISO time with a zone")
    sp.add_argument("--known-at", help="what the store knew then: ISO time with a zone")
    sp.add_argument("--now", help="when the question is asked (\"last week\", \"in June\" are read against it): "
                                  "ISO time with a zone; default --as-of when given, else the clock")
    sp.add_argument("--strategy", choices=STRATEGIES,
                    help="default hybrid: keywords and meaning on one [0, 1] scale, then the neighbouring turns "
                         "and linked memories of the best; dense_only/exact/tree/hnsw: meaning alone (also the "
                         "default with --space); bm25: keywords alone; rrf: meaning, keywords and expansion "
                         "fused by rank; multi_space: rrf and the extra spaces; pipeline: keywords, then "
                         "meaning, fused, then reranked")
    sp.add_argument("--min-score", type=float, default=0.0, help="leave out hits scoring under this (0..1)")
    sp.add_argument("--type", dest="types", action="append", help="only memories of this type (repeatable)")
    sp.add_argument("--weight", action="append", default=[], metavar="METHOD=W",
                    help="weight of a method when fusing, e.g. --weight bm25=0.8 (repeatable)")
    sp.add_argument("--stage", action="append", default=[], metavar="NAME=N",
                    help="pipeline stage size, e.g. --stage feedback=10 or --stage sparse=2000 (repeatable)")
    sp.add_argument("--explain", action="store_true", help="show how each hit was found")
    sp.add_argument("--stats", action="store_true", help="show what the search did (strategy, index work, "
                                                         "stage times)")


def _search(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    as_of, known_at = time_option(args.as_of, "--as-of"), time_option(args.known_at, "--known-at")
    now = time_option(args.now, "--now")
    weights, stages = _pairs(args.weight, "--weight", float, "bm25=0.8"), _pairs(args.stage, "--stage", int,
                                                                                  "feedback=10")
    with open_store(args.path, read_only=True) as db:
        hits = db.search(args.query, namespace=args.namespace, k=args.k, space=args.space, as_of=as_of,
                         known_at=known_at, now=now, strategy=args.strategy, explain=args.explain, types=args.types,
                         min_score=args.min_score, weights=weights or None, stages=stages or None)
        rows = []
        for h in hits:
            row: dict[str, Any] = {"id": h.id, "score": h.score, "content": h.memory.content,
                                   "archived": h.archived, "passage": list(h.passage) if h.passage is not None else None,
                                   "via": h.via}
            if args.explain:
                row["explain"] = h.explain
            rows.append(row)
        stats = dataclasses.asdict(hits.stats) if args.stats else None
        if args.json:
            emit({"query": args.query, "namespace": args.namespace, "hits": rows,
                  **({"stats": stats} if stats is not None else {})})
            return 0
        if not rows:
            print(f"no memory of namespace {args.namespace} matches {args.query!r} ({held(db, args.namespace)})")
        for h, row in zip(hits, rows):
            text = "(archived)" if h.archived else h.memory.content
            if h.passage is not None and not h.archived:  # a long memory: the passage that matched
                a, b = h.passage
                text = f"[{a}:{b}] ...{h.memory.content[a:b]}..."
            # a turn shown as context of another hit says whose (its score is its own match)
            print(f"{h.score:8.4f}  {h.id}  {text}" + (f"  (via {h.via})" if h.via else ""))
            if args.explain:
                print(f"          {json.dumps(row['explain'])}")
    if stats is not None:
        print(f"stats: {json.dumps(stats)}")
    return 0


def _build_context(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    json_option(sp)
    sp.add_argument("first", metavar="QUERY", help="the prompt to find memories for")
    sp.add_argument("second", nargs="?", default=None, help=argparse.SUPPRESS)  # the old `context FOLDER QUERY`
    sp.add_argument("--namespace", required=True, help="the namespace to draw from")
    sp.add_argument("--max-tokens", type=int, default=1000, help="the token budget (default 1000)")
    sp.add_argument("--session-id", help="the current conversation (its recent turns are taken into account)")
    sp.add_argument("--as-of", help="what was true then: ISO time with a zone")
    sp.add_argument("--now", help="when the question is asked (\"last week\", \"in June\" are read against it): "
                                  "ISO time with a zone; default --as-of, else the clock")
    sp.add_argument("--tokenizer", default=None, help="cl100k_base (default when installed), o200k_base or estimate")


def _context(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    as_of, now = time_option(args.as_of, "--as-of"), time_option(args.now, "--now")
    with open_store(args.path, read_only=True) as db:
        block = db.context(args.query, namespace=args.namespace, max_tokens=args.max_tokens,
                           session_id=args.session_id, as_of=as_of, tokenizer=args.tokenizer, log=False, now=now)
        if args.json:
            emit({"text": block.text, "items": [dataclasses.asdict(i) for i in block.items], "stats": block.stats})
            return 0
        if not block.items:  # stdout stays the block (empty): what a pipe into a prompt wants
            note("context", f"nothing to show: no memory of namespace {args.namespace} matches "
                            f"({held(db, args.namespace)})")
            return 0
    print(block.text)
    print(f"({block.stats['tokens']} of {block.stats['budget']} tokens, {block.stats['tokenizer']})", file=sys.stderr)
    return 0


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
            raise CliError(f"{option} must be NAME={what}, e.g. {example}, got {p!r}") from None
    return out


COMMANDS = [
    Command("add", "store one memory", _build_add, _add, folder="create"),
    Command("ingest", "store markdown or text files as memories, in chunks; a changed file replaces its old "
                      "chunks, an unchanged one is skipped", _build_ingest, _ingest, folder="create",
            legacy=_ingest_old_folder, extras=_more_files),
    Command("search", "find the memories of a namespace that match a query", _build_search, _search),
    Command("context", "the best memories for a prompt, as one block that fits a token budget", _build_context,
            _context, legacy=first_of_two("query"), extras=second_from_extras),
]

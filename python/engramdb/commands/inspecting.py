"""Commands that show what a store holds: stats, topics, metrics."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from .common import (
    CliError,
    Command,
    emit,
    held,
    json_option,
    old_folder_argument,
    store_option,
    take_old_folder,
)


def _build_stats(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    old_folder_argument(sp)
    json_option(sp)
    sp.add_argument("--top", type=int, default=10, help="how many of the most used memories to list (default 10)")


def _stats(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    with open_store(args.path, read_only=True) as db:
        stats, board = db.stats(), db.admin.dashboard(top=args.top)
    if args.json:
        emit({**stats, "usage": board})
    elif not stats["versions"]:
        print(f"{args.path}: an empty store (no memories yet)")
    else:
        from ..dashboard import render

        render(stats, board)
    return 0


def _build_topics(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    old_folder_argument(sp)
    json_option(sp)
    sp.add_argument("--namespace", required=True, help="the namespace to describe")
    sp.add_argument("--themes", action="store_true", help="its content themes (clusters of similar memories) "
                                                          "instead of its topics")


def _topics(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    ns = args.namespace
    with open_store(args.path, read_only=True) as db:
        if args.themes:
            themes = db.topics.themes(ns)
            if args.json:
                emit({"namespace": ns, "themes": [dataclasses.asdict(th) for th in themes]})
            elif not themes:
                print(f"no themes in namespace {ns} ({held(db, ns)})")
            else:
                for th in themes:
                    print(f"{len(th.members):5d}  {th.label:<40}  confidence {th.confidence:.2f}, "
                          f"silhouette {th.silhouette:.2f}")
            return 0
        found = db.topics(ns)  # db.topics.list(ns) once the facade names it
        if args.json:
            emit({"namespace": ns, "topics": [dataclasses.asdict(t) for t in found], "churn": found.churn,
                  "entropy": found.entropy, "consolidation_due": found.consolidation_due})
            return 0
        if not found:
            print(f"no topics in namespace {ns} ({held(db, ns)})")
            return 0
    for t in found:
        print(f"{len(t.members):5d}  {t.label:<40}  confidence {t.confidence:.2f}, {t.phase}, id {t.id}")
    print(f"{len(found)} topics; churn {found.churn:.2f}, entropy {found.entropy:.2f}"
          f"{', consolidation due' if found.consolidation_due else ''}")
    return 0


def _build_metrics(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    old_folder_argument(sp)
    json_option(sp)


def _metrics(args: argparse.Namespace) -> int:
    from ..store import open as open_store

    with open_store(args.path, read_only=True) as db:
        if not args.json:
            from ..metrics import exposition

            print(exposition(db), end="")
            return 0
        emit({"metrics": _samples(db)})
    return 0


def _samples(db: Any) -> list[dict[str, Any]]:
    """Every metric sample as {"name", "labels", "value"} (what the Prometheus text holds)."""
    try:
        import prometheus_client  # noqa: F401  # the collector's families come from it
    except ImportError:
        raise CliError("engramdb metrics needs prometheus-client: pip install 'engramdb[metrics]'") from None
    from ..metrics import StoreCollector

    return [{"name": s.name, "labels": dict(s.labels), "value": s.value}
            for family in StoreCollector(db).collect() for s in family.samples]


COMMANDS = [
    Command("stats", "a store at a glance: sizes, the most used memories, recent searches, upkeep runs",
            _build_stats, _stats, legacy=take_old_folder),
    Command("topics", "what a namespace is about: its topics, or its themes", _build_topics, _topics,
            legacy=take_old_folder),
    Command("metrics", "the store's numbers in the Prometheus text format, for monitoring", _build_metrics,
            _metrics, legacy=take_old_folder),
]

"""`engramdb stats --path PATH` (E9): a store at a glance, as rich tables (plain text without `rich`).

What it shows comes from `Store.stats()` and `Store.admin.dashboard()`: sizes, the ELO and lifecycle
tier histograms, the memories with the highest ELO, recent activity and consolidation runs.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, TextIO


def _when(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def render(stats: dict[str, Any], board: dict[str, Any], out: TextIO | None = None) -> None:
    """Print the dashboard to `out` (default: the terminal)."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # the extra is not installed: the same content, as plain lines
        _plain(stats, board, out)
        return
    console = Console(file=out, width=110)
    head = Table(title=f"engramdb store {stats.get('path') or '(in memory)'}", show_header=False)
    act = board["activity"]
    lat = act.get("latency_ms")
    for k, v in (("memories (current)", stats["memories"]), ("versions", stats["versions"]),
                 ("namespaces", len(stats["namespaces"])), ("segments / WAL bytes", (f"{stats['segments']} / "
                                                                                   f"{stats['wal_bytes']:,}")),
                 ("searches: day / week / all", f"{act['searches_day']} / {act['searches_week']} / {act['searches']}"),
                 ("feedback: day / week / all", f"{act['feedback_day']} / {act['feedback_week']} / {act['feedback']}"),
                 ("search latency p50 / p95", f"{lat['p50']:.2f} / {lat['p95']:.2f} ms" if lat else "-")):
        head.add_row(k, str(v))
    console.print(head)
    tiers = Table(title="tiers")
    tiers.add_column("ELO tier")
    tiers.add_column("memories", justify="right")
    tiers.add_column("lifecycle tier")
    tiers.add_column("memories", justify="right")
    for (et, en), (lt, ln) in zip(board["elo_tiers"].items(), [*board["lifecycle_tiers"].items(), ("", "")]):
        tiers.add_row(et, str(en), lt, str(ln))
    console.print(tiers)
    top = Table(title="top memories by ELO")
    for col in ("id", "namespace", "ELO", "tier", "used / shown", "content"):
        top.add_column(col, overflow="fold")
    for m in board["top"]:
        top.add_row(m["id"], m["namespace"], f"{m['elo']:.0f}", m["tier"], f"{m['used']} / {m['shown']}", m["content"])
    console.print(top)
    recent = Table(title="recent searches")
    for col in ("when", "namespace", "query"):
        recent.add_column(col, overflow="fold")
    for r in act["recent"]:
        recent.add_row(_when(r["at_us"]), r["namespace"], r["query"] or "(a vector)")
    console.print(recent)
    runs = Table(title="consolidation runs")
    for col in ("when", "decay", "decisions", "applied"):
        runs.add_column(col, overflow="fold")
    for r in board["consolidation"]:
        runs.add_row(_when(r["at_us"]), r["decay"], _counts(r["counts"]), _counts(r["applied"]))
    console.print(runs)


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "-"


def _plain(stats: dict[str, Any], board: dict[str, Any], out: TextIO | None) -> None:
    import sys

    w = out or sys.stdout
    act = board["activity"]
    print(f"memories {stats['memories']}, versions {stats['versions']}, namespaces {len(stats['namespaces'])}", file=w)
    print(f"searches day/week/all {act['searches_day']}/{act['searches_week']}/{act['searches']}, "
          f"feedback {act['feedback_day']}/{act['feedback_week']}/{act['feedback']}", file=w)
    print(f"ELO tiers: {_counts(board['elo_tiers'])}; lifecycle tiers: {_counts(board['lifecycle_tiers'])}", file=w)
    for m in board["top"]:
        print(f"  {m['elo']:6.0f} {m['tier']:<8} {m['id']}  {m['content']}", file=w)
    for r in board["consolidation"]:
        print(f"  run {_when(r['at_us'])}: {_counts(r['counts'])}", file=w)


__all__ = ["render"]

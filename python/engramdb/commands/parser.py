"""The `engramdb` argument parser: every command, listed by group in `engramdb --help`."""

from __future__ import annotations

import argparse
import shutil
import textwrap

from ..agents.hook_events import STORE_FOLDER
from . import inspecting, memories, records, safekeeping, surfaces, upkeep
from .common import ENV_PATH, Command

_BY_NAME = {c.name: c for group in (memories, records, inspecting, upkeep, safekeeping, surfaces) for c in group.COMMANDS}

GROUPS: list[tuple[str, list[str]]] = [
    ("try it", ["demo"]),
    ("store and find memories", ["add", "ingest", "search", "context"]),
    ("look inside a store", ["stats", "topics", "metrics", "get", "history", "list"]),
    ("forget and delete", ["forget", "restore", "purge"]),
    ("upkeep", ["consolidate", "index", "infer-edges", "archive"]),
    ("keep data safe", ["export", "backup", "verify", "repair"]),
    ("serve agents", ["mcp", "hook"]),
    ("this install", ["capabilities"]),
]
COMMANDS: dict[str, Command] = {name: _BY_NAME[name] for _, names in GROUPS for name in names}


def _listing() -> str:
    width = max(map(len, COMMANDS)) + 2
    columns = max(60, min(shutil.get_terminal_size().columns, 110))
    lines = ["commands:"]
    for title, names in GROUPS:
        lines.append(f"  {title}:")
        for name in names:
            lines += textwrap.wrap(COMMANDS[name].summary, columns, initial_indent=f"    {name:<{width}}",
                                   subsequent_indent=" " * (4 + width))
    lines.append("")
    lines += textwrap.wrap(f"Every command that works on a store takes --path/-p FOLDER (default: ${ENV_PATH}, "
                           f"else ./{STORE_FOLDER}, the folder the agent hooks use); every command that prints "
                           "data takes --json (one JSON document on stdout). `engramdb COMMAND --help` says more.",
                           columns)
    return "\n".join(lines)


def build() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser of every command, and each command's own (for its usage line in an error)."""
    p = argparse.ArgumentParser(prog="engramdb", usage="engramdb [-h] COMMAND [options]",
                                description="engramdb: long-term memory for AI agents.", epilog=_listing(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    # the grouped listing above replaces argparse's flat one
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS)
    each = {name: sub.add_parser(name, prog=f"engramdb {name}", description=command.summary) for name, command in COMMANDS.items()}
    for name, command in COMMANDS.items():
        command.build(each[name])
    return p, each

"""Commands around the store: the demo, the agent surfaces (mcp, hook) and capabilities."""

from __future__ import annotations

import argparse

from .._capabilities import capabilities
from ..agents.hook_events import STORE_FOLDER
from .common import (
    DEMO_FOLDER,
    ENV_PATH,
    CliError,
    Command,
    Once,
    emit,
    json_option,
    old_folder_argument,
    store_option,
    take_old_folder,
)


def _build_demo(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("-p", "--path", default=None, metavar="FOLDER", action=Once,
                    help=f"the demo store's folder (default ./{DEMO_FOLDER}; ${ENV_PATH} is not used)")
    sp.add_argument("--kernels", action="store_true", help="time the native kernels on real sizes instead")
    sp.add_argument("--rows", type=int, default=100_000, help="with --kernels: vectors to scan")
    sp.add_argument("--dim", type=int, default=384, help="with --kernels: dimensions")
    sp.add_argument("--repeat", type=int, default=5, help="with --kernels: timed runs per kernel")


def _demo(args: argparse.Namespace) -> int:
    if args.kernels:
        if args.rows < 1000 or args.dim < 8 or args.repeat < 1:
            raise CliError("--rows must be >= 1000, --dim >= 8, --repeat >= 1", 2)
        from ..kernel_demo import run_demo as run_kernels

        run_kernels(rows=args.rows, dim=args.dim, repeat=args.repeat)
        return 0
    from ..demo import run_demo

    run_demo(args.path)
    return 0


def _build_mcp(sp: argparse.ArgumentParser) -> None:
    store_option(sp)
    old_folder_argument(sp)
    sp.add_argument("--namespace", default="default", help="the namespace of a tool call that names none")
    sp.add_argument("--profile", default=None, help="the schema of a new store: default, minilm or static")


def _mcp(args: argparse.Namespace) -> int:
    from ..agents.mcp_server import main as serve_mcp

    return serve_mcp(args.path, namespace=args.namespace, profile=args.profile)


def _build_hook(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("event", help="SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStop or "
                                  "SessionEnd ($ENGRAMDB_HOOK_BUDGET_MS overrides every event's time budget)")
    sp.add_argument("-p", "--path", default=None, metavar="FOLDER", action=Once,
                    help=f"the store folder (default: ${ENV_PATH}, else ./{STORE_FOLDER} in the session's folder)")
    sp.add_argument("--namespace", default=None, help="the namespace (default: $ENGRAMDB_NAMESPACE, else the "
                                                      "project folder's name)")
    sp.add_argument("--max-chars", type=int, default=8000, help="cap on the context it adds (default 8000)")


def _hook(args: argparse.Namespace) -> int:
    from ..agents.hooks import main as run_hook

    return run_hook(args.event, path=args.path, namespace=args.namespace, max_chars=args.max_chars)


def _build_capabilities(sp: argparse.ArgumentParser) -> None:
    json_option(sp)


def _capabilities(args: argparse.Namespace) -> int:
    caps = capabilities()
    if args.json:
        emit(caps)
        return 0
    width = max(len(k) for k in caps)
    for key, value in caps.items():
        shown = ", ".join(map(str, value)) if isinstance(value, list) else "-" if value is None else value
        print(f"{key:<{width}}  {shown}")
    return 0


COMMANDS = [
    Command("demo", "build a small store from a demo conversation, ask it questions, and keep it to explore",
            _build_demo, _demo, folder="demo"),
    Command("mcp", "serve a store to AI agents over MCP (stdio); needs engramdb[mcp]", _build_mcp, _mcp,
            folder="create", legacy=take_old_folder),
    Command("hook", "run as a coding agent's hook (Claude Code): the event's JSON on stdin, context on stdout",
            _build_hook, _hook, folder="hook"),
    Command("capabilities", "what the native core runs on: instruction sets, kernels, version", _build_capabilities,
            _capabilities, folder="none"),
]

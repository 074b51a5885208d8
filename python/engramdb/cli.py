"""The `engramdb` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from ._capabilities import capabilities


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="engramdb", description="engramdb: long-term memory engine for AI agents")
    sub = p.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the native kernels on real sizes and print what they measured")
    demo.add_argument("--rows", type=int, default=100_000, help="vectors to scan (default 100,000)")
    demo.add_argument("--dim", type=int, default=384, help="dimensions (default 384)")
    demo.add_argument("--repeat", type=int, default=5, help="timed runs per kernel; the best is shown")
    sub.add_parser("capabilities", help="print what the native core runs on, as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `engramdb` console script."""
    args = _parser().parse_args(argv)
    if args.command == "capabilities":
        print(json.dumps(capabilities(), indent=2))
        return 0
    if args.command == "demo":
        if args.rows < 1000 or args.dim < 8 or args.repeat < 1:
            print("engramdb demo: --rows must be >= 1000, --dim >= 8, --repeat >= 1", file=sys.stderr)
            return 2
        from .demo import run_demo

        run_demo(rows=args.rows, dim=args.dim, repeat=args.repeat)
        return 0
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

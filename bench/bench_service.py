"""The multi-user service under load (examples/service): fixed sizes through examples/service/loadtest.py.

20 users x 200 memories (stdlib-docstring sentences, sessions of 10 turns), then 50 concurrent
httpx clients send 2,000 requests (search 5 : context 3 : write 2, seeded) to one uvicorn process
serving one store over loopback; the load generator runs on the same machine. Reports p50 / p95 /
p99 / max per route, requests per second, errors, leaks across users and the acknowledged
memories found after shutdown, as a markdown section for bench/RESULTS.md (and JSON with --json).

Run: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/bench_service.py [--repeat 3] [--json PATH]`
(needs `pip install "engramdb[service]"`; about a minute a run on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import eval_locomo as ev  # the one editable-install check the benches share

LOADTEST = Path(__file__).resolve().parents[1] / "examples" / "service" / "loadtest.py"
SIZES = {"users": 20, "memories": 200, "clients": 50, "requests": 2000}
ROUTES = ("search", "context", "write")


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"


def run_once(sizes: dict[str, int], mix: str, seed: int) -> dict[str, Any]:
    """One load test in a child process; its figures (the child exits 1 on an error, a leak or a
    lost memory: those figures are reported, not hidden)."""
    with tempfile.TemporaryDirectory(prefix="engramdb-bench-service-") as tmp:
        out = Path(tmp) / "figures.json"
        cmd = [sys.executable, str(LOADTEST), "--mix", mix, "--seed", str(seed), "--json", str(out)]
        for name, value in sizes.items():
            cmd += [f"--{name}", str(value)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        print(done.stdout, end="", flush=True)
        if not out.exists():
            raise SystemExit(f"the load test failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        figures: dict[str, Any] = json.loads(out.read_text())
        figures["exit"] = done.returncode
        return figures


def markdown(runs: list[dict[str, Any]], command: str, mix: str) -> str:
    """The RESULTS.md section: one row per run and route."""
    first = runs[0]
    lines = [
        "## The multi-user service under load (examples/service)",
        "",
        (f"Command: `{command}`. One uvicorn process serving one store (engramdb.aio) over loopback; "
        f"{first['users']} users x {first['memories_per_user']} memories seeded through the API, then "
        f"{first['clients']} concurrent httpx clients send {first['requests']} requests ({mix}); the "
        f"clients run on the same machine ({os.cpu_count()} cores, Python {platform.python_version()}, "
        f"fastapi {_version('fastapi')}, uvicorn {_version('uvicorn')}, httpx {_version('httpx')})."),
        "",
        "| run | route | requests | errors | p50 ms | p95 ms | p99 ms | max ms | found |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i, run in enumerate(runs, 1):
        for route in ROUTES:
            r = run["routes"].get(route)
            if r:
                lines.append(f"| {i} | {route} | {r['requests']} | {r['errors']} | {r.get('p50_ms', '-')} | "
                             f"{r.get('p95_ms', '-')} | {r.get('p99_ms', '-')} | {r.get('max_ms', '-')} | "
                             f"{r.get('found', '-')} |")
    lines.append("")
    for i, run in enumerate(runs, 1):
        lines.append(f"- run {i}: {run['requests_per_s']} requests/s under load, seeding {run['seed_s']} s; "
                     f"leaks across users {run['leaks']}; {run['stored_after_shutdown']} of {run['acknowledged']} "
                     f"acknowledged memories in the store after shutdown; server exit {run['server_exit']}"
                     + (f"; first errors: {run['first_errors'][:2]}" if run["first_errors"] else ""))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the fixed-size load test `--repeat` times and print the RESULTS.md section."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1, help="runs (seeds 0, 1, ...); this machine is noisy")
    ap.add_argument("--mix", default="search=5,context=3,write=2")
    ap.add_argument("--clients", type=int, default=SIZES["clients"], help="concurrent clients (1: latency unloaded)")
    ap.add_argument("--json", type=Path, help="also write every run's figures here")
    args = ap.parse_args(argv)
    if (why := ev.editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    sizes = {**SIZES, "clients": args.clients}
    runs = [run_once(sizes, args.mix, seed) for seed in range(args.repeat)]
    command = "ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/bench_service.py" + \
        (f" --repeat {args.repeat}" if args.repeat != 1 else "") + \
        (f" --mix {args.mix}" if args.mix != "search=5,context=3,write=2" else "") + \
        (f" --clients {args.clients}" if args.clients != SIZES["clients"] else "")
    print()
    print(markdown(runs, command, args.mix))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2) + "\n")
    return 0 if all(r["exit"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())

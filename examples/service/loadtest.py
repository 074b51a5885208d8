"""A bounded load test of the multi-user service (app.py) over loopback.

It binds a socket on 127.0.0.1 (a free port; nothing else is ever bound), starts app.py on it with
uvicorn in a child process over a new store folder, seeds USERS users with MEMORIES memories each
(sessions of 10 turns, one POST a session), then runs CLIENTS concurrent httpx clients through a
fixed list of REQUESTS requests (seeded): searches, context blocks and message writes mixed by
MIX. It prints p50/p95/p99/max per route, errors, and three checks: no hit ever comes from another
user (leaks), the memory a query was cut from comes back (found), and every acknowledged memory is
in the store after the server has shut down.

The text is real English prose found on every machine: sentences from the docstrings of the
Python standard library (the same ones on every install of one Python version), user u holding a
run of them; a query is 5 consecutive words of one of the user's memories; a write is a new
user/assistant turn of later sentences. `--corpus FILE` (one text a line) replaces them.

    pip install fastapi uvicorn httpx
    python examples/service/loadtest.py --users 20 --memories 200 --clients 50 --requests 2000

The load generator shares the machine with the server, so the figures are what one host does.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import math
import random
import re
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import engramdb
import httpx

APP = Path(__file__).with_name("app.py")
ROUTES = ("search", "context", "write")
SESSION_TURNS = 10
QUERY_WORDS = 5
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_NOT_PROSE = re.compile(r"[_=`{}<>|\\$#@~^*\[\]]|\(\)|::|\.\w|--|//|https?:|\s[.,;:!?]")


def stdlib_sentences(n: int) -> list[str]:
    """n distinct prose sentences from the standard library's docstrings, in file order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found: dict[str, None] = {}
    for path in sorted(root.rglob("*.py")):
        if {"site-packages", "test", "tests", "idlelib"} & set(path.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                for s in _SENTENCE_END.split(" ".join((ast.get_docstring(node) or "").split())):
                    if 40 <= len(s) <= 300 and s[0].isupper() and s[-1] in ".!?" and not _NOT_PROSE.search(s):
                        found.setdefault(s, None)
        if len(found) >= n:
            return list(found)[:n]
    raise SystemExit(f"the standard library's docstrings hold {len(found)} sentences, {n} needed: pass --corpus")


def corpus_lines(path: Path, n: int) -> list[str]:
    """The first n distinct non-blank lines of a text file."""
    lines = list(dict.fromkeys(s.strip() for s in path.read_text(encoding="utf-8").splitlines() if s.strip()))
    if len(lines) < n:
        raise SystemExit(f"{path} holds {len(lines)} distinct lines, {n} needed")
    return lines[:n]


@dataclass
class Plan:
    """What to send: the seed sessions per user, and the load requests in order."""

    seed: list[tuple[str, str, int, list[dict[str, str]]]]  # (user, session, index of its first text, messages)
    load: list[dict[str, Any]]  # {"route", "user", and q / session / messages}


def draw_requests(users: int, requests: int, mix: dict[str, float], rng: random.Random) -> list[tuple[str, int]]:
    """The (route, user) of each load request."""
    weights = [mix[r] for r in ROUTES]
    return [(rng.choices(ROUTES, weights)[0], rng.randrange(users)) for _ in range(requests)]


def make_plan(texts: list[str], users: int, memories: int, drawn: list[tuple[str, int]], rng: random.Random) -> Plan:
    """Seed sessions from the first users*memories texts, writes from the rest (two a write)."""
    names = [f"user{u:03d}" for u in range(users)]
    seed = []
    for u, name in enumerate(names):
        own = texts[u * memories:(u + 1) * memories]
        for s in range(0, memories, SESSION_TURNS):
            turns = [{"role": ("user", "assistant")[i % 2], "content": t}
                     for i, t in enumerate(own[s:s + SESSION_TURNS])]
            seed.append((name, f"s{s // SESSION_TURNS:04d}", u * memories + s, turns))
    spare = iter(texts[users * memories:])
    load: list[dict[str, Any]] = []
    for route, u in drawn:
        req: dict[str, Any] = {"route": route, "user": names[u]}
        if route == "write":
            req["messages"] = [{"role": "user", "content": next(spare)}, {"role": "assistant", "content": next(spare)}]
        else:
            source = u * memories + rng.randrange(memories)  # the memory the query is cut from
            words = texts[source].split()
            at = rng.randrange(max(1, len(words) - QUERY_WORDS + 1))
            req.update(q=" ".join(words[at:at + QUERY_WORDS]), source=source,
                       session=f"s{(memories - 1) // SESSION_TURNS:04d}")
        load.append(req)
    return Plan(seed, load)


@dataclass
class Tally:
    """What the clients saw."""

    ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    sent: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    ok: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    first_errors: list[str] = field(default_factory=list)
    owner: dict[str, str] = field(default_factory=dict)  # memory id -> user, for every acknowledged write
    source_ids: dict[int, str] = field(default_factory=dict)  # seed text index -> memory id
    leaks: int = 0
    found: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def error(self, route: str, what: str) -> None:
        self.errors[route] += 1
        if len(self.first_errors) < 5:
            self.first_errors.append(f"{route}: {what}")


async def send(client: httpx.AsyncClient, req: dict[str, Any], tally: Tally) -> None:
    """One load request, timed; its answer checked against what each user owns."""
    route, user = req["route"], req["user"]
    tally.sent[route] += 1
    t0 = time.perf_counter()
    try:
        if route == "write":
            r = await client.post(f"/users/{user}/messages",
                                  json={"session_id": "live", "messages": req["messages"]})
        elif route == "search":
            r = await client.get(f"/users/{user}/search", params={"q": req["q"], "k": 10})
        else:
            r = await client.get(f"/users/{user}/context",
                                 params={"q": req["q"], "max_tokens": 1000, "session_id": req["session"]})
    except httpx.HTTPError as e:
        tally.error(route, f"{type(e).__name__}: {e}")
        return
    tally.ms[route].append((time.perf_counter() - t0) * 1000)
    if r.status_code >= 400:
        tally.error(route, f"HTTP {r.status_code} {r.text[:200]}")
        return
    tally.ok[route] += 1
    body = r.json()
    if route == "write":
        tally.owner.update(dict.fromkeys(body["ids"], user))
        return
    ids = [h["id"] for h in body["hits"]] if route == "search" else [it["id"] for it in body["items"] if it["id"]]
    tally.leaks += sum(1 for i in ids if tally.owner.get(i, user) != user)
    tally.found[route] += tally.source_ids[req["source"]] in ids


async def seed(client: httpx.AsyncClient, plan: Plan, tally: Tally, concurrency: int) -> None:
    """Post every seed session (a few at a time); record who owns each id and which text it holds."""
    jobs = iter(plan.seed)

    async def worker() -> None:
        for user, session, first, messages in jobs:
            r = await client.post(f"/users/{user}/messages", json={"session_id": session, "messages": messages})
            r.raise_for_status()
            for i, mid in enumerate(r.json()["ids"]):
                tally.owner[mid] = user
                tally.source_ids[first + i] = mid

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def run_load(base_url: str, plan: Plan, clients: int) -> tuple[Tally, float, float]:
    """Seed, then the load; returns the tally, seconds seeding, seconds under load."""
    tally = Tally()
    # idle connections dropped before uvicorn's 5 s keep-alive closes them: reusing one the server is
    # closing at that moment fails the request (a race of the two timers, not of the service)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2.0)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=300) as client:
        t0 = time.perf_counter()
        await seed(client, plan, tally, min(clients, 8))
        seeded = time.perf_counter() - t0
        queue = iter(plan.load)

        async def worker() -> None:
            for req in queue:
                await send(client, req, tally)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        return tally, seeded, time.perf_counter() - t0


def percentile(sorted_ms: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    return sorted_ms[max(0, min(len(sorted_ms) - 1, math.ceil(p / 100 * len(sorted_ms)) - 1))]


def start_server(path: Path, log: Path, store_threads: int | None) -> tuple[subprocess.Popen[bytes], str]:
    """app.py on a socket bound here to 127.0.0.1 (port chosen by the kernel), handed to the child."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    cmd = [sys.executable, str(APP), "--path", str(path), "--fd", str(sock.fileno())]
    if store_threads:
        cmd += ["--store-threads", str(store_threads)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, pass_fds=[sock.fileno()], stdout=out, stderr=subprocess.STDOUT)
    sock.close()  # the child holds its own copy
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(base + "/health", timeout=5).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    stop_server(proc)
    raise SystemExit(f"the server did not answer /health in 120 s:\n{log.read_text()[-3000:]}")


def stop_server(proc: subprocess.Popen[bytes]) -> int:
    """Ctrl-C the child (uvicorn shuts down, the lifespan closes the store, app.py exits 0); kill it
    after 120 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def parse_mix(text: str) -> dict[str, float]:
    """"search=5,context=3,write=2" -> weights per route."""
    mix = dict.fromkeys(ROUTES, 0.0)
    for part in text.split(","):
        name, _, weight = part.partition("=")
        if name.strip() not in mix:
            raise argparse.ArgumentTypeError(f"--mix: unknown route {name!r} (routes: {', '.join(ROUTES)})")
        mix[name.strip()] = float(weight)
    if sum(mix.values()) <= 0 or min(mix.values()) < 0:
        raise argparse.ArgumentTypeError("--mix: weights must be >= 0 and not all 0")
    return mix


def report(args: argparse.Namespace, tally: Tally, seeded: float, elapsed: float, stored: int,
           expected: int, exit_code: int) -> dict[str, Any]:
    """The figures as a dict (also printed as a markdown table)."""
    routes = {}
    for route in ROUTES:
        ms = sorted(tally.ms[route])
        if not tally.sent[route]:
            continue
        row: dict[str, Any] = {"requests": tally.sent[route], "errors": tally.errors[route]}
        if ms:
            row.update({f"p{p}_ms": round(percentile(ms, p), 1) for p in (50, 95, 99)}, max_ms=round(ms[-1], 1))
        if route in tally.found:
            row["found"] = round(tally.found[route] / max(1, tally.ok[route]), 3)
        routes[route] = row
    out = {"users": args.users, "memories_per_user": args.memories, "clients": args.clients,
           "requests": args.requests, "seed_s": round(seeded, 2), "load_s": round(elapsed, 2),
           "requests_per_s": round(args.requests / elapsed, 1), "routes": routes, "leaks": tally.leaks,
           "stored_after_shutdown": stored, "acknowledged": expected, "server_exit": exit_code,
           "first_errors": tally.first_errors}
    print(f"{args.users} users x {args.memories} memories seeded in {seeded:.1f} s; "
          f"{args.requests} requests from {args.clients} clients in {elapsed:.1f} s "
          f"({out['requests_per_s']} req/s)")
    print("\n| route | requests | errors | p50 ms | p95 ms | p99 ms | max ms | found |")
    print("|---|---|---|---|---|---|---|---|")
    for route, row in routes.items():
        print(f"| {route} | {row['requests']} | {row['errors']} | {row.get('p50_ms', '-')} | {row.get('p95_ms', '-')} "
              f"| {row.get('p99_ms', '-')} | {row.get('max_ms', '-')} | {row.get('found', '-')} |")
    print(f"\nleaks (a hit of another user): {tally.leaks}; memories in the store after shutdown: {stored} "
          f"of {expected} acknowledged; server exit code {exit_code}")
    for e in tally.first_errors:
        print("error:", e)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the load test; exit 1 when a request failed, a hit leaked or an acknowledged memory is missing."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--memories", type=int, default=200, help="seeded memories per user")
    ap.add_argument("--clients", type=int, default=50, help="concurrent clients during the load")
    ap.add_argument("--requests", type=int, default=2000, help="load requests in all")
    ap.add_argument("--mix", type=parse_mix, default=parse_mix("search=5,context=3,write=2"),
                    help="route weights (default search=5,context=3,write=2)")
    ap.add_argument("--corpus", type=Path, help="a text file, one memory a line (default: stdlib docstrings)")
    ap.add_argument("--path", type=Path, help="a new store folder (default: a temporary one, removed after)")
    ap.add_argument("--store-threads", type=int, help="the server store's thread pool (default: engramdb.aio's)")
    ap.add_argument("--server-log", type=Path, help="keep the server's output here (default: a temporary file)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    if min(args.users, args.memories, args.clients, args.requests) < 1:
        ap.error("--users, --memories, --clients and --requests must be >= 1")
    rng = random.Random(args.seed)
    drawn = draw_requests(args.users, args.requests, args.mix, rng)
    need = args.users * args.memories + 2 * sum(route == "write" for route, _ in drawn)
    texts = corpus_lines(args.corpus, need) if args.corpus else stdlib_sentences(need)
    plan = make_plan(texts, args.users, args.memories, drawn, rng)
    with tempfile.TemporaryDirectory(prefix="engramdb-loadtest-") as tmp:
        store = args.path or Path(tmp) / "store"
        log = args.server_log or Path(tmp) / "server.log"
        proc, base = start_server(store, log, args.store_threads)
        try:
            tally, seeded, elapsed = asyncio.run(run_load(base, plan, args.clients))
        finally:
            exit_code = stop_server(proc)
        with engramdb.open(store, read_only=True) as db:
            stored = db.stats()["memories"]
        out = report(args, tally, seeded, elapsed, stored, len(tally.owner), exit_code)
        if tally.first_errors:
            print(f"server log {log} (last 4,000 characters):\n" + log.read_text()[-4000:])
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    failed = sum(tally.errors.values()) or tally.leaks or stored != len(tally.owner) or exit_code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

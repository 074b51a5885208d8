"""Coding-agent hooks as the agent runs them (C8): one process per event, JSON on stdin.

1. Latency: a project store of --memories memories (English sentences found on this machine, see
   _corpus.py, as a coding session's prompts, tool uses and replies, 50 a session), then each event
   --runs times as a process with its real budget: the first call of each event ("cold": after the
   store was written; the OS page cache is not dropped) and the others ("warm", p50 and max),
   each answering in its own process (the resident reader off; the writer that may go on after the
   hook left, SessionEnd's upkeep, agents/session_upkeep.py, and PostToolUse's and Stop's take-in of
   their capture, agents/take_in.py, is waited for before the next call, and its end timed),
   against the event's budget; how many printed a context, how many settled for the quick answer
   (the full one late at 75% of the budget) and how many ran over. The floor is `python -c "import
   engramdb.store"`: what any hook process pays before it reads a byte. Then a session with the
   resident reader: SessionStart (which starts it), then rounds of UserPromptSubmit, PreToolUse,
   PostToolUse and Stop, each a new process (`resident_latency`).
2. Replay: --replay prompts and tool uses (UserPromptSubmit and PostToolUse alternating, each
   marked) through the hooks in --workers parallel processes, into a project store of its own,
   while this process holds the writer's lock half of the time (--hold seconds on, then off, adding
   a note a second while it holds it, as an MCP server storing memories would: each of its writes
   takes the spool in). Then the last writer opens, and each mark is counted: none lost, none
   twice.

Command: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/bench_hooks.py [--memories 5000] [--runs 6]
[--replay 1000] [--workers 4] [--hold 2.0] [--json PATH]`
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _corpus
import engramdb
import eval_locomo as ev_locomo
from engramdb.agents.hook_events import BUDGETS_MS

NS = "project"
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")
# the events whose writer may go on after the hook left, in a process of its own (its module)
DETACHED = {"SessionEnd": "session_upkeep", "PostToolUse": "take_in", "Stop": "take_in"}
COMMANDS = ("grep -rn '{w}' src/", "pytest tests/test_{w}.py -q", "git log --oneline -- {w}", "sed -n 1,80p src/{w}.py")
_MARK = re.compile(r"\[replay (\d+)\]")


def _word(sentence: str) -> str:
    words = [w.strip(".,;:!?()[]'\"").lower() for w in sentence.split()]
    return max(words, key=len) or "main"


def build_store(path: Path, n: int, sentences: list[str]) -> None:
    """n memories of coding sessions, 50 a session: a prompt, a tool use, a reply, in turn."""
    recs = []
    for i in range(n):
        s = sentences[i]
        session = f"session-{i // 50}"
        kind = i % 3
        if kind == 0:
            recs.append({"content": s, "role": "user", "memory_type": "turn", "source": "turn"})
        elif kind == 1:
            cmd = COMMANDS[i % len(COMMANDS)].format(w=_word(s))
            recs.append({"content": f"Tool Bash: command={cmd}\nResult: {s}", "role": "tool", "memory_type": "hook",
                         "source": "hook"})
        else:
            recs.append({"content": f"{s} {sentences[(i * 7) % n]}", "role": "assistant", "memory_type": "turn",
                         "source": "response"})
        recs[-1].update(namespace=NS, session_id=session)
    with engramdb.open(path) as db:
        db.add_many(recs)


def payload(event: str, cwd: Path, session: str, text: str, i: int) -> dict[str, Any]:
    base = {"session_id": session, "transcript_path": str(cwd / "transcript.jsonl"), "cwd": str(cwd),
            "hook_event_name": event}
    cmd = COMMANDS[i % len(COMMANDS)].format(w=_word(text))
    if event == "UserPromptSubmit":
        base["prompt"] = text
    elif event == "PreToolUse":
        base.update(tool_name="Bash", tool_input={"command": cmd})
    elif event == "PostToolUse":
        base.update(tool_name="Bash", tool_input={"command": cmd}, tool_response={"stdout": text, "stderr": ""})
    elif event == "Stop":
        base["last_assistant_message"] = text
    elif event == "SessionStart":
        base["source"] = "startup"
    elif event == "SessionEnd":
        base["reason"] = "exit"
    return base


def run_hook(event: str, store: Path, body: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "engramdb", "hook", event, "--path", str(store), "--namespace", NS],
                          input=json.dumps(body), capture_output=True, text=True, env=env, timeout=600, check=False)
    ms = (time.perf_counter() - t0) * 1e3
    out = proc.stdout.strip()
    if out:
        json.loads(out)  # a half-written answer would fail here
    return {"ms": ms, "rc": proc.returncode, "printed": bool(out), "chars": len(out),
            "quick": "not ready at" in proc.stderr, "over": "over its" in proc.stderr, "stderr": proc.stderr.strip()}


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("ENGRAMDB_PATH", "ENGRAMDB_NAMESPACE",
                                                              "ENGRAMDB_HOOK_BUDGET_MS")}


def latency(tmp: Path, memories: int, runs: int, sentences: list[str]) -> dict[str, Any]:
    cwd = tmp / "latency"
    store = cwd / ".engramdb"
    cwd.mkdir()
    t0 = time.perf_counter()
    build_store(store, memories, sentences)
    out: dict[str, Any] = {"memories": memories, "build_s": round(time.perf_counter() - t0, 1)}
    floor = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import engramdb.store"], check=True)
        floor.append((time.perf_counter() - t) * 1e3)
    out["import_floor_ms"] = round(statistics.median(floor))
    env = {**_env(), "ENGRAMDB_HOOK_RESIDENT": "0"}  # each event answers in its own process
    rows = {}
    queries = sentences[memories:]
    for event in EVENTS:
        got = []
        for r in range(runs):
            if event == "PreToolUse":  # a command run before (tests again, the same grep): memories to find
                j = 3 * (r * 31 % (memories // 3)) + 1
                body = payload(event, cwd, "session-new", sentences[j], j)
            else:
                body = payload(event, cwd, "session-new", queries[r * 7 + EVENTS.index(event)], r)
            t = time.perf_counter()
            got.append(run_hook(event, store, body, env))
            if event in DETACHED:  # its writer may go on after the hook left: the next call waits for it
                while subprocess.run(["pgrep", "-f", f"engramdb.agents.{DETACHED[event]} {store}"], capture_output=True,
                                     check=False).returncode == 0:
                    time.sleep(0.02)
                got[-1]["upkeep_s"] = round(time.perf_counter() - t, 2)
        warm = [g["ms"] for g in got[1:]]
        rows[event] = {"budget_ms": BUDGETS_MS[event], "cold_ms": round(got[0]["ms"]),
                       "warm_p50_ms": round(statistics.median(warm)) if warm else None,
                       "warm_max_ms": round(max(warm)) if warm else None,
                       "printed": sum(g["printed"] for g in got), "quick": sum(g["quick"] for g in got),
                       "over": sum(g["over"] for g in got), "runs": len(got),
                       "bad_rc": sum(g["rc"] != 0 for g in got),
                       "notes": sorted({g["stderr"] for g in got if g["stderr"]})[:3]}
        if event in DETACHED:
            rows[event]["upkeep_done_s"] = [g["upkeep_s"] for g in got]  # from the hook's start
        print(event, json.dumps(rows[event]), flush=True)
    out["events"] = rows
    out["resident"] = resident_latency(cwd, store, runs, sentences, memories)
    print("a session with the resident", json.dumps(out["resident"]), flush=True)
    return out


SESSION_EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")  # one round of a session


def resident_latency(cwd: Path, store: Path, runs: int, sentences: list[str], memories: int) -> dict[str, Any]:
    """A session as an agent runs it with the resident reader (agents/resident.py): SessionStart
    answers in its own process and starts the resident; then `2 * runs` rounds of a prompt, a tool
    call before and after, and a reply (SESSION_EVENTS), each event a new process: the captures
    (the prompt spooled by its hook, the tool use and the reply taken in by theirs) change the store
    as a real session does, so the resident reopens in the background while it answers."""
    run_dir = Path(tempfile.mkdtemp(prefix="edb-", dir="/tmp"))  # a short path: a socket's is ~100 bytes at most
    env = {**_env(), "ENGRAMDB_HOOK_RESIDENT": "1", "XDG_RUNTIME_DIR": str(run_dir), "ENGRAMDB_DEBUG": "1"}
    queries = sentences[memories:]

    def body(event: str, r: int) -> dict[str, Any]:
        if event == "PreToolUse":  # a command run before: memories to find
            j = 3 * (r * 31 % (memories // 3)) + 1
            return payload(event, cwd, "session-resident", sentences[j], j)
        return payload(event, cwd, "session-resident", queries[(r * 5 + SESSION_EVENTS.index(event)) % len(queries)], r)

    got: dict[str, list[dict[str, Any]]] = {e: [] for e in SESSION_EVENTS}
    try:
        first = run_hook("SessionStart", store, payload("SessionStart", cwd, "session-resident", queries[0], 0), env)
        sock = next(iter(sorted((run_dir / "engramdb").glob("hooks-*.sock"))), None)
        t = time.perf_counter()
        while sock is None and time.perf_counter() - t < 60:
            time.sleep(0.05)
            sock = next(iter(sorted((run_dir / "engramdb").glob("hooks-*.sock"))), None)
        ready_s = round(time.perf_counter() - t, 2)
        for r in range(1, 2 * runs + 1):
            for event in SESSION_EVENTS:
                got[event].append(run_hook(event, store, body(event, r), env))
        taken_in_after_s = settle(store)  # the last capture's take-in, after the session's last hook
    finally:
        subprocess.run(["pkill", "-f", f"engramdb.agents.resident {store}"], check=False)
        subprocess.run(["rm", "-rf", str(run_dir)], check=False)
    events = {}
    for event, rows in got.items():
        ms = [g["ms"] for g in rows]
        q = statistics.quantiles(ms, n=20, method="inclusive") if len(ms) > 1 else ms * 19
        events[event] = {"budget_ms": BUDGETS_MS[event], "calls": len(rows),
                         "served": sum("answered by the resident" in g["stderr"] for g in rows),
                         "p50_ms": round(statistics.median(ms)), "p95_ms": round(q[18]), "max_ms": round(max(ms)),
                         "printed": sum(g["printed"] for g in rows), "over": sum(g["over"] for g in rows),
                         "not_kept": sum("NOT kept" in g["stderr"] for g in rows)}
    return {"session_start_ms": round(first["ms"]), "session_start_printed": first["printed"],
            "resident_listening_after_s": ready_s, "last_take_in_done_after_s": taken_in_after_s,
            "spooled_after": len(list((store / "spool").glob("*.json"))), "events": events}


def settle(store: Path) -> float:
    """Wait until no take-in or upkeep process of `store` runs (they hold its writer's lock); the seconds waited."""
    t = time.perf_counter()
    while any(subprocess.run(["pgrep", "-f", f"engramdb.agents.{m} {store}"], capture_output=True,
                             check=False).returncode == 0 for m in set(DETACHED.values())):
        time.sleep(0.02)
    return round(time.perf_counter() - t, 2)


class HeldWriter(threading.Thread):
    """This process's writer: holds the lock `hold` s, lets go `hold` s, and so on, adding a note a
    second while it holds it; also notes every spool file it sees (polled every 20 ms)."""

    def __init__(self, store: Path, hold: float) -> None:
        super().__init__(daemon=True)
        self.store, self.hold = store, hold
        self.stop = threading.Event()
        self.held_s = 0.0
        self.notes = 0
        self.spool_files: set[str] = set()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                db = engramdb.open(self.store)
            except engramdb.StoreLocked:  # a hook is storing: try again shortly
                self._poll(0.05)
                continue
            t0 = time.monotonic()
            with db:
                while time.monotonic() - t0 < self.hold and not self.stop.is_set():
                    db.add_many([{"content": f"writer note {self.notes}", "namespace": NS, "memory_type": "note"}])
                    self.notes += 1
                    self._poll(min(1.0, self.hold))
            self.held_s += time.monotonic() - t0
            self._poll(self.hold)

    def _poll(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self.stop.is_set():
            folder = self.store / "spool"
            if folder.is_dir():
                self.spool_files.update(p.name for p in folder.iterdir() if p.suffix == ".json")
            time.sleep(0.02)


def replay(tmp: Path, n: int, workers: int, hold: float, sentences: list[str]) -> dict[str, Any]:
    cwd = tmp / "replay"
    store = cwd / ".engramdb"
    cwd.mkdir()
    engramdb.capture(store, [{"content": "replay project created", "namespace": NS, "memory_type": "note"}])
    env = _env()
    items = []
    for i in range(n):
        event = "UserPromptSubmit" if i % 2 == 0 else "PostToolUse"
        items.append((event, payload(event, cwd, f"replay-{i // 40}", f"{sentences[i]} [replay {i}]", i)))
        if event == "PostToolUse":  # the mark goes where the capture keeps it
            items[-1][1]["tool_input"]["command"] += f" [replay {i}]"
    writer = HeldWriter(store, hold)
    writer.start()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda it: (it[0], run_hook(it[0], store, it[1], env)), items))
    wall = time.perf_counter() - t0
    writer.stop.set()
    writer.join()
    settle(store)
    with engramdb.open(store) as db:  # the last writer takes in what is still spooled
        mems = list(db.list(NS, limit=1_000_000))
    counts = [0] * n
    for m in mems:
        for mark in {int(x) for x in _MARK.findall(m.content)}:
            counts[mark] += 1
    over = [(e, r) for e, r in results if r["over"]]
    out = {"captures": n, "workers": workers, "wall_s": round(wall, 1), "writer_held_s": round(writer.held_s, 1),
           "writer_notes": writer.notes, "spool_files_seen": len(writer.spool_files),
           "stored": sum(c >= 1 for c in counts), "lost": sum(c == 0 for c in counts),
           "duplicated": sum(c > 1 for c in counts), "bad_rc": sum(r["rc"] != 0 for _, r in results),
           "over_budget": {e: sum(1 for x, _ in over if x == e) for e in ("UserPromptSubmit", "PostToolUse")},
           "quick_answers": sum(r["quick"] for _, r in results),
           "prompts_with_context": sum(r["printed"] for e, r in results if e == "UserPromptSubmit"),
           "rescued": sum("instead" in r["stderr"] for _, r in results),
           "ms": {e: {"p50": round(statistics.median([r["ms"] for x, r in results if x == e])),
                      "p95": round(sorted([r["ms"] for x, r in results if x == e])[int(0.95 * (n // 2))])}
                  for e in ("UserPromptSubmit", "PostToolUse")},
           "notes": sorted({r["stderr"] for _, r in results if r["stderr"]})[:5]}
    print("replay", json.dumps(out), flush=True)
    return out


def markdown(res: dict[str, Any]) -> str:
    lat = res["latency"]
    lines = [(f"Store: {lat['memories']:,} memories in one project namespace; import floor "
              f"(`python -c \"import engramdb.store\"`) {lat['import_floor_ms']} ms."), "",
             "| event | budget ms | cold ms | warm p50 ms | warm max ms | printed | quick answer | over budget |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for event, r in lat["events"].items():
        lines.append(f"| {event} | {r['budget_ms']:,} | {r['cold_ms']:,} | {r['warm_p50_ms']:,} | {r['warm_max_ms']:,} "
                     f"| {r['printed']}/{r['runs']} | {r['quick']}/{r['runs']} | {r['over']}/{r['runs']} |")
    rs = lat.get("resident")
    if rs:
        lines += ["", (f"A session with the resident reader: SessionStart {rs['session_start_ms']} ms (answers in its "
                       f"own process, then starts the resident, listening {rs['resident_listening_after_s']} s "
                       "later); then rounds of a prompt, a tool call (before and after) and a reply, each event a "
                       "new process:"), "",
                  "| event | budget ms | calls | answered by the resident | p50 ms | p95 ms | max ms | printed | over budget |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for event, r in rs["events"].items():
            lines.append(f"| {event} | {r['budget_ms']:,} | {r['calls']} | {r['served']} | {r['p50_ms']} | "
                         f"{r['p95_ms']} | {r['max_ms']} | {r['printed']} | {r['over']} |")
    rp = res.get("replay")
    if rp:
        lines += ["", (f"Replay: {rp['captures']:,} captures (UserPromptSubmit and PostToolUse alternating) in "
                       f"{rp['workers']} parallel processes, {rp['wall_s']} s; the writer held the lock "
                       f"{rp['writer_held_s']} s ({rp['writer_notes']} notes of its own), "
                       f"{rp['spool_files_seen']} spool files seen (at least). Kept {rp['stored']:,}, "
                       f"lost {rp['lost']}, duplicated {rp['duplicated']}; over budget {rp['over_budget']}, "
                       f"captures rescued at the deadline {rp['rescued']}; quick answers {rp['quick_answers']}, "
                       f"prompts given a context {rp['prompts_with_context']}; "
                       f"ms {rp['ms']}.")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memories", type=int, default=5000, help="memories in the latency store")
    ap.add_argument("--runs", type=int, default=6, help="calls of each event (the first is the cold one)")
    ap.add_argument("--replay", type=int, default=1000, help="captures replayed (0: skip the replay)")
    ap.add_argument("--workers", type=int, default=4, help="hook processes at once in the replay")
    ap.add_argument("--hold", type=float, default=2.0, help="seconds the writer holds, then leaves, the lock")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if (why := ev_locomo.editable_refused()) is not None:
        print(why, file=sys.stderr)
        return 2
    if args.memories < 100 or args.runs < 2 or args.replay < 0 or args.workers < 1 or args.hold <= 0:
        print("need --memories >= 100, --runs >= 2, --replay >= 0, --workers >= 1, --hold > 0", file=sys.stderr)
        return 2
    sentences = _corpus.sentences(max(args.memories + 7 * args.runs + 8, args.replay))
    res: dict[str, Any] = {"cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="engramdb-hooks-") as tmp:
        res["latency"] = latency(Path(tmp), args.memories, args.runs, sentences)
        if args.replay:
            res["replay"] = replay(Path(tmp), args.replay, args.workers, args.hold, sentences)
    print(markdown(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

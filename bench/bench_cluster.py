"""engramdb.cluster on one machine (issue 30): an agent's mixed loop over Ray shard actors, and
the latency one Ray hop adds to a search.

1. Mixed workload: U users (namespaces) x M memories are loaded, then C concurrent clients
   (threads of one driver, each a `Cluster` call at a time) each run I iterations of an agent's
   turn: add one message (`add_messages`) to a random user, then `context` for that user. Run
   with 1 shard and with 2 shards (the same users, routed by rendezvous hashing). Reports
   ops/s (2 ops a turn) and p50 / p95 per op.
2. The Ray hop: on the 1-shard data, the same searches (log=False) directly on
   `engramdb.open(folder, read_only=True)` in this process and through the shard's actor;
   p50 / p95 of each and the difference.

Prints a markdown section for bench/RESULTS.md (and JSON with --json).
Run: `ENGRAMDB_BENCH_ALLOW_EDITABLE=1 python bench/bench_cluster.py [--quick] [--json PATH]`
(needs `pip install "engramdb[ray]"`; about a minute on 2 cores, --quick about 20 s).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import eval_locomo as ev  # the one editable-install check the benches share

FULL = {"users": 20, "memories": 200, "clients": 8, "turns": 40, "searches": 300}
QUICK = {"users": 8, "memories": 50, "clients": 8, "turns": 10, "searches": 100}
WORDS = ["tea", "coffee", "Lisbon", "Porto", "cat", "dog", "cello", "piano", "marathon", "bike", "hospital", "nurse",
         "journal", "garden", "train", "Friday", "review", "billing", "service", "kitchen", "tap", "rain", "spring",
         "summer", "winter", "moved", "bought", "learned"]


def sentence(rng: random.Random, user: str) -> str:
    return f"{user} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] * 1000.0 if s else float("nan")


def load(cluster: Any, users: list[str], memories: int, seed: int) -> None:
    rng = random.Random(seed)
    for u in users:
        for start in range(0, memories, 100):
            cluster.add_many([{"content": sentence(rng, u), "namespace": u, "session_id": f"s{i // 10}",
                               "role": "user" if i % 2 == 0 else "assistant", "memory_type": "turn"}
                              for i in range(start, min(memories, start + 100))])


def mixed(cluster: Any, users: list[str], clients: int, turns: int, seed: int) -> dict[str, Any]:
    lat: dict[str, list[float]] = {"add": [], "context": []}
    lock = threading.Lock()
    errors: list[str] = []

    def client(c: int) -> None:
        rng = random.Random(seed * 1000 + c)
        for _ in range(turns):
            u = rng.choice(users)
            try:
                t0 = time.perf_counter()
                cluster.add_messages([{"role": "user", "content": sentence(rng, u), "id": uuid.uuid4().hex}],
                                     namespace=u, session_id=f"live{c}")
                t1 = time.perf_counter()
                cluster.context(" ".join(rng.choice(WORDS) for _ in range(4)), namespace=u, max_tokens=500)
                t2 = time.perf_counter()
            except Exception as exc:  # noqa: BLE001 - reported, not hidden
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            with lock:
                lat["add"].append(t1 - t0)
                lat["context"].append(t2 - t1)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    ops = len(lat["add"]) + len(lat["context"])
    return {"ops": ops, "seconds": wall, "ops_per_s": ops / wall, "errors": errors[:5], "error_count": len(errors),
            **{f"{k}_p50_ms": pct(v, 0.50) for k, v in lat.items()},
            **{f"{k}_p95_ms": pct(v, 0.95) for k, v in lat.items()}}


def hop(cluster: Any, users: list[str], searches: int, seed: int) -> dict[str, Any]:
    import engramdb

    rng = random.Random(seed)
    queries = [(rng.choice(users), " ".join(rng.choice(WORDS) for _ in range(4))) for _ in range(searches)]
    folder = cluster.folders[cluster.shards[0]]
    out: dict[str, Any] = {}
    with engramdb.open(folder, read_only=True) as db:
        for ns, q in queries[:20]:  # warm both: indexes loaded, caches of the first queries filled alike
            db.search(q, namespace=ns, log=False)
            cluster.search(q, namespace=ns, log=False)
        for name, fn in (("direct", lambda ns, q: db.search(q, namespace=ns, log=False)),
                         ("actor", lambda ns, q: cluster.search(q, namespace=ns, log=False))):
            lat = []
            for ns, q in queries:
                t = time.perf_counter()
                fn(ns, q)
                lat.append(time.perf_counter() - t)
            out[name] = {"p50_ms": pct(lat, 0.5), "p95_ms": pct(lat, 0.95)}
    out["hop_p50_ms"] = out["actor"]["p50_ms"] - out["direct"]["p50_ms"]
    out["hop_p95_ms"] = out["actor"]["p95_ms"] - out["direct"]["p95_ms"]
    return out


def markdown(fig: dict[str, Any], command: str) -> str:
    s = fig["sizes"]
    lines = [
        (f"`{command}` ({fig['machine']}, {fig['cpus']} cores, Ray {fig['ray']}): {s['users']} users x "
         f"{s['memories']} memories, {s['clients']} concurrent clients x {s['turns']} turns (add one message, "
         "then context, max_tokens=500)."),
        "",
        "| shards | ops | ops/s | add p50 / p95 ms | context p50 / p95 ms | errors |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n, r in fig["mixed"].items():
        lines.append(f"| {n} | {r['ops']} | {r['ops_per_s']:.1f} | {r['add_p50_ms']:.1f} / {r['add_p95_ms']:.1f} | "
                     f"{r['context_p50_ms']:.1f} / {r['context_p95_ms']:.1f} | {r['error_count']} |")
    h = fig["hop"]
    lines += ["", f"Search ({s['searches']} queries, log=False, same data, 1 shard):", "",
              "| path | p50 ms | p95 ms |", "|---|---:|---:|",
              f"| `engramdb.open(read_only=True)` in process | {h['direct']['p50_ms']:.2f} | {h['direct']['p95_ms']:.2f} |",
              f"| through the shard's actor (one Ray hop) | {h['actor']['p50_ms']:.2f} | {h['actor']['p95_ms']:.2f} |",
              f"| the hop | {h['hop_p50_ms']:+.2f} | {h['hop_p95_ms']:+.2f} |"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    why = ev.editable_refused()
    if why:
        print(why, file=sys.stderr)
        return 2
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray
    from engramdb.cluster import Cluster

    sizes = QUICK if args.quick else FULL
    users = [f"user-{i}" for i in range(sizes["users"])]
    ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False)
    fig: dict[str, Any] = {"sizes": sizes, "machine": platform.machine(), "cpus": os.cpu_count(), "ray": ray.__version__,
                           "mixed": {}}
    try:
        with tempfile.TemporaryDirectory(prefix="engramdb-bench-cluster-") as tmp:
            for n in (1, 2):
                cluster = Cluster({f"s{i}": Path(tmp) / f"n{n}" / f"s{i}" for i in range(n)})
                load(cluster, users, sizes["memories"], args.seed)
                fig["mixed"][n] = mixed(cluster, users, sizes["clients"], sizes["turns"], args.seed)
                if n == 1:
                    fig["hop"] = hop(cluster, users, sizes["searches"], args.seed)
                cluster.close()
    finally:
        ray.shutdown()
    command = "python bench/bench_cluster.py" + (" --quick" if args.quick else "")
    print(markdown(fig, command))
    if args.json:
        args.json.write_text(json.dumps(fig, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

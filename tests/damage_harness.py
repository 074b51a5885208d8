"""Damage a store's files and open them in child processes (tests/test_damage.py samples it,
bench/damage.py runs the full grid for bench/RELIABILITY.md).

A pristine store is built once in a child process that ends without close(), so every kind of
file exists: segments, a WAL with frames, an edges file, an archive file, the manifest, and the
derived index files (tree and BM25 with their sidecars). Each case copies it, flips one byte or
truncates one file, and a child process opens the copy read-only and reads every memory (get of
every id, forgotten ones included, and a search of each strategy in each namespace), then does
the same with salvage=True. Outcomes:

- "served": the open succeeded and every memory read equals the pristine one;
- "refused": an engramdb error (CorruptFile, FormatError, StoreError) naming the damaged file;
- "salvaged": what a salvage open served equals the pristine memories it served (a subset);
- failures: "altered" (a memory served that differs from the pristine one), "missing" (an open
  that succeeded without error but lacks memories), "raw" (a non-engramdb exception), "crash"
  (the child died: a segfault), "unnamed" (refused without naming the file).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
KINDS = {"segment": "seg-*.arrow", "wal": "wal-*.log", "edges": "edges-*.arrow", "archive": "archive-*.arrow",
         "manifest": "manifest.json", "index": "index/*"}
STRATEGIES = [None, "exact", "bm25", "hybrid", "pipeline"]

BUILD = """
import json, os, sys, time
from datetime import datetime, timezone
import engramdb
folder = sys.argv[1]
db = engramdb.open(folder, tuning=engramdb.Tuning(tree_min_rows=70, tree_leaf_size=8, checkpoint_rows=64))
words = "apple river garden piano winter coffee mountain letter bicycle lamp ocean market violin forest".split()
rows = [{"content": " ".join(words[(i * k) % len(words)] for k in (1, 3, 5, 7)) + f" {i}", "id": f"m{i}",
         "namespace": "a" if i % 3 else "b", "session_id": f"s{i // 10}", "seq": i % 10} for i in range(200)]
db.add_many(rows[:120])
time.sleep(0.01)
cut = datetime.now(timezone.utc)
time.sleep(0.01)
db.add_many(rows[120:180])
db.link("m1", "m2", "CAUSED_BY", confidence=0.9)
db.link("m4", "m5", "RELATED_TO", confidence=0.8)
db.admin.checkpoint()
db.lifecycle.archive(cut, namespace="b")
db.admin.build_index()
db.add_many(rows[180:])  # these stay in the WAL
db.update("m7", content="apple river updated 7")
db.forget("m8")
db.link("m10", "m11", "CAUSED_BY", confidence=0.95)
print("built", flush=True)
os._exit(0)  # no close: the last writes stay in the WAL
"""

CHILD = """
import json, sys
import engramdb
expected = json.loads(open(sys.argv[1]).read())
strategies = {strategies!r}

def read(db):
    got = {{}}
    for mid in expected:
        m = db.get(mid, include_forgotten=True)
        if m is not None:
            got[mid] = [m.version, m.content, m.forgotten_at is not None]
    for ns in ("a", "b"):
        for s in strategies:
            for h in db.search("apple river", namespace=ns, k=50, strategy=s):
                rec = [h.memory.version, h.memory.content]
                if h.id not in expected or (rec not in expected[h.id]["versions"] and not h.archived):
                    return got, "altered:" + h.id
                got.setdefault(h.id, rec + [False])
    return got, None

def judge(got, whole):
    for mid, rec in got.items():
        if mid not in expected or rec[:2] not in expected[mid]["versions"]:
            return "altered:" + mid  # no version the store ever held
    if whole:
        stale = [m for m, rec in got.items() if rec[:2] != expected[m]["current"]]
        if len(got) < len(expected) or stale:
            return "missing:" + str(len(expected) - len(got)) + " stale:" + str(len(stale))
    return None

for line in sys.stdin:
    case = json.loads(line)
    print(json.dumps({{"start": case["id"]}}), flush=True)
    out = {{"id": case["id"]}}
    try:
        db = engramdb.open(case["folder"], read_only=True)
        got, bad = read(db)
        out["open"] = bad or judge(got, True) or "served"
        db.close()
    except (engramdb.StoreError, engramdb.FormatError) as exc:
        out["open"] = "refused" if case["name"] in str(exc) else "unnamed:" + str(exc)[:200]
    except Exception as exc:
        out["open"] = "raw:" + type(exc).__name__ + ": " + str(exc)[:200]
    try:
        db = engramdb.open(case["folder"], read_only=True, salvage=True)
        got, bad = read(db)
        out["salvage"] = bad or judge(got, False) or "salvaged"
        out["salvaged_memories"] = len(got)
        db.close()
    except (engramdb.StoreError, engramdb.FormatError) as exc:
        out["salvage"] = "refused" if case["name"] in str(exc) else "unnamed:" + str(exc)[:200]
    except Exception as exc:
        out["salvage"] = "raw:" + type(exc).__name__ + ": " + str(exc)[:200]
    print(json.dumps(out), flush=True)
"""


def build(folder: Path) -> dict[str, Any]:
    """The pristine store at `folder` and what it holds: per id its current [version, content]
    (as get() serves it: archived content empty) and every [version, content] it ever held."""
    subprocess.run([sys.executable, "-c", BUILD, str(folder)], check=True, capture_output=True, text=True)
    import engramdb
    from engramdb.storage import Engine

    engine = Engine(folder, schema=None, read_only=True, tuning=engramdb.Tuning())  # storage's seam: every row
    versions: dict[str, list[list[Any]]] = {}
    for seg in engine.view.segments:
        for mid, version, content in zip(seg.ids, seg.table.column("version").to_pylist(),
                                         seg.table.column("content").to_pylist()):
            versions.setdefault(mid, []).append([version, content])
    engine.close()
    db = engramdb.open(folder, read_only=True)
    expected = {}
    for i in range(200):
        m = db.get(f"m{i}", include_forgotten=True)
        assert m is not None
        expected[m.id] = {"current": [m.version, m.content], "versions": versions[m.id]}
    db.close()
    return expected


def files_of(folder: Path) -> dict[str, list[Path]]:
    """The pristine store's files, by kind."""
    return {kind: sorted(p for p in folder.glob(pattern) if p.is_file()) for kind, pattern in KINDS.items()}


def cases(folder: Path, flips: int, truncations: int, seed: int = 0) -> list[dict[str, Any]]:
    """`flips` byte flips and `truncations` truncations per file kind, spread over each kind's files."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = []
    for kind, paths in files_of(folder).items():
        assert paths, f"the pristine store has no {kind} file"
        for op, count in (("flip", flips), ("truncate", truncations)):
            for j in range(count):
                p = paths[j % len(paths)]
                size = p.stat().st_size
                out.append({"id": len(out), "kind": kind, "op": op, "file": str(p.relative_to(folder)),
                            "name": p.name, "at": int(rng.integers(0, size))})
    return out


def damaged(pristine: Path, work: Path, case: dict[str, Any]) -> Path:
    """A copy of the pristine store with the case's damage."""
    target = work / f"case-{case['id']}"
    shutil.copytree(pristine, target)
    path = target / case["file"]
    data = bytearray(path.read_bytes())
    if case["op"] == "flip":
        data[case["at"]] ^= 0xFF
    else:
        del data[case["at"]:]
    path.write_bytes(bytes(data))
    return target


def run(pristine: Path, expected: dict[str, Any], todo: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Open every case in child processes; a child that dies is replaced and its case is a crash."""
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="engramdb-damage-") as tmp:
        work = Path(tmp)
        exp = work / "expected.json"
        exp.write_text(json.dumps(expected))
        for case in todo:
            case["folder"] = str(damaged(pristine, work, case))
        remaining = list(todo)
        code = textwrap.dedent(CHILD).format(strategies=STRATEGIES)
        while remaining:
            proc = subprocess.Popen([sys.executable, "-c", code, str(exp)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                    env={**os.environ, "PYTHONFAULTHANDLER": "0"})
            out, _ = proc.communicate("".join(json.dumps(c) + "\n" for c in remaining))
            started = None
            for line in out.splitlines():
                rec = json.loads(line)
                if "start" in rec:
                    started = rec["start"]
                else:
                    results[rec["id"]] = rec
                    started = None
            if started is not None and proc.returncode != 0:
                results[started] = {"id": started, "open": f"crash (exit {proc.returncode})", "salvage": "crash"}
            done = set(results)
            remaining = [c for c in remaining if c["id"] not in done]
            if remaining and started is None:  # died between cases: do not loop forever
                for c in remaining:
                    results[c["id"]] = {"id": c["id"], "open": f"crash (exit {proc.returncode})", "salvage": "crash"}
                break
    return [{**{k: v for k, v in c.items() if k != "folder"}, **results[c["id"]]} for c in todo]


FAILURES = ("altered", "missing", "raw", "crash", "unnamed")


def failures(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cases whose open or salvage ended in a failure outcome (see the module docstring); a WAL
    truncation that serves the frames before the cut is a torn tail, reported apart."""
    bad = []
    for r in results:
        for key in ("open", "salvage"):
            outcome = str(r[key])
            if r["kind"] == "wal" and r["op"] == "truncate" and outcome.startswith("missing"):
                continue  # indistinguishable from a crash during an append: see torn_tails()
            if outcome.startswith(FAILURES):
                bad.append(r)
                break
    return bad


def torn_tails(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """WAL truncations served as a shorter log (frames after the cut dropped, nothing altered)."""
    return [r for r in results if r["kind"] == "wal" and r["op"] == "truncate" and str(r["open"]).startswith("missing")]

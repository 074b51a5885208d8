"""Soak: one writer (batches of 200, a checkpoint every 2,000 rows, a compaction every 25
batches) and reader processes that reopen the store read-only again and again; each open must
find every batch the writer acknowledged before the open began (tests/test_soak.py runs it for
~10 s, bench/soak.py for longer, for bench/RELIABILITY.md).

The writer writes its last acknowledged batch number to `acked` (atomically) after each batch
returns; a reader reads it, then opens, then gets the last id of that batch and of 20 random
earlier ones, and writes its figures to `progress-N` (atomically). All of them run until `stop`
exists: `soak` makes it after `seconds`, or later, once the figures reach the floors it was given
(a slow or loaded machine: with other jobs' builds on this one's two cores, the 10 s
tests/test_soak.py ran for gave 42 batches, 10 opens and 142 reads, and 28, 4 and 34 with two busy
loops beside them, against its floors of 50, 40 and 800).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

WRITER = """
import os, sys
sys.path.insert(0, {here!r})
import engramdb
from store_helpers import toy_embedders, toy_schema
folder, stop = sys.argv[1], sys.argv[2]
db = engramdb.open(folder, schema=toy_schema(), embedders=toy_embedders(), tuning=engramdb.Tuning(checkpoint_rows=2_000))
b = 0
while not os.path.exists(stop):
    db.add_many([{{"content": f"batch {{b}} turn {{j}}", "namespace": "n", "id": f"b{{b}}-{{j}}"}} for j in range(200)])
    tmp = os.path.join(folder, "..", "acked.tmp")
    with open(tmp, "w") as fh:
        fh.write(str(b))
    os.replace(tmp, os.path.join(folder, "..", "acked"))
    b += 1
    if b % 25 == 0:
        db.admin.compact()
db.close()
print(b, flush=True)
"""

READER = """
import json, os, sys, time
sys.path.insert(0, {here!r})
import numpy as np
import engramdb
from store_helpers import toy_embedders, toy_schema
folder, stop, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
progress = os.path.join(folder, "..", f"progress-{{seed}}")
rng = np.random.default_rng(seed)
opens, misses, open_s, checks = 0, [], 0.0, 0
while not os.path.exists(stop):
    try:
        last = int(open(os.path.join(folder, "..", "acked")).read())
    except (FileNotFoundError, ValueError):
        continue
    t0 = time.perf_counter()
    db = engramdb.open(folder, schema=toy_schema(), embedders=toy_embedders(), read_only=True)
    open_s += time.perf_counter() - t0
    opens += 1
    for b in {{last, *rng.integers(0, last + 1, 20).tolist()}}:
        checks += 1
        if db.get(f"b{{b}}-199") is None:
            misses.append([b, last])
    db.close()
    with open(progress + ".tmp", "w") as fh:
        fh.write(f"{{opens}} {{checks}}")
    os.replace(progress + ".tmp", progress)
print(json.dumps({{"opens": opens, "misses": misses, "open_s": open_s, "checks": checks}}), flush=True)
"""


def soak(folder: Path, seconds: float, readers: int, floors: dict[str, int] | None = None,
         deadline: float = 300.0) -> dict[str, Any]:
    """Run the writer and `readers` reader processes for `seconds`, and on until their figures
    reach `floors` ({"batches": ..., "opens": ..., "checks": ...}; none by default), stopped at
    `deadline` seconds whatever they reached (a hang); their figures."""
    start = time.monotonic()
    stop = folder.parent / "stop"
    code_w = WRITER.format(here=str(HERE))
    code_r = READER.format(here=str(HERE))
    writer = subprocess.Popen([sys.executable, "-c", code_w, str(folder), str(stop)], stdout=subprocess.PIPE, text=True)
    procs: list[subprocess.Popen[str]] = []
    try:
        while not (folder.parent / "acked").exists():
            if writer.poll() is not None:
                raise AssertionError("the writer died before its first batch")
            time.sleep(0.01)
        procs = [subprocess.Popen([sys.executable, "-c", code_r, str(folder), str(stop), str(i)],
                                  stdout=subprocess.PIPE, text=True) for i in range(readers)]
        while time.monotonic() - start < deadline and all(p.poll() is None for p in (writer, *procs)):
            if time.monotonic() - start >= seconds and all(v >= (floors or {}).get(k, 0)
                                                           for k, v in _progress(folder.parent, readers).items()):
                break
            time.sleep(0.05)
    finally:
        stop.touch()
    out = [json.loads(p.communicate()[0]) for p in procs]
    batches = int(writer.communicate()[0])
    elapsed = time.monotonic() - start
    assert writer.returncode == 0 and all(p.returncode == 0 for p in procs)
    opens = sum(o["opens"] for o in out)
    return {"batches": batches, "readers": readers, "seconds": round(elapsed, 1), "opens": opens,
            "opens_per_s": opens / elapsed, "open_ms_mean": 1e3 * sum(o["open_s"] for o in out) / max(1, opens),
            "checks": sum(o["checks"] for o in out), "misses": [m for o in out for m in o["misses"]],
            "pid": os.getpid()}


def _progress(where: Path, readers: int) -> dict[str, int]:
    """The figures so far: batches acknowledged, opens and reads made by the readers."""
    opens = checks = 0
    for i in range(readers):
        try:
            o, c = (where / f"progress-{i}").read_text().split()
        except (FileNotFoundError, ValueError):
            continue
        opens, checks = opens + int(o), checks + int(c)
    try:
        batches = int((where / "acked").read_text()) + 1
    except (FileNotFoundError, ValueError):
        batches = 0
    return {"batches": batches, "opens": opens, "checks": checks}

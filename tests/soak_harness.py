"""Soak: one writer (batches of 200, a checkpoint every 2,000 rows, a compaction every 25
batches) and reader processes that reopen the store read-only again and again; each open must
find every batch the writer acknowledged before the open began (tests/test_soak.py runs it for
~10 s, bench/soak.py for longer, for bench/RELIABILITY.md).

The writer writes its last acknowledged batch number to `acked` (atomically) after each batch
returns; a reader reads it, then opens, then gets the last id of that batch and of 20 random
earlier ones.
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
folder, until = sys.argv[1], float(sys.argv[2])
import time
db = engramdb.open(folder, schema=toy_schema(), embedders=toy_embedders(), tuning=engramdb.Tuning(checkpoint_rows=2_000))
b = 0
while time.time() < until:
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
folder, until, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(seed)
opens, misses, open_s, checks = 0, [], 0.0, 0
while time.time() < until:
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
print(json.dumps({{"opens": opens, "misses": misses, "open_s": open_s, "checks": checks}}), flush=True)
"""


def soak(folder: Path, seconds: float, readers: int) -> dict[str, Any]:
    """Run the writer and `readers` reader processes for `seconds`; their figures."""
    until = time.time() + seconds
    code_w = WRITER.format(here=str(HERE))
    code_r = READER.format(here=str(HERE))
    writer = subprocess.Popen([sys.executable, "-c", code_w, str(folder), str(until)], stdout=subprocess.PIPE, text=True)
    while not (folder.parent / "acked").exists():
        if writer.poll() is not None:
            raise AssertionError("the writer died before its first batch")
        time.sleep(0.01)
    procs = [subprocess.Popen([sys.executable, "-c", code_r, str(folder), str(until), str(i)], stdout=subprocess.PIPE,
                              text=True) for i in range(readers)]
    out = [json.loads(p.communicate()[0]) for p in procs]
    batches = int(writer.communicate()[0])
    assert writer.returncode == 0 and all(p.returncode == 0 for p in procs)
    opens = sum(o["opens"] for o in out)
    return {"batches": batches, "readers": readers, "seconds": seconds, "opens": opens,
            "opens_per_s": opens / seconds, "open_ms_mean": 1e3 * sum(o["open_s"] for o in out) / max(1, opens),
            "checks": sum(o["checks"] for o in out), "misses": [m for o in out for m in o["misses"]],
            "pid": os.getpid()}

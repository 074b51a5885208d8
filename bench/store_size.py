"""A store folder's size on disk, and what takes it: N real sentences (bench/_corpus.py) added in
batches of 5,000 with the store's own embedders, then compacted; bytes per memory and per column.

Bytes do not depend on the build, so an editable install measures the same (ingest_s is a side note).

Command: `python bench/store_size.py [--n 20000] [--profile default|minilm] [--json PATH]`
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parent))
import _corpus
import engramdb


def measure(n: int, profile: str | None) -> dict[str, Any]:
    texts = _corpus.sentences(n)
    folder = Path(tempfile.mkdtemp(prefix="engramdb-size-")) / "s"
    try:
        t0 = time.perf_counter()
        with engramdb.open(folder, profile=profile) as db:
            for i in range(0, n, 5000):
                db.add_many([{"content": t, "namespace": "n"} for t in texts[i:i + 5000]])
            db.admin.compact()
        took = time.perf_counter() - t0
        files = [p for p in folder.rglob("*") if p.is_file()]
        total = sum(p.stat().st_size for p in files)
        columns: dict[str, int] = {}
        for seg in folder.glob("seg-*.arrow"):
            table = pa.ipc.open_file(pa.memory_map(str(seg))).read_all()
            for name in table.column_names:
                columns[name] = columns.get(name, 0) + table.column(name).nbytes
        return {"memories": n, "profile": profile or "default", "text_bytes": sum(len(t.encode()) for t in texts),
                "folder_bytes": total, "bytes_per_memory": round(total / n), "ingest_s": round(took, 2),
                "largest_columns": dict(sorted(columns.items(), key=lambda kv: -kv[1])[:6])}
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--profile", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    out = measure(args.n, args.profile)
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`backup`: a full-fidelity copy of a store folder, taken while a writer runs.

Every committed file (segments with every version, edges with their history, archives), the
whole frames of the WAL and the access and ELO logs (each checked against its CRC), all of one manifest (pinned: storage/pinning.py), copied into a new
folder that is itself a store: opening it is the restore. Each file's checksum is checked as it is
copied, so a backup never carries damage silently. Derived index files are not copied (the copy
rebuilds them on demand). The copy is the store as of the moment its WAL was read: writes
acknowledged after that are in the next backup.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO

from ..model.errors import StoreError
from .arrow_log import LOG_DIR, intact_logs
from .checksum import check
from .folder import classify, write_marker
from .manifest import write_manifest
from .pinning import pinned
from .segment import mapped
from .wal import decode_frames

CHUNK = 1 << 24


def backup(source: str | Path, dest: str | Path) -> dict[str, Any]:
    """Copy the store at `source` into `dest` (new or empty); returns what was copied."""
    src, out = Path(source), Path(dest)
    if classify(src) != "store":
        raise StoreError(f"no engramdb store at {src} to back up")
    if classify(out) != "new":
        raise StoreError(f"backup destination {out} is a store already: give a new or empty folder")
    copied = total = 0
    with pinned(src) as (m, handles):
        out.mkdir(parents=True, exist_ok=True)
        write_marker(out)
        for entry in m.segments + m.edges + m.archives:
            name = entry["file"]
            check(src / name, mapped(handles[name]), entry)  # never copy damage
            handles[name].seek(0)
            total += _copy(handles[name], out / name, None)
            copied += 1
        raw = handles[m.wal].read()
    frames, end = decode_frames(raw, src / m.wal)  # whole frames only; damage raises
    total += _copy(None, out / m.wal, raw[:end])
    logs, damaged = intact_logs(src)  # the access and ELO logs (what importance learned from)
    if logs:
        (out / LOG_DIR).mkdir(exist_ok=True)
    for name, data in logs:
        total += _copy(None, out / LOG_DIR / name, data)
    write_manifest(out, m)  # last: the copy is a store only once every file is in place
    rows = sum(int(e.get("rows", 0)) for e in m.segments)
    return {"path": str(out), "files": copied + 2 + len(logs), "bytes": total, "committed_rows": rows,
            "wal_frames": len(frames), "logs": len(logs), "damaged_logs_left_out": damaged}


def _copy(handle: BinaryIO | None, path: Path, data: bytes | None) -> int:
    """Write a file atomically (temp, fsync, rename) from an open file or bytes; its size."""
    tmp = path.with_name(path.name + ".tmp")
    size = 0
    with open(tmp, "wb") as fh:
        if data is not None:
            fh.write(data)
            size = len(data)
        else:
            assert handle is not None
            while chunk := handle.read(CHUNK):
                fh.write(chunk)
                size += len(chunk)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return size

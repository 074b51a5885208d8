"""`backup`: a full-fidelity copy of a store folder, taken while a writer runs.

Every committed file (segments with every version, edges with their history, archives), the
whole frames of the WAL and the access and ELO logs (each checked against its CRC), all of one manifest (pinned: storage/pinning.py), copied into a new
folder that is itself a store: opening it is the restore. Each file's checksum is checked as it is
copied, so a backup never carries damage silently. Derived index files are not copied (the copy
rebuilds them on demand). The copy is the store as of the moment its WAL was read: writes
acknowledged after that are in the next backup.

A backup becomes a store only when it is complete: it is written into a temporary folder beside
the destination (`.<name>.engramdb-partial-<random>`), marker and manifest last, every file and
the folder fsynced, and then renamed to the destination in one step. A backup cut short (a kill,
a full disk) leaves the destination as it was, never a smaller store; the next backup to the same
destination removes the partial folder it finds (only one holding the note a backup writes first).

The copy is a store of its own: it gets a new store id (its marker records the ids it was copied
from, whose files it carries byte for byte), and its write-ahead log a header naming it, so a
log later copied over from the original is refused as another store's (storage/identity.py).
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from ..model.errors import StoreError
from . import disk
from .arrow_log import LOG_DIR, intact_logs
from .checksum import check
from .describe import seq_of
from .folder import MARKER, classify, folder_inode
from .identity import lineage, marker_id
from .manifest import write_manifest
from .pinning import pinned
from .segment import mapped
from .wal import HEADER_MAX, decode_frames, encode_header, read_header

CHUNK = 1 << 24
PARTIAL = ".engramdb-partial-"
PARTIAL_NOTE = "engramdb.backup-partial"


def backup(source: str | Path, dest: str | Path) -> dict[str, Any]:
    """Copy the store at `source` into `dest` (new or empty); returns what was copied."""
    src, out = Path(source), Path(dest)
    if classify(src) != "store":
        raise StoreError(f"no engramdb store at {src} to back up")
    a, b = src.resolve(), out.resolve()
    if a == b or a in b.parents or b in a.parents:
        raise StoreError(f"backup destination {out} is inside the store {src} (or holds it): give a folder "
                         "outside the store")
    if classify(out) != "new":
        raise StoreError(f"backup destination {out} is a store already: give a new or empty folder")
    if not out.parent.is_dir():
        raise StoreError(f"backup destination {out}: its parent folder {out.parent} does not exist")
    _remove_partials(out)
    tmp = out.parent / f".{out.name}{PARTIAL}{uuid.uuid4().hex[:8]}"
    disk.mkdir(tmp, exist_ok=False)
    try:
        report = _copy_store(src, tmp)
        disk.fsync_dir(tmp)
        disk.replace(tmp, out)  # a store from here on, whole
    except BaseException:
        _remove_partial(tmp)
        raise
    try:
        disk.fsync_dir(out.parent)
        disk.unlink(out / PARTIAL_NOTE)
    except OSError:
        pass  # the copy is whole and in place; the note is a stray file in it
    report["path"] = str(out)
    return report


def _copy_store(src: Path, out: Path) -> dict[str, Any]:
    disk.write_file(out / PARTIAL_NOTE, b"a backup in progress: this folder is removed if it is cut short\n")
    copied = total = 0
    with pinned(src) as (m, handles):
        for entry in m.segments + m.edges + m.archives:
            name = entry["file"]
            check(src / name, mapped(handles[name]), entry)  # never copy damage
            handles[name].seek(0)
            total += _copy(handles[name], out / name)
            copied += 1
        raw = handles[m.wal].read()
    frames, end = decode_frames(raw, src / m.wal)  # whole frames only; damage raises
    start = read_header(raw[:HEADER_MAX], src / m.wal)[1] if end else end
    logs, damaged = intact_logs(src)  # the access and ELO logs (what importance learned from)
    if logs:
        disk.mkdir(out / LOG_DIR)
    for name, data in logs:
        total += _write(out / LOG_DIR / name, data)
    # the copy's own identity: a new id, the source's (and its ancestors') as lineage
    new_id = uuid.uuid4().hex
    parents = sorted({i for i in (m.store_id, marker_id(src)) if i} | lineage(src) | set(m.copied_from))
    header = encode_header({"store": new_id, "seq": seq_of(m.wal), "generation": m.generation + 1,
                            "copied_from": parents})
    total += _write(out / m.wal, header + raw[start:end] if end else header)
    marker = {"engramdb": "store", "store_id": new_id, "created_at": datetime.now(timezone.utc).isoformat(),
              "copied_from": parents, "spaces": m.spaces, "home": folder_inode(out)}  # its inode stays with the rename
    _write(out / MARKER, json.dumps(marker, sort_keys=True).encode())
    m.store_id, m.wal_header, m.copied_from = new_id, 2, parents
    write_manifest(out, m)  # last: the copy is a store only once every file is in place
    rows = sum(int(e.get("rows", 0)) for e in m.segments)
    return {"files": copied + 2 + len(logs), "bytes": total, "committed_rows": rows,
            "wal_frames": len(frames), "logs": len(logs), "damaged_logs_left_out": damaged}


def _copy(handle: BinaryIO, path: Path) -> int:
    """Copy an open file into a new file, fsynced; its size."""
    fd = disk.open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    size = 0
    try:
        while chunk := handle.read(CHUNK):
            disk.write_at(fd, chunk, size, path)
            size += len(chunk)
        disk.fsync(fd, path)
    finally:
        disk.close(fd)
    return size


def _write(path: Path, data: bytes) -> int:
    disk.write_file(path, data, exclusive=True)
    return len(data)


def _remove_partials(out: Path) -> None:
    """Remove what earlier backups to `out` left when they were cut short: folders named
    `.<name>.engramdb-partial-*` that still hold the note such a backup writes first (or are
    empty: cut short before it)."""
    for p in out.parent.glob(f".{out.name}{PARTIAL}*"):
        if p.is_dir() and ((p / PARTIAL_NOTE).is_file() or not any(p.iterdir())):  # the note, or cut before it
            _remove_partial(p)


def _remove_partial(folder: Path) -> None:
    """Best effort: the files a backup wrote into its temporary folder, then the folder."""
    try:
        for dirpath, _, files in os.walk(folder, topdown=False):
            for f in files:
                disk.unlink(Path(dirpath) / f)
            disk.rmdir(dirpath)
    except OSError:
        pass  # left for the next backup to the same destination

"""Whole-folder operations by path: verify, backup, repair (no open store), and capture (a write
that never waits for another process's writer lock)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..ingest.intake import build_intake
from ..model.errors import StoreLocked
from ..model.memory import utc_now
from ..storage import spool
from ..storage.backup import backup as storage_backup
from ..storage.repair import repair as storage_repair
from ..storage.verify import verify as storage_verify
from .store import open as open_store


def verify(path: str | Path) -> dict[str, Any]:
    """Check every file of the store in folder `path` without opening it (no lock, nothing
    written): the manifest's checksum, each listed file's size, checksum and row count, the WAL's
    frames, the index files against their sidecars. Returns {"ok": bool, "files": {name: "ok" or
    what is wrong}}; `engramdb verify PATH` prints it."""
    return storage_verify(path)


def backup(path: str | Path, dest: str | Path) -> dict[str, Any]:
    """Copy the store in folder `path` into `dest` (new or empty), consistently while a writer
    (this process's or another's) goes on: every committed file, checksum-checked as it is
    copied, and the whole frames of the WAL. `dest` is a store: open it to restore. Returns
    {"path", "files", "bytes", "committed_rows", "wal_frames"}; `engramdb backup PATH DEST`."""
    return storage_backup(path, dest)


def repair(path: str | Path, *, accept_loss: bool = False, dry_run: bool = False) -> dict[str, Any]:
    """Rebuild the lost or damaged manifest of the store in folder `path` from its own files (each
    says what it is, where its rows go and what it replaces, with a checksum of its body).

    Nothing is deleted: a damaged manifest is kept as `manifest.json.damaged`; files a sound file
    replaces are left in place and listed as `superseded`. When rebuilding would lose data (a
    damaged file nothing replaces, files from before descriptions, two live WALs) it raises
    StoreError naming them and changes nothing, unless `accept_loss=True` (the damaged files
    are renamed `<name>.damaged`, a damaged WAL's intact frames kept). `dry_run=True` only
    reports. A store whose manifest reads is left alone (`needed` False). `open()` repairs by
    itself, with a RepairWarning, when nothing would be lost. `engramdb repair --path P`."""
    return storage_repair(path, accept_loss=accept_loss, dry_run=dry_run)


def capture(path: str | Path, records: Iterable[Mapping[str, Any]], **open_kwargs: Any) -> dict[str, Any]:
    """Store `records` (dicts as `add_many` takes) in the store at `path` without waiting for its
    writer's lock: stored now when the lock is free, else spooled for the next writer, which
    ingests them exactly once. Records are checked now (a bad one raises and nothing is kept).
    Returns {"ids": [...], "stored": n, "spooled": n}."""
    recs = [dict(r) for r in records]
    for r in recs:
        r.setdefault("id", uuid.uuid4().hex)
    build_intake(recs, utc_now(), 1 << 30)  # the writer's own checks, before anything is kept
    ids = [r["id"] for r in recs]
    try:
        db = open_store(path, **open_kwargs)
    except StoreLocked:
        spool.put(Path(path), recs)
        return {"ids": ids, "stored": 0, "spooled": len(recs)}
    try:
        db.add_many(recs)
    finally:
        db.close(checkpoint=False)  # the WAL is durable; the next long-lived writer folds it
    return {"ids": ids, "stored": len(recs), "spooled": 0}

"""Whole-folder operations by path: verify, backup, repair (no open store), and capture (a write
that never waits for another process's writer lock)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..ingest.intake import build_intake
from ..model import checks
from ..model.errors import InvalidMemory, StoreError, StoreLocked
from ..model.memory import utc_now
from ..model.tuning import Tuning
from ..storage import spool
from ..storage.backup import backup as storage_backup
from ..storage.folder import classify
from ..storage.repair import repair as storage_repair
from ..storage.verify import verify as storage_verify
from .facade import open as open_store


def verify(path: str | Path) -> dict[str, Any]:
    """Check every file of the store in folder `path` without opening it (no lock, nothing
    written): the manifest's checksum, each listed file's size, checksum and row count, the WAL's
    frames, the index files against their sidecars. Returns {"ok": bool, "files": {name: "ok" or
    what is wrong}}; `engramdb verify --path PATH` prints it."""
    checks.path("path", path)
    return storage_verify(path)


def backup(path: str | Path, dest: str | Path) -> dict[str, Any]:
    """Copy the store in folder `path` into `dest` (new or empty), consistently while a writer
    (this process's or another's) goes on: every committed file, checksum-checked as it is
    copied, and the whole frames of the WAL. `dest` is a store: open it to restore. Returns
    {"path", "files", "bytes", "committed_rows", "wal_frames"}; `engramdb backup --path PATH DEST`."""
    checks.path("path", path)
    checks.path("dest", dest)
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
    checks.path("path", path)
    return storage_repair(path, accept_loss=accept_loss, dry_run=dry_run)


def capture(path: str | Path, records: Iterable[Mapping[str, Any]], **open_kwargs: Any) -> dict[str, Any]:
    """Store `records` (dicts as `add_many` takes) in the store at `path` without waiting for its
    writer's lock: stored now when the lock is free, else spooled for the next writer, which
    ingests them exactly once. Returns {"ids": [...], "stored": n, "spooled": n}.

    A capture is acknowledged only when the writer will keep it: records are checked now with the
    writer's own rules (add_many's checks, content within `Tuning.max_content_bytes`), and, when the
    lock is held elsewhere, each id against the store as committed (read-only) and the records
    already waiting in the spool. An id held by another record raises StoreError; a bad record
    raises InvalidMemory naming it and the field; either way nothing is kept. The same record
    captured again (a hook's rescue of a late capture) is acknowledged as the copy already there
    and kept once."""
    checks.path("path", path)
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
        raise TypeError(f"records must be a list of dicts (one per memory), got {type(records).__name__} {records!r:.80}")
    recs = []
    for i, r in enumerate(records):  # any iterable: each checked as it comes
        if not isinstance(r, Mapping):
            raise TypeError(f"records[{i}] must be a dict (one memory), got {type(r).__name__} {r!r:.80}")
        recs.append(dict(r))
    given = any("id" in r for r in recs)  # ids made here are new: nothing to check them against
    for r in recs:
        r.setdefault("id", uuid.uuid4().hex)
    tuning = open_kwargs.get("tuning")
    limit = tuning.max_content_bytes if isinstance(tuning, Tuning) else Tuning().max_content_bytes
    build_intake(recs, utc_now(), limit)  # the writer's own checks, before anything is kept
    ids = [r["id"] for r in recs]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise StoreError(f"id {twice!r} is given to two records of one capture")
    try:
        db = open_store(path, **open_kwargs)
    except StoreLocked:
        return _spool(Path(path), recs, ids, given)
    try:
        fresh = _not_stored(db.get, recs, path) if given else recs  # the same record again: the copy already there
        if fresh:
            db.add_many(fresh)
    finally:
        db.close(checkpoint=False)  # the WAL is durable; the next long-lived writer folds it
    return {"ids": ids, "stored": len(recs), "spooled": 0}


def _not_stored(get: Any, recs: list[dict[str, Any]], path: str | Path) -> list[dict[str, Any]]:
    """The records not stored yet; one stored as it is now (an earlier capture of it) is left out,
    one whose id another record holds raises StoreError."""
    out = []
    for i, r in enumerate(recs):
        m = get(r["id"], include_forgotten=True)
        if m is None:
            out.append(r)
        elif (m.content, m.namespace) != (r.get("content"), r.get("namespace")):
            raise StoreError(f"records[{i}]: id {r['id']!r} already exists in {path}; use update() to change it")
    return out


def _spool(path: Path, recs: list[dict[str, Any]], ids: list[str], given: bool) -> dict[str, Any]:
    """Spool what the writer will take in: ids the caller gave checked against the committed store
    (read-only; none while the store is still being made) and the spool's waiting records; a
    record already there as it is now is not spooled again."""
    if any(r.get("vectors") for r in recs):
        raise InvalidMemory("a capture that must wait for the writer cannot carry vectors (the spool holds "
                            "text; the writer embeds it): capture the records without them")
    if not given:  # ids made by this call: new, so nothing to compare; the spool is the one path
        spool.put(path, recs)
        return {"ids": ids, "stored": 0, "spooled": len(recs)}
    with spool.exclusive(path):  # two captures of one id cannot both pass the check below
        return _spool_checked(path, recs, ids)


def _spool_checked(path: Path, recs: list[dict[str, Any]], ids: list[str]) -> dict[str, Any]:
    waiting = spool.waiting(path)
    stored: dict[str, Any] = {}
    if classify(path) == "store":  # the store as committed, untouched; no embedders: nothing is embedded
        with open_store(path, read_only=True, access_log=False, embedders={}) as reader:
            versions = {i: reader.history(i) for i in ids}
        stored = {i: v[-1] for i, v in versions.items() if v}
    fresh, stored_n, spooled_n = [], 0, 0
    for i, r in enumerate(recs):
        mid = r["id"]
        if mid in stored:
            m = stored[mid]
            if (m.content, m.namespace) != (r.get("content"), r.get("namespace")):
                raise StoreError(f"records[{i}]: id {mid!r} already exists in {path}; use update() to change it")
            stored_n += 1  # this very record, stored by an earlier capture
        elif mid in waiting:
            if waiting[mid] != spool.jsonable(r):
                raise StoreError(f"records[{i}]: id {mid!r} is already waiting in {path / spool.FOLDER} for "
                                 "another record")
            spooled_n += 1  # this very record, spooled by an earlier capture
        else:
            fresh.append(r)
    if fresh:
        spool.put(path, fresh)
    return {"ids": ids, "stored": stored_n, "spooled": spooled_n + len(fresh)}

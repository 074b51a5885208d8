"""What a folder is before a store opens it, and the marker that says a folder is a store.

A store folder holds `engramdb.store` (written when the store is made: a small JSON naming the
format and the store's id) and `manifest.json` (the committed state). `open()` only ever makes a
store in a folder that does not exist or is empty, and only ever treats as a store a folder that
has the marker or a manifest (stores made before the marker get it at their next writable open).
Any other folder is refused, untouched: a store never deletes, rewrites or reads as its own a
file it did not create. A folder with the marker but no readable manifest is a store whose
manifest was lost: never taken for a new, empty store, it is repaired from its own files or
refused (storage/repair.py).
"""

from __future__ import annotations

import json
import os
import re
import stat
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from ..model.errors import StoreError
from . import disk, lock

MARKER = "engramdb.store"
MANIFEST = "manifest.json"
FolderKind = Literal["new", "store", "lost"]


def classify(folder: Path) -> FolderKind:
    """"new" (absent, empty, or being made: see `_being_made`), "store" (a manifest), "lost" (the
    marker without a manifest); any other folder raises StoreError naming it."""
    if not folder.exists():
        return "new"
    if not folder.is_dir():
        raise StoreError(f"{folder} is a file, not a store folder: give a folder (new or a store's)")
    names = {p.name for p in folder.iterdir()}
    if MANIFEST in names:
        return "store"
    if MARKER in names:
        return "new" if _being_made(folder, names - {MARKER}) and _marker_without_spaces(folder) else "lost"
    if not names or _being_made(folder, names):
        return "new"
    shown = sorted(names)[:5]
    raise StoreError(f"{folder} is not an engramdb store (no {MANIFEST}, no {MARKER}) and is not empty "
                     f"({len(names)} entries, e.g. {shown}): refusing to use it, nothing was changed; "
                     "give an empty or new folder")


def writer_active(folder: Path) -> bool:
    """True when a writer holds the store in `folder` now, asked without taking its lock for long
    and without writing (storage/lock.py): what a process that only spools asks before it opens
    the store to take the spool in."""
    return lock.writer_active(folder)


def fingerprint(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """The name, size and modification time of each entry of `folder`: it changes whenever a writer
    acknowledges a write (the WAL grows, a manifest or segment is written, the spool takes a
    capture), which is what a long-lived reader asks before it decides to reopen (agents/resident.py).
    Empty when the folder cannot be listed."""
    out: list[tuple[str, int, int]] = []
    try:
        with os.scandir(folder) as entries:
            for e in entries:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                out.append((e.name, st.st_size, st.st_mtime_ns))
    except OSError:
        return ()
    return tuple(sorted(out))


def row_epoch(folder: Path) -> int | None:
    """The row epoch `folder`'s manifest says now (0 for a folder without one; a purge raises it):
    a long-lived reader whose snapshot is of an older epoch holds rows a purge removed. None when
    the manifest cannot be read at this instant (the reopen that follows says why)."""
    # here, not at the top: a capture hook's light path imports this module, and the manifest's
    # reader brings pyarrow and numpy with it (the hook's import floor)
    from .manifest import read_manifest

    try:
        m = read_manifest(folder)
    except Exception:  # noqa: BLE001 - unreadable now, whatever the cause: the caller reopens and learns why
        return None
    return m.row_epoch if m is not None else 0


_SPOOLED = re.compile(r"^\d{20}-\d+-[0-9a-f]{8}\.(json|access|taking)(\.tmp)?$")  # storage/spool.py's names


def _being_made(folder: Path, names: set[str]) -> bool:
    """True for a folder holding only what a store's first moments leave: the `LOCK` its first
    writer has just taken and the marker it is writing (under its temporary name), and captures
    spooled while it was being made (a hook's, beside that writer) under the spool's own names. Such a folder is a new store, not
    someone else's folder."""
    if not names <= {"LOCK", "spool", MARKER + ".tmp"} or ("LOCK" in names and not (folder / "LOCK").is_file()):
        return False
    spooled = folder / "spool"
    if "spool" not in names:
        return True
    return spooled.is_dir() and not spooled.is_symlink() and all(
        _SPOOLED.match(p.name) and _spooled_file(p) for p in spooled.iterdir())


def _spooled_file(path: Path) -> bool:
    """A regular file (not a link), or one gone since the folder was listed: a writer took a spooled
    capture in meanwhile (one look, so it cannot vanish between two)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return True


def _marker_without_spaces(folder: Path) -> bool:
    """True for a marker a store's first open wrote and had not yet given the spaces (its next
    step): beside nothing but what `_being_made` allows, it is a store whose making a crash cut
    short, holding nothing (no manifest, log or file was made yet), so it is made again, keeping
    its id. A marker that cannot be read is not this one."""
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("engramdb") == "store" and "spaces" not in marker


def write_marker(folder: Path, store_id: str | None = None, copied_from: list[str] | None = None) -> str:
    """Mark a folder as a store (atomically; kept as it is when present); returns its store id.
    `store_id`, `copied_from`: the id a store already has and the stores it was copied from (its
    manifest's), for a marker made again after it was lost."""
    path = folder / MARKER
    if path.exists():
        try:
            sid = json.loads(path.read_text()).get("store_id")
            if isinstance(sid, str) and sid:
                return sid
        except (OSError, ValueError, AttributeError):
            pass
        return store_id or ""
    sid = store_id or uuid.uuid4().hex
    marker = {"engramdb": "store", "store_id": sid, "created_at": datetime.now(timezone.utc).isoformat(),
              "home": folder_inode(folder)}
    if copied_from:
        marker["copied_from"] = list(copied_from)
    body = json.dumps(marker)
    disk.write_atomically(path, body.encode())
    return sid


def folder_inode(folder: Path) -> int:
    """The folder's inode number: a store copied to another folder (`cp -r`, a restore) finds
    another one there, and knows it is a copy (storage/identity.py)."""
    return os.stat(folder).st_ino


def update_marker(folder: Path, **fields: object) -> None:
    """Set fields of the marker (atomically), keeping the others."""
    path = folder / MARKER
    try:
        marker = json.loads(path.read_text())
    except (OSError, ValueError):
        marker = {"engramdb": "store", "created_at": datetime.now(timezone.utc).isoformat()}
    if not isinstance(marker, dict):
        marker = {"engramdb": "store"}
    marker.update(fields)
    disk.write_atomically(path, json.dumps(marker, sort_keys=True).encode())


def marker_home(folder: Path) -> int | None:
    """The inode the marker says the store was made (or last re-homed) in; None when it does not say."""
    try:
        home = json.loads((folder / MARKER).read_text()).get("home")
    except (OSError, ValueError, AttributeError):
        return None
    return home if isinstance(home, int) else None


def mark_spaces(folder: Path, spaces: dict[str, object]) -> None:
    """Record the store's spaces in its marker (once), so a repair knows them even before any
    segment file exists."""
    path = folder / MARKER
    try:
        marker = json.loads(path.read_text())
    except (OSError, ValueError):
        return  # a marker this version cannot read is left as it is
    if not isinstance(marker, dict) or marker.get("spaces") == spaces:
        return
    marker["spaces"] = spaces
    disk.write_atomically(path, json.dumps(marker, sort_keys=True).encode())

"""`verify`: check every file of a store folder without opening it as a store (nothing is
written, no lock is taken): the manifest's own checksum, each listed file's size and checksum,
that each parses, the WAL's header and frames, and, when no writer holds the store, that the
manifest agrees with the files beside it (none missing, no other store's log, none newer than
the manifest: storage/identity.py). The derived index files are checked against their sidecars
and reported apart: one that does not match is rebuilt, so it never makes a store not ok.

The listed files are pinned as a reader's open pins them (storage/pinning.py): a writer committing
while `verify` runs never makes a file it unlisted look missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..model.errors import CorruptFile, FormatError, StoreError
from .checksum import parsed
from .derived_files import intact
from .folder import MANIFEST, classify
from .identity import refusal, wal_problem
from .journal import Journal
from .lock import writer_active
from .manifest import Manifest, parse_manifest, read_manifest
from .pinning import manifest_bytes, pinned
from .segment import mapped
from .wal import WalError, decode_frames, listed_header


def verify(folder: str | Path) -> dict[str, Any]:
    """A report: `ok` (every file of the store's data intact), per file "ok" or what is wrong with
    it; `folder`: whether the manifest agrees with the files beside it ("not checked" beside a
    writer); `derived`: the index files' state (rebuilt when next needed; never a reason not ok)."""
    path = Path(folder)
    files: dict[str, str] = {}
    report: dict[str, Any] = {"path": str(path), "ok": False, "files": files}
    try:
        if classify(path) != "store":
            raise StoreError(f"{path} holds no {MANIFEST}")
        m = read_manifest(path)
    except (StoreError, FormatError) as exc:
        files[MANIFEST] = str(exc)
        return report
    assert m is not None
    files[MANIFEST] = "ok"
    try:
        with pinned(path) as (m, handles):
            for entry in m.segments + m.edges + m.archives:
                files[entry["file"]] = _arrow_state(path, entry, lambda n: mapped(handles[n]))
            raw = handles[m.wal].read()
        files[m.wal] = _wal_state(path, m, raw)
    except StoreError:  # a listed file is missing: each file is looked at as it is
        for entry in m.segments + m.edges + m.archives:
            files[entry["file"]] = _arrow_state(path, entry, lambda n: _bytes(path / n))
        try:
            files[m.wal] = _wal_state(path, m, (path / m.wal).read_bytes())
        except FileNotFoundError:
            files[m.wal] = "missing"
        except OSError as exc:
            files[m.wal] = f"unreadable ({exc})"
    # derived index files are reported, not judged: one that does not match is rebuilt by the next
    # search that needs it (a crash between a data file and its sidecar leaves exactly that)
    derived: dict[str, str] = {}
    report["derived"] = derived
    for side in sorted((path / "index").glob("*.json")) if (path / "index").is_dir() else []:
        derived[f"index/{side.name}"] = _derived(side)
    report["folder"] = _agreement(path)
    report["ok"] = all(v == "ok" or v.startswith("ok ") for v in files.values()) and \
        report["folder"] in ("ok", BUSY)
    return report


BUSY = "not checked: a writer holds the store"


def _agreement(path: Path) -> str:
    """Whether the manifest agrees with the files beside it ("ok" or why not), judged only while
    no writer holds the store and the manifest stays the same throughout (a writer that starts
    meanwhile makes files the manifest does not list yet: that is not disagreement)."""
    if writer_active(path):
        return BUSY
    before = manifest_bytes(path)
    try:
        why = refusal(path, parse_manifest(before, path / MANIFEST), Journal(path))
    except (StoreError, FormatError) as exc:
        why = str(exc)
    if why is not None and (writer_active(path) or manifest_bytes(path) != before):
        return BUSY
    return why or "ok"


def _bytes(path: Path) -> Any:
    with open(path, "rb") as handle:
        return mapped(handle)


def _arrow_state(path: Path, entry: dict[str, Any], data: Any) -> str:
    name = entry["file"]
    try:
        table = parsed(path / name, data(name), entry)
    except FileNotFoundError:
        return "missing"
    except IsADirectoryError:
        return "a folder, not a file"
    except CorruptFile as exc:
        return str(exc)
    except OSError as exc:
        return f"unreadable ({exc})"
    rows = entry.get("rows", table.num_rows)
    return "ok" if table.num_rows == rows else f"{table.num_rows} rows where the manifest recorded {rows}"


def _wal_state(path: Path, m: Manifest, raw: bytes) -> str:
    try:
        why = wal_problem(m.wal, listed_header(raw, path / m.wal), m)
        if why is not None:
            return why
        frames, _ = decode_frames(raw, path / m.wal)
    except (CorruptFile, WalError) as exc:
        return str(exc)
    return f"ok ({len(frames)} frames)"


def _derived(side: Path) -> str:
    """A derived index file's state: its data files against the sizes and checksums its sidecar
    recorded (a damaged one is rebuilt at the next search, never read)."""
    try:
        meta = json.loads(side.read_text())
    except (OSError, ValueError) as exc:
        return f"unreadable sidecar ({exc}): rebuilt when next needed"
    entries = list(meta.get("graphs", {}).values()) if "graphs" in meta else \
        [{"file": side.with_suffix(".arrow").name, **meta}]
    for e in entries:
        data = side.parent / e.get("file", "")
        try:
            raw = data.read_bytes()
        except OSError:
            return f"{data.name} missing: rebuilt when next needed"
        if not intact(raw, e):
            return f"{data.name} damaged: rebuilt when next needed"
    return "ok"

"""`verify`: check every file of a store folder without opening it as a store (nothing is
written, no lock is taken): the manifest's own checksum, each listed file's size and checksum,
that each parses, the WAL's frames, and the derived index files against their sidecars."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..model.errors import CorruptFile, FormatError, StoreError
from .derived_files import intact
from .folder import MANIFEST, classify
from .manifest import read_manifest
from .segment import read_arrow
from .wal import WalError, read_frames


def verify(folder: str | Path) -> dict[str, Any]:
    """A report: `ok` (every file intact), and per file "ok" or what is wrong with it."""
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
    for entry in m.segments + m.edges + m.archives:
        name = entry["file"]
        try:
            table = read_arrow(path / name, entry)
            files[name] = "ok" if table.num_rows == entry.get("rows", table.num_rows) else \
                f"{table.num_rows} rows where the manifest recorded {entry.get('rows')}"
        except FileNotFoundError:
            files[name] = "missing"
        except CorruptFile as exc:
            files[name] = str(exc)
    try:
        frames, _ = read_frames(path / m.wal)
        files[m.wal] = f"ok ({len(frames)} frames)"
    except FileNotFoundError:
        files[m.wal] = "missing"
    except (CorruptFile, WalError) as exc:
        files[m.wal] = str(exc)
    for side in sorted((path / "index").glob("*.json")) if (path / "index").is_dir() else []:
        files[f"index/{side.name}"] = _derived(side)
    report["ok"] = all(v == "ok" or v.startswith("ok ") for v in files.values())
    return report


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


"""Derived index files (S6): what makes one trustworthy, shared by the tree and HNSW indexes.

An index file is derived data: it is written next to a JSON sidecar naming its format, the store's
row epoch (bumped when rows are renumbered), how many committed rows it covers, and each data
file's size and CRC-32. A reader adopts it only when all of these agree; otherwise it says why
("missing", "stale", "corrupt", ...) and the index is rebuilt from the segments.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any


def fingerprint(raw: bytes) -> dict[str, int]:
    """Size and CRC-32 of a data file's bytes, as the sidecar records them."""
    return {"bytes": len(raw), "crc32": zlib.crc32(raw)}


def intact(raw: bytes, entry: dict[str, Any]) -> bool:
    """True when bytes match the size and CRC-32 a sidecar entry recorded for them."""
    return len(raw) == entry.get("bytes") and zlib.crc32(raw) == entry.get("crc32")


def stale_reason(meta: dict[str, Any], fmt: int, epoch: int, committed: int) -> str | None:
    """Why a sidecar does not describe an index this store can use, or None when it does."""
    if meta.get("format") != fmt:
        return f"format {meta.get('format')!r}"
    if meta.get("epoch") != epoch or meta.get("covered", 0) > committed:
        return "stale (the segments were rewritten since)"
    return None


def write_sidecar(path: Path, meta: dict[str, Any]) -> None:
    """Replace a sidecar atomically (its data files are written before it)."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta))
    os.replace(tmp, path)


def read_checked(data: Path, side: Path, fmt: int, epoch: int, committed: int,
                 expect: dict[str, Any] | None = None) -> tuple[bytes, dict[str, Any]] | str:
    """The bytes and sidecar of one derived data file when they are whole and current, else the
    reason they cannot be used ("missing", "stale ...", "corrupt ...", "unreadable ...").
    `expect`: sidecar entries that must hold these values (e.g. the parameters it was built with)."""
    try:
        meta = json.loads(side.read_text())
        raw = data.read_bytes()
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError) as exc:
        return f"unreadable ({exc})"
    if not isinstance(meta, dict):
        return "unreadable (the sidecar is not a JSON object)"
    reason = stale_reason(meta, fmt, epoch, committed)
    if reason is None:
        for key, want in (expect or {}).items():
            if meta.get(key) != want:
                reason = f"built with {key}={meta.get(key)!r}, not {want!r}"
                break
    if reason is None and not intact(raw, meta):
        reason = "corrupt (size or CRC-32 mismatch)"
    return reason if reason is not None else (raw, meta)

"""The manifest (S6): which files make up the store, and the format they were written in.

`manifest.json` is the store's root of truth: segments listed there are the committed data; a
segment file not listed is debris from a crash and is ignored. It is only ever replaced whole,
atomically (write a temp file, fsync, rename over, fsync the folder), so a reader sees the old
manifest or the new one, never a mix.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import xxhash

from ..model.errors import CorruptFile, FormatError, NewerFormat
from . import disk
from .columns import FORMAT_VERSION

__all__ = ["MANIFEST", "FormatError", "Manifest", "parse_manifest", "read_manifest", "write_manifest"]

MANIFEST = "manifest.json"


@dataclass
class Manifest:
    """The committed state of a store folder."""

    format_version: int = FORMAT_VERSION
    segments: list[dict[str, Any]] = field(default_factory=list)  # {"file", "rows"}
    edges: list[dict[str, Any]] = field(default_factory=list)  # edge files {"file", "rows"} (format 2+)
    archives: list[dict[str, Any]] = field(default_factory=list)  # archived content {"file", "rows"} (J7)
    next_segment: int = 1
    spaces: dict[str, Any] = field(default_factory=dict)
    created_by: str = ""
    wal: str = "wal-000001.log"  # the live write-ahead log; a checkpoint moves to a fresh one
    row_epoch: int = 0  # bumped when rows are renumbered (purge): derived indexes keyed by row go stale
    store_id: str = ""  # whose store this is (the marker's id; "" before format 6)
    generation: int = 0  # bumped by every manifest written: files and logs name the one they were made for
    wal_header: int = 1  # 2: the live log was made with a header naming the store (a bare one is not it)
    copied_from: list[str] = field(default_factory=list)  # the stores this one was copied from (backups)

    def to_json(self) -> str:
        """The manifest as JSON, with the checksum of everything else in it."""
        body = asdict(self)
        body["checksum"] = _checksum(body)
        return json.dumps(body, indent=2, sort_keys=True)


def _checksum(body: dict[str, Any]) -> str:
    """XXH3-64 of the manifest's canonical JSON without its checksum field."""
    canonical = json.dumps({k: v for k, v in body.items() if k != "checksum"}, sort_keys=True, separators=(",", ":"))
    return xxhash.xxh3_64_hexdigest(canonical.encode("utf-8"))


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest of `folder`, or None for a folder without one (a new store)."""
    path = folder / MANIFEST
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FormatError(f"{path} is unreadable ({exc}); the store cannot be opened") from None
    return parse_manifest(data, path)


def parse_manifest(data: bytes, path: Path) -> Manifest:
    """The manifest in `data` (the bytes of `path`); FormatError says what is wrong with it."""
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise FormatError(f"{path} is unreadable or not JSON ({exc}); the store cannot be opened") from None
    if not isinstance(raw, dict) or "format_version" not in raw:
        raise FormatError(f"{path} has no format_version: not an engramdb manifest")
    if "checksum" in raw and raw["checksum"] != _checksum(raw):
        raise CorruptFile(path, "its checksum does not match its content")
    for key in ("segments", "edges", "archives"):
        entries = raw.get(key, [])
        if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("file"), str)
                                                     and "/" not in e["file"] for e in entries):
            raise CorruptFile(path, f"its {key} list is malformed")
    version = raw["format_version"]
    if not isinstance(version, int) or version < 1:
        raise FormatError(f"{path}: format_version {version!r} is not a positive integer")
    if version > FORMAT_VERSION:
        raise NewerFormat(
            f"{path}: written by a newer engramdb (format_version {version}); this version reads "
            f"format_version <= {FORMAT_VERSION}: upgrade engramdb to open it"
        )
    known = {f for f in Manifest.__dataclass_fields__}
    return Manifest(**{k: v for k, v in raw.items() if k in known})


PREVIOUS = "manifest.prev.json"


def _keep_previous(folder: Path) -> None:
    """Keep the generation about to be replaced as manifest.prev.json (a hard link: no copy), for
    a repair of a store whose files were written before they described themselves."""
    prev = folder / PREVIOUS
    try:
        disk.unlink(prev)
        disk.link(folder / MANIFEST, prev)
    except FileNotFoundError:
        pass  # a new store: no previous generation
    except OSError as exc:  # a file system without hard links (or a failing disk): the store works without it
        logging.getLogger("engramdb.storage").debug("no %s kept: %s", prev, exc)


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Atomically replace `folder/manifest.json` with `manifest`, one generation on (the commit
    point: once the rename is done, the new manifest is the store, and a failure after it, say
    the folder's fsync, is logged, not raised, because nothing can undo the commit)."""
    manifest.generation += 1
    data = manifest.to_json().encode()
    try:
        disk.write_file(folder / (MANIFEST + ".tmp"), data)
        _keep_previous(folder)
        disk.replace(folder / (MANIFEST + ".tmp"), folder / MANIFEST)  # committed from here on
    except BaseException:
        manifest.generation -= 1
        raise
    try:
        disk.fsync_dir(folder)  # the rename's durability; a failure here cannot undo the commit
    except OSError as exc:
        logging.getLogger("engramdb.storage").warning("fsync of %s after a manifest swap failed: %s", folder, exc)

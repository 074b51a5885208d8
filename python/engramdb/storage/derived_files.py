"""Derived files (S6): the `index/` folder, where rebuildable indexes are saved beside the data.

A derived file is written atomically next to a JSON sidecar naming its format, the store's row
epoch (bumped when rows are renumbered), how many committed rows it covers, and each data file's
size and CRC-32. A reader adopts it only when all of these agree; otherwise it says why
("missing", "stale", "corrupt", ...) and the index is rebuilt from the segments. Storage owns the
folder: the index layer hands it bytes and gets bytes back.
"""

from __future__ import annotations

import json
import os
import threading
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import disk

INDEX_DIR = "index"
DERIVED_PREFIXES = ("tree-", "hnsw-", "bm25-", "passages-")  # what the index layer names its files


def fingerprint(raw: bytes | bytearray) -> dict[str, int]:
    """Size and CRC-32 of a data file's bytes, as the sidecar records them."""
    return {"bytes": len(raw), "crc32": zlib.crc32(raw)}


def intact(raw: bytes, entry: dict[str, Any]) -> bool:
    """True when bytes match the size and CRC-32 a sidecar entry recorded for them."""
    return len(raw) == entry.get("bytes") and zlib.crc32(raw) == entry.get("crc32")


def stale_reason(meta: dict[str, Any], fmt: int, epoch: int, committed: int) -> str | None:
    """Why a sidecar does not describe an index this store can use, or None when it does."""
    if meta.get("format") != fmt:
        return f"format {meta.get('format')!r}"
    for key in ("epoch", "covered"):  # another tool's or a hand's edit: rebuilt, never a TypeError
        value = meta.get(key, 0)
        if type(value) is not int or value < 0:
            return f"unreadable ({key} is {value!r:.40}, not a count)"
    if meta.get("epoch") != epoch or meta.get("covered", 0) > committed:
        return "stale (the segments were rewritten since)"
    return None


# one writer process, but many threads in it (a service's context() calls): the fixed temporary
# name (a crash leaves at most one per file, reused next time) is taken by one thread at a time
_TEMP_NAMES = threading.Lock()


def _new_lock_in_child() -> None:
    """In a forked child: a thread writing a derived file at the fork (the writer's worker) held
    it, and is not in the child: the child's own store's first derived write would wait for ever."""
    global _TEMP_NAMES
    _TEMP_NAMES = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


def write_atomically(path: Path, raw: bytes | bytearray) -> None:
    """Write a file whole or not at all: a temporary file beside it, fsynced, renamed over it."""
    with _TEMP_NAMES:
        disk.write_atomically(path, raw)


def table_bytes(table: pa.Table) -> bytes:
    """An Arrow table as the bytes of an IPC file (one record batch)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        for b in table.combine_chunks().to_batches():
            writer.write_batch(b)
    return sink.getvalue().to_pybytes()  # type: ignore[no-any-return]


def bytes_table(raw: bytes) -> pa.Table:
    """The Arrow table of an IPC file's bytes."""
    return pa.ipc.open_file(pa.py_buffer(raw)).read_all()


class DerivedFiles:
    """The `index/` folder of one store (or nothing, for a store kept in memory)."""

    def __init__(self, folder: Path | None, *, writable: bool) -> None:
        self.dir = folder / INDEX_DIR if folder is not None else None
        self.writable = writable and folder is not None

    def write(self, name: str, raw: bytes | bytearray) -> dict[str, int]:
        """Write one data file atomically (temp file, fsync, rename); returns its fingerprint."""
        assert self.dir is not None and self.writable
        disk.mkdir(self.dir)
        write_atomically(self.dir / name, raw)
        return fingerprint(raw)

    def write_sidecar(self, name: str, meta: dict[str, Any]) -> None:
        """Replace a sidecar atomically (its data files are written before it)."""
        assert self.dir is not None and self.writable
        disk.mkdir(self.dir)
        write_atomically(self.dir / name, json.dumps(meta).encode())

    def read_sidecar(self, name: str) -> dict[str, Any] | str:
        """A sidecar's content, or why it cannot be read ("missing", "unreadable ...")."""
        if self.dir is None:
            return "missing"
        try:
            meta = json.loads((self.dir / name).read_text())
        except FileNotFoundError:
            return "missing"
        except (OSError, ValueError) as exc:
            return f"unreadable ({exc})"
        except RecursionError:  # brackets nested past the parser's depth: no sidecar of ours
            return "unreadable (nested too deeply)"
        if not isinstance(meta, dict):
            return "unreadable (the sidecar is not a JSON object)"
        return meta

    def size(self, name: str) -> int | None:
        """A data file's size in bytes, or None when it is not there (a cheap check against its
        sidecar's, without reading it)."""
        if self.dir is None:
            return None
        try:
            return (self.dir / name).stat().st_size
        except OSError:
            return None

    def exists(self, name: str) -> bool:
        """Whether the folder holds a file of this name (a purge rewrites a derived file it cannot
        read, rather than leave what it may hold)."""
        return self.dir is not None and (self.dir / name).is_file()

    def read(self, name: str, entry: dict[str, Any]) -> bytes | str:
        """A data file's bytes when they match the sidecar `entry`, else why not."""
        if self.dir is None:
            return "missing"
        try:
            raw = (self.dir / name).read_bytes()
        except FileNotFoundError:
            return "missing"
        except OSError as exc:
            return f"unreadable ({exc})"
        if not intact(raw, entry):
            return f"corrupt ({name}: size or CRC-32 mismatch)"
        return raw

    def sidecar_checked(self, side: str, fmt: int, epoch: int, committed: int,
                        expect: dict[str, Any] | None = None) -> dict[str, Any] | str:
        """A sidecar when it describes a current index (see `read_checked`), else why not; its
        data file is not read."""
        meta = self.read_sidecar(side)
        if isinstance(meta, str):
            return meta
        reason = stale_reason(meta, fmt, epoch, committed)
        if reason is None:
            for key, want in (expect or {}).items():
                if meta.get(key) != want:
                    reason = f"built with {key}={meta.get(key)!r}, not {want!r}"
                    break
        return meta if reason is None else reason

    def read_checked(self, data: str, side: str, fmt: int, epoch: int, committed: int,
                     expect: dict[str, Any] | None = None) -> tuple[bytes, dict[str, Any]] | str:
        """The bytes and sidecar of one data file when they are whole and current, else the reason
        they cannot be used. `expect`: sidecar entries that must hold these values (e.g. the
        parameters the index was built with)."""
        meta = self.sidecar_checked(side, fmt, epoch, committed, expect)
        if isinstance(meta, str):
            return meta
        raw = self.read(data, meta)
        if isinstance(raw, str):
            return "corrupt (size or CRC-32 mismatch)" if raw.startswith("corrupt") else raw
        return raw, meta

    def clear(self, prefixes: tuple[str, ...] = DERIVED_PREFIXES) -> None:
        """Delete every derived file (they describe rows that are about to change), or those of
        the index kinds named by `prefixes` (some of DERIVED_PREFIXES)."""
        if self.dir is None or not self.dir.is_dir():
            return
        wanted = tuple(p for p in prefixes if p in DERIVED_PREFIXES)
        for f in self.dir.iterdir():
            # only files of the names indexes write: nothing else in the folder is ours to delete
            if f.is_file() and wanted and f.name.startswith(wanted):
                disk.unlink(f)

"""Pinning the files of one manifest while a writer may commit: what a reader's open and a
backup read.

The writer replaces the manifest atomically and deletes the files a commit unlisted (a
checkpoint's old WAL, a compaction's old segments). A reader opens every file its manifest names,
then reads the manifest again: unchanged, the open files are exactly that manifest's and stay
readable however the writer moves on (an unlinked file lives while it is open); changed, or a
file already gone, it starts over. The window is a few file opens, not the whole read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..model.errors import StoreError
from .folder import MANIFEST
from .manifest import Manifest, parse_manifest

ATTEMPTS = 50  # a reader starts over at most this often while a writer commits


def manifest_bytes(folder: Path) -> bytes:
    """The manifest's bytes, or b"" when it is gone."""
    try:
        return (folder / MANIFEST).read_bytes()
    except FileNotFoundError:
        return b""


@contextmanager
def pinned(folder: Path) -> Iterator[tuple[Manifest, dict[str, BinaryIO]]]:
    """(a manifest, its files and WAL opened), consistent with each other; closed on exit."""
    for _ in range(ATTEMPTS):
        before = manifest_bytes(folder)
        if not before:
            raise StoreError(f"no engramdb store at {folder} (its {MANIFEST} is gone)")
        m = parse_manifest(before, folder / MANIFEST)
        names = [e["file"] for e in m.segments + m.edges + m.archives] + [m.wal]
        handles: dict[str, BinaryIO] = {}
        try:
            try:
                for name in names:
                    handles[name] = open(folder / name, "rb")  # noqa: SIM115 - closed below
            except FileNotFoundError:
                if manifest_bytes(folder) == before:  # not a commit that moved on: the file is gone
                    raise StoreError(f"{folder}: the manifest lists {name}, which is missing; nothing was read. "
                                     f"Run `engramdb repair --path {folder}` to see what the store's files hold"
                                     ) from None
                continue  # a commit unlisted it since the manifest was read
            except IsADirectoryError:
                raise StoreError(f"{folder}: the manifest lists {name}, which is a folder, not a file") from None
            if manifest_bytes(folder) != before:
                continue
            yield m, handles
            return
        finally:
            for h in handles.values():
                h.close()
    raise StoreError(f"{folder}: the writer committed {ATTEMPTS} times while this reader opened the store; try again")

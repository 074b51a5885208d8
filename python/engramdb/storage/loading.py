"""What a writable open reads: the files a manifest lists, each checked against its entry.

Segments are memory-mapped with their vector columns checked in the background
(storage/checksum.py); edges and archive files are read whole. A listed file that is missing is
an error naming it (the open refuses before this, storage/identity.py; this is the last guard).
"""

from __future__ import annotations

from pathlib import Path

from ..model.errors import StoreError
from .edge_files import table_to_edges
from .edge_log import EdgeLog
from .folder import MANIFEST
from .manifest import Manifest
from .segment import Segment, read_arrow, read_segment


def read_listed(folder: Path, m: Manifest) -> tuple[list[Segment], EdgeLog, dict[str, str]]:
    """(segments, edges, archived id -> archive file) of the files `m` lists in `folder`."""
    try:
        return _read(folder, m)
    except FileNotFoundError as exc:
        raise StoreError(f"{folder}: {MANIFEST} lists {Path(str(exc.filename)).name}, which is missing; nothing "
                         "was changed") from None


def _read(folder: Path, m: Manifest) -> tuple[list[Segment], EdgeLog, dict[str, str]]:
        for entries in (m.segments, m.edges, m.archives):
            for i, entry in enumerate(entries):
                # files listed before descriptions had no order: their place in the list is one
                # (below every seq, so every file written from now on sorts after them)
                entry.setdefault("order", i)
        segments = [read_segment(folder / entry["file"], entry, defer=True) for entry in m.segments]
        edges = EdgeLog()
        for entry in m.edges:
            edges.append(table_to_edges(read_arrow(folder / entry["file"], entry)))
        archived: dict[str, str] = {}
        for entry in m.archives:
            ids = read_arrow(folder / entry["file"], entry).column("id").to_pylist()
            archived.update(dict.fromkeys(ids, entry["file"]))
        return segments, edges, archived

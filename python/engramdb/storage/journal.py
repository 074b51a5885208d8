"""The journal: the names of the files the writer is about to create or drop, until a commit.

Before the writer creates a data file (a segment, an edges or archive file, a new WAL) it writes
the name here and fsyncs; before a commit unlists files, it writes their names too. After the
commit and the deletions, the journal is emptied. So after a crash, the files the journal names
that the manifest does not list are exactly the store's own debris (a half-written segment, a
WAL a checkpoint replaced), and only they are deleted at the next open, with their temp files.
A file the journal does not name is never deleted, whatever its name looks like.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

JOURNAL = "journal.log"


class Journal:
    """The journal of one store folder (written by its writer only)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / JOURNAL

    def note(self, names: Iterable[str]) -> None:
        """Record names before the files are created or unlisted (fsynced)."""
        lines = "".join(f"{n}\n" for n in names)
        if not lines:
            return
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(lines)
            fh.flush()
            os.fsync(fh.fileno())

    def names(self) -> set[str]:
        """Every name recorded since the last clear (a torn last line is ignored)."""
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return set()
        lines = text.split("\n")
        return {n for n in lines[:-1] if n and "/" not in n and n not in (".", "..")}  # complete lines only

    def clear(self) -> None:
        """Forget every name (after a commit whose files are all listed or deleted)."""
        self.path.unlink(missing_ok=True)

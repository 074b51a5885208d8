"""The journal: the names of the files the writer is about to create or drop, until a commit.

Before the writer creates a data file (a segment, an edges or archive file, a new WAL) it writes
the name here and fsyncs; before a commit unlists files, it writes their names too. After the
commit and the deletions, the journal is emptied. So after a crash, the files the journal names
that the manifest does not list are exactly the store's own debris (a half-written segment, a
WAL a checkpoint replaced), and only they are deleted at the next open, with their temp files.
A file the journal does not name is never deleted, whatever its name looks like.

Each line is `<name> <generation>`: the manifest generation the commit would write. A name
journaled for a generation more than one past the manifest's was never the debris of a commit
that failed on top of this manifest: the manifest was rolled back (an older copy put in place),
and the open refuses instead of deleting (storage/identity.py). Lines without a generation
(journals written before format 6) name debris as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from . import disk

JOURNAL = "journal.log"


class Journal:
    """The journal of one store folder (written by its writer only)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / JOURNAL

    def note(self, names: Iterable[str], generation: int | None = None) -> None:
        """Record names before the files are created or unlisted (fsynced), for the commit that
        writes manifest `generation`."""
        tag = "" if generation is None else f" {int(generation)}"
        lines = "".join(f"{n}{tag}\n" for n in names)
        if not lines:
            return
        fd = disk.open_fd(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                lines = "\n" + lines  # a line a failed write tore stays a line of its own, never joins a name
            try:
                disk.append(fd, lines.encode("utf-8"), self.path)
                disk.fsync(fd, self.path)
            except BaseException:
                try:
                    disk.truncate(fd, size, self.path)  # the names were not journaled: the caller makes no file
                except OSError:
                    pass
                raise
        finally:
            disk.close(fd)

    def entries(self) -> dict[str, int | None]:
        """name -> the generation it was journaled for (None: not said), for every complete line
        since the last clear (a torn last line is ignored; the highest generation wins)."""
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return {}
        out: dict[str, int | None] = {}
        for line in text.split("\n")[:-1]:  # complete lines only
            name, _, tag = line.partition(" ")
            if not name or "/" in name or name in (".", ".."):
                continue
            gen = int(tag) if tag.isdigit() else None
            had = out.get(name)
            out[name] = gen if had is None or (gen is not None and gen > had) else had
        return out

    def names(self) -> set[str]:
        """Every name recorded since the last clear."""
        return set(self.entries())

    def replace(self, names: Iterable[str], generation: int) -> None:
        """Make the journal name exactly `names` (for the commit that writes manifest
        `generation`), in one rename: a crash leaves the old names or the new, never neither (a
        repair settles the old journal's names: one cleared and then noted lost them in between)."""
        lines = "".join(f"{n} {int(generation)}\n" for n in names)
        if not lines:
            self.clear()
            return
        disk.write_atomically(self.path, lines.encode("utf-8"))

    def clear(self) -> None:
        """Forget every name (after a commit whose files are all listed or deleted)."""
        disk.unlink(self.path)

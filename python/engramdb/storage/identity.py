"""Whose files these are, and which generation: the checks a writable open makes before it
trusts a folder's files, and that `repair` and `verify` report.

Every store has an id (its marker's `store_id`, copied into the manifest) and a generation (the
manifest's, one more at each commit). Every file the writer makes carries both: segments, edges
and archive files in their description (storage/describe.py), the write-ahead log in its header
(storage/wal.py). File numbers only grow. So, without trusting any name, an open can tell:

- a write-ahead log that is another store's (copied in from elsewhere), or another of this
  store's logs renamed: its header names another store or another number;
- a manifest older than the files beside it (an older generation copied over it, a store rolled
  back): a store file numbered at or past the manifest's next number that the journal does not
  name as a failed commit's debris, or a journal naming a commit more than one generation ahead;
- a file the manifest lists that is missing, the live write-ahead log included.

Each is refused, naming the files, with nothing changed: serving the older state would hide
acknowledged rows, and the next write would reuse their numbers. `engramdb repair` rebuilds the
manifest from the files themselves and says what it found.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .describe import schema_description, seq_of
from .folder import MARKER
from .journal import Journal
from .manifest import Manifest
from .wal import HEADER_MAX, WalError, listed_header, read_header

STORE_FILE = re.compile(r"^(?:(seg|edges|archive)-(\d+)\.arrow|wal-(\d+)\.log)$")
NUMBERED = re.compile(r"^(?:seg|edges|archive|wal)-(\d+)\.")  # with any suffix (.tmp, .damaged, ...)


def marker_id(folder: Path) -> str | None:
    """The store id the folder's marker holds (None: no marker, or one without an id)."""
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    sid = marker.get("store_id") if isinstance(marker, dict) else None
    return sid if isinstance(sid, str) and sid else None


def lineage(folder: Path) -> set[str]:
    """The ids of the stores this one was copied from (a backup's source): their files, carried
    over byte for byte, are this store's too."""
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return set()
    got = marker.get("copied_from", []) if isinstance(marker, dict) else []
    return {s for s in got if isinstance(s, str)} if isinstance(got, list) else set()


def highest_number(folder: Path, besides: str = "") -> int:
    """The highest number any store file in the folder is named with, whatever its suffix
    (damaged and set-aside files count: a number is never given twice; a temporary file is its
    maker's to reuse). `besides`: a
    name left out (a new store's first log, wal-000001.log, was never numbered by the manifest)."""
    top = 0
    for entry in folder.iterdir():
        m = NUMBERED.match(entry.name)
        if m is not None and entry.name != besides and not entry.name.endswith(".tmp"):
            top = max(top, int(m.group(1)))
    return top


def wal_problem(name: str, identity: dict[str, Any] | None, m: Manifest) -> str | None:
    """Why a log with header `identity` cannot be this store's log `name`, or None. A log is
    only ever its own store's (a backup's lineage covers its immutable files, not a log that
    went on being written after the copy). A log from before identities (None) or one a crash
    left headerless ({}) is taken as it is."""
    if identity is None and m.wal_header >= 2:
        return (f"{name} has a bare header from before logs named their store, but this store's live log was "
                "made with one: it is not this store's log")
    if not identity:
        return None
    sid = identity.get("store")
    if m.store_id and sid and sid != m.store_id:
        return f"{name} is another store's write-ahead log (store {sid}, this store is {m.store_id})"
    seq = identity.get("seq")
    if isinstance(seq, int) and f"wal-{seq:06d}.log" != name:
        return f"{name} holds the header of wal-{seq:06d}.log: a write-ahead log renamed or copied over it"
    return None


def claimed_by(path: Path) -> str | None:
    """The store a file says it belongs to: its description's or log header's store id, "" for
    an engramdb file from before ids, None when it is not an engramdb store file at all (a user's
    file that only looks like one). Reads the header only."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEADER_MAX)
    except OSError:
        return None
    if path.name.startswith("wal-"):
        try:
            identity = read_header(head, path)[0]
        except WalError:
            return None
        return str(identity.get("store", "")) if identity else ""
    desc = schema_description(head)
    if desc is None or desc.get("kind") != path.name.split("-", 1)[0] or desc.get("seq") != seq_of(path.name):
        return None
    return str(desc.get("store", ""))


def stale_manifest(folder: Path, m: Manifest, journal: Journal) -> list[str]:
    """This store's files newer than the manifest (see the module docstring): their names, with
    why. Files that only look like the store's (no description or header of ours) are not."""
    present = sorted(folder.iterdir())  # before the journal: a file seen was journaled before it was made
    entries = journal.entries()
    listed = {e["file"] for e in m.segments + m.edges + m.archives} | {m.wal}
    own = {m.store_id, ""} | lineage(folder) | set(m.copied_from)
    out = []
    for name, gen in sorted(entries.items()):
        if gen is not None and gen > m.generation + 1 and name not in listed and claimed_by(folder / name) in own:
            out.append(f"{name} (journaled for generation {gen}; the manifest is generation {m.generation})")
    said = {n.split(" ", 1)[0] for n in out}
    for entry in present:
        hit = STORE_FILE.match(entry.name)
        if hit is None or entry.name in listed or entry.name in entries or entry.name in said:
            continue
        number = int(hit.group(2) or hit.group(3))
        if number >= m.next_segment and claimed_by(entry) in own:
            out.append(f"{entry.name} (numbered {number}; the manifest has handed out numbers below "
                       f"{m.next_segment} only)")
    return out


def missing_files(folder: Path, m: Manifest) -> list[str]:
    """Files the manifest lists that are not in the folder (or are not files)."""
    names = [e["file"] for e in m.segments + m.edges + m.archives] + [m.wal]
    return [n for n in names if not (folder / n).is_file()]


def wal_identity(path: Path) -> dict[str, Any] | None:
    """The identity in a listed log's header (None for a log from before identities); WalError
    when the header is not a log's, or is missing or cut short."""
    with open(path, "rb") as fh:
        return listed_header(fh.read(HEADER_MAX), path)


def refusal(folder: Path, m: Manifest, journal: Journal) -> str | None:
    """Why a writable open must not use this folder's manifest (or None): missing files, a foreign
    log, files newer than the manifest. The message names the files and what to do."""
    problems = []
    mid = marker_id(folder)
    if m.store_id and mid and m.store_id != mid and m.store_id not in lineage(folder) and mid not in m.copied_from:
        problems.append(f"{MARKER} says store {mid} but the manifest is store {m.store_id}'s")
    gone = missing_files(folder, m)
    if gone:
        problems.append(f"the manifest lists {', '.join(gone)}, which "
                        + ("is" if len(gone) == 1 else "are") + " missing"
                        + (" (the write-ahead log holds every write since the last checkpoint)" if m.wal in gone else ""))
    else:
        try:
            why = wal_problem(m.wal, wal_identity(folder / m.wal), m)
        except WalError as exc:
            why = str(exc)
        if why is not None:
            problems.append(why)
    newer = stale_manifest(folder, m, journal)
    if newer:
        problems.append("the manifest is older than files beside it, " + "; ".join(newer)
                        + " (was an older manifest, e.g. manifest.prev.json, copied over it?)")
    if not problems:
        return None
    return "; ".join(problems)

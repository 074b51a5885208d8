"""Files the store set aside and never reads again, and their share of a purge (S7).

A damaged file is never deleted when it is found: it is renamed (`seg-000007.arrow.damaged`,
`spool/<capture>.damaged`, `spool/<capture>.rejected`) or left out by name (an access-log file
whose bytes fail the CRC-32 in its name), for whoever wants to look at it. Such a file may still
hold what a privacy request must remove. A purge cannot read it as rows, so it looks at its bytes:
a set-aside file holding any of the purged ids (as UTF-8 or as JSON escapes them), or a spooled
capture naming the purged namespace, is deleted, the one case where a damaged file goes.
"""

from __future__ import annotations

import json
import logging
import re
import zlib
from collections.abc import Iterable
from pathlib import Path

from . import disk
from .arrow_log import LOG_DIR, LOG_FILE
from .spool import FOLDER as SPOOL

log = logging.getLogger("engramdb.storage")
SET_ASIDE = re.compile(r"\.(damaged|rejected)(\.\d+)?$")


def candidates(folder: Path) -> list[Path]:
    """The set-aside files of a store folder (see the module docstring)."""
    out = []
    for where in (folder, folder / SPOOL):
        if where.is_dir():
            out += [p for p in where.iterdir() if p.is_file() and SET_ASIDE.search(p.name)]
    logs = folder / LOG_DIR
    if logs.is_dir():
        for p in logs.iterdir():
            m = LOG_FILE.match(p.name)
            if m and p.is_file() and f"{zlib.crc32(p.read_bytes()):08x}" != m.group(1):
                out.append(p)
    return sorted(out)


def needles(ids: Iterable[str], namespaces: Iterable[str]) -> list[bytes]:
    """The byte strings that mark a purged memory or namespace in a file that cannot be parsed."""
    out: set[bytes] = set()
    for i in ids:
        out.add(i.encode())
        out.add(json.dumps(i)[1:-1].encode())  # as JSON writes it (\\uXXXX for what is not ASCII)
    for ns in namespaces:
        quoted = json.dumps(ns)
        out |= {f'"namespace": {quoted}'.encode(), f'"namespace":{quoted}'.encode(),
                f'\\"namespace\\": {json.dumps(quoted)[1:-1]}'.encode()}  # a capture's records are JSON in JSON
    return sorted(b for b in out if b)


def scrub(folder: Path, ids: Iterable[str], namespaces: Iterable[str] = ()) -> list[str]:
    """Delete the set-aside files holding a purged id or a purged namespace's capture; their names."""
    marks = needles(ids, namespaces)
    gone = []
    for p in candidates(folder):
        data = p.read_bytes()
        if any(m in data for m in marks):
            disk.unlink(p)
            gone.append(str(p.relative_to(folder)))
    if gone:
        log.warning("%s: a purge deleted %d set-aside damaged file(s) that held what it purged: %s", folder,
                    len(gone), ", ".join(gone))
    return gone

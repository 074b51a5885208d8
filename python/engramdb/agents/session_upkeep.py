"""A session's end-of-session upkeep, in a process of its own (what the SessionEnd hook starts).

SessionEnd (hooks.py) runs this as `python -m engramdb.agents.session_upkeep STORE NAMESPACE`, detached
from the hook (a session of its own, so it outlives the hook and the agent that ran it), and waits
for it up to WAIT_SHARE of the event's budget. On a store of thousands of memories it is done long
before that and the hook says what it said. On a store a script filled with 100,000 memories and
closed before its worker saved the indexes, the first writer builds the hierarchy tree and the
topics: 20-30 s, most of SessionEnd's 30 s budget, at the end of a session a person is waiting to
leave. Then the hook leaves at WAIT_SHARE and this process finishes the work on its own, as `git gc
--auto` detaches: the store is crash-safe at every step, and the work is the writer's, under the
writer's lock, whichever process holds it.

The upkeep, as the writer: ingest the spool (opening does), fold the WAL, merge the small segments,
consolidate the namespace, save the indexes and refresh its topics. Left, with a note, to the
process holding the writer's lock when there is one. It runs at every session's end, with nobody to
review it, so its consolidation applies only what changes no memory's content on the engine's own
judgement: promotions (tier state) and the purge of what a person forgot (or confirmed) past its 30
days, a person's choice. Archives and compressions stay proposals (recorded in the run, `engramdb
consolidate` lists them) unless $ENGRAMDB_HOOK_CONSOLIDATE is "all".

What goes wrong is said on stderr (the hook passes it on while it waits) and the exit status is 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from . import detached
from .hook_process import without_unused_imports

if __name__ == "__main__":  # pyarrow would import pandas for nothing (hook_process.py)
    without_unused_imports()

import engramdb

from ..model.tuning import Tuning
from .capture import why

WAIT_SHARE = 0.2  # of SessionEnd's budget: the hook's wait for the upkeep (inside a quarter, room to end)
# a hook's writer lives for one event (an upkeep, a capture taken in): the indexes are built by
# build_index below, not by a background worker whose job close() would wait for
QUICK = Tuning(background=False)
CONSOLIDATE_ENV = "ENGRAMDB_HOOK_CONSOLIDATE"
NICENESS = 10  # as a capture's take-in (take_in.py): its CPU yields to the hooks an agent waits for


class StoreBusy(RuntimeError):
    """Another process holds the store's writer lock: the upkeep is left to it."""


def upkeep(store: Path, namespace: str) -> None:
    """The upkeep of `namespace` in the store at `store`, as its writer (see the module docstring).
    Raises StoreBusy when another process is the writer."""
    if not store.is_dir():
        return
    try:
        db = engramdb.open(store, tuning=QUICK)
    except engramdb.StoreLocked:
        raise StoreBusy(f"{store} has another writer: the upkeep is left to it (captures stay spooled "
                        "for it)") from None
    every = os.environ.get(CONSOLIDATE_ENV, "").strip().lower() == "all"
    with db:
        db.admin.checkpoint()
        db.admin.compact()
        db.lifecycle.consolidate(namespace=namespace, dry_run=False, steps=None if every else ("promote", "purge"))
        # the indexes saved, after the consolidation (a purge drops them, and a close builds no tree
        # from nothing): without them every read-only open (the next session's hooks, the resident
        # reader) scans exactly or builds BM25 in memory first: hundreds of ms at 100,000 memories
        db.admin.build_index()
        db.topics(namespace)


def start(store: Path, namespace: str) -> subprocess.Popen[bytes]:
    """This module's process for `store` and `namespace`, detached (a session of its own), its stderr
    on a pipe the caller reads while it waits (`detached.wait`)."""
    return detached.start("session_upkeep", [os.path.abspath(store), namespace])


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m engramdb.agents.session_upkeep STORE NAMESPACE`: 0 when done, 1 with a line on stderr."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        detached.say("usage: python -m engramdb.agents.session_upkeep STORE NAMESPACE")
        return 2
    detached.lower_priority(NICENESS)  # background work: the next session's hooks come first
    try:
        upkeep(Path(args[0]), args[1])
    except Exception as exc:  # noqa: BLE001 - said, with its kind: the hook passes it on
        detached.say(why(exc) if not isinstance(exc, StoreBusy) else str(exc))
        return 1
    return 0


__all__ = ["QUICK", "WAIT_SHARE", "StoreBusy", "main", "start", "upkeep"]


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

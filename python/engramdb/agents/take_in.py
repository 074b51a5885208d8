"""A capture's take-in: the spool into the store, by a writer that lives for that alone.

A capture is kept once it is spooled (capture.py: fsynced and renamed into place). It is stored,
and seen by searches, when a writer takes the spool in: any writer does at open and before each
write. A capture-only hook (PostToolUse, Stop, SubagentStop) on an existing store spools its record
in its own process, which imports neither numpy nor Arrow (~0.2 s), then starts `python -m
engramdb.agents.take_in STORE`, detached (detached.py), and waits for it up to WAIT_SHARE of its
budget: the take-in imports the engine and opens the store as its writer, a second or more on a
2-core machine at 100,000 memories, which the hook's quarter of its budget cannot hold. What the
take-in says on stderr in that time is the hook's to say; past it, it finishes on its own, at a
lower CPU priority: an agent runs its next hooks (a prompt's context, a tool call's) at once, and
on two cores the take-in's second of CPU would otherwise be theirs to wait for.

No take-in is started while a writer holds the store: that writer takes the spool in before its
next write, or the next writer does. A capture spooled while a take-in's writer was open, after its
open took the spool in, is taken in by a further round once that writer closed (the hook saw the
lock held and started none): at most ROUNDS rounds.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..storage import spool
from ..storage.folder import writer_active
from . import detached
from .capture import why

WAIT_SHARE = 0.15  # of a capture hook's budget: its wait for the take-in (inside its quarter, with room to leave)
NICENESS = 10  # the take-in yields the CPU to the hooks the agent waits for (the next prompt's, tool call's)
ROUNDS = 3  # writers opened in turn while captures keep arriving (each open takes in every file spooled before it)


def hand_over(store: Path, deadline: float) -> str | None:
    """Start the take-in of `store`'s spool in a process of its own and wait for it until `deadline`
    (`time.monotonic`'s clock). None when it was taken in, is being taken in past the deadline, or
    is left to the writer holding the store; else what went wrong (the captures stay spooled)."""
    if writer_active(store):
        return None
    try:
        proc = detached.start("take_in", [os.path.abspath(store)])
    except OSError as exc:  # no process to be had (a full process table): the next writer takes it in
        return f"the capture is spooled; its take-in could not start ({why(exc)})"
    status, said = detached.wait(proc, deadline)
    if status is None or status == 0:
        return None
    return f"the capture is spooled; taking it in failed ({said or f'status {status}'})"


def take_in(store: Path) -> None:
    """Open the store at `store` as its writer, which takes the spool in, then close it; again while
    captures spooled meanwhile wait (at most ROUNDS). Nothing when another process is the writer."""
    import engramdb  # here, not at the top: the hooks import this module for `hand_over` alone

    from .session_upkeep import QUICK

    for _ in range(ROUNDS):
        if not store.is_dir() or writer_active(store):
            return  # the writer takes the spool in before its next write
        try:
            db = engramdb.open(store, tuning=QUICK)  # a writer for this alone: no worker
        except engramdb.StoreLocked:
            return
        db.close(checkpoint=False)  # the rows are durable in the WAL; a long-lived writer folds them
        if not spool.pending(store):
            return


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m engramdb.agents.take_in STORE`: 0 when done, 1 with a line on stderr."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        detached.say("usage: python -m engramdb.agents.take_in STORE")
        return 2
    detached.lower_priority(NICENESS)
    try:
        take_in(Path(args[0]))
    except Exception as exc:  # noqa: BLE001 - said, with its kind: the hook passes it on while it waits
        detached.say(why(exc))
        return 1
    return 0


__all__ = ["ROUNDS", "WAIT_SHARE", "hand_over", "main", "take_in"]


if __name__ == "__main__":  # pragma: no cover
    from .hook_process import without_unused_imports

    without_unused_imports()  # before pyarrow: it would import pandas for nothing (hook_process.py)
    raise SystemExit(main())

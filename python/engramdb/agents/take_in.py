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

One take-in per store at a time. No take-in is started while a writer holds the store (that
writer takes the spool in before its next write, or the next writer does), nor while one is
starting or running: the hook takes a lock beside the resident readers' sockets (CLAIM: in the
user's runtime folder, detached.runtime_folder) and hands it to the take-in it starts, as
resident_link.spawn does, so a burst of hooks starts one process, where each started its own
(a take-in imports the engine for a second before it can take the store's lock: 24-28 of them
for 60 hooks, 0.7 s of CPU each). The take-in opens the writer, which takes in every file spooled
before it opened, closes it, lets the claim go, and only then looks at the spool: a hook that
found the claim held spooled before it looked, so its capture is seen here and taken in by a
further round (the claim taken back); a hook after that takes the claim and starts a take-in of
its own. It stops when a round took nothing in (files it cannot take in stay for the next writer,
which says why) or after ROUNDS rounds; captures arriving all the while leave it at ROUNDS with
the claim let go, for the next hook to start the next take-in.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from ..storage import spool
from ..storage.folder import writer_active
from . import detached
from .capture import why

WAIT_SHARE = 0.15  # of a capture hook's budget: its wait for the take-in (inside its quarter, with room to leave)
NICENESS = 10  # the take-in yields the CPU to the hooks the agent waits for (the next prompt's, tool call's)
ROUNDS = 10  # writers opened in turn while captures keep arriving (each open takes in every file spooled before it)


def claim_path(store: Path) -> Path | None:
    """The lock a take-in of `store` holds while it starts and works (None: no safe folder for it)."""
    folder = detached.runtime_folder()
    if folder is None:
        return None
    key = hashlib.sha256(os.path.realpath(store).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return folder / f"take-in-{key}.lock"


def hand_over(store: Path, deadline: float) -> str | None:
    """Start the take-in of `store`'s spool in a process of its own and wait for it until `deadline`
    (`time.monotonic`'s clock). None when it was taken in, is being taken in past the deadline, or
    is left to the writer or the take-in at work; else what went wrong (the captures stay spooled)."""
    if writer_active(store):
        return None
    path = claim_path(store)
    fd: int | None = None
    try:
        if path is not None:
            try:
                fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0), 0o600)
            except OSError:
                fd = None  # no claim to be had: a take-in of its own, as without the lock
            if fd is not None and not detached.try_lock(fd):
                return None  # a take-in is starting or at work: it takes this capture in (see the module docstring)
        args = [os.path.abspath(store)] + (["--claim-fd", str(fd)] if fd is not None else [])
        try:
            proc = detached.start("take_in", args, pass_fds=() if fd is None else (fd,))
        except OSError as exc:  # no process to be had (a full process table): the next writer takes it in
            return f"the capture is spooled; its take-in could not start ({why(exc)})"
    finally:
        if fd is not None:
            os.close(fd)  # the take-in holds the claim through its own copy
    status, said = detached.wait(proc, deadline)
    if status is None or status == 0:
        return None
    return f"the capture is spooled; taking it in failed ({said or f'status {status}'})"


def take_in(store: Path, claim_fd: int | None = None) -> None:
    """Open the store at `store` as its writer, which takes the spool in, then close it; again while
    captures spooled meanwhile wait (see the module docstring), holding the claim `claim_fd` (a
    locked descriptor) while a round works. Nothing when another process is the writer."""
    import engramdb  # here, not at the top: the hooks import this module for `hand_over` alone

    from .session_upkeep import QUICK

    waiting: list[Path] | None = None
    for _ in range(ROUNDS):
        if not store.is_dir() or writer_active(store):
            return  # the writer takes the spool in before its next write
        try:
            db = engramdb.open(store, tuning=QUICK)  # a writer for this alone: no worker
        except engramdb.StoreLocked:
            return
        db.close(checkpoint=False)  # the rows are durable in the WAL; a long-lived writer folds them
        if claim_fd is not None:
            fcntl.flock(claim_fd, fcntl.LOCK_UN)  # before the look below (see the module docstring)
        left = spool.pending(store)
        if not left or left == waiting:
            return  # all taken in, or what is left cannot be: the next writer says why
        if claim_fd is not None and not detached.try_lock(claim_fd):
            return  # another hook's take-in has the claim: it takes these in
        waiting = left


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m engramdb.agents.take_in STORE [--claim-fd FD]`: 0 when done, 1 with a line on stderr."""
    import argparse  # here: the hooks import this module for `hand_over` alone

    parser = argparse.ArgumentParser(prog="python -m engramdb.agents.take_in", add_help=False)
    parser.add_argument("store")
    parser.add_argument("--claim-fd", type=int)
    args, rest = parser.parse_known_args(argv)
    if rest:
        detached.say("usage: python -m engramdb.agents.take_in STORE [--claim-fd FD]")
        return 2
    detached.lower_priority(NICENESS)
    try:
        take_in(Path(args.store), args.claim_fd)
    except Exception as exc:  # noqa: BLE001 - said, with its kind: the hook passes it on while it waits
        detached.say(why(exc))
        return 1
    return 0


__all__ = ["NICENESS", "ROUNDS", "WAIT_SHARE", "claim_path", "hand_over", "main", "take_in"]


if __name__ == "__main__":  # pragma: no cover
    from .hook_process import without_unused_imports

    without_unused_imports()  # before pyarrow: it would import pandas for nothing (hook_process.py)
    raise SystemExit(main())

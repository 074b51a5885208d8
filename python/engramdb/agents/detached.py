"""A hook's work in a process of its own: how it is started from a hook and waited for.

Some of a hook's work outlives the hook: the resident reader (resident_link.py), SessionEnd's
upkeep (session_upkeep.py), a capture's take-in (take_in.py). Each is `python -m
engramdb.agents.MODULE ...` in a session of its own (start_new_session), so it outlives the hook
and the agent that ran it, as `git gc --auto` detaches. This module imports the standard library
only: the hooks that start these processes import neither numpy nor Arrow.
"""

from __future__ import annotations

import os
import stat
import sys
import time

# The hook process that asks a resident reader imports this module on its way (resident_link.py):
# subprocess, tempfile, pathlib and typing are imported where used, not here (~90 ms of a new
# process on a 2-core machine together, most of such a hook's answer). typing.TYPE_CHECKING without
# typing; mypy reads the name as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any


def module_run() -> dict[str, Any]:
    """Popen's settings for `python -m engramdb...` started from a hook: `-m` puts the working
    folder first on sys.path, and a hook runs in the user's project, whose `token.py` or `json.py`
    would shadow the standard library's (and run) in our process; so it runs from the filesystem's
    root, with $PYTHONSAFEPATH set too (Python 3.11+) and the project's $PYTHONPATH kept."""
    return {"cwd": os.path.abspath(os.sep), "env": {**os.environ, "PYTHONSAFEPATH": "1"}}


def runtime_folder() -> Path | None:
    """The folder that holds what this user's hooks share outside a store (the resident readers'
    sockets, the take-ins' claims), made with mode 0700 when missing; None when it
    cannot be made, or is not a folder of this user's that only they may enter."""
    from pathlib import Path

    folder = runtime_folder_name()
    return None if folder is None else Path(folder)


def runtime_folder_name() -> str | None:
    """`runtime_folder` as a str, with the standard library's lightest modules only (the hook's
    way to its resident: resident_link.py): $XDG_RUNTIME_DIR/engramdb, else
    <the temporary folder>/engramdb-<uid>."""
    base = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if base and os.path.isabs(base):  # a relative one is ignored, as the XDG spec says (see temporary_folder)
        folder = os.path.join(base, "engramdb")
    else:
        tmp = temporary_folder()
        if tmp is None:
            return None
        folder = os.path.join(tmp, f"engramdb-{os.getuid()}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return folder


def temporary_folder() -> str | None:
    """The folder `tempfile.gettempdir()` chooses, without importing tempfile (29 ms of a new process
    here): the first of $TMPDIR, $TEMP, $TMP, /tmp, /var/tmp, /usr/tmp that is a folder this user
    may write in; None when none is. (tempfile proves it by writing a file, `os.access` asks the
    kernel: the same answer but where an access control list lies.) The resident and the hook that
    asks it both choose here, so they agree; what the two would resolve from their different
    working folders (the resident runs from /: `module_run`) is passed over, so that they meet: a
    relative $TMPDIR, and tempfile's last resort, the working folder itself."""
    candidates = [v for v in (os.environ.get(name, "") for name in ("TMPDIR", "TEMP", "TMP")) if os.path.isabs(v)]
    candidates += ["/tmp", "/var/tmp", "/usr/tmp"] if os.name != "nt" else []
    for folder in candidates:
        if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
            return os.path.abspath(folder)
    return None


def try_lock(fd: int) -> bool:
    """An exclusive flock on `fd` taken without waiting; False when another holder has it (or no
    lock can be had): the claim a hook hands to the process it starts, so a storm of hooks starts
    one (a resident reader, a take-in)."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def start(module: str, args: Sequence[str], pass_fds: Sequence[int] = ()) -> subprocess.Popen[bytes]:
    """`python -m engramdb.agents.<module> ARGS...`, detached (a session of its own), its stderr on a
    pipe the caller reads while it waits (`wait`); stdin and stdout are /dev/null; `pass_fds` are
    the descriptors it inherits (a lock the caller took for it)."""
    import subprocess

    return subprocess.Popen([sys.executable, "-m", f"engramdb.agents.{module}", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, close_fds=True, pass_fds=tuple(pass_fds), **module_run())


def wait(proc: subprocess.Popen[bytes], deadline: float) -> tuple[int | None, str]:
    """(exit status, what it said on stderr) of `proc` once it ended; (None, "") when it still runs
    at `deadline` (on `time.monotonic`'s clock): it is then left to finish on its own."""
    import subprocess

    try:
        _, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _leave(proc)
        return None, ""
    return proc.returncode, err.decode("utf-8", "replace").strip()


def _leave(proc: subprocess.Popen[bytes]) -> None:
    """Let `proc` go on without this process: its stderr pipe closed here (what it says from now on
    reaches nobody, and `say` takes that in its stride), and the Popen marked as done with, so that
    its finaliser does not warn that "subprocess N is still running" on a hook's stderr (with
    PYTHONWARNINGS set, or a traceback with =error). It is in a session of its own: when this
    process ends, init reaps it."""
    if proc.stderr is not None:
        proc.stderr.close()
    proc.returncode = 0  # never waited for here (see above), not its status


def lower_priority(increment: int) -> None:
    """This process's CPU priority lowered by `increment`, where the system allows it: a detached
    process's work is background work, and the hooks an agent waits for come first. Both its nice
    value and, on Linux, its autogroup's: a process in a session of its own (`start`) is in an
    autogroup of its own when autogroup scheduling is on (the usual default), and a nice value
    only ranks it within that group: a niced take-in still took half of a core from a hook
    beside it, and 10% once its autogroup was niced too."""
    try:
        os.nice(increment)
    except (OSError, AttributeError):  # not allowed, or no such call (Windows): the work goes on as it is
        pass
    try:
        with open("/proc/self/autogroup", "w") as group:
            group.write(str(increment))
    except OSError:  # not Linux, autogroups off, or not allowed: the nice value alone
        pass


def say(message: str) -> None:
    """One line on stderr from a detached process: the hook that started it reads it while it waits;
    once the hook left, nobody reads the pipe any more, and the work goes on."""
    try:
        print(message, file=sys.stderr, flush=True)
    except OSError:
        pass


__all__ = ["lower_priority", "module_run", "runtime_folder", "runtime_folder_name", "say", "start", "temporary_folder",
           "try_lock", "wait"]

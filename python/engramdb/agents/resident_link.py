"""A hook's short ways, the part of `engramdb hook` that imports nothing heavy: to a resident reader,
and a capture-only event's spool.

A hook is a new process for every event, and a cold process pays for its imports (numpy, Arrow and
the engine: about 300 ms on a 2-core machine) and for opening the store (650 ms read-only at
100,000 memories) before it can search: more than PreToolUse's whole 500 ms budget, and over a
second for the context UserPromptSubmit gives every prompt. So the read of the events listed in
RESIDENT_EVENTS is served by a resident reader (agents/resident.py): one process per store folder
that holds the store open read-only and answers over a Unix socket. The hook process then imports
only the standard library, sends the event's stdin to the resident, and prints its answer (tens of
milliseconds). SessionStart, which answers in its own process from a fresh snapshot, starts one,
detached, once it has answered (`want`), so a session's first prompt finds it ready; an event that
finds none answers the usual way (hooks.py, in this process) and starts one for the next events.
The resident leaves after ENGRAMDB_HOOK_RESIDENT_IDLE_S seconds without a request (600 by default),
when its store folder goes, or when it cannot reopen the store. A resident that let a hook's budget
run out is passed over for LATE_HOLD_S (the hooks answer in their own process), then asked again.

The socket is in a folder only the user may enter: $XDG_RUNTIME_DIR/engramdb, else
<tmp>/engramdb-<uid>, made with mode 0700; a folder that is not the user's own, is a symlink, or
that others may enter is not used (the hook answers the usual way). The socket's name is a hash of
the store folder's real path, so one resident serves one store. ENGRAMDB_HOOK_RESIDENT=0 turns the
resident off (every hook answers in its own process, as before).

Writes never go through the resident: a capture is spooled by the hook process itself, after the
resident answered (CAPTURING: UserPromptSubmit keeps the prompt; capture.capture_alone, which
imports the engine's record rules but neither numpy nor Arrow), and taken in by the next writer (a
capture event's take-in, SessionEnd's upkeep, any process that opens the store to write). The
capture-only events (CAPTURE_ONLY: PostToolUse, Stop, SubagentStop) take that short way too, on a
store that exists: this process spools the capture and starts its take-in (take_in.py, a writer in
a process of its own, waited for up to 15% of the budget), as the engine's imports and a
writer's open cost a second on a 2-core machine, more than a quarter of their budget. The resident reads
what the writer acknowledged before its last reopen: it looks at the folder before each request and
reopens in the background when a writer changed it, so an answer may miss the last write or two.
For a prompt's context those are the current session's last turns, which the agent holds in its
own conversation already; the memory it adds is what earlier sessions said.
"""

from __future__ import annotations

import io
import json
import os
import stat
import sys
import time

from .detached import runtime_folder_name

# What a hook served by its resident imports is most of its answer's time (a new process on a 2-core
# machine: ~25 ms of interpreter, then ~80 ms for socket, subprocess, pathlib, tempfile, typing, re
# and hashlib, against ~20 ms for the resident's search at 100,000 memories). So the served path
# imports json and the C halves of socket and SHA-256 only; what else this module does (starting a
# resident, keeping a capture) imports its modules where it runs. typing.TYPE_CHECKING without
# typing (mypy reads the name as typing's).
try:
    import _socket as _sockets  # socket.py's C half: socket.py adds selectors, enum and array to it
except ImportError:  # an interpreter without it
    import socket as _sockets  # type: ignore[no-redef]
try:
    from _sha2 import sha256  # type: ignore[import-not-found]  # Python 3.12+: hashlib's own, without OpenSSL's load
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # Python 3.10 and 3.11
    except ImportError:
        from hashlib import sha256  # a build without the built-in one
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

RESIDENT_EVENTS = ("PreToolUse", "UserPromptSubmit")  # the reads a resident serves (every prompt, every tool call)
PROTOCOL = 2  # the request and answer's form: raised when it changes (it names the socket, with RESIDENT_EVENTS)
REFUSED = "the resident reader refused the request"  # how a resident (of any release) begins a refusal
CAPTURING = ("UserPromptSubmit",)  # ... whose hook also keeps a capture: spooled by the hook process itself
CAPTURE_ONLY = ("PostToolUse", "Stop", "SubagentStop")  # events that only keep a capture: spooled here, taken in by take_in.py
CAPTURE_SHARE = 0.25  # of such an event's budget, kept back from the resident's answer for the capture
ENV_SWITCH = "ENGRAMDB_HOOK_RESIDENT"  # "0" (or "off", "no", "false"): no resident
ENV_IDLE = "ENGRAMDB_HOOK_RESIDENT_IDLE_S"
IDLE_S = 600.0  # a resident leaves after this long without a request
REQUEST_BYTES = 32 * 1024 * 1024  # a request at most (a Write's PreToolUse carries the file it writes)
SOCKET_PATH_BYTES = 100  # a Unix socket's path at most (108 on Linux, 104 on macOS, with the final NUL)
STORE_FOLDER = ".engramdb"  # as hook_events.STORE_FOLDER (not imported: that module costs 30 ms)
# as hook_events.BUDGETS_MS, unless $ENGRAMDB_HOOK_BUDGET_MS says
SERVED_BUDGETS_MS = {"PreToolUse": 500, "UserPromptSubmit": 2_000, "PostToolUse": 3_000, "Stop": 3_000, "SubagentStop": 3_000}
_PROCESS_AGE_LIMIT_S = 60.0
LATE_HOLD_S = 30.0  # after a resident let a hook's budget run out, hooks answer alone this long, then ask again


def _negative_number(word: str) -> bool:
    """Whether argparse reads `word` as a negative number (a value), not an option: its pattern
    `^-\\d+$|^-\\d*\\.\\d+$` (`\\d` is any Unicode decimal digit; `$` also matches before a final
    newline), without importing re."""
    word = word.removesuffix("\n")
    if not word.startswith("-"):
        return False
    whole, dot, part = word[1:].partition(".")
    if not dot:
        return whole.isdecimal()
    return (not whole or whole.isdecimal()) and part.isdecimal()


def enabled() -> bool:
    """Whether hooks use a resident reader ($ENGRAMDB_HOOK_RESIDENT not "0"/"off"/"no"/"false")."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "no", "false")


def idle_seconds() -> float:
    """How long a resident waits for a request before it leaves ($ENGRAMDB_HOOK_RESIDENT_IDLE_S, else 600)."""
    try:
        value = float(os.environ.get(ENV_IDLE, ""))
    except ValueError:
        return IDLE_S
    return value if 0 < value < float("inf") else IDLE_S


def socket_for(store: Path | str) -> Path | None:
    """The socket of the resident that serves `store` (None: no safe folder for one, or its path is
    too long for a Unix socket)."""
    from pathlib import Path

    name = socket_name(store)
    return None if name is None else Path(name)


def socket_name(store: Path | str) -> str | None:
    """`socket_for` as a str (the served path does without pathlib)."""
    folder = runtime_folder_name()
    if folder is None:
        return None
    # what the resident serves is in the name: a resident of an earlier release (which served fewer
    # events, and refused the others) is never asked; it leaves when idle
    served = f"{PROTOCOL}:{','.join(RESIDENT_EVENTS)}\0".encode()
    key = sha256(served + os.path.realpath(store).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    path = os.path.join(folder, f"hooks-{key}.sock")
    return path if len(os.fsencode(path)) <= SOCKET_PATH_BYTES else None


def ask(sock_path: Path | str, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """Send `request` to the resident at `sock_path` and return its answer; None when no resident
    listens there (no socket, or a stale one); an answer with "fallback" for a request too big for
    it (not sent). Raises TimeoutError when one listens but does not
    answer within `timeout` seconds, OSError/ValueError when the exchange breaks."""
    deadline = time.monotonic() + timeout
    data = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if len(data) > REQUEST_BYTES:  # a Write of a big file: the resident would refuse it, half sent
        return {"text": None, "fallback": f"a request over {REQUEST_BYTES:,} bytes"}
    s = _sockets.socket(_sockets.AF_UNIX, _sockets.SOCK_STREAM)
    try:
        s.settimeout(max(0.001, timeout))
        try:
            s.connect(str(sock_path))
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        s.sendall(data)
        s.shutdown(_sockets.SHUT_WR)
        chunks: list[bytes] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the resident reader did not answer in time")
            s.settimeout(left)
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        s.close()
    answer = json.loads(b"".join(chunks).decode("utf-8"))
    if not isinstance(answer, dict):
        raise ValueError("the resident reader's answer is not a JSON object")  # noqa: TRY004 - a broken exchange, as bad JSON is
    return answer


def spawn(store: Path | str) -> None:
    """Start a resident reader for `store`, detached from this process (it outlives it). The lock
    beside its socket is taken here and handed to it: when a resident holds it (serving, or still
    starting), none is started, so a storm of hooks that found no socket starts one process, not
    one each (each would import numpy and the engine, 300 ms of CPU, before it could leave)."""
    import subprocess

    from .detached import module_run, try_lock

    sock_path = socket_name(store)
    if sock_path is None:
        return
    try:
        if not stat.S_ISSOCK(os.lstat(sock_path).st_mode):
            return  # something else has the socket's name: a resident would not start (resident.py)
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        lock_fd = os.open(f"{sock_path}.lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        if not try_lock(lock_fd):
            return  # one is serving or starting
        subprocess.Popen([sys.executable, "-m", "engramdb.agents.resident", os.path.realpath(store),
                          "--lock-fd", str(lock_fd)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True, pass_fds=(lock_fd,), **module_run())
    except OSError:
        pass  # no resident: the next hook answers the usual way and tries again
    finally:
        os.close(lock_fd)  # the resident holds the lock through its own copy


_wanted: list[Path | str] = []  # the store whose hook found no resident: one is started after the answer


def start_wanted() -> None:
    """Start the resident a hook of this process found missing (`fast_hook`), if any: called once
    the hook has printed its answer, so the new process's imports and open do not slow it down."""
    while _wanted:
        spawn(_wanted.pop())


def print_context(event: str, text: str) -> None:
    """The hook's answer on stdout, as Claude Code reads it (nowhere when stdout is closed)."""
    body = json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                      ensure_ascii=False)
    if sys.stdout is None:
        return
    try:
        sys.stdout.write(body + "\n")
        sys.stdout.flush()
    except OSError:  # the agent stopped reading: nothing to do about it
        pass


def note(event: str, message: str) -> None:
    """One line on stderr, as every hook says what went wrong (nowhere when stderr is closed: print
    would write it to stdout, beside the answer)."""
    if sys.stderr is None:
        return
    try:
        print(f"engramdb hook {event}: {message}", file=sys.stderr, flush=True)
    except OSError:
        pass


def read_stdin() -> str:
    """The hook's stdin, whole, as text: UTF-8, undecodable bytes kept as lone surrogates (the
    hook's parse mends them), whatever the locale's encoding and error handler say; "" for a
    terminal or a closed stdin."""
    stream = sys.stdin
    if stream is None or stream.isatty():
        return ""
    raw = getattr(stream, "buffer", None)
    if raw is None:  # a text stream of its own (what fast_hook hands back)
        return stream.read()
    data: bytes = raw.read()
    return data.decode("utf-8", "surrogateescape")


def process_start() -> float:
    """When this process started, on `time.monotonic`'s clock: the budget is the agent's wall
    time, interpreter start-up and imports included, which a loaded machine can make a second or
    more (Linux's /proc says when; elsewhere, or when the hook runs inside an older process, now)."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as f:
            proc = f.read()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        ticks = int(proc[proc.rindex(b")") + 2:].split()[19])  # field 22, starttime, in clock ticks since boot
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now
    return now - age if 0 <= age <= _PROCESS_AGE_LIMIT_S else now


def _options(argv: list[str]) -> tuple[str, str | None, str | None, int] | None:
    """(event, --path, --namespace, --max-chars) of `hook EVENT ...`; None for anything the full
    command line should read (it says what is wrong)."""
    if not argv or argv[0] not in RESIDENT_EVENTS + CAPTURE_ONLY:
        return None
    event, values, rest = argv[0], {"path": None, "namespace": None, "max_chars": "8000"}, argv[1:]
    names = {"-p": "path", "--path": "path", "--namespace": "namespace", "--max-chars": "max_chars"}
    seen: set[str] = set()
    i = 0
    while i < len(rest):
        arg = rest[i]
        name, inline, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name not in names or names[name] in seen:
            return None
        if not inline:  # `--namespace=` is an empty value, as argparse has it: the next word is not its value
            if i + 1 >= len(rest):
                return None
            value, i = rest[i + 1], i + 1
            if value.startswith("-") and not _negative_number(value):
                return None  # argparse takes it for an option: `--namespace --max-chars` is an error there
        seen.add(names[name])
        values[names[name]] = value
        i += 1
    try:
        max_chars = int(values["max_chars"] or "")
    except ValueError:
        return None
    return event, values["path"], values["namespace"], max_chars


def _late_lately(sock_path: str) -> bool:
    """Whether the resident at `sock_path` let a hook's budget run out less than LATE_HOLD_S ago: the
    hooks then answer in their own process meanwhile. A resident that accepts and never answers (a
    stopped process, a wedged one: its lock held, no other can start) would otherwise cost every
    prompt and tool call its whole budget, for ever."""
    try:
        return 0 <= time.time() - os.stat(f"{sock_path}.late").st_mtime < LATE_HOLD_S
    except OSError:
        return False


def _mark_late(sock_path: str) -> None:
    """Its time set to now, or made (as `Path.touch(mode=0o600)` does it, without pathlib)."""
    late = f"{sock_path}.late"
    try:
        os.utime(late)
        return
    except OSError:
        pass
    try:
        os.close(os.open(late, os.O_CREAT | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600))
    except OSError:
        pass


def _budget_s(event: str) -> float:
    raw = os.environ.get("ENGRAMDB_HOOK_BUDGET_MS", "").strip()
    try:
        value = int(raw) if raw else 0
    except ValueError:
        value = 0
    return (value if value > 0 else SERVED_BUDGETS_MS[event]) / 1000


def want(store: Path) -> None:
    """Start a resident reader for `store` once this hook has answered (`start_wanted`), unless the
    resident is off: SessionStart asks for one, so a session's first prompt and tool call find it
    ready (spawn does nothing when one serves already)."""
    if enabled() and store.is_dir():
        _wanted.append(store)


def _capture(event: str, payload: dict[str, Any], path: str | None, namespace: str | None) -> Path | None:
    """Keep the capture of an event whose read the resident answered, or that only captures:
    spooled by this process (the resident writes nothing). Imports the hooks' capture path (the
    standard library and the engine's record rules: no numpy, no Arrow). The store it was spooled
    for, None when nothing was kept."""
    from .capture import capture_alone

    kept, why = capture_alone(event, payload, path, namespace)  # parsed once: a deep payload is not parsed again deeper
    if why:
        note(event, why)
    return kept


def _capture_only(event: str, payload: dict[str, Any], path: str | None, namespace: str | None,
                  start: float, budget: float) -> int:
    """A capture-only event's hook (the process started at `start`, `process_start`'s clock): its
    capture spooled here, then taken in by a writer of its own (take_in.py), waited for up to
    take_in.WAIT_SHARE of the budget; the exit code (0)."""
    kept = _capture(event, payload, path, namespace)
    if kept is None:
        return 0
    from .take_in import WAIT_SHARE, hand_over

    why = hand_over(kept, start + WAIT_SHARE * budget)
    if why:
        note(event, why)
    elif time.monotonic() > start + budget:  # kept all the same: said, as the usual way's rescue says it
        note(event, f"over its {round(budget * 1000)} ms budget: the capture was spooled for the next writer")
    return 0


def fast_hook(argv: list[str]) -> int | None:
    """`engramdb hook EVENT ...` by this module's short ways: the exit code (0), or None when this
    process must answer the usual way (hooks.py). A capture-only event (CAPTURE_ONLY) on an existing
    store is spooled here and taken in by a process of its own (take_in.py). A read of
    RESIDENT_EVENTS is answered by the store's resident reader, unless the resident is off, or no
    resident listens yet (then one is started for the next events). The usual way answers when an
    option is not one these paths read, stdin is not a JSON object naming its `cwd`, or the store
    folder does not exist yet. Stdin, when read here, is handed back through `sys.stdin`."""
    options = _options(argv)
    if options is None:
        return None
    event, path, namespace, max_chars = options
    if event not in CAPTURE_ONLY and not enabled():
        return None
    budget = _budget_s(event)
    start = process_start()
    deadline = start + budget
    reserve = CAPTURE_SHARE * budget if event in CAPTURING else 0.0
    raw = read_stdin()
    sys.stdin = io.StringIO(raw)  # the usual way reads it again
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError):  # the usual way says what is wrong with it
        return None
    if not isinstance(payload, dict):
        return None
    env_path = os.environ.get("ENGRAMDB_PATH", "")
    chosen = path or (env_path if env_path.strip() else None)
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return None  # the session's folder is this process's: the resident's would name another namespace
    store = chosen if chosen else os.path.join(cwd, STORE_FOLDER)
    if not os.path.isdir(store):
        return None  # nothing captured yet: the usual way makes the store (or, for a read, prints nothing)
    if event in CAPTURE_ONLY:
        return _capture_only(event, payload, path, namespace, start, budget)
    sock_path = socket_name(store)
    if sock_path is None or _late_lately(sock_path):
        return None
    request = {"event": event, "stdin": raw, "store": os.path.realpath(store),
               "namespace": namespace or os.environ.get("ENGRAMDB_NAMESPACE") or None, "max_chars": max_chars,
               "budget_s": max(0.0, deadline - reserve - time.monotonic())}
    if event in CAPTURING:  # the capture's imports (~100 ms) while the resident works: off the answer's path
        import importlib
        import threading

        threading.Thread(target=importlib.import_module, args=(f"{__package__}.capture",), daemon=True).start()
    try:
        answer = ask(sock_path, request, max(0.001, deadline - reserve - time.monotonic()))
    except TimeoutError:
        _mark_late(sock_path)
        if event in CAPTURING:
            _capture(event, payload, path, namespace)
        note(event, f"nothing printed: the resident reader was late (no answer within "
                    f"{round((budget - reserve) * 1000)} ms of the {round(budget * 1000)} ms budget)")
        return 0
    except (OSError, ValueError) as exc:
        note(event, f"the resident reader failed ({type(exc).__name__}: {exc}): answered without it")
        return None
    if answer is None:
        _wanted.append(store)  # started once this process has answered (it would compete for the CPU)
        return None
    if answer.get("fallback"):  # its store was replaced, or cannot be reopened: the usual way reads it as it is
        if os.environ.get("ENGRAMDB_DEBUG"):
            note(event, str(answer["fallback"]))
        return None
    text = answer.get("text")
    notes = [str(line) for line in answer.get("notes") or []]
    if text is None and any(line.startswith(REFUSED) for line in notes):
        return None  # a resident of another release that does not serve this event: the usual way answers
    if event in CAPTURING:  # after the read (not its own best match), before the answer is printed (kept first)
        _capture(event, payload, path, namespace)
    if isinstance(text, str) and text:
        print_context(event, text)
    for line in notes:
        note(event, line)
    if os.environ.get("ENGRAMDB_DEBUG"):
        note(event, f"answered by the resident reader (pid {answer.get('pid')})")
    return 0


__all__ = ["CAPTURE_ONLY", "CAPTURING", "LATE_HOLD_S", "PROTOCOL", "REFUSED", "RESIDENT_EVENTS", "SERVED_BUDGETS_MS", "ask", "enabled", "fast_hook", "idle_seconds", "note", "print_context",
           "process_start", "read_stdin", "socket_for", "spawn", "start_wanted", "want"]

"""What the hooks' resident-reader tests share: a project whose hooks may start a resident, the
processes serving a store, its socket, and waiting for a condition."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from engramdb.agents.resident_link import socket_for

MODULES = (b"engramdb.agents.resident", b"engramdb.agents.session_upkeep", b"engramdb.agents.take_in")  # what a hook starts, detached


@contextmanager
def hooks_env(store: Path, budget_ms: int = 120_000) -> Iterator[dict[str, str]]:
    """The environment of a project's hooks: the resident on, a runtime folder of its own (a short
    /tmp path: a Unix socket's is at most ~100 bytes), $ENGRAMDB_DEBUG (a hook says when the
    resident answered); every resident or upkeep process of `store` is killed after."""
    run = Path(tempfile.mkdtemp(prefix="edb-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k not in ("ENGRAMDB_PATH", "ENGRAMDB_NAMESPACE")}
    env.update({"ENGRAMDB_HOOK_RESIDENT": "1", "XDG_RUNTIME_DIR": str(run), "ENGRAMDB_DEBUG": "1",
                "ENGRAMDB_HOOK_RESIDENT_IDLE_S": "60", "ENGRAMDB_HOOK_BUDGET_MS": str(budget_ms)})
    try:
        yield env
    finally:
        for module in MODULES:
            for pid in processes(store, module):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(run, ignore_errors=True)


def processes(store: Path, module: bytes) -> list[int]:
    """The pids of the live processes running `module` for `store` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_bytes()
        except OSError:
            continue
        if module in cmd and os.fsencode(os.path.realpath(store)) in cmd and b") Z" not in state:
            out.append(int(entry.name))
    return out


def socket_in(store: Path, env: dict[str, str]) -> Path:
    """The resident's socket for `store` under the runtime folder `env` names."""
    old = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = env["XDG_RUNTIME_DIR"]
    try:
        sock = socket_for(store)
    finally:
        if old is None:
            del os.environ["XDG_RUNTIME_DIR"]
        else:
            os.environ["XDG_RUNTIME_DIR"] = old
    assert sock is not None
    return sock


def listening(sock: Path) -> bool:
    """Whether something accepts connections on `sock`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(sock))
        except OSError:
            return False
    return True


def wait(predicate: Callable[[], bool], seconds: float = 60.0) -> bool:
    """Whether `predicate` came true within `seconds` (polled every 0.1 s)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def exchange(sock: Path, data: bytes, timeout: float = 60.0) -> dict[str, object]:
    """One raw request on a resident's socket, its reply parsed."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(sock))
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    reply = json.loads(answer)
    assert isinstance(reply, dict)
    return reply

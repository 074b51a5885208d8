"""The hooks' resident reader (agents/resident.py, agents/resident_link.py), through real hook
processes (`python -m engramdb hook PreToolUse`) and a real resident process: the first event
answers in its own process and starts the resident; the next ones are answered by it, with the same
text; it follows the writer, leaves when idle or when its store goes, is replaced after a kill, and
is never used from a runtime folder others may enter. $ENGRAMDB_DEBUG makes a hook say on stderr
when the resident answered (how these tests tell the two ways apart)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import engramdb
import pytest
from resident_helpers import exchange as _exchange
from resident_helpers import hooks_env, processes
from resident_helpers import listening as _listening
from resident_helpers import socket_in as socket_for_env
from resident_helpers import wait as _wait

NS = "proj"
SERVED = "answered by the resident reader"
FACTS = ["The deploy script lives in scripts/deploy.sh and needs AWS_PROFILE set.",
         "Run pytest with -x to stop at the first failure.",
         "The database migrations are in alembic/versions."]


def _payload(cwd: Path, command: str) -> str:
    return json.dumps({"session_id": "s1", "cwd": str(cwd), "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}})


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A project folder with a store of three facts, and the environment of its hooks (the resident
    on, a runtime folder of its own, a short idle time); every resident it started is stopped after."""
    cwd = tmp_path / "proj"
    with engramdb.open(cwd / ".engramdb") as db:
        for fact in FACTS:
            db.add(fact, namespace=NS)
    with hooks_env(cwd / ".engramdb") as env:
        yield cwd, env


def _residents(store: Path) -> list[int]:
    return processes(store, b"engramdb.agents.resident")


def _mapped(pid: int, store: Path) -> set[str]:
    """The files of `store` process `pid` has mapped (the segments of the snapshots it holds)."""
    folder = os.path.realpath(store)
    return {line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if folder in line}


def _threads(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def _hook(cwd: Path, env: dict[str, str], command: str = "bash scripts/deploy.sh",
          *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engramdb", "hook", "PreToolUse", "--namespace", NS, *extra],
                          input=_payload(cwd, command), capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def _text(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    text = out["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str)
    return text


def _served(cwd: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    """A hook answered by the resident (waits for one to listen)."""
    sock = socket_for_env(cwd / ".engramdb", env)
    assert _wait(lambda: _listening(sock)), "no resident listens"
    proc = _hook(cwd, env, "bash scripts/deploy.sh", *extra)
    assert SERVED in proc.stderr, proc.stderr
    return proc



def test_first_hook_answers_itself_and_the_next_are_served_with_the_same_text(
        project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    first = _hook(cwd, env)
    assert SERVED not in first.stderr
    own = _text(first)
    assert "scripts/deploy.sh" in own
    served = _served(cwd, env)
    assert _text(served) == own
    assert len(_residents(cwd / ".engramdb")) == 1
    # the resident on, the same text as a hook that answers alone
    alone = _hook(cwd, {**env, "ENGRAMDB_HOOK_RESIDENT": "0"})
    assert SERVED not in alone.stderr and _text(alone) == own
    # options as the full command line takes them: --path=..., -p ..., --max-chars
    store = str(cwd / ".engramdb")
    assert _text(_served(cwd, env, f"--path={store}")) == own
    short = _text(_served(cwd, env, "-p", store, "--max-chars", "60"))
    assert len(short) <= 60 and own.startswith(short)


def test_the_resident_follows_the_writer(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    _hook(cwd, env)
    _served(cwd, env)
    with engramdb.open(cwd / ".engramdb") as db:
        db.add("The kubectl rollout for staging runs from scripts/rollout.sh with KUBECONFIG set.", namespace=NS)
    # the first request after the write may be answered from the old snapshot; a later one is not
    # (nothing printed: no memory matched well)
    assert _wait(lambda: "rollout.sh" in _hook(cwd, env, "bash scripts/rollout.sh").stdout, 30)
    assert SERVED in _hook(cwd, env, "bash scripts/rollout.sh").stderr


def test_the_resident_reopens_between_requests_once_the_writer_is_done(project: tuple[Path, dict[str, str]]) -> None:
    """It looks at its folder between requests too: a write the folder has held still for a while
    is in the snapshot of the very next request (before, the first request after a write was
    answered from the old snapshot and started the reopen, taking the GIL from the requests beside it)."""
    cwd, env = project
    _hook(cwd, env)
    _served(cwd, env)
    [pid] = _residents(cwd / ".engramdb")
    mapped, threads = _mapped(pid, cwd / ".engramdb"), _threads(pid)
    with engramdb.open(cwd / ".engramdb") as db:
        db.add("The kubectl rollout for staging runs from scripts/rollout.sh with KUBECONFIG set.", namespace=NS)
    # the writer done: still for QUIET_S (0.3 s), looked at every WATCH_S (0.25 s), reopened and
    # warmed on a thread of its own. Waited for as such (the new segment mapped, that thread gone),
    # not for a fixed 4 s: 0.6 s here, 0.85 s with two busy loops, more on a slower machine
    assert _wait(lambda: bool(_mapped(pid, cwd / ".engramdb") - mapped) and _threads(pid) <= threads), \
        "the resident did not reopen"
    first = _hook(cwd, env, "bash scripts/rollout.sh")
    assert SERVED in first.stderr and "rollout.sh" in first.stdout, first.stderr


def test_a_killed_resident_is_replaced_and_hooks_never_fail(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    own = _text(_hook(cwd, env))
    _served(cwd, env)
    [pid] = _residents(cwd / ".engramdb")
    os.kill(pid, signal.SIGKILL)
    assert _wait(lambda: not Path(f"/proc/{pid}").exists() or b"Z" in Path(f"/proc/{pid}/stat").read_bytes()[:80])
    sock = socket_for_env(cwd / ".engramdb", env)
    assert sock.exists()  # left behind by the kill
    after = _hook(cwd, env)  # a stale socket: answered in its own process, a new resident started
    assert SERVED not in after.stderr and _text(after) == own
    assert _wait(lambda: bool([p for p in _residents(cwd / ".engramdb") if p != pid]))
    assert _text(_served(cwd, env)) == own


def test_the_resident_leaves_when_idle_or_when_its_store_goes(project: tuple[Path, dict[str, str]],
                                                              tmp_path: Path) -> None:
    cwd, env = project
    _hook(cwd, {**env, "ENGRAMDB_HOOK_RESIDENT_IDLE_S": "1"})
    assert _wait(lambda: bool(_residents(cwd / ".engramdb")), 30)
    assert _wait(lambda: not _residents(cwd / ".engramdb"), 30)
    sock = socket_for_env(cwd / ".engramdb", env)
    assert not sock.exists()  # it removed its own socket
    _hook(cwd, env)
    _served(cwd, env)
    (cwd / ".engramdb").rename(tmp_path / "moved")
    assert _wait(lambda: not _residents(cwd / ".engramdb"), 30)


def test_a_runtime_folder_others_may_enter_is_not_used(project: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    cwd, env = project
    open_run = Path(env["XDG_RUNTIME_DIR"]) / "o"
    open_run.mkdir()
    (open_run / "engramdb").mkdir()
    os.chmod(open_run / "engramdb", 0o777)
    env = {**env, "XDG_RUNTIME_DIR": str(open_run)}
    for _ in range(2):
        proc = _hook(cwd, env)
        assert SERVED not in proc.stderr and "scripts/deploy.sh" in _text(proc)
    time.sleep(1.0)
    assert not _residents(cwd / ".engramdb")
    assert list((open_run / "engramdb").iterdir()) == []


def test_the_resident_refuses_bad_requests_and_keeps_serving(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    own = _text(_hook(cwd, env))
    _served(cwd, env)
    sock = socket_for_env(cwd / ".engramdb", env)

    assert "refused" in _exchange(sock, b"\xff\xfe not json")["notes"][0]  # type: ignore[index]
    assert "bad event" in _exchange(sock, json.dumps({"event": "SessionEnd"}).encode())["notes"][0]  # type: ignore[index]
    other = {"event": "PreToolUse", "stdin": _payload(cwd, "ls"), "store": "/etc", "namespace": NS,
             "max_chars": 100, "budget_s": 1.0}
    reply = _exchange(sock, json.dumps(other).encode())
    assert reply["text"] is None and "bad store" in reply["notes"][0]  # type: ignore[index]
    not_json_stdin = {**other, "store": str(cwd / ".engramdb"), "stdin": "not json"}
    assert _exchange(sock, json.dumps(not_json_stdin).encode())["text"] is None
    assert _text(_served(cwd, env)) == own


def test_a_hook_process_does_not_import_pandas(project: tuple[Path, dict[str, str]]) -> None:
    """pyarrow imports pandas (when installed) at its first list conversion: a hook process refuses
    it (agents/hook_process.py); a process that imported it before keeps it."""
    pytest.importorskip("pandas")
    cwd, env = project
    env = {**env, "ENGRAMDB_HOOK_RESIDENT": "0"}
    code = ("import sys; from engramdb.cli import main; main(sys.argv[1:]); "
            "print('PANDAS', 'pandas' in sys.modules, file=sys.stderr)")
    args = ["hook", "PreToolUse", "--namespace", NS]
    proc = subprocess.run([sys.executable, "-c", code, *args], input=_payload(cwd, "bash scripts/deploy.sh"),
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert "scripts/deploy.sh" in _text(proc)
    assert "PANDAS False" in proc.stderr, proc.stderr
    first = subprocess.run([sys.executable, "-c", "import pandas; " + code, *args],
                           input=_payload(cwd, "bash scripts/deploy.sh"), capture_output=True, text=True, env=env,
                           timeout=120, check=False)
    assert _text(first) == _text(proc) and "PANDAS True" in first.stderr


# what a served hook may not import: each was 8-33 ms of a new process on a 2-core machine, together
# half of the hook's answer (agents/resident_link.py); numpy, Arrow and the engine never
HEAVY = ("typing", "pathlib", "subprocess", "tempfile", "socket", "hashlib", "threading", "collections.abc",
         "numpy", "pyarrow", "engramdb.store", "engramdb.storage")


def test_a_hook_the_resident_answers_imports_only_light_modules(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    _hook(cwd, env)  # answers alone and starts the resident
    sock = socket_for_env(cwd / ".engramdb", env)
    assert _wait(lambda: _listening(sock)), "no resident listens"
    code = ("import sys, json; from engramdb.cli import main; code = main(sys.argv[1:]); "
            "print('MODULES', json.dumps(sorted(sys.modules)), file=sys.stderr); sys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", code, "hook", "PreToolUse", "--namespace", NS],
                          input=_payload(cwd, "bash scripts/deploy.sh"), capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert SERVED in proc.stderr, proc.stderr
    assert "scripts/deploy.sh" in _text(proc)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    loaded = set(json.loads(line.removeprefix("MODULES ")))
    assert "engramdb.agents.resident_link" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_a_relative_runtime_folder_is_ignored_so_the_hook_and_its_resident_meet(
        project: tuple[Path, dict[str, str]]) -> None:
    """A relative $XDG_RUNTIME_DIR (which the XDG spec says to ignore) would resolve against the
    hook's working folder and the resident's (/) differently: both pass over it, to $TMPDIR."""
    cwd, env = project
    env = {**env, "XDG_RUNTIME_DIR": "relative/run", "TMPDIR": env["XDG_RUNTIME_DIR"]}
    first = _hook(cwd, env)
    assert SERVED not in first.stderr
    sock = Path(env["TMPDIR"]) / f"engramdb-{os.getuid()}" / socket_for_env(cwd / ".engramdb", env).name
    assert _wait(lambda: _listening(sock)), "no resident listens"
    served = _hook(cwd, env)
    assert SERVED in served.stderr, served.stderr
    assert _text(served) == _text(first)

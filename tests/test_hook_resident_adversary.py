"""The hooks' resident reader under attack (issue 26), through real hook processes and a real
resident: hostile clients on its socket, a storm of hooks, a store replaced or damaged under it,
the environment of the hook that started it, and options the fast path must read as the full
command line does. Each test failed before its fix; none asserts on time (budgets are generous:
a hook that prints nothing within one means the resident held it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import engramdb
import pytest
from engramdb.storage.folder import fingerprint
from test_hook_resident import (
    FACTS,
    NS,
    SERVED,
    _exchange,
    _hook,
    _listening,
    _payload,
    _residents,
    _served,
    _text,
    _wait,
    socket_for_env,
)

Project = tuple[Path, dict[str, str]]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    """As test_hook_resident's: a store of three facts in a project folder, the hooks' environment
    (a runtime folder of its own, a short path); every resident serving it is stopped after."""
    cwd = tmp_path / "proj"
    with engramdb.open(cwd / ".engramdb") as db:
        for fact in FACTS:
            db.add(fact, namespace=NS)
    run = Path(tempfile.mkdtemp(prefix="edb-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k not in ("ENGRAMDB_PATH", "ENGRAMDB_NAMESPACE")}
    env.update({"ENGRAMDB_HOOK_RESIDENT": "1", "XDG_RUNTIME_DIR": str(run), "ENGRAMDB_DEBUG": "1",
                "ENGRAMDB_HOOK_RESIDENT_IDLE_S": "60", "ENGRAMDB_HOOK_BUDGET_MS": "120000"})
    yield cwd, env
    for pid in _residents(cwd / ".engramdb"):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(run, ignore_errors=True)


ROLLOUT = "The kubectl rollout for staging runs from scripts/rollout.sh with KUBECONFIG set."


def _counting_residents(env: dict[str, str], tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The hooks' environment with a sitecustomize that makes every resident process started write
    its pid to the returned log at its very start (before it could take its lock)."""
    site, log = tmp_path / "site", tmp_path / "started.log"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if 'engramdb.agents.resident' in sys.orig_argv:\n"
        f"    open({str(log)!r}, 'a').write(str(os.getpid()) + '\\n')\n")
    return {**env, "PYTHONPATH": str(site)}, log


def _request(cwd: Path, **change: object) -> bytes:
    request: dict[str, object] = {"event": "PreToolUse", "stdin": _payload(cwd, "bash scripts/deploy.sh"),
                                  "store": str(cwd / ".engramdb"), "namespace": NS, "max_chars": 8000,
                                  "budget_s": 30.0}
    request.update(change)
    return json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _run(cwd: Path, env: dict[str, str], args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engramdb", "hook", "PreToolUse", *args], input=stdin,
                          capture_output=True, text=True, env=env, timeout=120, check=False, cwd=cwd)


def test_hostile_requests_never_end_the_resident_nor_fail_a_hook(project: Project) -> None:
    cwd, env = project
    own = _text(_hook(cwd, env))
    _served(cwd, env)
    [pid] = _residents(cwd / ".engramdb")
    sock = socket_for_env(cwd / ".engramdb", env)
    store_before = fingerprint(cwd / ".engramdb")
    # stdin nested past Python's parser: the hook exits 0, no traceback, nothing printed
    nested = _run(cwd, env, ["--namespace", NS], "[" * 100_000)
    assert nested.returncode == 0 and nested.stdout == "" and "Traceback" not in nested.stderr, nested.stderr
    # requests that raised inside the resident (which then left): a nested request, a nested stdin,
    # a namespace Python cannot encode; each gets a reply, from the same resident
    assert "refused" in str(_exchange(sock, b"[" * 100_000)["notes"])
    deep_stdin = '{"cwd": "/", "tool_name": "Bash", "tool_input": ' + "[" * 100_000 + "}"
    for bad in (_request(cwd, stdin=deep_stdin), _request(cwd, stdin="[" * 100_000), _request(cwd, namespace="\ud800")):
        reply = _exchange(sock, bad)
        assert reply["text"] is None and reply["pid"] == pid, reply
    assert _residents(cwd / ".engramdb") == [pid]
    assert _text(_served(cwd, env)) == own
    # and it wrote nothing into the store folder
    assert fingerprint(cwd / ".engramdb") == store_before


def test_slow_and_silent_clients_hold_no_hook(project: Project) -> None:
    cwd, env = project
    own = _text(_hook(cwd, env))
    _served(cwd, env)
    sock = socket_for_env(cwd / ".engramdb", env)
    env = {**env, "ENGRAMDB_HOOK_BUDGET_MS": "20000"}
    # a client that sends its request a byte a second, and never finishes it while the hook runs
    stop, drip_reply = threading.Event(), []

    def drip() -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(sock))
            for byte in _request(cwd):
                if stop.wait(1.0):
                    break
                try:
                    s.sendall(bytes([byte]))
                except OSError:
                    break
            s.settimeout(60)
            drip_reply.append(s.recv(65536))

    dripper = threading.Thread(target=drip)
    dripper.start()
    silent = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(8)]  # connect, send nothing
    try:
        for s in silent:
            s.connect(str(sock))
        proc = _hook(cwd, env)
        assert SERVED in proc.stderr and _text(proc) == own, proc.stderr
        # a request must arrive whole within the resident's limit, however slowly it is sent
        dripper.join(60)
        assert b"not whole" in drip_reply[0]
        # more clients at once than it serves: the one over its limit answers in its own process
        crowd = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(40)]
        try:
            for s in crowd:
                s.connect(str(sock))
            proc = _hook(cwd, env)
            assert proc.returncode == 0 and _text(proc) == own, proc.stderr
        finally:
            for s in crowd:
                s.close()
    finally:
        stop.set()
        dripper.join(60)
        for s in silent:
            s.close()
    assert _text(_served(cwd, env)) == own


def test_a_storm_of_hooks_starts_one_resident(project: Project, tmp_path: Path) -> None:
    cwd, env = project
    env, log = _counting_residents(env, tmp_path)
    storm = [subprocess.Popen([sys.executable, "-m", "engramdb", "hook", "PreToolUse", "--namespace", NS],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(6)]
    outs = [p.communicate(_payload(cwd, "bash scripts/deploy.sh"), timeout=120) for p in storm]
    assert all(p.returncode == 0 for p in storm) and all("scripts/deploy.sh" in out for out, _ in outs)
    sock = socket_for_env(cwd / ".engramdb", env)
    assert _wait(lambda: _listening(sock))
    assert _wait(lambda: len(_residents(cwd / ".engramdb")) == 1)
    assert len(log.read_text().split()) == 1


def test_the_namespace_is_the_hooks_not_the_residents(project: Project) -> None:
    cwd, env = project  # the project folder is named "proj": its namespace is NS
    # the hook that starts the resident names another namespace through the environment
    _run(cwd, {**env, "ENGRAMDB_NAMESPACE": "elsewhere"}, [], _payload(cwd, "bash scripts/deploy.sh"))
    sock = socket_for_env(cwd / ".engramdb", env)
    assert _wait(lambda: _listening(sock))
    alone = _run(cwd, {**env, "ENGRAMDB_HOOK_RESIDENT": "0"}, [], _payload(cwd, "bash scripts/deploy.sh"))
    served = _run(cwd, env, [], _payload(cwd, "bash scripts/deploy.sh"))
    assert "scripts/deploy.sh" in _text(alone)
    assert _text(served) == _text(alone)
    # a payload without a cwd: the session's folder is the hook's own, not the resident's
    no_cwd = json.dumps({**json.loads(_payload(cwd, "bash scripts/deploy.sh")), "cwd": ""})
    store = ["-p", str(cwd / ".engramdb")]
    assert _text(_run(cwd, env, store, no_cwd)) == _text(_run(cwd, {**env, "ENGRAMDB_HOOK_RESIDENT": "0"}, store, no_cwd))


def test_options_are_read_as_the_full_command_line_reads_them(project: Project, tmp_path: Path) -> None:
    cwd, env = project
    other = tmp_path / "other"
    with engramdb.open(other) as db:
        db.add(ROLLOUT, namespace=NS)
    _hook(cwd, env)
    _served(cwd, env)
    stdin = _payload(cwd, "bash scripts/rollout.sh")
    try:
        for args in (["--namespace=", f"--path={other}"],  # an empty value given with `=` takes no next word
                     ["--namespace", "-x"],  # a word argparse takes for an option: an error there
                     ["--max-chars", "-5", "--namespace", NS],
                     ["--max-chars", "-.5", "--namespace", NS],  # a negative number to argparse, not an int
                     ["--namespace", "-\u0663"]):  # an Arabic-Indic 3: a decimal digit, so a value
            served = _run(cwd, env, args, stdin)
            alone = _run(cwd, {**env, "ENGRAMDB_HOOK_RESIDENT": "0"}, args, stdin)
            assert (served.returncode, served.stdout) == (alone.returncode, alone.stdout), (args, served.stderr)
    finally:
        for pid in _residents(other):  # the one the `--path=` hook started
            os.kill(pid, signal.SIGKILL)


def test_a_store_replaced_or_damaged_under_the_resident_is_never_answered_from_the_old_one(
        project: Project, tmp_path: Path) -> None:
    cwd, env = project
    own = _text(_hook(cwd, env))
    _served(cwd, env)
    # a backup restored in its place: another store now at the same path
    backup = tmp_path / "backup"
    with engramdb.open(backup) as db:
        db.add(ROLLOUT, namespace=NS)
        for fact in FACTS:
            db.add(fact, namespace=NS)
    (cwd / ".engramdb").rename(tmp_path / "old")
    backup.rename(cwd / ".engramdb")
    first = _hook(cwd, env, "bash scripts/rollout.sh")
    assert "rollout.sh" in _text(first), first.stderr
    # a damaged segment: every hook exits 0; what is printed is the sound snapshot's answer, never
    # an exchange that broke; then the damage is said, as a hook answering alone says it
    assert _wait(lambda: SERVED in _hook(cwd, env).stderr)
    own = _text(_hook(cwd, env))
    [segment] = sorted((cwd / ".engramdb").glob("seg-*.arrow"))[:1]
    data = bytearray(segment.read_bytes())
    at = data.find(b"deploy script")
    data[at:at + 6] = b"DEPLOX"
    segment.write_bytes(bytes(data))
    seen: list[subprocess.CompletedProcess[str]] = []

    def damage_said() -> bool:
        seen.append(_hook(cwd, env))
        return "CorruptFile" in seen[-1].stderr

    assert _wait(damage_said)
    for proc in seen:
        assert proc.returncode == 0 and "JSONDecodeError" not in proc.stderr and "DEPLOX" not in proc.stdout
        assert proc.stdout == "" or _text(proc) == own
    shutil.rmtree(tmp_path / "old")


def test_a_file_at_the_sockets_name_is_left_as_it_is(project: Project) -> None:
    cwd, env = project
    sock = socket_for_env(cwd / ".engramdb", env)
    sock.parent.mkdir(mode=0o700, exist_ok=True)
    sock.write_text("not a socket: something of the user's")
    own = _text(_hook(cwd, {**env, "ENGRAMDB_HOOK_RESIDENT": "0"}))
    for _ in range(2):
        proc = _hook(cwd, env)
        assert SERVED not in proc.stderr and _text(proc) == own
    assert _wait(lambda: not _residents(cwd / ".engramdb"))
    assert sock.read_text() == "not a socket: something of the user's"


def test_a_store_that_cannot_be_opened_starts_no_resident_per_hook(project: Project, tmp_path: Path) -> None:
    cwd, env = project
    env, log = _counting_residents(env, tmp_path)
    [segment] = sorted((cwd / ".engramdb").glob("seg-*.arrow"))[:1]
    data = bytearray(segment.read_bytes())
    at = data.find(b"deploy script")
    data[at:at + 6] = b"DEPLOX"
    segment.write_bytes(bytes(data))
    for _ in range(3):  # each answers alone and says what is wrong; one resident was started, not three
        proc = _hook(cwd, env)
        assert proc.returncode == 0 and proc.stdout == "" and "CorruptFile" in proc.stderr, proc.stderr
    assert len(log.read_text().split()) == 1


def test_a_stdin_too_big_for_the_resident_is_answered_alone_without_a_broken_exchange(project: Project) -> None:
    cwd, env = project
    _hook(cwd, env)
    _served(cwd, env)
    big = json.dumps({"session_id": "s1", "cwd": str(cwd), "hook_event_name": "PreToolUse", "tool_name": "Write",
                      "tool_input": {"file_path": "scripts/deploy.sh", "content": "\\" * (17 * 1024 * 1024)}})
    served = _run(cwd, env, ["--namespace", NS], big)
    alone = _run(cwd, {**env, "ENGRAMDB_HOOK_RESIDENT": "0"}, ["--namespace", NS], big)
    assert "resident reader failed" not in served.stderr, served.stderr
    assert (served.returncode, served.stdout) == (alone.returncode, alone.stdout)

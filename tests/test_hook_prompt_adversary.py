"""Stop 40's adversary pass on the hooks' new paths (UserPromptSubmit answered by the resident reader,
its prompt spooled by the hook process; SessionEnd's upkeep in a process of its own): each test
failed on 75f0694. A prompt is kept exactly once and the hook exits 0 whatever the input, the
locale, a closed stdout, a resident of another release or the project's own modules do."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import engramdb
import pytest
from resident_helpers import hooks_env, listening, socket_in

NS = "proj"
PROMPT = "How do I run the deploy script?"
BIN = str(Path(sys.executable).parent / "engramdb")


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    cwd = tmp_path / "proj"
    with engramdb.open(cwd / ".engramdb") as db:
        db.add("The deploy script lives in scripts/deploy.sh and needs AWS_PROFILE set.", namespace=NS)
    with hooks_env(cwd / ".engramdb", budget_ms=20_000) as env:
        yield cwd, env


def _sock(store: Path, env: dict[str, str]) -> Path:
    return socket_in(store, env)


def _listening(store: Path, env: dict[str, str]) -> bool:
    return listening(socket_in(store, env))


def _start_resident(cwd: Path, env: dict[str, str]) -> None:
    r = _run("SessionStart", cwd, env, json.dumps({"session_id": "s1", "cwd": str(cwd), "source": "startup"}).encode())
    assert r.returncode == 0, r.stderr
    end = time.monotonic() + 60
    while not _listening(cwd / ".engramdb", env):
        assert time.monotonic() < end, "no resident"
        time.sleep(0.1)


def _run(event: str, cwd: Path, env: dict[str, str], stdin: bytes, shell_suffix: str = "",
         run_cwd: str | Path = "/tmp") -> subprocess.CompletedProcess[bytes]:
    cmd = f"{sys.executable} -m engramdb hook {event} --namespace {NS} {shell_suffix}"
    return subprocess.run(cmd, shell=True, input=stdin, capture_output=True, env=env, timeout=180, check=False,
                          cwd=run_cwd)


def _kept(store: Path, text: str) -> int:
    with engramdb.open(store) as db:  # the writer takes the spool in
        return sum(1 for m in db.list(NS, limit=10_000) if m.content == text)


def _payload(cwd: Path, prompt: str) -> dict[str, object]:
    return {"session_id": "s1", "cwd": str(cwd), "hook_event_name": "UserPromptSubmit", "prompt": prompt}


# 1. lost data, exit 1 + traceback: the fast path reads stdin as text with the locale's error handler
#    (strict under any UTF-8 locale but C/C.UTF-8): one byte that is not UTF-8 and the hook crashes
#    before it parsed anything; the usual path (_work) says it and also keeps nothing.
def test_non_utf8_stdin_in_a_strict_locale_exits_0_and_keeps_the_prompt(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    _start_resident(cwd, env)
    raw = json.dumps(_payload(cwd, "deploy XX")).encode().replace(b"XX", b"\xff")
    r = _run("UserPromptSubmit", cwd, {**env, "PYTHONIOENCODING": "utf-8:strict"}, raw)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr.decode()[-500:]
    assert _kept(cwd / ".engramdb", "deploy \ufffd") == 1


# 2. lost data, exit 1 + traceback (and at 987 the context WAS printed first): a payload whose
#    nesting passes fast_hook's json.loads but not capture_alone's ev.parse, a few frames deeper
#    (ev.parse catches ValueError, not RecursionError; capture_alone catches HookInputError only).
@pytest.mark.parametrize("depth", [987, 988, 989])
def test_nesting_near_the_recursion_limit_exits_0_and_keeps_the_prompt(project: tuple[Path, dict[str, str]],
                                                                      depth: int) -> None:
    cwd, env = project
    _start_resident(cwd, env)
    text = f"deploy depth {depth}"
    nested = "[" * depth + "]" * depth
    raw = f'{{"session_id": "s1", "cwd": "{cwd}", "prompt": "{text}", "x": {nested}}}'
    r = _run("UserPromptSubmit", cwd, env, raw.encode())
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr.decode()[-400:]
    assert _kept(cwd / ".engramdb", text) == 1


# 3. lost data, exit 1 + traceback: with stdout closed (`>&-`, sys.stdout is None) print_context
#    raises AttributeError before the fast path spools the prompt (the usual path spools first, so
#    it keeps it, but exits 1 too). cli.py says the hooks exit 0 that way "by contract".
def test_closed_stdout_exits_0_and_keeps_the_prompt(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    _start_resident(cwd, env)
    r = _run("UserPromptSubmit", cwd, env, json.dumps(_payload(cwd, PROMPT)).encode(), shell_suffix=">&-")
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr.decode()[-400:]
    assert _kept(cwd / ".engramdb", PROMPT) == 1


# 4. wrong answer (no context on every prompt for as long as it lives): a resident that refuses the
#    request (what every resident started by the release before 75f0694 answers for UserPromptSubmit:
#    its RESIDENT_EVENTS is ("PreToolUse",), and its idle timer is reset by each PreToolUse) is taken
#    as an answer: the hook prints nothing instead of answering in its own process. Here a stand-in
#    that answers as the old resident does (seen with the real old code too). Now a resident of another
#    release is not even asked (PROTOCOL and the events name the socket), and a refusal is no answer.
def test_a_resident_that_refuses_the_request_is_not_an_answer(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    sock = _sock(cwd / ".engramdb", env)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(str(sock))
        srv.listen(4)

        def serve() -> None:
            conn, _ = srv.accept()
            with conn:
                while conn.recv(65536):
                    pass
                conn.sendall(json.dumps({"text": None, "notes": ["the resident reader refused the request: bad event"],
                                         "pid": 1}).encode())

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        r = _run("UserPromptSubmit", cwd, env, json.dumps(_payload(cwd, PROMPT)).encode())
        t.join(5)
    assert r.returncode == 0
    assert r.stdout, "nothing printed: " + r.stderr.decode()
    assert "scripts/deploy.sh" in json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert _kept(cwd / ".engramdb", PROMPT) == 1


# 5. wrong answer (the upkeep never runs; the resident never starts): `python -m` puts the current
#    folder first on sys.path, and a hook runs in the project's folder, so the upkeep (and the resident
#    spawn) import the project's own modules: a project with a `token.py` breaks every SessionEnd
#    (and runs the project's files: secrets.py, etc. would be imported if named like a stdlib module).
def test_the_upkeep_does_not_import_the_projects_modules(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    (cwd / "token.py").write_text("")
    quiet = {**env, "ENGRAMDB_HOOK_RESIDENT": "0", "ENGRAMDB_HOOK_BUDGET_MS": "60000"}
    payload = {"session_id": "s1", "cwd": str(cwd), "hook_event_name": "SessionEnd", "reason": "exit"}
    r = subprocess.run([BIN, "hook", "SessionEnd"], input=json.dumps(payload).encode(), capture_output=True,
                       env=quiet, cwd=cwd, timeout=120, check=False)
    assert r.returncode == 0
    assert r.stderr == b"", r.stderr.decode()[-300:]


# 6. cosmetic: an upkeep that succeeded (exit 0) but logged a warning (here: a copied store takes an id
#    of its own) is reported by SessionEnd as "RuntimeError: <the warning>", a failure.
def test_a_successful_upkeeps_warning_is_not_reported_as_a_failure(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    copy = cwd.parent / "copy" / ".engramdb"
    shutil.copytree(cwd / ".engramdb", copy)
    quiet = {**env, "ENGRAMDB_HOOK_RESIDENT": "0", "ENGRAMDB_HOOK_BUDGET_MS": "60000"}
    payload = {"session_id": "s1", "cwd": str(copy.parent), "hook_event_name": "SessionEnd", "reason": "exit"}
    r = subprocess.run([BIN, "hook", "SessionEnd"], input=json.dumps(payload).encode(), capture_output=True,
                       env=quiet, cwd="/tmp", timeout=120, check=False)
    assert r.returncode == 0
    assert b"RuntimeError" not in r.stderr, r.stderr.decode()

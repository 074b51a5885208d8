"""A session through the resident reader (agents/resident_link.py): SessionStart answers in its own
process and starts the resident, so the session's prompts are answered by it (UserPromptSubmit's
context, in tens of milliseconds at any store size) while the hook process itself spools the
prompt; and SessionEnd's upkeep runs in a process of its own (agents/session_upkeep.py) that finishes its
work after the hook left at its share of the budget. Real hook processes and a real resident;
$ENGRAMDB_DEBUG makes a hook say when the resident answered."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import engramdb
import pytest
from resident_helpers import hooks_env, listening, processes, socket_in, wait

NS = "proj"
SERVED = "answered by the resident reader"
FACTS = ["The deploy script lives in scripts/deploy.sh and needs AWS_PROFILE set.",
         "Run pytest with -x to stop at the first failure.",
         "The database migrations are in alembic/versions."]
PROMPT = "How do I run the deploy script?"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A project folder with a store of three facts, and its hooks' environment."""
    cwd = tmp_path / "proj"
    with engramdb.open(cwd / ".engramdb") as db:
        for fact in FACTS:
            db.add(fact, namespace=NS, session_id="earlier")
    with hooks_env(cwd / ".engramdb") as env:
        yield cwd, env


def _hook(event: str, cwd: Path, env: dict[str, str], **fields: object) -> subprocess.CompletedProcess[str]:
    payload = {"session_id": "s1", "cwd": str(cwd), "hook_event_name": event, **fields}
    return subprocess.run([sys.executable, "-m", "engramdb", "hook", event, "--namespace", NS],
                          input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=180,
                          check=False)


def _text(proc: subprocess.CompletedProcess[str], event: str) -> str:
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == event
    text = out["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str) and text
    return text


def _listening(store: Path, env: dict[str, str]) -> bool:
    return listening(socket_in(store, env))


def _prompts(store: Path) -> list[engramdb.Memory]:
    with engramdb.open(store) as db:  # the writer: takes the spool in
        return [m for m in db.list(NS, limit=1_000) if m.content == PROMPT]


def test_session_start_starts_the_resident_and_it_answers_the_prompts(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    store = cwd / ".engramdb"
    start = _hook("SessionStart", cwd, env, source="startup")
    assert "scripts/deploy.sh" in _text(start, "SessionStart") and SERVED not in start.stderr
    assert wait(lambda: _listening(store, env)), "SessionStart started no resident"
    served = _hook("UserPromptSubmit", cwd, env, prompt=PROMPT)
    assert SERVED in served.stderr, served.stderr
    text = _text(served, "UserPromptSubmit")
    assert "scripts/deploy.sh" in text
    # the same context as a hook answering alone (the resident's snapshot is the store as it is:
    # the prompt the resident's hook kept is in the spool, not read by either)
    alone = _hook("UserPromptSubmit", cwd, {**env, "ENGRAMDB_HOOK_RESIDENT": "0"}, prompt=PROMPT)
    assert SERVED not in alone.stderr and _text(alone, "UserPromptSubmit") == text
    # each hook kept its prompt once: the resident's hook by spooling it itself
    kept = _prompts(store)
    assert len(kept) == 2 and len({m.id for m in kept}) == 2
    assert all((m.role, m.memory_type, m.session_id) == ("user", "turn", "s1") for m in kept)


def test_a_prompt_the_resident_answers_late_is_still_kept(project: tuple[Path, dict[str, str]]) -> None:
    """A resident that does not answer within the budget (here: a socket that accepts and never
    replies) leaves the hook printing nothing, and the prompt is kept all the same."""
    cwd, env = project
    store = cwd / ".engramdb"
    sock = socket_in(store, env)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(str(sock))
        mute.listen(8)
        late = _hook("UserPromptSubmit", cwd, {**env, "ENGRAMDB_HOOK_BUDGET_MS": "3000"}, prompt=PROMPT)
    assert (late.returncode, late.stdout) == (0, "")
    assert "the resident reader was late" in late.stderr and "NOT kept" not in late.stderr
    [kept] = _prompts(store)
    assert kept.role == "user"


def test_session_end_leaves_at_its_share_and_its_upkeep_finishes_alone(project: tuple[Path, dict[str, str]]) -> None:
    """With a budget too short for the upkeep (3,000 memories to index, topics to compute, in a
    process that first imports the engine: seconds, past a fifth of 3 s), the hook leaves, says
    nothing, and the upkeep process finishes the work after it: the prompt in, the indexes saved."""
    cwd, env = project
    store = cwd / ".engramdb"
    with engramdb.open(store) as db:
        db.add_many([{"content": f"note {i}: the build step {i % 37} writes artefact {i % 101} to dist/",
                      "namespace": NS, "session_id": f"s{i // 50}"} for i in range(3_000)])
    quiet = {**env, "ENGRAMDB_HOOK_RESIDENT": "0"}
    _hook("UserPromptSubmit", cwd, quiet, prompt=PROMPT)
    end = _hook("SessionEnd", cwd, {**quiet, "ENGRAMDB_HOOK_BUDGET_MS": "3000"}, reason="exit")
    assert (end.returncode, end.stdout, end.stderr) == (0, "", "")
    assert processes(store, b"engramdb.agents.session_upkeep"), "the upkeep did not go on after the hook left"
    assert wait(lambda: not processes(store, b"engramdb.agents.session_upkeep"), 120)
    with engramdb.open(store, read_only=True) as reader:
        assert [m.content for m in reader.list(NS, limit=10_000) if m.content == PROMPT] == [PROMPT]
        reader.search("deploy", namespace=NS, log=False)
        assert reader.stats()["index_files"].get("bm25-lexical") == "adopted", reader.stats()["index_files"]


def test_a_stopped_resident_is_passed_over_after_it_was_late_once(project: tuple[Path, dict[str, str]]) -> None:
    """A resident that accepts and never answers (stopped: SIGSTOP; its lock held, so no other can
    start) cost every prompt its whole budget, for ever. After one late answer, the hooks answer in
    their own process for a while (resident_link.LATE_HOLD_S), and every prompt is kept."""
    cwd, env = project
    store = cwd / ".engramdb"
    _hook("SessionStart", cwd, env, source="startup")
    assert wait(lambda: _listening(store, env))
    [pid] = processes(store, b"engramdb.agents.resident")
    short = {**env, "ENGRAMDB_HOOK_BUDGET_MS": "4000"}
    os.kill(pid, signal.SIGSTOP)
    try:
        late = _hook("UserPromptSubmit", cwd, short, prompt=PROMPT)
        assert (late.returncode, late.stdout) == (0, "") and "the resident reader was late" in late.stderr
        # answered in its own process, which imports the engine and opens the store: 1.5-2.4 s of a
        # 4 s budget with two busy loops here, so it gets a long one (a hook that waited for the
        # stopped resident again would still print nothing, after ~22 s)
        alone = _hook("UserPromptSubmit", cwd, {**env, "ENGRAMDB_HOOK_BUDGET_MS": "30000"}, prompt=PROMPT)
        assert SERVED not in alone.stderr and "scripts/deploy.sh" in _text(alone, "UserPromptSubmit")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert len(_prompts(store)) == 2


def test_the_fast_paths_budgets_are_the_events_budgets() -> None:
    """resident_link keeps its own copy (it may not import hook_events: 30 ms on every tool call)."""
    from engramdb.agents import hook_events, resident_link

    assert {e: resident_link.SERVED_BUDGETS_MS[e] for e in resident_link.RESIDENT_EVENTS} == \
        {e: hook_events.BUDGETS_MS[e] for e in resident_link.RESIDENT_EVENTS}

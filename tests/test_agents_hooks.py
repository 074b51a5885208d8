"""`engramdb hook EVENT` (C8) as the agent runs it: real processes, real JSON on stdin.

Each event's stdout parses as Claude Code's contract says and holds what it should; captures land
in the store (or its spool while another process writes) exactly once; bad stdin and a blown
budget print nothing and exit 0. Budgets are raised for the tests ($ENGRAMDB_HOOK_BUDGET_MS) so a
slow machine never trips them, except where the budget is what is tested.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import engramdb
import pytest
from engramdb.agents import hook_events as ev
from engramdb.agents import hooks
from store_helpers import shown_long_ago

NS = "proj"
SESSION = "sess-1"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ENGRAMDB_PATH", "ENGRAMDB_NAMESPACE")}
    env[ev.BUDGET_ENV] = "120000"
    env.update(extra)
    return env


def _args(event: str, store: Path | None, namespace: str | None = NS, max_chars: int | None = None) -> list[str]:
    args = [sys.executable, "-m", "engramdb", "hook", event]
    if store is not None:
        args += ["--path", str(store)]
    if namespace is not None:
        args += ["--namespace", namespace]
    if max_chars is not None:
        args += ["--max-chars", str(max_chars)]
    return args


def _payload(event: str, cwd: Path, **fields: Any) -> str:
    return json.dumps({"session_id": SESSION, "transcript_path": str(cwd / "transcript.jsonl"), "cwd": str(cwd),
                       "hook_event_name": event, **fields})


def hook(event: str, store: Path | None, stdin: str, *, namespace: str | None = NS, max_chars: int | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run one hook process to its end."""
    return subprocess.run(_args(event, store, namespace, max_chars), input=stdin, capture_output=True, text=True,
                          env=env or _env(), timeout=300, check=False)


def context_of(proc: subprocess.CompletedProcess[str], event: str) -> str:
    """The additionalContext of a hook's stdout, checked against the contract."""
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == event
    text = out["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str) and text
    return text


def memories(store: Path, namespace: str = NS) -> list[engramdb.Memory]:
    with engramdb.open(store, read_only=True) as db:
        return list(db.list(namespace, limit=10_000))


def test_a_session_end_to_end(tmp_path: Path) -> None:
    store, cwd = tmp_path / "mem", tmp_path
    # before anything is captured: no store, so an empty context (nothing printed), not an error
    first = hook("SessionStart", store, _payload("SessionStart", cwd, source="startup"))
    assert (first.returncode, first.stdout, first.stderr) == (0, "", "")
    assert not store.exists()

    prompt = "The parser fails on nested brackets in tokenizer.py; please fix it"
    p = hook("UserPromptSubmit", store, _payload("UserPromptSubmit", cwd, prompt=prompt))
    assert (p.returncode, p.stdout) == (0, "")  # nothing known yet, but the prompt is kept
    [m] = memories(store)
    assert (m.content, m.role, m.memory_type, m.session_id) == (prompt, "user", "turn", SESSION)

    response = {"stdout": "2 failed, 10 passed: test_nested_brackets " + "x" * 5000, "stderr": ""}
    t = hook("PostToolUse", store, _payload("PostToolUse", cwd, tool_name="Bash", tool_use_id="toolu_1",
                                            tool_input={"command": "pytest tests/test_parser.py"},
                                            tool_response=response))
    assert (t.returncode, t.stdout) == (0, "")
    [tool] = [m for m in memories(store) if m.memory_type == "hook"]
    assert tool.content.startswith("Tool Bash: command=pytest tests/test_parser.py")
    assert "test_nested_brackets" in tool.content and len(tool.content) < 3000  # the response clipped
    assert (tool.role, tool.metadata["tool_name"], tool.metadata["tool_use_id"]) == ("tool", "Bash", "toolu_1")

    reply = "I fixed the nested bracket bug in tokenizer.py by tracking the depth with a stack."
    s = hook("Stop", store, _payload("Stop", cwd, last_assistant_message=reply, stop_hook_active=False))
    assert (s.returncode, s.stdout) == (0, "")
    assert [m.content for m in memories(store) if m.role == "assistant"] == [reply]

    ups = hook("UserPromptSubmit", store, _payload("UserPromptSubmit", cwd, prompt="why did the nested brackets "
                                                                                   "test fail?"))
    text = context_of(ups, "UserPromptSubmit")
    assert prompt in text and reply in text and len(text) <= 8000

    pre = hook("PreToolUse", store, _payload("PreToolUse", cwd, tool_name="Bash",
                                             tool_input={"command": "pytest tests/test_parser.py"}))
    brief = context_of(pre, "PreToolUse")
    assert "Tool Bash: command=pytest tests/test_parser.py" in brief and len(brief) <= 1200

    before = sorted(m.id for m in memories(store))
    # the second prompt waits in the spool (a store exists: no writer's open on the prompt's path)
    assert "why did the nested brackets test fail?" not in [m.content for m in memories(store)]
    end = hook("SessionEnd", store, _payload("SessionEnd", cwd, reason="exit"))
    assert (end.returncode, end.stdout, end.stderr) == (0, "", "")
    after = memories(store)  # upkeep keeps every fresh memory and takes the prompt in
    assert sorted(m.id for m in after if m.content != "why did the nested brackets test fail?") == before
    assert [m.role for m in after if m.content == "why did the nested brackets test fail?"] == ["user"]
    with engramdb.open(store, read_only=True) as reader:  # the indexes saved for the next session's reads
        reader.search("nested brackets", namespace=NS, log=False)
        assert reader.stats()["index_files"].get("bm25-lexical") == "adopted", reader.stats()["index_files"]

    start = hook("SessionStart", store, _payload("SessionStart", cwd, source="startup"))
    portfolio = context_of(start, "SessionStart")
    assert reply in portfolio and "why did the nested brackets test fail?" in portfolio


def test_context_is_capped_at_max_chars_on_a_line_end(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    engramdb.capture(store, [{"content": f"note {i}: the tokenizer keeps bracket depth on a stack, case {i}",
                              "namespace": NS, "session_id": SESSION, "role": "user"} for i in range(40)])
    full = context_of(hook("UserPromptSubmit", store, _payload("UserPromptSubmit", tmp_path,
                                                               prompt="tokenizer bracket depth")), "UserPromptSubmit")
    capped = context_of(hook("UserPromptSubmit", store, _payload("UserPromptSubmit", tmp_path,
                                                                 prompt="tokenizer bracket depth"), max_chars=300),
                        "UserPromptSubmit")
    assert len(full) > 300 >= len(capped)
    assert capped.splitlines()[0] == full.splitlines()[0] and len(capped.splitlines()) > 1


def test_a_capture_beside_a_writer_is_spooled_then_ingested_once(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    engramdb.capture(store, [{"content": "the store exists", "namespace": NS}])
    text = "I switched the lexer to a table-driven state machine."
    with engramdb.open(store) as writer:  # another process's long-lived writer, as an MCP server is
        s = hook("Stop", store, _payload("Stop", tmp_path, last_assistant_message=text))
        assert (s.returncode, s.stdout) == (0, "")
        assert len(list((store / "spool").glob("*.json"))) == 1
        # readers still answer while the writer holds its lock
        hits = writer.search("lexer state machine", namespace=NS, k=5)
        assert text not in [h.memory.content for h in hits]  # spooled, not yet taken in
    with engramdb.open(store) as again:  # the next writer ingests the spool ...
        assert [m.content for m in again.list(NS)].count(text) == 1
    assert not list((store / "spool").glob("*.json"))
    with engramdb.open(store):  # ... exactly once
        pass
    assert [m.content for m in memories(store)].count(text) == 1


def test_context_a_hook_injects_beside_a_writer_teaches_the_writers_ratings(tmp_path: Path) -> None:
    """E1 through the spool: the hook reads (another process writes), so what its context injected
    is spooled as access rows; the writer's next ELO update takes them in."""
    store = tmp_path / "mem"
    notes = ["the lexer is table-driven now", "the parser tracks bracket depth with a stack",
             "the release checklist lives in RELEASING.md"]
    engramdb.capture(store, [{"content": t, "namespace": NS} for t in notes])
    with engramdb.open(store) as writer:
        before = writer.importance.refresh()
        p = hook("UserPromptSubmit", store, _payload("UserPromptSubmit", tmp_path,
                                                      prompt="how does the parser track bracket depth?"))
        assert p.returncode == 0 and "bracket depth" in context_of(p, "UserPromptSubmit")
        assert len(list((store / "spool").glob("*.access"))) == 1
        report = writer.importance.refresh()
        assert report.entries > before.entries  # the hook's search and injection rows
        assert not list((store / "spool").glob("*.access"))


def test_four_processes_capturing_at_once_lose_none_and_duplicate_none(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    engramdb.capture(store, [{"content": "the store exists", "namespace": NS}])
    sent = []
    writer: engramdb.Store | None = engramdb.open(store)  # held for the first rounds: those captures spool
    for round_ in range(5):
        if round_ == 3 and writer is not None:
            assert len(list((store / "spool").glob("*.json"))) == 12  # every capture so far waited in the spool
            writer.close()
            writer = None
        procs = []
        for worker in range(4):
            cmd = f"echo round {round_} worker {worker}"
            sent.append(f"Tool Bash: command={cmd}")
            stdin = tmp_path / f"stdin-{round_}-{worker}.json"
            stdin.write_text(_payload("PostToolUse", tmp_path, tool_name="Bash", tool_input={"command": cmd},
                                      tool_response={"stdout": "ok"}))
            with stdin.open() as f:  # the child keeps its own copy of the handle
                procs.append(subprocess.Popen(_args("PostToolUse", store), stdin=f, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True, env=_env()))
        for proc in procs:  # all four run at once
            out, err = proc.communicate(timeout=300)
            assert (proc.returncode, out) == (0, ""), err
    with engramdb.open(store):  # the last writer takes in what is still spooled
        pass
    got = [m.content.split("\n")[0] for m in memories(store) if m.memory_type == "hook"]
    assert sorted(got) == sorted(sent)  # none lost, none twice


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", json.dumps({"hook_event_name": "PostToolUse"})],
                         ids=["empty", "not-json", "not-an-object", "another-event"])
def test_bad_stdin_prints_nothing_and_exits_0(tmp_path: Path, stdin: str) -> None:
    store = tmp_path / "mem"
    proc = hook("UserPromptSubmit", store, stdin)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr.startswith("engramdb hook UserPromptSubmit: ") and proc.stderr.count("\n") == 1
    assert not store.exists()


def test_an_unknown_event_is_refused_quietly(tmp_path: Path) -> None:
    proc = hook("PreCompact", tmp_path / "mem", _payload("PreCompact", tmp_path))
    assert (proc.returncode, proc.stdout) == (0, "")
    assert "unknown event" in proc.stderr


def test_past_its_budget_a_hook_prints_nothing(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    engramdb.capture(store, [{"content": "the tokenizer keeps bracket depth on a stack", "namespace": NS}])
    ask = _payload("UserPromptSubmit", tmp_path, prompt="tokenizer bracket depth")
    assert context_of(hook("UserPromptSubmit", store, ask), "UserPromptSubmit")  # in budget: an answer
    late = hook("UserPromptSubmit", store, ask, env=_env(**{ev.BUDGET_ENV: "1"}))  # the process is older than 1 ms
    assert (late.returncode, late.stdout) == (0, "")
    assert "budget" in late.stderr


def test_a_capture_past_its_budget_is_still_kept_once(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    engramdb.capture(store, [{"content": "the store exists", "namespace": NS}])
    text = "Moved the config loader to settings.py."
    with engramdb.open(store):  # the hook can only spool: what the rescue does at the deadline
        late = hook("Stop", store, _payload("Stop", tmp_path, last_assistant_message=text),
                    env=_env(**{ev.BUDGET_ENV: "1"}))
        assert (late.returncode, late.stdout) == (0, "")
        assert "budget" in late.stderr and "spooled for the next writer" in late.stderr
    with engramdb.open(store):  # two spooled copies at most (the capture's and the rescue's), one memory
        pass
    assert [m.content for m in memories(store)].count(text) == 1


def test_store_and_namespace_default_to_the_project_folder(tmp_path: Path) -> None:
    project = tmp_path / "my-project"
    project.mkdir()
    stop = _payload("Stop", project, last_assistant_message="The build uses CMake presets now.")
    proc = hook("Stop", None, stop, namespace=None)
    assert proc.returncode == 0, proc.stderr
    assert [m.content for m in memories(project / ".engramdb", "my-project")] == ["The build uses CMake presets now."]
    elsewhere = tmp_path / "elsewhere"
    proc = hook("Stop", None, stop, namespace=None,
                env=_env(ENGRAMDB_PATH=str(elsewhere), ENGRAMDB_NAMESPACE="team"))
    assert proc.returncode == 0, proc.stderr
    assert [m.content for m in memories(elsewhere, "team")] == ["The build uses CMake presets now."]


def test_stop_without_the_message_reads_the_transcript(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    entries = [{"type": "user", "message": {"role": "user", "content": "rename the flag"}},
               {"type": "assistant", "message": {"role": "assistant", "content": [
                   {"type": "tool_use", "name": "Edit", "input": {}},
                   {"type": "text", "text": "Renamed --fast to --quick in cli.py."}]}},
               {"type": "system", "content": "saved"}]
    (tmp_path / "transcript.jsonl").write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    proc = hook("Stop", store, _payload("Stop", tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert [(m.role, m.content) for m in memories(store)] == [("assistant", "Renamed --fast to --quick in cli.py.")]


# ------------------------------------------------------------------------ the payload, in process
def test_a_tool_input_keeps_what_it_is_about_first() -> None:
    text = ev.compact_input({"old_string": "a" * 2000, "file_path": "src/x.py", "new_string": "b"})
    assert text.startswith("file_path=src/x.py ")
    assert len(text) <= ev.INPUT_CHARS and "more chars]" in text
    payload = ev.parse(_payload("PreToolUse", Path("/tmp/p"), tool_name="Grep",
                                tool_input={"pattern": "def main", "path": "src"}), "PreToolUse")
    assert ev.tool_query(payload) == "Grep src def main"


def test_events_that_carry_nothing_capture_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAMDB_NAMESPACE", raising=False)
    empty = ev.parse(json.dumps({"cwd": "/tmp/p"}), "UserPromptSubmit")
    assert ev.prompt_record(empty, NS) is None
    assert ev.tool_record(empty, NS) is None
    assert ev.reply_record(empty, NS) is None
    assert ev.namespace_of(None, empty) == "p"


def test_the_claude_code_example_wires_every_event_above_its_budget() -> None:
    settings = json.loads((Path(__file__).resolve().parents[1] / "examples" / "claude-code" / "settings.json")
                          .read_text())
    wired = {event: [h for group in groups for h in group["hooks"]] for event, groups in settings["hooks"].items()}
    assert set(wired) == set(ev.EVENTS) == set(hooks.HOOKS)
    for event, [h] in wired.items():
        assert (h["type"], h["command"]) == ("command", f"engramdb hook {event}")
        rescue = hooks.rescue_seconds(event) * 1000 if hooks.HOOKS[event].capture is not None else 0
        assert h["timeout"] * 1000 > ev.BUDGETS_MS[event] + rescue  # the hook leaves before it is killed
        assert h.get("async", False) == (hooks.HOOKS[event].read is None and event != "SessionEnd")


def _long_ago(folder: Path, records: list[dict[str, Any]]) -> Path:
    """An export file of memories the store learned long ago (each record's own learned_at)."""
    base = {"namespace": NS, "version": 1, "confidence": 1.0, "source": "turn", "metadata": {}, "provenance": {},
            "memory_type": None, "role": None, "seq": None, "session_id": None, "valid_from": None,
            "valid_until": None, "expired_at": None, "forgotten_at": None, "supersedes": None, "superseded_by": None}
    path = folder / "old.jsonl"
    lines = [{"engramdb_export": {"format": 2}}, *({**base, **r} for r in records),
             {"engramdb_export_end": {"memories": len(records)}}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


@pytest.mark.parametrize("opted_in", [False, True])
def test_session_end_applies_only_what_a_person_chose_unless_the_user_opted_in(tmp_path: Path, opted_in: bool) -> None:
    """Issue 25: SessionEnd ran consolidate(dry_run=False) on every session end. It purges what a
    person forgot past its window and promotes; archiving and compressing stay proposals unless
    $ENGRAMDB_HOOK_CONSOLIDATE=all."""
    from datetime import datetime, timedelta, timezone

    store, now = tmp_path / "mem", datetime.now(timezone.utc)
    days = [(now - timedelta(days=d)).isoformat() for d in (20, 60, 40)]
    note = "Quarterly planning note. The budget review moved. Details follow in the doc."
    with engramdb.open(store) as db:
        db.admin.import_(_long_ago(tmp_path, [
            {"id": "note", "content": note, "learned_at": days[0]},  # LOW and unused 20 days: compress
            {"id": "gone", "content": "an old secret", "learned_at": days[1], "forgotten_at": days[2]}]))
        other = db.add("unrelated note about the car", namespace=NS).id
        db.admin.import_(_long_ago(tmp_path, [{"id": "doubt", "content": "maybe the printer is on floor 3",
                                         "learned_at": days[1], "confidence": 0.0}]))  # priority under 0.2: archive
    # the note was shown 20 days ago, by a question that scores nothing, and never used since: LOW
    shown_long_ago(store, NS, ["note"], other, 20)
    env = _env(ENGRAMDB_HOOK_CONSOLIDATE="all") if opted_in else _env()
    end = hook("SessionEnd", store, _payload("SessionEnd", tmp_path, reason="exit"), env=env)
    assert (end.returncode, end.stdout, end.stderr) == (0, "", "")
    with engramdb.open(store, read_only=True) as db:
        assert db.get("gone", include_forgotten=True) is None  # a person's forget past its window: purged
        [run] = db.importance.tiers().runs
        if opted_in:
            assert db.lifecycle.is_archived("doubt") and db.get("note").content != note  # type: ignore[union-attr]
        else:
            assert not db.lifecycle.is_archived("doubt") and [v.content for v in db.history("note")] == [note]
            assert run["applied"].get("archive", 0) == 0 and run["applied"].get("compress", 0) == 0
            assert run["proposed"] == {"archive": 1, "compress": 1}


def test_a_plain_search_answer_says_who_spoke_and_pastes_a_repeated_prompt_once(tmp_path: Path) -> None:
    store, cwd = tmp_path / "mem", tmp_path
    prompt = "Deploy the billing service to the staging cluster with the canary flag"
    engramdb.capture(store, [{"content": prompt, "namespace": NS, "session_id": SESSION, "role": "user"}
                             for _ in range(3)] +
                     [{"content": "I deployed the billing service to staging; the canary flag is on.",
                       "namespace": NS, "session_id": SESSION, "role": "assistant"}])
    pre = hook("PreToolUse", store, _payload("PreToolUse", cwd, tool_name="Bash",
                                             tool_input={"command": "deploy billing service staging canary"}))
    brief = context_of(pre, "PreToolUse")
    assert brief.count(prompt) == 1, brief  # said three times, pasted once
    assert f"- user: {prompt}" in brief and "- assistant: I deployed the billing service" in brief


def test_session_start_lists_the_topics_a_writer_stored_and_never_clusters_itself(tmp_path: Path) -> None:
    """A store a script filled has no topics stored: SessionStart gives the pack without clustering
    (seconds at 100,000 memories, past its budget); after a SessionEnd (a writer) computed them, it
    lists them."""
    store, cwd = tmp_path / "mem", tmp_path
    subjects = {"violin": ["violin strings rosin bow practice", "the violin bow needs new rosin",
                           "tuning the violin strings before practice", "violin practice scales bow",
                           "rosin dust on the violin strings"],
                "bread": ["sourdough starter flour water", "the sourdough loaf needs a hot oven",
                          "feeding the sourdough starter flour", "sourdough crumb and crust in the oven",
                          "flour and water for the starter"]}
    with engramdb.open(store) as db:
        db.add_many([{"content": t, "namespace": NS, "session_id": "script"} for v in subjects.values() for t in v])
    first = context_of(hook("SessionStart", store, _payload("SessionStart", cwd, source="startup")), "SessionStart")
    assert "## Memories by importance" in first and "## Topics" not in first
    end = hook("SessionEnd", store, _payload("SessionEnd", cwd, reason="exit"))
    assert (end.returncode, end.stderr) == (0, "")
    later = context_of(hook("SessionStart", store, _payload("SessionStart", cwd, source="startup")), "SessionStart")
    assert "## Topics" in later and "## Memories by importance" in later

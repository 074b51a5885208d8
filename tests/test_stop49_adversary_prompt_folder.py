"""Stop 49 adversary (8e0c8b4): UserPromptSubmit answering in its own process leaves the prompt in
the spool when `store.is_dir()`, but a folder that exists is not always a store: an empty folder
(made by the user, or given as $ENGRAMDB_PATH) or one holding only a spool (a first hook cut short
after it spooled, before its take-in made the store). There the store is no longer made by the
prompt ("the first capture of all makes the store at once", docs/guides/agents-hooks.md): every
prompt until a Stop reads a folder that is no store (StoreError on stderr, no context) and its
capture waits in the spool. Before the change the first prompt's take-in made the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import engramdb
import pytest
from engramdb.agents import capture
from engramdb.agents import hook_events as ev

NS = "proj"


def _hook(event: str, store: Path, cwd: Path, **fields: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ENGRAMDB_PATH", "ENGRAMDB_NAMESPACE")}
    env[ev.BUDGET_ENV] = "120000"
    env["ENGRAMDB_HOOK_RESIDENT"] = "0"  # answered in the hook's own process
    stdin = json.dumps({"session_id": "s1", "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd),
                        "hook_event_name": event, **fields})
    return subprocess.run([sys.executable, "-m", "engramdb", "hook", event, "--path", str(store), "--namespace", NS],
                          input=stdin, capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize("folder", ["empty", "spool only"])
def test_the_first_prompt_makes_the_store_in_a_folder_that_is_not_one_yet(tmp_path: Path, folder: str) -> None:
    store = tmp_path / "mem"
    store.mkdir()
    if folder == "spool only":  # what a first hook cut short after spooling leaves
        capture.keep(store, [{"id": uuid.uuid4().hex, "content": "an earlier prompt", "namespace": NS,
                              "role": "user", "memory_type": "turn", "source": "turn"}])
    first = _hook("UserPromptSubmit", store, tmp_path, prompt="why did the nested brackets test fail?")
    assert first.returncode == 0
    assert (store / "manifest.json").exists(), "the first prompt's capture did not make the store"
    second = _hook("UserPromptSubmit", store, tmp_path, prompt="and the parser one?")
    assert second.returncode == 0
    assert "StoreError" not in second.stderr, second.stderr  # the second prompt reads a store
    with engramdb.open(store, read_only=True) as db:
        assert "why did the nested brackets test fail?" in [m.content for m in db.list(NS, limit=100)]

"""Stop 50 adversary: a purge that returned is still answered by the hooks' resident reader.

`db.purge(id)` removes a memory "from every file, now" (docs/guides/trust.md), but a resident that
opened its snapshot before the purge keeps answering UserPromptSubmit (and PreToolUse) from that
snapshot until its background reopen swaps in: QUIET_S (0.3 s) after the folder goes still, or up to
MAX_LAG_S (5 s) while a writer keeps writing. So a hook process that starts after the purge
returned prints the purged text as the agent's context. In the chaos runs (/tmp/adv50) 123 prompt
answers quoted a memory purged 0.1-2.2 s before the hook started; with a writer adding a turn every
0.1 s after the purge, the resident quoted it for 5.06 s. Here: prompts 1 s after the purge, the
agent still writing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import engramdb
from resident_helpers import hooks_env

SECRET = "qxsecretvaultword"


def _prompt(store: Path, env: dict[str, str], prompt: str) -> tuple[str, str]:
    payload = {"session_id": "s1", "cwd": str(store.parent), "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    p = subprocess.run([sys.executable, "-m", "engramdb", "hook", "UserPromptSubmit", "--path", str(store),
                        "--namespace", "maya"], input=json.dumps(payload), capture_output=True, text=True,
                       env=env, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr


def test_a_prompt_after_a_purge_never_gets_the_purged_memory(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    with engramdb.open(store) as db:
        secret = db.add(f"Maya's vault code word is {SECRET}", namespace="maya", session_id="s0")
        for i in range(10):
            db.add(f"filler note {i} about the vault and the garden", namespace="maya", session_id="s0")
    with hooks_env(store, budget_ms=20_000) as env:
        # the resident is started, and answers with the memory while it exists
        deadline = time.monotonic() + 30
        while True:
            out, err = _prompt(store, env, "what is the vault code word?")
            if SECRET in out and "resident" in err:
                break
            assert time.monotonic() < deadline, (out, err)
            time.sleep(0.3)
        with engramdb.open(store) as db:
            assert db.purge(secret.id) == 1
            # the purge returned: no read may give the memory back, a hook's included. The agent goes on
            # writing (a turn every 0.1 s), as it does in a session
            stop = threading.Event()

            def turns() -> None:
                i = 0
                while not stop.wait(0.1):
                    db.add(f"turn {i} about the garden", namespace="maya", session_id="s2")
                    i += 1

            writer = threading.Thread(target=turns)
            writer.start()
            try:
                time.sleep(1.0)
                answers = [_prompt(store, env, "what is the vault code word?") for _ in range(2)]
            finally:
                stop.set()
                writer.join()
        for out, err in answers:
            assert SECRET not in out, f"the resident answered a purged memory after purge() returned: {out[:300]} {err[-300:]}"

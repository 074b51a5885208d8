"""A process forked while another thread embeds (stop 39 adversary): the hashing space holds a lock
while it embeds (its word table is filled as texts come), and a child forked then inherited that
lock held by a thread the child does not have: every embed in the child, a search of its own store
included, waited for ever. Each embedder's lock is made anew in the child, and the word table it
may have been filling starts afresh (a cache: the same vectors).

The thread is held inside the locked section (the hashing kernel, which it calls there, waits for
the test), so the fork meets the held lock every time, not by chance."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import numpy as np
import pytest
from engramdb.spaces import hashing
from engramdb.spaces.hashing import HashingEmbedder

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

TEXTS = ["apples by the river bank in autumn", "a violin bow needs new rosin", "sourdough needs a hot oven"]


def test_a_child_forked_while_a_thread_embeds_embeds(monkeypatch: pytest.MonkeyPatch) -> None:
    emb = HashingEmbedder(384)
    expected = HashingEmbedder(384).embed(TEXTS)
    entered, release = threading.Event(), threading.Event()
    holder: dict[str, Any] = {}
    real = hashing.hash_embed

    def held(*args: Any, **kw: Any) -> Any:
        if threading.get_ident() == holder.get("ident") and not release.is_set():
            entered.set()
            release.wait()
        return real(*args, **kw)

    monkeypatch.setattr(hashing, "hash_embed", held)

    def work() -> None:
        holder["ident"] = threading.get_ident()
        emb.embed(["the thread's batch of texts", "held inside the embedder's lock"])

    t = threading.Thread(target=work)
    t.start()
    assert entered.wait(30)
    pid = os.fork()
    if pid == 0:  # the child: its embed must not wait for a thread it does not have
        signal.alarm(60)
        try:
            got = emb.embed(TEXTS)
            os._exit(0 if np.array_equal(got, expected) else 3)
        except BaseException:  # noqa: BLE001 - a child must never return into pytest
            os._exit(4)
    release.set()
    t.join()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status} (killed: it hung)"

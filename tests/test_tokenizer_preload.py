"""The tokenizer a context counts with loads on a thread of its own while the context searches
(context/tokens.py `preload`): checked first, loaded once, safe across threads and fork."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import engramdb
import pytest
from engramdb.context.tokens import counter, preload

pytest.importorskip("bpe_openai")


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_bad_tokenizer_is_refused_before_the_search() -> None:
    with pytest.raises(ValueError, match="tokenizer"):
        preload("gpt2")
    db = engramdb.open()
    db.add("hello there", namespace="n")
    with pytest.raises(ValueError, match="tokenizer"):
        db.context("hello", namespace="n", tokenizer="gpt2")
    assert db.stats()["namespaces"]["n"] == 1


def test_a_preloaded_tokenizer_counts_as_one_loaded_when_asked() -> None:
    out = _run("""
        from engramdb.context.tokens import counter, preload
        preload("o200k_base")
        count, name = counter("o200k_base")
        print(name, count("Hello, world! Tokens are counted the same."))
    """)
    count, name = counter("o200k_base")
    assert out.split() == [name, str(count("Hello, world! Tokens are counted the same."))]


def test_a_child_forked_while_the_parent_loads_counts_all_the_same() -> None:
    out = _run("""
        import os, signal
        from engramdb.context.tokens import counter, preload
        preload("cl100k_base")  # the parent's load is under way on its thread
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)  # a wait on the parent's thread would never end
            count, name = counter("cl100k_base")
            os._exit(0 if name == "cl100k_base" and count("hello world") == 2 else 3)
        _, status = os.waitpid(pid, 0)
        count, _ = counter("cl100k_base")
        print(os.waitstatus_to_exitcode(status), count("hello world"))
    """)
    assert out.split() == ["0", "2"]


def test_threads_asking_at_once_all_count_the_same() -> None:
    out = _run("""
        import threading
        from engramdb.context.tokens import counter, preload
        got, errors = [], []
        def ask():
            try:
                preload(None)
                got.append(counter(None)[0]("one two three"))
            except BaseException as exc:  # a wait on a thread not started yet raised RuntimeError
                errors.append(repr(exc))
        threads = [threading.Thread(target=ask) for _ in range(16)]
        for th in threads: th.start()
        for th in threads: th.join()
        print(len(got), sorted(set(got)), errors)
    """)
    assert out.strip() == "16 [3] []"

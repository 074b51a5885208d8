"""Stop 50b adversary: the MCP server's read-only reader answers a purged memory after purge() returned.

Stop 50 made the hooks' resident reader wait for a snapshot opened after a purge (the manifest's row
epoch moved), because docs/guides/trust.md promises a purge takes a memory out "now". The MCP
server is the other long-lived reader engramdb runs itself: beside another writer (an agent's own
process holds the lock) it serves a read-only handle and reopens it only when it is older than
READER_REFRESH_S (5 s). So for up to 5 s after `purge()` returned in the writer, `search_graph`
and `inject_context` give the purged text back to the agent. Public API: `engramdb.open`, `purge`,
and the MCP server's `ServedStore` / `MemoryTools` (what `engramdb mcp` serves).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import engramdb
import pytest

pytest.importorskip("mcp")

from engramdb.agents.mcp_server import ServedStore
from engramdb.agents.mcp_tools import MemoryTools

SECRET = "qxvaultwordzz"

WRITER = textwrap.dedent("""
    import sys, engramdb
    db = engramdb.open(sys.argv[1])
    print("open", flush=True)
    for line in sys.stdin:
        if line.strip() == "purge":
            ids = [m.id for m in db.list("maya", limit=100) if sys.argv[2] in m.content]
            print("purged", db.purge(ids), flush=True)
    db.close()
""")


def test_search_after_a_purge_in_the_writer_never_returns_the_purged_memory(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    with engramdb.open(store) as db:
        db.add(f"Maya's vault code word is {SECRET}", namespace="maya")
        for i in range(5):
            db.add(f"filler note {i} about the vault and the garden", namespace="maya")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store), SECRET], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline().strip() == "open"
        served = ServedStore(str(store), None)  # the writer holds the lock: served read-only
        try:
            assert served.read_only
            tools = MemoryTools(served.store, served.remember, "maya")
            before = tools.search_graph("what is the vault code word?", namespace="maya", topK=3)
            assert any(SECRET in h["content"] for h in before["hits"]), "the premise: the reader finds it"
            writer.stdin.write("purge\n")
            writer.stdin.flush()
            assert writer.stdout.readline().strip() == "purged 1"
            # purge() has returned in the writer: no read may give the memory back
            after = tools.search_graph("what is the vault code word?", namespace="maya", topK=3)
            assert not any(SECRET in h["content"] for h in after["hits"]), \
                "the MCP reader answered a purged memory after purge() returned"
            ctx = tools.inject_context("what is the vault code word?", namespace="maya", max_tokens=300)
            assert SECRET not in ctx["text"]
        finally:
            served.close()
    finally:
        if writer.stdin is not None and not writer.stdin.closed:
            writer.stdin.close()
        writer.wait(timeout=60)

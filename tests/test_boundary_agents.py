"""Hostile input through the agent surfaces (issue 24): `engramdb.capture` acknowledges only what
the writer will keep, hooks keep what project folders of any name capture, and the MCP tools refuse
a query that would break the store for every later call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import engramdb
import pytest
from engramdb import InvalidMemory, StoreError
from engramdb.agents import hook_events as ev

HALF_EMOJI = "\ud83d"


def _spooled(store: Path) -> list[Path]:
    return sorted((store / "spool").glob("*.json")) if (store / "spool").is_dir() else []


# ------------------------------------------------------------------------------ 12: capture
def test_a_capture_the_writer_would_refuse_is_refused_before_it_is_spooled(tmp_path: Path) -> None:
    writer = engramdb.open(tmp_path)
    kept = writer.add("the build uses cmake", namespace="a")
    writer.admin.checkpoint()
    with pytest.raises(InvalidMemory, match=r"records\[0\]: content is 2,097,152 bytes of UTF-8; the limit is "
                                            r"1,048,576 \(Tuning.max_content_bytes\)"):
        engramdb.capture(tmp_path, [{"content": "x" * (2 << 20), "namespace": "a"}])
    with pytest.raises(StoreError, match=f"records\\[0\\]: id '{kept.id}' already exists"):
        engramdb.capture(tmp_path, [{"id": kept.id, "content": "another text", "namespace": "a"}])
    waiting = engramdb.capture(tmp_path, [{"id": "m-1", "content": "spooled once", "namespace": "a"}])
    assert waiting == {"ids": ["m-1"], "stored": 0, "spooled": 1}
    with pytest.raises(StoreError, match="records\\[1\\]: id 'm-1' is already waiting .* for another record"):
        engramdb.capture(tmp_path, [{"content": "fine", "namespace": "a"},
                                    {"id": "m-1", "content": "a different text", "namespace": "a"}])
    with pytest.raises(StoreError, match="id 'm-2' is given to two records"):
        engramdb.capture(tmp_path, [{"id": "m-2", "content": "one", "namespace": "a"},
                                    {"id": "m-2", "content": "two", "namespace": "a"}])
    assert len(_spooled(tmp_path)) == 1  # only the capture acknowledged
    writer.add("next", namespace="a")  # takes the spool in
    assert writer.last_spool == {"files": 1, "records": 1, "damaged": 0, "rejected": 0}
    assert sorted(m.content for m in writer.list("a")) == ["next", "spooled once", "the build uses cmake"]
    writer.close()


def test_the_same_record_captured_again_is_kept_once(tmp_path: Path) -> None:
    writer = engramdb.open(tmp_path)
    stored = writer.add("stored already", namespace="a", id="s-1")
    writer.admin.checkpoint()
    record = {"id": "r-1", "content": "a late capture and its rescue", "namespace": "a", "role": "assistant"}
    assert engramdb.capture(tmp_path, [record])["spooled"] == 1
    assert engramdb.capture(tmp_path, [record])["spooled"] == 1  # the copy waiting is this very record
    again = engramdb.capture(tmp_path, [{"id": stored.id, "content": stored.content, "namespace": "a"}])
    assert again == {"ids": [stored.id], "stored": 1, "spooled": 0}
    assert len(_spooled(tmp_path)) == 1
    writer.close()
    with engramdb.open(tmp_path) as db:
        assert sorted(m.content for m in db.list("a")) == ["a late capture and its rescue", "stored already"]


# ------------------------------------------------------------------------------ 13: hooks
def _stop(cwd: Path, text: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ENGRAMDB_PATH", "ENGRAMDB_NAMESPACE")}
    env[ev.BUDGET_ENV] = "120000"
    env.update(env_extra or {})
    payload = json.dumps({"session_id": "sess-1", "cwd": str(cwd), "hook_event_name": "Stop",
                          "last_assistant_message": text})
    return subprocess.run([sys.executable, "-m", "engramdb", "hook", "Stop"], input=payload, capture_output=True,
                          text=True, env=env, timeout=300, check=False)


@pytest.mark.parametrize(("folder", "namespace"), [("My Project", "My+20Project"), ("café", "caf+C3+A9"),
                                                   (".dotfiles", "x+2Edotfiles"),
                                                   ("x y", "xx+20y"), ("a+b@c", "a+2Bb+40c"),
                                                   ("my-project_2.0", "my-project_2.0")])
def test_a_project_folder_of_any_name_keeps_its_captures(tmp_path: Path, folder: str, namespace: str) -> None:
    project = tmp_path / folder
    project.mkdir()
    proc = _stop(project, "The build uses CMake presets now.")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert ev.folder_namespace(folder) == namespace and ev.namespace_folder(namespace) == folder
    with engramdb.open(project / ".engramdb", read_only=True) as db:
        assert [m.content for m in db.list(namespace)] == ["The build uses CMake presets now."]


def test_a_folder_name_too_long_for_a_namespace_is_hashed_and_says_so() -> None:
    name = "项目" * 40  # 80 characters, 240 bytes of UTF-8: 720 characters escaped
    ns = ev.folder_namespace(name)
    assert len(ns) <= 128 and ns.startswith("x+E9+A1+B9") and ns[-9] == ":"
    assert ev.namespace_folder(ns) is None  # a hashed slug cannot be read back
    assert ev.folder_namespace(name + "x") != ns
    engramdb.open().add("x", namespace=ns)  # a valid namespace


def test_an_explicit_namespace_is_still_checked_as_given(tmp_path: Path) -> None:
    proc = _stop(tmp_path, "kept nowhere", {"ENGRAMDB_NAMESPACE": "not a namespace!"})
    assert proc.returncode == 0 and "namespace must be" in proc.stderr


def test_half_an_emoji_in_what_a_hook_captures_is_replaced_not_fatal(tmp_path: Path) -> None:
    proc = _stop(tmp_path / "proj", "Moved the loader " + HALF_EMOJI + " to settings.py")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    with engramdb.open(tmp_path / "proj" / ".engramdb", read_only=True) as db:
        assert [m.content for m in db.list("proj")] == ["Moved the loader \ufffd to settings.py"]


# ------------------------------------------------------------------------------ 11: the MCP tools
def test_an_mcp_query_with_half_an_emoji_is_a_tool_error_and_breaks_nothing(tmp_path: Path) -> None:
    pytest.importorskip("mcp.server", reason="needs the MCP SDK: pip install 'engramdb[mcp]'")
    import anyio
    from engramdb.agents.mcp_server import ServedStore
    from engramdb.agents.mcp_tools import MemoryTools, build_server
    from mcp import Client

    with engramdb.open(tmp_path) as db:
        db.add("hello world", namespace="main")
    served = ServedStore(str(tmp_path), None)
    server = build_server(MemoryTools(served.store, served.remember, "main"))

    async def calls() -> tuple[bool, str, int]:
        async with Client(server) as client:  # in process: the text reaches the tool as it was sent
            bad = await client.call_tool("search_graph", {"query": "hello " + HALF_EMOJI})
            text = " ".join(getattr(c, "text", "") for c in bad.content)
            good = await client.call_tool("search_graph", {"query": "hello", "namespace": "main"})
            assert isinstance(good.structured_content, dict)
            return bad.is_error, text, len(good.structured_content["hits"])

    is_error, text, hits = anyio.run(calls)
    # refused by the SDK's argument check (pydantic's string_unicode) or by the store's, naming query
    assert is_error and "query" in text and ("UTF-8 cannot encode" in text or "string_unicode" in text), text
    assert hits == 1
    tools = MemoryTools(served.store, served.remember, "main")  # the tools under the SDK: a transport that
    with pytest.raises(ValueError, match="query holds a character UTF-8 cannot encode"):  # lets it through
        tools.search_graph("hello " + HALF_EMOJI)
    with pytest.raises(ValueError, match="query holds a character UTF-8 cannot encode"):
        tools.inject_context("hello " + HALF_EMOJI)
    served.close()  # the access log is written whole: the refused query never reached it
    with engramdb.open(tmp_path) as db:
        assert [r["query"] for r in db.admin.dashboard()["activity"]["recent"]] == ["hello"]

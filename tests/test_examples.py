"""The examples do what their READMEs say: the chat agent remembers a turn into the next one (offline
and against an OpenAI-compatible endpoint), the multi-user service keeps users apart, pages each
memory once and refuses bad requests with 422, the load test runs bounded on loopback, and the
MCP client configs start `engramdb mcp` on the store and namespace they name."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import engramdb
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FACT = "My sister Maya runs a sourdough stall at the Saturday market."
QUESTION = "What does my sister sell on Saturdays?"
REPLY = "Good to know: Maya's stall opens at seven."


# ------------------------------------------------------------------------------------ chat agent
def _run_chat(tmp_path: Path, env: dict[str, str]) -> str:
    script = tmp_path / "turns.txt"
    script.write_text(f"{FACT}\n\n# a comment line\n{QUESTION}\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(EXAMPLES / "chat_agent.py"), "--path", str(tmp_path / "mem"),
                           "--namespace", "me", "--session", "s1", "--script", str(script)],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return {**env, **extra}


def test_chat_agent_offline_puts_the_first_turn_in_the_second_prompt(tmp_path: Path) -> None:
    stdout = _run_chat(tmp_path, _env())
    blocks = re.findall(r"<memory>\n(.*?)\n</memory>", stdout, re.DOTALL)
    assert len(blocks) == 2, stdout
    assert FACT not in blocks[0]
    assert FACT in blocks[1]  # stored after turn 1, found by turn 2's context
    assert stdout.rstrip().endswith(f"[user]\n{QUESTION}\n--- end of prompt ---")
    with engramdb.open(tmp_path / "mem", read_only=True) as db:
        stored = db.list("me")
    assert [(m.content, m.role, m.session_id, m.seq) for m in stored] == [(FACT, "user", "s1", 0),
                                                                        (QUESTION, "user", "s1", 1)]


class _FakeChatEndpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions on loopback that records each request."""

    seen: list[tuple[str, str | None, dict[str, Any]]]

    def do_POST(self) -> None:  # http.server's name for the hook
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.path, self.headers.get("Authorization"), body))
        answer = json.dumps({"choices": [{"message": {"role": "assistant", "content": REPLY}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return


def test_chat_agent_sends_the_context_and_remembers_the_reply(tmp_path: Path) -> None:
    seen: list[tuple[str, str | None, dict[str, Any]]] = []
    handler = type("Handler", (_FakeChatEndpoint,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        stdout = _run_chat(tmp_path, _env(OPENAI_BASE_URL=base, OPENAI_API_KEY="test-key", OPENAI_MODEL="test-model"))
    finally:
        server.shutdown()
        server.server_close()
    assert stdout.count(f"assistant> {REPLY}") == 2
    assert [(path, auth, body["model"]) for path, auth, body in seen] == \
        [("/v1/chat/completions", "Bearer test-key", "test-model")] * 2
    second = seen[1][2]["messages"]
    assert [m["role"] for m in second] == ["system", "user"] and second[1]["content"] == QUESTION
    assert FACT in second[0]["content"] and REPLY in second[0]["content"]  # both halves of turn 1
    with engramdb.open(tmp_path / "mem", read_only=True) as db:
        assert [m.role for m in db.list("me")] == ["user", "assistant", "user", "assistant"]


# ------------------------------------------------------------------------------ the service
def _load_app() -> ModuleType:
    pytest.importorskip("fastapi", reason="the service example needs fastapi: pip install 'engramdb[service]'")
    spec = importlib.util.spec_from_file_location("engramdb_example_service", EXAMPLES / "service" / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Any]:
    app = _load_app()
    from fastapi.testclient import TestClient

    with TestClient(app.create_app(tmp_path / "store")) as c:
        yield c


def _post(client: Any, user: str, texts: list[str], session: str = "s1") -> list[str]:
    r = client.post(f"/users/{user}/messages",
                    json={"session_id": session, "messages": [{"role": "user", "content": t} for t in texts]})
    assert r.status_code == 201, r.text
    ids: list[str] = r.json()["ids"]
    return ids


def test_service_users_never_see_each_others_memories(client: Any) -> None:
    alice = _post(client, "alice", ["I grow roses and tomatoes in my garden", "My garden shed is painted blue",
                                    "I water the garden every morning"])
    bob = _post(client, "bob", ["My garden is full of weeds and tomatoes", "I keep my bike in the garden shed",
                                "I never water the garden"])
    for user, own in (("alice", set(alice)), ("bob", set(bob))):
        for q in ("garden", "tomatoes", "water the garden", "shed"):
            hits = client.get(f"/users/{user}/search", params={"q": q, "k": 10}).json()["hits"]
            assert hits and {h["id"] for h in hits} <= own, (user, q)
            items = client.get(f"/users/{user}/context", params={"q": q, "max_tokens": 500}).json()["items"]
            assert {it["id"] for it in items if it["id"]} <= own, (user, q)
        listed = client.get(f"/users/{user}/memories").json()["items"]
        assert {m["id"] for m in listed} == own


def test_service_pages_through_each_memory_once(client: Any) -> None:
    posted = []
    for s in range(3):
        posted += _post(client, "carol", [f"Session {s} note {i}: the train to Porto leaves at {7 + i}"
                                          for i in range(9)], session=f"s{s}")
    _post(client, "dave", ["Dave's memory is not Carol's"])
    seen: list[str] = []
    cursor, pages = None, 0
    while True:
        r = client.get("/users/carol/memories", params={"limit": 5, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        page = r.json()
        assert len(page["items"]) <= 5
        seen += [m["id"] for m in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == posted  # oldest first, each once, none of dave's
    assert pages == 6


@pytest.mark.parametrize("user", ["-alice", "a" * 65, "bad name", "al!ce", ".hidden"])
def test_service_refuses_a_bad_user_name_with_422(client: Any, user: str) -> None:
    for r in (client.post(f"/users/{user}/messages", json={"messages": [{"role": "user", "content": "hi"}]}),
              client.get(f"/users/{user}/search", params={"q": "hi"}),
              client.get(f"/users/{user}/context", params={"q": "hi"}),
              client.get(f"/users/{user}/memories")):
        assert r.status_code == 422, (user, r.text)
        assert r.json()["detail"][0]["loc"] == ["path", "user"]


def test_service_refuses_bad_requests_with_422(client: Any) -> None:
    _post(client, "erin", ["something to page through"])
    bad = [client.post("/users/erin/messages", json={"messages": []}),
           client.post("/users/erin/messages", json={"messages": [{"role": "user", "content": "   "}]}),
           client.get("/users/erin/search", params={"q": "x", "k": 0}),
           client.get("/users/erin/search"),
           client.get("/users/erin/context", params={"q": "x", "max_tokens": 10}),
           client.get("/users/erin/memories", params={"cursor": "not a cursor!"}),
           client.get("/users/erin/memories", params={"cursor": "abc"})]
    assert [r.status_code for r in bad] == [422] * len(bad)
    assert "content" in bad[1].json()["detail"]  # the store's own message, not a 500
    assert "cursor" in bad[-1].json()["detail"]
    assert client.get("/users/erin/memories").json()["items"][0]["content"] == "something to page through"


def test_service_refuses_a_body_over_its_limit_with_413(tmp_path: Path) -> None:
    app = _load_app()
    from fastapi.testclient import TestClient

    def body(text: str, n: int = 1) -> bytes:
        return json.dumps({"messages": [{"role": "user", "content": text}] * n}).encode()

    json_type = {"content-type": "application/json"}
    with TestClient(app.create_app(tmp_path / "store")) as c:  # the default: 1 MiB
        big = c.post("/users/hal/messages", content=body("w" * 500_000, 3), headers=json_type)  # each message fits
        assert big.status_code == 413, big.status_code
        assert "limit of 1,048,576 bytes" in big.json()["detail"]
        assert c.get("/health").json()["memories"] == 0
    with TestClient(app.create_app(tmp_path / "other", max_body_bytes=2_000)) as c:
        ok = c.post("/users/gina/messages", content=body("x" * 1_500), headers=json_type)
        assert ok.status_code == 201, ok.text
        declared = c.post("/users/gina/messages", content=body("y" * 5_000), headers=json_type)
        streamed = c.post("/users/gina/messages", content=iter([body("z" * 1_500)[:1_000]] * 3),  # no length given
                          headers=json_type)
        for r in (declared, streamed):
            assert r.status_code == 413, r.text
            assert r.json()["detail"] == ("request body is over the service's limit of 2,000 bytes; send fewer or "
                                          "shorter messages per request")
        assert [m["content"][0] for m in c.get("/users/gina/memories").json()["items"]] == ["x"]  # nothing else stored


def test_service_closes_its_store_at_shutdown(tmp_path: Path) -> None:
    app = _load_app()
    from fastapi.testclient import TestClient

    with TestClient(app.create_app(tmp_path / "store")) as c:
        ids = _post(c, "frank", ["first", "second"])
        assert c.get("/health").json() == {"ok": True, "memories": 2, "users": 1}
    with engramdb.open(tmp_path / "store") as db:  # the writer's lock was released
        assert [m.id for m in db.list("frank")] == ids


def test_loadtest_runs_bounded_on_loopback(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the service example needs fastapi: pip install 'engramdb[service]'")
    pytest.importorskip("uvicorn", reason="the load test needs uvicorn: pip install 'engramdb[service]'")
    out = tmp_path / "load.json"
    done = subprocess.run([sys.executable, str(EXAMPLES / "service" / "loadtest.py"), "--users", "3",
                           "--memories", "12", "--clients", "4", "--requests", "40", "--mix", "search=3,context=1,write=1",
                           "--json", str(out)], capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text())
    assert sum(r["requests"] for r in figures["routes"].values()) == 40
    assert sum(r["errors"] for r in figures["routes"].values()) == 0
    assert figures["leaks"] == 0
    assert figures["stored_after_shutdown"] == figures["acknowledged"] == 3 * 12 + 2 * figures["routes"]["write"]["requests"]


# ------------------------------------------------------------------------------ MCP configs
MCP_CONFIGS = {"claude-desktop": "claude_desktop_config.json", "claude-code": ".mcp.json", "cursor": ".cursor/mcp.json"}


def _server(name: str) -> dict[str, Any]:
    server: dict[str, Any] = json.loads((EXAMPLES / "mcp" / MCP_CONFIGS[name]).read_text())["mcpServers"]["engramdb"]
    return server


def _expand(arg: str, variables: dict[str, str]) -> str:
    """The clients' placeholders: ${NAME:-default} (Claude Code), ${workspaceFolder} (Cursor)."""
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", lambda m: variables.get(m[1], m[2] or ""), arg)


@pytest.mark.parametrize("name", sorted(MCP_CONFIGS))
def test_mcp_config_names_engramdb_mcp(name: str) -> None:
    server = _server(name)
    assert server["command"] == "engramdb"
    args = server["args"]
    assert args[0] == "mcp" and args[1] == "--path" and not args[2].startswith("-")  # the store folder, by --path
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}", _expand(args[args.index("--namespace") + 1], {}))


@pytest.mark.parametrize("name", sorted(MCP_CONFIGS))
def test_mcp_config_starts_a_server_on_its_store(name: str, tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="engramdb mcp needs the MCP SDK: pip install 'engramdb[mcp]'")
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = _server(name)
    variables = {"ENGRAMDB_PATH": str(tmp_path / "cc-store"), "workspaceFolder": str(tmp_path)}
    args = [_expand(a, variables) for a in server["args"]]
    if name == "claude-desktop":
        args[2] = str(tmp_path / "desktop-store")  # Claude Desktop's absolute placeholder
    namespace = args[args.index("--namespace") + 1]
    command = shutil.which(server["command"])
    cmd, pre = (command, []) if command else (sys.executable, ["-m", "engramdb"])

    async def session() -> tuple[set[str], dict[str, Any]]:
        params = StdioServerParameters(command=cmd, args=pre + args)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = {t.name for t in (await s.list_tools()).tools}
            stored = await s.call_tool("store_memory", {"content": FACT})
            return tools, json.loads(stored.content[0].text)

    tools, stored = anyio.run(session)
    assert {"store_memory", "inject_context", "search_by_intent"} <= tools
    assert stored["namespace"] == namespace
    with engramdb.open(args[2], read_only=True) as db:
        assert [m.content for m in db.list(namespace)] == [FACT]

"""The MCP server (SPEC C8) through the MCP SDK's own stdio client: `python -m engramdb mcp STORE` runs as
a subprocess, as an agent host would start it, and every tool is called over the protocol.

One server serves the module (a store seeded with three themes of a dozen memories, in namespaces of
their own so the tests that change one do not touch another); a few tests start servers of their
own (a store another process writes, stdout noise, shutdown). Needs the `mcp` SDK 2.x
(`engramdb[mcp]`); topic assertions need scikit-learn (`engramdb[cluster]`).
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp.server", reason="needs the MCP SDK: pip install 'engramdb[mcp]'")

import engramdb
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio
TIMEOUT = 60.0  # seconds a call may take before the test fails instead of hanging

TOOLS = {
    "search_graph": {"query", "strategy", "topK", "now", "asOf"},
    "search_causes": {"query", "causalDirection", "topK"},
    "search_connections": {"query", "direction", "topK"},
    "search_by_intent": {"query", "blendWithSemantic", "topK"},
    "store_memory": {"content", "importance", "rationale", "memoryType", "sessionId", "role", "validFrom"},
    "inject_context": {"query", "max_tokens", "sessionId", "now", "asOf"},
    "get_topic_portfolio": set(),
    "get_topic_stability": set(),
    "detect_topics": set(),
    "get_divergence_alerts": {"query", "sessionId"},
    "trigger_consolidation": {"dryRun"},
    "trigger_dream": {"dryRun"},
    "merge_concepts": {"keep", "merge"},
    "forget_concept": {"concept", "dryRun"},
    "restore_memories": {"ids"},
    "give_feedback": {"queryId", "usedIds", "sessionId"},
    "forget_memories": {"ids"},
}

BAKING = [
    "Maya bakes sourdough bread every Sunday with her rye starter",
    "The sourdough starter needs feeding with flour and water twice a day",
    "Maya's sourdough loaf came out dense because the dough was underproofed",
    "A longer cold proof in the fridge gives the sourdough bread a better crust",
    "Maya bought a new dutch oven to bake sourdough bread with a crisp crust",
    "The rye starter smelled sour after Maya left it on the counter for two days",
    "Maya shapes the sourdough dough into a round boule before the final proof",
    "Whole wheat flour makes the sourdough bread denser than white bread flour",
    "Maya scores the sourdough loaf with a razor blade before baking it",
    "The bakery down the street sells sourdough bread made with an old starter",
    "Maya keeps notes on hydration, flour and proof times for each sourdough bake",
    "Steam in the oven for the first twenty minutes helps the sourdough bread rise",
]
DEPLOY = [
    "The deploy to production failed on Friday night",
    "The database migration script had a typo in a column name of the orders table",
    "Kubernetes rolled the deployment back after the readiness probe failed",
    "The staging cluster runs the same kubernetes version as production",
    "Deploys to production need an approval from the release manager",
    "The CI pipeline builds the container image and pushes it to the registry",
    "Helm charts describe the kubernetes deployment of the orders service",
    "The readiness probe of the orders service checks the database connection",
    "A canary deploy sends five percent of production traffic to the new pods",
    "The kubernetes cluster autoscaler adds nodes when pods are pending",
    "The release manager froze production deploys during the holiday sale",
    "Rolling back a kubernetes deployment restores the previous replica set",
]
RUNNING = [
    "Maya is training for the Berlin marathon in September",
    "Her long run on Saturday was thirty kilometres at an easy pace",
    "Maya runs intervals on the track every Tuesday evening",
    "The marathon training plan peaks at ninety kilometres a week",
    "Maya bought new running shoes after her old pair wore out at five hundred kilometres",
    "A tempo run at threshold pace builds marathon endurance",
    "Maya's knee hurt after the long run, so she took two rest days",
    "Her goal is to run the Berlin marathon in under three hours thirty",
    "Easy runs should feel conversational, slower than marathon pace",
    "Maya tapers her running volume for three weeks before the marathon",
    "She drinks an electrolyte mix during long runs over twenty kilometres",
    "Hill repeats on Thursday strengthen Maya's legs for the marathon",
]
THEMES = {"bake": BAKING, "ops": DEPLOY, "run": RUNNING}
NAMESPACES = ("main", "merge", "forget", "dream", "upkeep")


def seed(db: Any, namespace: str) -> dict[str, str]:
    """The three themes as sessions of one namespace, and the deploy's cause as a typed edge;
    returns content -> id."""
    records = [{"content": c, "namespace": namespace, "session_id": f"s-{theme}", "role": "user"}
               for theme, texts in THEMES.items() for c in texts]
    ids = dict(zip([r["content"] for r in records], db.add_many(records)))
    db.link(ids[DEPLOY[0]], ids[DEPLOY[1]], "CAUSED_BY", confidence=0.9, reason="the migration broke the deploy")
    db.link(ids[DEPLOY[0]], ids[DEPLOY[2]], "RELATED_TO", confidence=0.8)
    return ids


def params(store: Path, *extra: str, script: str | None = None) -> StdioServerParameters:
    """`python -m engramdb mcp STORE` (or a script that ends by running it)."""
    args = ["-c", script, str(store), *extra] if script else ["-m", "engramdb", "mcp", str(store), *extra]
    return StdioServerParameters(command=sys.executable, args=args)


@contextlib.asynccontextmanager
async def connect(server: StdioServerParameters, errlog: Path) -> AsyncIterator[ClientSession]:
    with errlog.open("w") as err:
        async with stdio_client(server, errlog=err) as (read, write), \
                ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured result; fails the test on an error result."""
    res = await session.call_tool(tool, arguments)
    assert not res.is_error, res.content
    assert isinstance(res.structured_content, dict)
    return res.structured_content


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The text of a tool's error result; fails the test when the call succeeds."""
    res = await session.call_tool(tool, arguments)
    assert res.is_error, res.structured_content
    return " ".join(getattr(c, "text", "") for c in res.content)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, str]]]:
    path = tmp_path_factory.mktemp("mcp") / "store"
    with engramdb.open(path) as db:
        ids = {ns: seed(db, ns) for ns in NAMESPACES}
        twice = "Maya's favourite bakery is on Elm Street"  # stored twice outside a session: the dream forgets one
        copies = db.add_many([{"content": twice, "namespace": "dream"}] * 2)
        ids["dream"].update({f"{twice} #{i}": mid for i, mid in enumerate(copies)})
    return path, ids


@pytest.fixture(scope="module")
async def session(store: tuple[Path, dict[str, dict[str, str]]]) -> AsyncIterator[ClientSession]:
    path, _ = store
    async with connect(params(path, "--namespace", "main"), path.parent / "server.log") as s:
        yield s


async def test_lists_the_tools_with_described_parameters(session: ClientSession) -> None:
    listed = {t.name: t for t in (await session.list_tools()).tools}
    assert set(listed) == set(TOOLS)
    for name, expected in TOOLS.items():
        props = listed[name].input_schema["properties"]
        assert expected | {"namespace"} <= set(props), name
        assert all(p.get("description") for p in props.values()), name
        assert listed[name].description
    assert listed["search_graph"].input_schema["required"] == ["query"]
    assert "multi_space" in listed["search_graph"].input_schema["properties"]["strategy"]["enum"]
    assert listed["forget_concept"].annotations is not None and listed["forget_concept"].annotations.destructive_hint


async def test_search_graph_finds_the_seeded_memory_in_its_namespace_only(session: ClientSession) -> None:
    got = await call(session, "search_graph", query="what does the sourdough starter need?", topK=3)
    assert got["namespace"] == "main" and len(got["hits"]) == 3
    assert got["hits"][0]["content"] == BAKING[1]
    assert 0 < got["hits"][0]["score"] <= 1 and got["hits"][0]["session_id"] == "s-bake"
    bm25 = await call(session, "search_graph", query="sourdough starter feeding", strategy="bm25", topK=2)
    assert bm25["strategy"] == "bm25" and bm25["hits"][0]["content"] == BAKING[1]
    empty = await call(session, "search_graph", query="sourdough starter", namespace="nobody-here")
    assert empty["hits"] == []


async def test_store_memory_is_found_and_injected(session: ClientSession) -> None:
    text = "The orders service owner is Priya, reachable on the ops pager"
    stored = await call(session, "store_memory", content=text, importance=0.8, rationale="who to page",
                        memoryType="contact", sessionId="s-notes", namespace="notes")
    assert stored["stored"] == "written" and stored["namespace"] == "notes"
    hit = (await call(session, "search_graph", query="who owns the orders service?", namespace="notes"))["hits"][0]
    assert hit["id"] == stored["id"] and hit["content"] == text
    assert hit["confidence"] == 0.8 and hit["metadata"]["importance"] == 0.8 and hit["memory_type"] == "contact"
    ctx = await call(session, "inject_context", query="who owns the orders service?", max_tokens=300,
                     namespace="notes", sessionId="s-notes")
    assert text in ctx["text"] and stored["id"] in {i["id"] for i in ctx["items"]}
    assert ctx["stats"]["tokens"] <= 300 and all(i["tokens"] > 0 and i["why"] for i in ctx["items"])


async def test_a_history_stored_with_its_dates_is_asked_about_a_day_and_a_past_time(session: ClientSession) -> None:
    days = [("2024-06-10T18:00:00Z", "We painted the kitchen blue today."),
            ("2024-06-12T18:00:00Z", "Today I called the bank about the loan."),
            ("2024-06-13T18:00:00Z", "I walked the dog along the river today.")]
    ids = [(await call(session, "store_memory", content=text, role="user", validFrom=when, sessionId=f"d{i}",
                       namespace="diary"))["id"] for i, (when, text) in enumerate(days)]
    hit = (await call(session, "search_graph", query="What did I do yesterday?", namespace="diary", topK=1,
                      now="2024-06-13T21:00:00+00:00"))["hits"][0]
    assert hit["id"] == ids[1] and hit["role"] == "user" and hit["valid_from"].startswith("2024-06-12T18:00:00")
    ctx = await call(session, "inject_context", query="What did I do yesterday?", namespace="diary", max_tokens=200,
                     now="2024-06-13T21:00:00Z")
    assert "called the bank" in ctx["text"]
    past = await call(session, "search_graph", query="What did I do?", namespace="diary", topK=5,
                      asOf="2024-06-11T00:00:00Z")
    assert [h["id"] for h in past["hits"]] == [ids[0]]  # as the memories stood then: only the first was valid
    assert "no UTC offset" in await error(session, "search_graph", query="x", now="2024-06-13T21:00:00")
    assert "validFrom 'soon' is not an ISO-8601 time" in await error(session, "store_memory", content="x",
                                                                      validFrom="soon")


async def test_inject_context_fits_the_budget_with_sections(session: ClientSession) -> None:
    ctx = await call(session, "inject_context", query="how should Maya train for the marathon?", max_tokens=200,
                     sessionId="s-run")
    assert ctx["stats"]["budget"] == 200 and ctx["stats"]["tokens"] <= 200
    assert any(i["id"] is not None and i["section"] in ("topics", "related") for i in ctx["items"])
    assert "marathon" in ctx["text"]


async def test_search_causes_follows_causal_edges_both_ways(
        session: ClientSession, store: tuple[Path, dict[str, dict[str, str]]]) -> None:
    ids = store[1]["main"]
    got = await call(session, "search_causes", query="why did the deploy to production fail?", topK=3)
    assert "causal: why / cause" in got["route"]["rules"]
    first = got["hits"][0]
    assert first["id"] == ids[DEPLOY[0]]
    assert [c["id"] for c in first["causes"]] == [ids[DEPLOY[1]]] and first["causes"][0]["type"] == "CAUSED_BY"
    assert first["causes"][0]["content"] == DEPLOY[1] and first["effects"] == []
    effects = await call(session, "search_causes", query="the migration script typo in the orders table",
                         causalDirection="effects", topK=3)
    row = next(h for h in effects["hits"] if h["id"] == ids[DEPLOY[1]])
    assert [e["id"] for e in row["effects"]] == [ids[DEPLOY[0]]] and "causes" not in row


async def test_search_connections_lists_typed_edges_by_direction(
        session: ClientSession, store: tuple[Path, dict[str, dict[str, str]]]) -> None:
    ids = store[1]["main"]
    out = await call(session, "search_connections", query="the deploy to production failed on Friday",
                     direction="out", topK=2)
    hit = next(h for h in out["hits"] if h["id"] == ids[DEPLOY[0]])
    assert {(e["type"], e["id"]) for e in hit["edges"]} == {("CAUSED_BY", ids[DEPLOY[1]]),
                                                            ("RELATED_TO", ids[DEPLOY[2]])}
    assert all(e["direction"] == "out" for e in hit["edges"])
    inward = await call(session, "search_connections", query="the deploy to production failed on Friday",
                        direction="in", topK=2)
    assert next(h for h in inward["hits"] if h["id"] == ids[DEPLOY[0]])["edges"] == []


async def test_search_by_intent_blends_intent_and_semantic_scores(session: ClientSession) -> None:
    for w in (0.0, 0.5, 1.0):
        got = await call(session, "search_by_intent", query='the "readiness probe" of the orders service',
                         blendWithSemantic=w, topK=5)
        hits = got["hits"]
        assert len(hits) == 5 and got["blendWithSemantic"] == w
        for h in hits:
            assert h["score"] == pytest.approx((1 - w) * h["intent_score"] + w * h["semantic_score"], abs=2e-4)
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
        assert "readiness probe" in hits[0]["content"]
    assert got["route"]["rules"]  # the quoted phrase fired the lexical rule


async def test_topic_portfolio_stability_and_detection(session: ClientSession) -> None:
    portfolio = await call(session, "get_topic_portfolio")
    topics = portfolio["topics"]
    assert len(topics) >= 2 and all(t["label"] and t["members"] >= 3 and 0 < t["confidence"] <= 1 for t in topics)
    assert all(t["id"].startswith("main/t") and t["phase"] in ("emerging", "stable", "declining", "merging")
               and t["sample"] for t in topics)
    labels = " ".join(t["label"] for t in topics)
    assert "sourdough" in labels or "kubernetes" in labels or "marathon" in labels
    stability = await call(session, "get_topic_stability")
    assert stability["topics"] == len(topics) and sum(stability["phases"].values()) == len(topics)
    assert isinstance(stability["consolidation_due"], bool) and 0 <= stability["entropy"] <= 1
    fresh = await call(session, "detect_topics")
    assert {t["id"] for t in fresh["topics"]} == {t["id"] for t in topics}  # ids carry across runs
    assert all(t["runs"] >= 2 for t in fresh["topics"])


async def test_divergence_alert_when_the_query_leaves_the_session(session: ClientSession) -> None:
    far = await call(session, "get_divergence_alerts", query="how do I fix the kubernetes readiness probe?",
                     sessionId="s-bake")
    assert far["divergent"] is True and far["alert"] and far["session_memories"] == 12
    near = await call(session, "get_divergence_alerts", query="how long should the sourdough dough proof?",
                      sessionId="s-bake")
    assert near["divergent"] is False and near["alert"] is None and near["nearest_content"] in BAKING


async def test_consolidation_reports_every_memory(session: ClientSession) -> None:
    dry = await call(session, "trigger_consolidation", namespace="upkeep")  # a dry run unless asked
    assert dry["dry_run"] is True and sum(dry["counts"].values()) == 36 and dry["applied"] == {}
    done = await call(session, "trigger_consolidation", dryRun=False, namespace="upkeep")
    assert done["dry_run"] is False and sum(done["counts"].values()) == 36 and "promote" in done["applied"]


async def test_dream_forgets_the_repeated_memory(
        session: ClientSession, store: tuple[Path, dict[str, dict[str, str]]]) -> None:
    twice = "Maya's favourite bakery is on Elm Street"
    copies = {store[1]["dream"][f"{twice} #{i}"] for i in range(2)}
    dry = await call(session, "trigger_dream", namespace="dream")  # a proposal unless asked
    assert dry["dry_run"] is True and dry["duplicates_forgotten"] == [] and set(dry["forgotten"]) < copies
    assert all(why.startswith("an exact copy of ") for why in dry["forgotten"].values())
    got = await call(session, "trigger_dream", dryRun=False, namespace="dream")
    assert got["topics"] >= 2 and len(got["duplicates_forgotten"]) == 1 and set(got["duplicates_forgotten"]) < copies
    hits = (await call(session, "search_graph", query="Maya's favourite bakery Elm Street", namespace="dream"))["hits"]
    assert [h["id"] for h in hits if h["id"] in copies] == list(copies - set(got["duplicates_forgotten"]))


async def test_merge_concepts_folds_one_topic_into_another(session: ClientSession) -> None:
    before = (await call(session, "get_topic_portfolio", namespace="merge"))["topics"]
    keep, merge = before[0], before[1]
    got = await call(session, "merge_concepts", keep=keep["id"], merge=merge["id"].rpartition("/")[2],
                     namespace="merge")
    assert got["topic"]["id"] == keep["id"] and got["merged"] == merge["id"]
    assert got["topic"]["members"] == keep["members"] + merge["members"]
    after = (await call(session, "get_topic_portfolio", namespace="merge"))["topics"]
    assert len(after) == len(before) - 1 and merge["id"] not in {t["id"] for t in after}


async def test_a_tool_called_for_one_namespace_never_reaches_anothers_topics(session: ClientSession) -> None:
    """Found by the adversary: merge_concepts took another namespace's full topic ids."""
    theirs = (await call(session, "get_topic_portfolio", namespace="merge"))["topics"]
    said = await error(session, "merge_concepts", keep=theirs[0]["id"], merge=theirs[1]["id"], namespace="main")
    assert "is a topic of namespace 'merge', not of 'main'" in said
    said = await error(session, "forget_concept", concept=theirs[0]["id"], namespace="main")
    assert "is a topic of namespace 'merge'" in said
    assert (await call(session, "get_topic_portfolio", namespace="merge"))["topics"] == theirs


async def test_forget_concept_hides_the_memories_from_search(session: ClientSession) -> None:
    dry = await call(session, "forget_concept", concept="sourdough starter", namespace="forget")  # a dry run
    assert dry["count"] >= 1 and dry["dry_run"] is True and set(dry["reasons"]) == set(dry["forgotten"])
    still = await call(session, "search_graph", query="sourdough starter", namespace="forget", topK=36)
    assert set(dry["forgotten"]) <= {h["id"] for h in still["hits"]}
    done = await call(session, "forget_concept", concept="sourdough starter", dryRun=False, namespace="forget")
    assert done["forgotten"] == dry["forgotten"]
    after = await call(session, "search_graph", query="sourdough starter", namespace="forget", topK=36)
    assert not set(done["forgotten"]) & {h["id"] for h in after["hits"]}
    assert len(after["hits"]) == 36 - done["count"]
    back = await call(session, "restore_memories", ids=done["forgotten"], namespace="forget")
    assert back["restored"] == done["forgotten"]
    again = await call(session, "search_graph", query="sourdough starter", namespace="forget", topK=36)
    assert set(done["forgotten"]) <= {h["id"] for h in again["hits"]}
    assert "in namespace 'main'" in await error(session, "restore_memories", ids=done["forgotten"][:1])


async def test_feedback_moves_importance_and_forget_hides_until_restored(session: ClientSession) -> None:
    """An agent on MCP can say what it used (ELO follows) and forget a memory it was told to."""
    stored = [(await call(session, "store_memory", content=text, namespace="fb"))["id"] for text in (
        "Maya's flat in Lisbon has a balcony over the river", "Maya's sister Ana is vegetarian")]
    ctx = await call(session, "inject_context", query="what does Ana eat?", namespace="fb", max_tokens=200)
    got = await call(session, "give_feedback", queryId=ctx["stats"]["query_id"], usedIds=[stored[1]], namespace="fb")
    assert got["recorded"] == 1
    hits = (await call(session, "search_graph", query="Ana vegetarian balcony Lisbon", namespace="fb"))["hits"]
    elo = {h["id"]: h["elo"] for h in hits}
    assert elo[stored[1]] > elo[stored[0]]  # the used memory won what the shown one lost
    assert "in namespace 'main'" in await error(session, "give_feedback", queryId=ctx["stats"]["query_id"],
                                              usedIds=[stored[0]], namespace="main")
    gone = await call(session, "forget_memories", ids=[stored[0]], namespace="fb")
    assert gone["forgotten"] == [stored[0]]
    after = (await call(session, "search_graph", query="balcony Lisbon", namespace="fb"))["hits"]
    assert stored[0] not in {h["id"] for h in after}
    assert "no current memory" in await error(session, "forget_memories", ids=[stored[0]], namespace="fb")
    await call(session, "restore_memories", ids=[stored[0]], namespace="fb")
    assert stored[0] in {h["id"] for h in (await call(session, "search_graph", query="balcony Lisbon",
                                                          namespace="fb"))["hits"]}


async def test_what_a_hook_captures_beside_the_server_is_found_at_once(
        session: ClientSession, store: tuple[Path, dict[str, dict[str, str]]]) -> None:
    text = "The on-call rotation changes every Monday at noon"
    got = engramdb.capture(store[0], [{"content": text, "namespace": "hooks", "source": "hook"}])
    assert got["spooled"] == 1  # the server holds the writer's lock
    hits = (await call(session, "search_graph", query="when does the on-call rotation change?",
                       namespace="hooks"))["hits"]
    assert [h["id"] for h in hits] == got["ids"] and hits[0]["content"] == text


async def test_bad_arguments_are_tool_errors_and_the_server_goes_on(session: ClientSession) -> None:
    assert "query" in await error(session, "search_graph")
    assert "topK" in await error(session, "search_graph", query="bread", topK=-1)
    assert "strategy" in await error(session, "search_graph", query="bread", strategy="telepathy")
    assert "no topic 'main/t999'" in await error(session, "merge_concepts", keep="t999", merge="t0")
    assert "no topic 'main/t999'" in await error(session, "forget_concept", concept="t999")
    assert "max_tokens" in await error(session, "inject_context", query="bread", max_tokens=10)
    assert "namespace must be" in await error(session, "store_memory", content="x", namespace="not a namespace!")
    assert "importance" in await error(session, "store_memory", content="x", importance=1.5)
    assert "sessionId" in await error(session, "get_divergence_alerts", query="bread")
    got = await call(session, "search_graph", query="sourdough starter", topK=1)
    assert got["hits"][0]["content"] in BAKING


async def test_unknown_arguments_and_loose_types_are_refused_by_name(session: ClientSession) -> None:
    """An argument a tool does not take is not dropped unseen (`top_k` would search with topK 10),
    and a value of the wrong JSON type is not guessed into the right one."""
    text = await error(session, "search_graph", query="bread", top_k=1)
    assert "search_graph takes no argument 'top_k'" in text and "did you mean 'topK'?" in text
    assert "query, strategy, topK, namespace" in text
    assert "takes no argument 'bogus'" in await error(session, "store_memory", content="x", bogus=1)
    assert "takes no argument 'dry_run'" in await error(session, "trigger_consolidation", dry_run=True)
    for bad in ({"query": 42}, {"query": "bread", "topK": -3}, {"query": "bread", "topK": "2"},
                {"query": "bread", "topK": 2.5}, {"query": "bread", "topK": True}):
        name = "query" if bad["query"] == 42 else "topK"
        assert name in await error(session, "search_graph", **bad), bad
    assert "dryRun" in await error(session, "trigger_consolidation", dryRun="yes")
    assert "importance" in await error(session, "store_memory", content="x", importance="0.5")
    assert "query is empty" in await error(session, "search_graph", query="   ")
    got = await call(session, "search_graph", query="sourdough starter", topK=2)
    assert len(got["hits"]) == 2


async def test_beside_another_writer_it_serves_read_only_and_captures(tmp_path: Path) -> None:
    path = tmp_path / "store"
    writer = engramdb.open(path)
    try:
        seed(writer, "main")
        writer.admin.checkpoint()
        log = tmp_path / "server.log"
        async with connect(params(path, "--namespace", "main"), log) as s:
            hits = (await call(s, "search_graph", query="what does the sourdough starter need?"))["hits"]
            assert hits[0]["content"] == BAKING[1]  # the other writer's committed memories
            stored = await call(s, "store_memory", content="Maya switched to a spelt starter in May")
            assert stored["stored"] == "captured" and "writer lock" in stored["note"]
            assert "read-only" in await error(s, "trigger_consolidation", dryRun=False)  # a write the reader refuses
        assert "read-only" in log.read_text()
    finally:
        writer.close()
    with engramdb.open(path) as db:  # the next writer ingests what was captured
        assert db.get(stored["id"]) is not None
        assert [h.id for h in db.search("spelt starter", namespace="main", k=1)] == [stored["id"]]


async def test_stdout_carries_protocol_only_and_the_store_closes_on_disconnect(tmp_path: Path) -> None:
    noisy = textwrap.dedent("""
        import sys
        import engramdb
        from engramdb import cli
        from engramdb.store import Store
        opener, search = engramdb.open, Store.search
        def open_(*a, **k):
            print("noise while opening")
            return opener(*a, **k)
        def search_(self, *a, **k):
            print("noise while serving")
            return search(self, *a, **k)
        engramdb.open, Store.search = open_, search_
        sys.exit(cli.main(["mcp", *sys.argv[1:]]))
    """)
    path, log = tmp_path / "store", tmp_path / "server.log"
    async with connect(params(path, script=noisy), log) as s:
        stored = await call(s, "store_memory", content="The spare key is under the blue flowerpot")
        got = await call(s, "search_graph", query="where is the spare key?")
        assert got["hits"][0]["id"] == stored["id"]
    text = log.read_text()
    assert "noise while opening" in text and "noise while serving" in text
    with engramdb.open(path) as db:  # closed by the server: the WAL folded into a segment
        assert db.stats()["wal_segments"] == 0 and db.get(stored["id"]) is not None


def test_sigterm_closes_the_store_and_exits(tmp_path: Path) -> None:
    """What the SDK's client sends when a server outlives its 2 s grace after stdin closes."""
    path = tmp_path / "store"
    with subprocess.Popen([sys.executable, "-m", "engramdb", "mcp", str(path)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

        def rpc(message: dict[str, Any]) -> dict[str, Any] | None:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
            proc.stdin.flush()
            return json.loads(proc.stdout.readline()) if "id" in message else None

        try:
            hello = rpc({"id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}})
            assert hello is not None and hello["result"]["serverInfo"]["name"] == "engramdb"
            rpc({"method": "notifications/initialized"})
            reply = rpc({"id": 2, "method": "tools/call", "params": {
                "name": "store_memory", "arguments": {"content": "Stored before SIGTERM"}}})
            assert reply is not None
            mid = reply["result"]["structuredContent"]["id"]
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(TIMEOUT) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
        assert "closed" in proc.stderr.read().decode() and proc.stdout.read() == b""
    with engramdb.open(path) as db:
        assert db.stats()["wal_segments"] == 0 and db.get(mid) is not None


def test_without_the_sdk_it_says_how_to_install_it(tmp_path: Path) -> None:
    script = "import sys; sys.modules['mcp'] = None; from engramdb import cli; sys.exit(cli.main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", script, "mcp", str(tmp_path / "store")], check=False,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 2 and "pip install 'engramdb[mcp]'" in done.stderr and done.stdout == ""
    assert not (tmp_path / "store").exists()

"""Capture and the conversation API (C7, issue 17): `engramdb.capture` and its spool, `add_file`,
`add_messages`, paged `list`, `history`, the mem0 names, the asyncio facade."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import engramdb
import pytest
from engramdb import InvalidMemory, StoreError
from store_helpers import bit_flipped_copies


def _contents(db: engramdb.Store, ns: str = "a") -> list[str]:
    return [m.content for m in db.list(ns, limit=10_000)]


# ------------------------------------------------------------------------------ capture + spool
def test_capture_stores_at_once_when_the_lock_is_free(tmp_path: Path) -> None:
    got = engramdb.capture(tmp_path, [{"content": "the build uses cmake", "namespace": "a"}])
    assert got["stored"] == 1 and got["spooled"] == 0
    with engramdb.open(tmp_path, read_only=True) as r:
        assert r.get(got["ids"][0]).content == "the build uses cmake"


def test_capture_while_another_writer_holds_the_lock_is_spooled_then_ingested_once(tmp_path: Path) -> None:
    writer = engramdb.open(tmp_path)
    writer.add("first", namespace="a")
    got = engramdb.capture(tmp_path, [{"content": "captured by a hook", "namespace": "a", "role": "tool"}])
    assert got == {"ids": got["ids"], "stored": 0, "spooled": 1}
    assert writer.get(got["ids"][0]) is None  # not yet: it waits in the spool
    writer.add("second", namespace="a")  # the writer's next add ingests the spool first
    assert writer.get(got["ids"][0]).content == "captured by a hook"
    assert writer.last_spool == {"files": 1, "records": 1, "damaged": 0, "rejected": 0}
    writer.close()
    with engramdb.open(tmp_path) as db:
        assert sorted(_contents(db)) == ["captured by a hook", "first", "second"]


def test_a_spool_file_replayed_after_a_crash_duplicates_nothing(tmp_path: Path) -> None:
    writer = engramdb.open(tmp_path)
    engramdb.capture(tmp_path, [{"content": f"tool use {i}", "namespace": "a"} for i in range(3)])
    spooled = next((tmp_path / "spool").glob("*.json"))
    saved = spooled.read_bytes()
    writer.close()
    with engramdb.open(tmp_path) as db:  # ingests and unlinks
        assert len(_contents(db)) == 3
    spooled.write_bytes(saved)  # as if the writer died after storing, before unlinking
    with engramdb.open(tmp_path) as db:
        assert sorted(_contents(db)) == ["tool use 0", "tool use 1", "tool use 2"]
        assert db.last_spool is not None and db.last_spool["files"] == 1
    assert list((tmp_path / "spool").glob("*.json")) == []


def test_one_capture_spooled_twice_is_stored_once_and_the_store_opens(tmp_path: Path) -> None:
    """A hook past its budget captures its record again as a rescue. Seen waiting, the same record
    is acknowledged as the copy there; when both copies race into the spool (two files hold one
    id), the next writer stores it once; before this was fixed, opening the store raised."""
    writer = engramdb.open(tmp_path)
    got = engramdb.capture(tmp_path, [{"content": "moved the loader", "namespace": "a"}])
    again = engramdb.capture(tmp_path, [{"content": "moved the loader", "namespace": "a", "id": got["ids"][0]}])
    assert again == {"ids": got["ids"], "stored": 0, "spooled": 1}
    (first,) = (tmp_path / "spool").glob("*.json")
    shutil.copy(first, first.with_name("99999999999999999999-1-race.json"))  # the copies raced in
    writer.close()
    with engramdb.open(tmp_path) as db:
        assert _contents(db) == ["moved the loader"]
        assert db.last_spool == {"files": 2, "records": 2, "damaged": 0, "rejected": 0}
    assert list((tmp_path / "spool").glob("*.json")) == []


def test_a_bad_capture_raises_naming_the_field_and_spools_nothing(tmp_path: Path) -> None:
    with engramdb.open(tmp_path), pytest.raises(InvalidMemory, match="namespace"):
        engramdb.capture(tmp_path, [{"content": "ok", "namespace": "a"}, {"content": "no namespace"}])
    assert not list((tmp_path / "spool").glob("*")) if (tmp_path / "spool").exists() else True
    with engramdb.open(tmp_path) as db:
        assert db.stats()["memories"] == 0


_FUZZ = r"""
import json, sys
from pathlib import Path
import engramdb
out = []
for store in map(Path, sys.argv[1:]):
    with engramdb.open(store) as db:
        n = db.stats()["memories"]
        spool = db.last_spool
    out.append({"memories": n, "spool": spool, "left": sorted(p.suffix for p in (store / "spool").iterdir())})
print(json.dumps(out))
"""


def test_flipped_bytes_in_a_spool_file_never_crash_and_are_never_ingested(tmp_path: Path) -> None:
    base = tmp_path / "base"
    with engramdb.open(base) as db:
        db.add("kept", namespace="a")
    holder = engramdb.open(base)
    engramdb.capture(base, [{"content": "spooled text", "namespace": "a", "metadata": {"k": 1}}])
    holder.close(checkpoint=False)
    spooled = next((base / "spool").glob("*.json"))
    clean = spooled.read_bytes()
    spooled.unlink()
    folders = bit_flipped_copies(base, "spool/00000000000000000001-1-fuzz.json", clean, tmp_path, 12, seed=7)
    got = subprocess.run([sys.executable, "-c", _FUZZ, *folders], check=False, capture_output=True,
                         text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    for trial in json.loads(got.stdout):
        if trial["left"] == [".damaged"]:  # checksum or structure refused: only the store's own memory
            assert trial["memories"] == 1 and trial["spool"]["damaged"] == 1
        else:  # a flip JSON tolerates (whitespace-equivalent) ingests the intact record exactly once
            assert trial["left"] == [] and trial["memories"] == 2, trial


# ------------------------------------------------------------------------------ conversations
def test_add_messages_stores_a_sessions_turns_in_order(tmp_path: Path) -> None:
    with engramdb.open(tmp_path) as db:
        ids = db.add_messages([{"role": "user", "content": "I moved to Lisbon"},
                               {"role": "assistant", "content": "How is Lisbon?", "name": "bot"}],
                              namespace="u1", session_id="s1")
        first, second = db.get(ids[0]), db.get(ids[1])
        assert (first.role, first.seq, first.session_id) == ("user", 0, "s1")
        assert (second.role, second.seq, second.metadata) == ("assistant", 1, {"name": "bot"})
        with pytest.raises(InvalidMemory, match="message 1: role"):
            db.add_messages([{"role": "user", "content": "ok"}, {"content": "no role"}], namespace="u1")
        with pytest.raises(InvalidMemory, match="message 0: content must be a string"):
            db.add_messages([{"role": "user", "content": None}], namespace="u1")
        assert db.stats()["memories"] == 2  # all or nothing
        msg = [{"role": "user", "content": "idempotent", "id": "req-1-msg-0"}]
        assert db.add_messages(msg, namespace="u1", session_id="s1") == ["req-1-msg-0"]
        with pytest.raises(StoreError, match="already exists"):  # a retried request stores nothing twice
            db.add_messages(msg, namespace="u1", session_id="s1")
        assert db.stats()["memories"] == 3 and db.get("req-1-msg-0").metadata == {}


def test_list_pages_through_every_memory_once_in_the_order_learned(tmp_path: Path) -> None:
    with engramdb.open(tmp_path) as db:
        db.add_messages([{"role": "user" if i % 2 else "assistant", "content": f"turn {i}"} for i in range(25)],
                        namespace="a", session_id="s")
        db.add("other namespace", namespace="b")
        seen, cursor = [], None
        while True:
            page = db.list("a", limit=10, cursor=cursor)
            assert len(page) <= 10
            seen += [m.content for m in page]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == [f"turn {i}" for i in range(25)]
        back, cursor = [], None
        while True:
            page = db.list("a", limit=7, cursor=cursor, newest_first=True)
            back += [m.content for m in page]
            if (cursor := page.next_cursor) is None:
                break
        assert back == seen[::-1]
        assert [m.content for m in db.list("a", filters={"role": "user"}, limit=3)] == ["turn 1", "turn 3", "turn 5"]
        assert [m.content for m in db.get_all("b")] == ["other namespace"]
        with pytest.raises(ValueError, match="unknown field 'colour'"):
            db.list("a", filters={"colour": "red"})
        with pytest.raises(ValueError, match="cursor"):
            db.list("a", cursor="not-a-cursor")
        with pytest.raises(ValueError, match="limit"):
            db.list("a", limit=0)


def test_list_keeps_a_batch_in_its_order_and_a_cursor_survives_changes(tmp_path: Path) -> None:
    """A batch without sessions lists in the order given (not by its random ids), and a page
    after a memory that was forgotten since repeats its batch rather than skipping any."""
    with engramdb.open(tmp_path) as db:
        db.add_many([{"content": f"chunk {i}", "namespace": "a"} for i in range(12)])
        assert [m.content for m in db.list("a", limit=50)] == [f"chunk {i}" for i in range(12)]
        first = db.list("a", limit=4)
        db.forget(first[-1].id)  # the cursor's own memory leaves
        after = db.list("a", limit=50, cursor=first.next_cursor)
        assert {f"chunk {i}" for i in range(4, 12)} <= {m.content for m in after}  # nothing skipped
        db.admin.checkpoint()
        db.admin.compact()  # a new snapshot with renumbered segments: the same cursor still resumes in place
        second = db.list("a", limit=4, cursor=db.list("a", limit=4).next_cursor)
        assert [m.content for m in second] == ["chunk 5", "chunk 6", "chunk 7", "chunk 8"]


def test_history_and_the_mem0_names(tmp_path: Path) -> None:
    with engramdb.open(tmp_path) as db:
        m = db.add("Alice lives in Lisbon", namespace="a")
        db.update(m.id, content="Alice lives in Porto")
        versions = db.history(m.id)
        assert [(v.version, v.content) for v in versions] == [(1, "Alice lives in Lisbon"), (2, "Alice lives in Porto")]
        assert versions[0].learned_at <= versions[1].learned_at
        assert db.history("no-such-id") == []
        db.delete(m.id)  # soft, as forget
        assert db.get(m.id) is None and db.list("a") == []
        db.restore(m.id)
        assert db.get(m.id).content == "Alice lives in Porto"


# ------------------------------------------------------------------------------ files (C7)
def _doc(n: int, word: str) -> str:
    return "# Notes\n\n" + " ".join(f"The {word} item number {i} is described here." for i in range(n))


def test_add_file_chunks_skips_unchanged_and_supersedes_changed(tmp_path: Path) -> None:
    doc = tmp_path / "notes.md"
    doc.write_text(_doc(100, "walrus"))  # ~800 words
    with engramdb.open(tmp_path / "db") as db:
        first = db.add_file(doc, namespace="docs")
        assert first["added"] == first["chunks"] >= 4 and not first["skipped"]
        chunks = db.list("docs")
        assert [c.metadata["chunk"] for c in chunks] == list(range(first["chunks"]))
        assert all(c.metadata["chunks"] == first["chunks"] and c.metadata["file"] == str(doc.resolve())
                   and c.memory_type == "chunk" for c in chunks)
        words = [len(c.content.split()) for c in chunks]
        assert max(words) <= 260 and all(c.content.rstrip().endswith(".") for c in chunks[:-1])
        assert db.add_file(doc, namespace="docs")["skipped"] is True
        before = chunks[0].learned_at + timedelta(microseconds=1)
        time.sleep(0.01)
        doc.write_text(_doc(30, "heron"))
        second = db.add_file(doc, namespace="docs")
        assert second["superseded"] == first["chunks"] and second["added"] == second["chunks"] >= 1
        now = [c.content for c in db.list("docs")]
        assert len(now) == second["chunks"] and all("heron" in c and "walrus" not in c for c in now)
        assert db.search("walrus item", namespace="docs", k=1, as_of=before)[0].memory.content.count("walrus") > 0
        assert all("walrus" not in h.memory.content for h in db.search("walrus item", namespace="docs", k=5))
        with pytest.raises(ValueError, match="cannot read"):
            db.add_file(tmp_path / "missing.md", namespace="docs")
        (tmp_path / "bin.md").write_bytes(b"\xff\xfe\x00bad")
        with pytest.raises(ValueError, match="is not utf-8 text"):
            db.add_file(tmp_path / "bin.md", namespace="docs")


def test_cli_ingest(tmp_path: Path) -> None:
    doc = tmp_path / "a.txt"
    doc.write_text(_doc(40, "otter"))
    cmd = [sys.executable, "-m", "engramdb", "ingest", "--path", str(tmp_path / "db"), str(doc), "--namespace", "n",
           "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["files"][0]["added"] >= 1
    again = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert json.loads(again)["files"][0]["skipped"] is True


# ------------------------------------------------------------------------------ asyncio facade
def test_aio_calls_never_block_the_event_loop(tmp_path: Path) -> None:
    """A loop-lag probe: a task ticking on the loop keeps ticking while a store call is in flight;
    the same call made synchronously on the loop lets it tick not once."""
    records = [{"content": f"memory number {i} about topic {i % 7}", "namespace": "a"} for i in range(3000)]

    async def main() -> tuple[int, int, list[str]]:
        ticks = 0
        stop = False

        async def probe() -> None:
            nonlocal ticks
            while not stop:
                ticks += 1
                await asyncio.sleep(0)

        async with await engramdb.aio.open(tmp_path / "db") as db:
            task = asyncio.create_task(probe())
            await asyncio.sleep(0)
            start = ticks
            await db.add_many(records)
            hits = await db.search("topic 3", namespace="a", k=3)
            during = ticks - start
            start = ticks
            db.store.add_many([{"content": "blocking", "namespace": "b"}] * 2000)  # on the loop: blocks it
            blocked = ticks - start
            stop = True
            await task
            assert db.path == tmp_path / "db"  # plain attributes pass through
            page = await db.list("b", limit=1)
            assert page[0].content == "blocking"
            return during, blocked, [h.memory.content for h in hits]

    during, blocked, hits = asyncio.run(main())
    assert during > 0 and blocked == 0
    assert len(hits) == 3 and all("topic 3" in h for h in hits)


def test_aio_errors_surface_as_the_stores_own(tmp_path: Path) -> None:
    async def main() -> None:
        db = await engramdb.aio.open(tmp_path / "db")
        try:
            with pytest.raises(StoreError, match="no memory with id"):
                await db.update("missing", content="x")
        finally:
            await db.close()

    asyncio.run(main())

"""importance.pack's order (elo as shown, highest first; then newest first) against a plain
reference after random operations on a store folder: "newest first" is the order `db.list(ns,
newest_first=True)` gives (learned_at, then seq, then the store's order), not where a row sits in
the store; and the pack reads the ratings while feedback in another thread adds to them."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import engramdb
import pytest
from engramdb import Tuning

WORDS = ["cello", "violin", "piano", "bowing", "scales", "etude", "sonata", "tempo"]


def reference(db: engramdb.Store, ns: str) -> tuple[list[str], int]:
    """The ids the pack should hold with no budget, and how many current memories it counts
    (those whose valid time ended included: they are current versions the pack leaves out)."""
    newest = [m.id for m in db.list(ns, limit=10**6, newest_first=True)]
    elo = {i: db.importance(i).elo for i in newest}
    want = [i for i in sorted(newest, key=lambda i: -round(elo[i], 1)) if db.importance(i).tier != "VERY_LOW"]
    return want, len(db.list(ns, limit=10**6, include_ended=True))


def check(db: engramdb.Store, ns: str, where: str) -> None:
    """The pack is the reference, and a budget takes its longest prefix that fits."""
    want, current = reference(db, ns)
    pack = db.importance.pack(ns, max_tokens=10**9)
    assert [i.id for i in pack.items] == want, where
    assert pack.stats["left_out"] == current - len(want), where
    tokens = [i.tokens for i in pack.items]
    for budget in (50, 120):
        small = db.importance.pack(ns, max_tokens=budget)
        n = used = 0
        while n < len(tokens) and used + tokens[n] <= budget:
            used, n = used + tokens[n], n + 1
        assert [i.id for i in small.items] == want[:n], (where, budget)
        assert small.stats["left_out"] == current - n, (where, budget)


def _export_file(path: Path, records: list[dict[str, object]]) -> Path:
    """An export file (format 2, JSONL) of memories learned long ago, as another store wrote them."""
    fields = {"confidence": 1.0, "expired_at": None, "forgotten_at": None, "memory_type": None, "metadata": {},
              "provenance": {}, "role": None, "seq": None, "session_id": None, "source": "api", "superseded_by": None,
              "supersedes": None, "valid_from": None, "valid_until": None, "version": 1}
    lines = [{"engramdb_export": {"format": 2}}, *({**fields, **r} for r in records),
             {"engramdb_export_end": {"memories": len(records)}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_an_imported_memory_learned_long_ago_is_packed_after_what_was_learned_since(tmp_path: Path) -> None:
    """An import appends rows that keep their learned_at: the pack ordered by where a row sits and
    put a memory learned in 2020 first, before what this store learned today (db.list puts it last)."""
    db = engramdb.open(tmp_path / "s")
    db.add("Maya moved to Lisbon last week.", namespace="n", id="today")
    db.admin.import_(_export_file(tmp_path / "old.jsonl", [
        {"id": "long-ago", "content": "Maya lived in Porto.", "namespace": "n",
         "learned_at": "2020-01-01T00:00:00+00:00"}]))
    assert [m.id for m in db.list("n", newest_first=True)] == ["today", "long-ago"]
    assert [i.id for i in db.importance.pack("n", max_tokens=500).items] == ["today", "long-ago"]
    db.close()


def test_a_batch_of_a_turn_and_a_note_packs_in_the_order_list_gives() -> None:
    """One batch shares its learned_at; list orders it by seq (a note has none) and the pack by
    where each row sits: the two disagreed on which of the batch is the newest."""
    db = engramdb.open(None)
    db.add_many([{"id": "turn", "content": "Let us practise the etude.", "namespace": "n", "session_id": "s",
                  "role": "user"},
                 {"id": "note", "content": "Maya plays the cello.", "namespace": "n"},
                 {"id": "later", "content": "The sonata comes next.", "namespace": "n", "session_id": "s",
                  "role": "user", "seq": 7},
                 {"id": "early", "content": "Scales first.", "namespace": "n", "session_id": "s",
                  "role": "user", "seq": 3}])
    newest = [m.id for m in db.list("n", newest_first=True)]
    assert newest == ["later", "early", "turn", "note"]
    assert [i.id for i in db.importance.pack("n", max_tokens=500).items] == newest


def test_a_pack_beside_feedback_in_another_thread_never_raises() -> None:
    """The pack walks the ratings; feedback in another thread adds ratings for the memories its
    search showed: 'dictionary changed size during iteration' came out of the pack (a service that
    packs a session's start while another session gives feedback)."""
    rnd = random.Random(0)
    db = engramdb.open(None)
    db.add_many([{"content": " ".join(rnd.choices(WORDS, k=6)) + f" number {i}.", "namespace": "n"}
                 for i in range(1_000)])

    def rate() -> None:
        hits = db.search(f"{rnd.choice(WORDS)} number {rnd.randrange(1_000)}", namespace="n", k=10)
        db.feedback(hits.query_id or "", [hits[0].id] if len(hits) else [])

    for _ in range(20):  # some ratings first: the pack's walk over them is long enough to be cut
        rate()
    errors: list[BaseException] = []
    done = threading.Event()

    def feed() -> None:
        try:
            for _ in range(60):
                rate()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            done.set()

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads take turns often: the walk is cut by a feedback every time
    feeder = threading.Thread(target=feed)
    try:
        feeder.start()
        packs = 0
        while not done.is_set() and not errors:
            db.importance.pack("n", max_tokens=200)
            packs += 1
    finally:
        done.wait()
        feeder.join()
        sys.setswitchinterval(switch)
    assert not errors
    assert packs > 0
    assert db.importance.pack("n", max_tokens=10**9).stats["memories"] == 1_000


@pytest.mark.parametrize("seed", range(3))
def test_random_operations_pack_the_reference(tmp_path: Path, seed: int) -> None:
    """Adds (turns and notes in one batch), imports of memories learned long ago, updates, forgets
    and restores, supersedes, purges, searches with and without feedback, refreshes, checkpoints
    (3 rows a segment), compaction, archival, reopening and a read-only store beside the writer:
    after each, each namespace's pack is the reference (the same id patterns in both)."""
    rnd = random.Random(seed)
    path, tuning = tmp_path / "s", Tuning(checkpoint_rows=3)
    db = engramdb.open(path, tuning=tuning)
    forgotten: set[str] = set()
    n = 0
    try:
        for step in range(36):
            ns = rnd.choice(["n", "m"])
            live = {x: [m.id for m in db.list(x, limit=10**6)] for x in ("n", "m")}
            every = live["n"] + live["m"]
            op = rnd.choice(["add", "add", "import", "update", "forget", "restore", "supersede", "purge", "rate",
                             "rate", "shown", "refresh", "checkpoint", "compact", "archive", "reopen", "reader"])
            if op in ("update", "forget", "restore", "supersede"):
                db.lifecycle.unarchive()  # an archived memory is unarchived before it changes
            if op == "add":
                records = []
                for _ in range(rnd.randint(1, 4)):
                    n += 1
                    r: dict[str, object] = {"id": f"{ns}{n:03d}", "namespace": ns,
                                            "content": " ".join(rnd.choices(WORDS, k=5)) + f" number {n}."}
                    if rnd.random() < 0.4:  # a turn: it gets a seq; a note beside it has none
                        r.update(session_id="s1", role="user")
                    records.append(r)
                db.add_many(records)
            elif op == "import":
                records = []
                for _ in range(rnd.randint(1, 3)):
                    n += 1
                    records.append({"id": f"{ns}{n:03d}", "namespace": ns, "content": f"{rnd.choice(WORDS)} long ago {n}.",
                                    "learned_at": f"2020-01-0{rnd.randint(1, 3)}T00:00:00+00:00"})
                db.admin.import_(_export_file(tmp_path / f"import{step}.jsonl", records))
            elif op == "update" and every:
                db.update(rnd.choice(every), content=" ".join(rnd.choices(WORDS, k=6)) + " changed.")
            elif op == "forget" and every:
                gone = rnd.choice(every)
                db.forget(gone)
                forgotten.add(gone)
            elif op == "restore" and forgotten:
                back = rnd.choice(sorted(forgotten))
                forgotten.discard(back)
                if db.get(back, include_forgotten=True) is not None:  # not purged since
                    db.restore(back)
            elif op == "supersede" and len(live[ns]) >= 2:
                old, new = rnd.sample(live[ns], 2)
                if db.get(old) is not None and db.get(old).valid_until is None:  # type: ignore[union-attr]
                    db.supersede(old, new)
            elif op == "purge" and every:
                db.purge(rnd.choice(every))
            elif op in ("rate", "shown") and live[ns]:
                hits = db.search(" ".join(rnd.choices(WORDS, k=2)), namespace=ns, k=5)
                if op == "rate" and hits.query_id:
                    db.feedback(hits.query_id, [h.id for h in hits if rnd.random() < 0.4])
            elif op == "refresh":
                db.importance.refresh()
            elif op == "checkpoint":
                db.admin.checkpoint()
            elif op == "compact":
                db.admin.compact()
            elif op == "archive" and every:
                db.lifecycle.archive(ids=rnd.sample(every, min(2, len(every))))
            elif op == "reopen":
                db.close()
                db = engramdb.open(path, tuning=tuning)
            elif op == "reader":  # what was committed and logged (the WAL's rows too when not checkpointed)
                if rnd.random() < 0.5:
                    db.admin.checkpoint()
                with engramdb.open(path, read_only=True, tuning=tuning) as reader:
                    for x in ("n", "m"):
                        check(reader, x, f"seed {seed} step {step}: a reader of namespace {x}")
            for x in ("n", "m"):
                check(db, x, f"seed {seed} step {step} after {op}: namespace {x}")
    finally:
        db.close()


def test_the_session_start_hook_prints_the_pack_newest_first_beside_a_writer(tmp_path: Path) -> None:
    """`engramdb hook SessionStart` (no warming search, no saved index files) on a store a writer
    holds open with a row in its WAL: the pack is printed in the list's order, newest first (the
    WAL's row, then the last batch's turn before its note), and no index file is written."""
    store = tmp_path / "mem"
    with engramdb.open(store) as db:
        db.add("Maya plays the cello on Sundays.", namespace="proj", id="first")
        db.add_many([{"id": "turn", "content": "Let us practise the etude.", "namespace": "proj", "session_id": "s",
                      "role": "user"},
                     {"id": "note", "content": "The etude is in D minor.", "namespace": "proj"}])
    for saved in (store / "index").glob("bm25-*"):  # a writer's close saves BM25: this store has none saved
        saved.unlink()
    writer = engramdb.open(store)
    try:
        writer.add("The recital moved to Friday.", namespace="proj", id="wal")
        before = sorted(p.name for p in (store / "index").iterdir()) if (store / "index").exists() else []
        assert "bm25-lexical.arrow" not in before
        env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMDB_")}
        env.update(ENGRAMDB_HOOK_BUDGET_MS="120000", ENGRAMDB_HOOK_RESIDENT="0")
        payload = json.dumps({"session_id": "s2", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path),
                              "hook_event_name": "SessionStart", "source": "startup"})
        proc = subprocess.run([sys.executable, "-m", "engramdb", "hook", "SessionStart", "--path", str(store),
                               "--namespace", "proj"], input=payload, capture_output=True, text=True, env=env,
                              timeout=300, check=False)
        assert (proc.returncode, proc.stderr) == (0, "")
        text = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
        printed = [line.split("]")[0][3:] for line in text.splitlines() if line.startswith("- [")]
        assert printed == [m.id for m in writer.list("proj", newest_first=True)] == ["wal", "turn", "note", "first"]
        after = sorted(p.name for p in (store / "index").iterdir()) if (store / "index").exists() else []
        assert after == before  # read-only: no index built or saved for it
    finally:
        writer.close()

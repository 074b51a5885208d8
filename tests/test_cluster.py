"""engramdb.cluster over a local Ray (SPEC X1-X3): shards as actors that Ray restarts, writes
idempotent under retries, the same answers as `engramdb.open`, namespace isolation across shards,
moves, replicas, the fan-out admin verbs, the Ray Data jobs and bad input.

One local Ray for the module (2 CPUs, no dashboard). Every test makes its own shard folders under
tmp_path, so its actors (named after the folders) are its own; each test closes its clusters.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import engramdb
import pyarrow.parquet as pq
import pytest
import ray
from engramdb.cluster import Cluster, ShardUnavailable
from engramdb.cluster.jobs import COLUMNS, export_parquet, reembed, verify_folders
from engramdb.spaces.hashing import HashingEmbedder
from engramdb.spaces.profiles import profile_schema
from engramdb.spaces.schema import Schema, Space

TEXTS = [
    "Alice moved to Lisbon in May", "Alice works as a nurse at the city hospital", "Bob adopted a grey cat named Miso",
    "Bob is learning to play the cello", "the team ships the billing service on Fridays",
    "Carol prefers green tea to coffee", "Carol is allergic to peanuts", "Dan runs a marathon every spring",
    "the quarterly review moved to Thursday", "Eve keeps her notes in a paper journal",
    "the kitchen tap leaks when it rains", "Frank bought a second-hand road bike",
]


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace=f"engramdb-test-{uuid.uuid4().hex}")
    yield
    ray.shutdown()


def two_shards(tmp_path: Path, **kw: object) -> Cluster:
    return Cluster({"s0": tmp_path / "s0", "s1": tmp_path / "s1"}, **kw)  # type: ignore[arg-type]


def spread_namespaces(c: Cluster, n: int = 2) -> dict[str, list[str]]:
    """n namespaces routed to each shard."""
    out: dict[str, list[str]] = {s: [] for s in c.shards}
    i = 0
    while any(len(v) < n for v in out.values()):
        ns = f"user-{i}"
        if len(out[c.shard_of(ns)]) < n:
            out[c.shard_of(ns)].append(ns)
        i += 1
    return out


def fill(c: Cluster, namespaces: list[str]) -> None:
    for k, ns in enumerate(namespaces):
        c.add_many([{"content": f"{t} ({ns})", "namespace": ns, "memory_type": "fact"} for t in TEXTS[k % 3:]])
        c.add_messages([{"role": "user", "content": f"remind me that {TEXTS[k]}"},
                        {"role": "assistant", "content": "noted, I will remember it"}], namespace=ns, session_id="s1")


# ----------------------------------------------------------------------------------- failures
# Kills of the writer actor, each once writes flow again after the last restart, with four writers'
# calls (add, add_messages) in flight: every kill cuts calls mid-way and every restart replays the
# WAL under them, so each kill tries the same thing (a call cut by a death, sent again, stored
# once). 8 kills cut up to 32 calls in flight and run 8 replays under load; the 20 this took
# before repeated that at ~1.9 s a kill (Ray's restart) and found nothing more.
KILLS = 8


def test_killing_the_writer_again_and_again_keeps_every_acknowledged_write_once(tmp_path: Path) -> None:
    c = Cluster({"s0": tmp_path / "s0"}, timeout=20)
    acked: dict[str, list[str]] = {}
    unexpected: list[BaseException] = []
    retried = [0]
    stop = threading.Event()

    def writer(t: int) -> None:
        ns, mine = f"w{t}", acked.setdefault(f"w{t}", [])
        i = 0
        while not stop.is_set():
            mid = uuid.uuid4().hex
            while True:  # a call during a restart either succeeds or raises ShardUnavailable: send it again
                try:
                    if i % 3 == 2:
                        c.add_messages([{"role": "user", "content": f"turn {i} of {ns}", "id": mid}], namespace=ns,
                                       session_id="chat")
                    else:
                        c.add(f"note {i} of {ns}", namespace=ns, id=mid)
                    break
                except ShardUnavailable:
                    retried[0] += 1
                except BaseException as exc:  # noqa: BLE001 - any other error fails the test below
                    unexpected.append(exc)
                    return
            mine.append(mid)
            i += 1

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    pids = [ray.get(c.writer("s0").pid.remote())]
    for _ in range(KILLS):
        before = sum(len(v) for v in acked.values())
        while sum(len(v) for v in acked.values()) < before + 3 and not unexpected:  # writes flow again
            time.sleep(0.02)
        ray.kill(c.writer("s0"), no_restart=False)
        while (pid := ray.get(c.writer("s0").pid.remote(), timeout=60)) == pids[-1]:  # the kill lands
            time.sleep(0.02)
        pids.append(pid)  # a new process: Ray restarted the actor
    stop.set()
    for th in threads:
        th.join()
    assert unexpected == []
    assert len(set(pids)) == KILLS + 1  # the writer really died KILLS times
    for ns, ids in acked.items():
        listed = [m.id for m in c.list(ns, limit=100_000)]
        assert sorted(listed) == sorted(ids), ns  # every acknowledged write, and no other
        assert len(set(listed)) == len(listed)  # each once
        assert all(len(c.history(mid, namespace=ns)) == 1 for mid in ids[:50])  # one version: never stored twice
    c.close()
    with engramdb.open(tmp_path / "s0") as db:  # the folder is an ordinary store afterwards
        assert len(db) == sum(len(v) for v in acked.values())


def test_a_dead_shard_raises_shard_unavailable_naming_it(tmp_path: Path) -> None:
    c = Cluster({"s0": tmp_path / "s0"}, timeout=20)
    c.add("kept", namespace="a")
    pid = ray.get(c.writer("s0").pid.remote())
    ray.kill(c.writer("s0"), no_restart=True)  # gone for good: no restart will answer
    for _ in range(500):  # the kill is asynchronous: wait until the actor no longer answers
        try:
            ray.get(c.writer("s0").pid.remote())
        except ray.exceptions.RayActorError:
            break
        time.sleep(0.02)
    with pytest.raises(ShardUnavailable, match="shard 's0' is unavailable"):
        c.search("kept", namespace="a")
    with pytest.raises(ShardUnavailable, match="shard 's0'"):
        c.add("more", namespace="a")
    for _ in range(1500):  # an actor that no longer answers may still be exiting, its writer lock held
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    with engramdb.open(tmp_path / "s0") as db:  # what was acknowledged is in the folder
        assert [m.content for m in db.list("a")] == ["kept"]


# ----------------------------------------------------------------------------------- answers
def test_the_cluster_answers_as_engramdb_open_does_on_the_same_folder(tmp_path: Path) -> None:
    c = two_shards(tmp_path)
    spread = spread_namespaces(c)
    namespaces = [ns for v in spread.values() for ns in v]
    fill(c, namespaces)
    for ns in namespaces:
        with engramdb.open(c.folders[c.shard_of(ns)], read_only=True) as direct:
            for q in ("where does Alice live?", "what does Carol drink", "cello lessons", "marathon"):
                got, want = c.search(q, namespace=ns), direct.search(q, namespace=ns)
                assert [(h.id, round(h.score, 6)) for h in got] == [(h.id, round(h.score, 6)) for h in want]
                assert got.query_id is not None  # logged by the writer: feedback can name it
                got_ctx = c.context(q, namespace=ns, max_tokens=300, log=False)
                assert got_ctx.text == direct.context(q, namespace=ns, max_tokens=300, log=False).text
            cursor, pages, direct_pages = None, [], []
            while True:
                page = c.list(ns, limit=4, cursor=cursor)
                pages.append([m.id for m in page])
                cursor = page.next_cursor
                if cursor is None:
                    break
            cursor = None
            while True:
                dpage = direct.list(ns, limit=4, cursor=cursor)
                direct_pages.append([m.id for m in dpage])
                cursor = dpage.next_cursor
                if cursor is None:
                    break
            assert pages == direct_pages and len(pages) > 1
    c.close()


def test_namespaces_stay_apart_across_shards_and_each_folder_opens_alone(tmp_path: Path) -> None:
    c = two_shards(tmp_path)
    spread = spread_namespaces(c, 1)
    a, b = spread["s0"][0], spread["s1"][0]
    ma = c.add("the door code is 4711", namespace=a)
    mb = c.add("the door code is 9045", namespace=b)
    assert [h.id for h in c.search("door code", namespace=a)] == [ma.id]
    assert [h.id for h in c.search("door code", namespace=b)] == [mb.id]
    assert c.get(mb.id, namespace=a) is None and c.history(mb.id, namespace=a) == []
    assert c.get(mb.id, namespace=b) == mb
    with pytest.raises(engramdb.StoreError, match=f"no memory with id '{mb.id}' in namespace '{a}'"):
        c.forget(mb.id, namespace=a)
    with pytest.raises(ValueError, match=f"no memory with id '{mb.id}' in namespace '{a}'"):
        c.feedback(c.search("door code", namespace=a).query_id or "", [mb.id], namespace=a)
    h = c.search("door code", namespace=b)
    assert c.feedback(h.query_id or "", [mb.id], namespace=b) == 1
    assert c.forget(ma.id, namespace=a).forgotten_at is not None
    assert c.purge([mb.id], namespace=b) == 1 and c.purge([mb.id], namespace=b) == 0  # a retried purge is safe
    c.close()
    for shard, ns in (("s0", a), ("s1", b)):
        with engramdb.open(tmp_path / shard) as db:
            assert set(db.stats()["namespaces"]) <= {ns}


def test_a_retried_write_is_stored_once_and_a_reused_id_is_refused(tmp_path: Path) -> None:
    c = Cluster({"s0": tmp_path / "s0"})
    m = c.add("Alice moved to Lisbon", namespace="alice")
    again = c.add("Alice moved to Lisbon", namespace="alice", id=m.id)  # what Ray does after a restart
    assert again == m
    msgs = [{"role": "user", "content": "hello", "id": uuid.uuid4().hex}]
    assert c.add_messages(msgs, namespace="alice") == c.add_messages(msgs, namespace="alice")
    assert len(c.list("alice")) == 2
    with pytest.raises(engramdb.StoreError, match=f"id '{m.id}' already exists in shard 's0' with other content"):
        c.add("Alice moved to Porto", namespace="alice", id=m.id)
    with pytest.raises(engramdb.StoreError, match=f"id '{m.id}' already exists"):
        c.add("Alice moved to Lisbon", namespace="bob", id=m.id)
    c.close()


# ----------------------------------------------------------------------------------- moves
def test_adding_a_shard_and_rebalancing_moves_only_its_namespaces_keeping_ids(tmp_path: Path) -> None:
    c = two_shards(tmp_path)
    namespaces = [f"user-{i}" for i in range(12)]
    fill(c, namespaces)
    c.forget(c.list(namespaces[0])[0].id, namespace=namespaces[0])  # a second version moves too
    before = {ns: {m.id: c.history(m.id, namespace=ns) for m in c.list(ns, limit=1000, include_ended=True)}
              for ns in namespaces}
    forgotten = c.list(namespaces[0], limit=1000)  # one fewer than before
    c3 = Cluster({"s0": tmp_path / "s0", "s1": tmp_path / "s1", "s2": tmp_path / "s2"})
    going = {ns for ns in namespaces if c3.shard_of(ns) == "s2"}
    assert going and all(c3.shard_of(ns) == c.shard_of(ns) for ns in set(namespaces) - going)
    report = c3.rebalance()
    assert set(report) == going
    assert all(r["copied"] == len(before[ns]) and r["purged"] >= len(before[ns]) for ns, r in report.items())
    for ns in namespaces:
        after = {mid: c3.history(mid, namespace=ns) for mid in before[ns]}
        assert after == before[ns]  # same ids, versions, times and content
    assert len(c3.list(namespaces[0], limit=1000)) == len(forgotten)
    held = c3.namespaces()
    assert set(held["s2"]) == going and not going & (set(held["s0"]) | set(held["s1"]))
    assert c3.rebalance() == {}  # nothing left to move
    c3.close()


def test_a_move_interrupted_after_the_copy_finishes_when_run_again(tmp_path: Path) -> None:
    c = two_shards(tmp_path)
    ns = spread_namespaces(c, 1)["s0"][0]
    fill(c, [ns])
    ids = sorted(m.id for m in c.list(ns, limit=1000))
    # the copy made, then the mover died before checking it and purging the old shard
    data = ray.get(c.writer("s0").export_namespace.remote(ns))
    ray.get(c.writer("s1").import_namespace.remote(data))
    report = c.move_namespace(ns, to="s1")
    assert report["copied"] == 0 and report["purged"] == len(ids)
    assert c.shard_of(ns) == "s1"  # pinned there in this client
    assert sorted(m.id for m in c.list(ns, limit=1000)) == ids
    assert ns not in c.namespaces()["s0"] and c.namespaces()["s1"][ns] == len(ids)
    assert c.move_namespace(ns, to="s1")["from"] == []  # run once more: nothing to do
    m = c.add("written after the move", namespace=ns)
    assert c.get(m.id, namespace=ns) == m
    c.close()


# ----------------------------------------------------------------------------------- replicas
def test_replicas_serve_reads_and_see_writes(tmp_path: Path) -> None:
    c = Cluster({"s0": tmp_path / "s0"}, replicas=2, refresh_seconds=0.0)
    m = c.add("Alice moved to Lisbon", namespace="alice")
    for _ in range(4):  # round-robin over both replicas: each sees the write this client made
        assert [h.id for h in c.search("Lisbon", namespace="alice", log=False)] == [m.id]
        assert c.get(m.id, namespace="alice") == m
    other = Cluster({"s0": tmp_path / "s0"})  # another client: the same writer, found by name
    m2 = other.add("Alice bought a bike in Lisbon", namespace="alice")
    for _ in range(4):  # a write by another client: seen once the replica asks the writer
        assert {x.id for x in c.list("alice")} == {m.id, m2.id}
    c.close()


# ----------------------------------------------------------------------------------- admin
def test_admin_verbs_fan_out_to_every_shard(tmp_path: Path) -> None:
    c = two_shards(tmp_path)
    spread = spread_namespaces(c, 1)
    fill(c, [ns for v in spread.values() for ns in v])
    stats = c.stats()
    assert set(stats) == {"s0", "s1"} and all(s["memories"] > 0 for s in stats.values())
    assert all(v["ok"] for v in c.verify().values())
    copied = c.backup(tmp_path / "backup")
    assert set(copied) == {"s0", "s1"}
    for shard in ("s0", "s1"):
        with engramdb.open(tmp_path / "backup" / shard, read_only=True) as db:
            assert len(db) == stats[shard]["memories"]
    assert set(c.consolidate()) == {"s0", "s1"}
    topics = c.refresh_topics()
    assert {s: set(t) for s, t in topics.items()} == {s: set(v) for s, v in spread.items()}
    c.close()


# ----------------------------------------------------------------------------------- jobs
def test_jobs_export_verify_and_reembed_two_folders(tmp_path: Path) -> None:
    base = profile_schema("default")
    schema = Schema([*base, Space("alt", "dense", 16, "cosine", role="post-retrieval-only")], main=base.main)
    c = two_shards(tmp_path, open_kwargs={"schema": schema})
    spread = spread_namespaces(c, 1)
    ids = {}
    for ns in (spread["s0"][0], spread["s1"][0]):
        for t in TEXTS[:5]:
            ids[c.add(t, namespace=ns, vectors={"alt": [1.0] + [0.0] * 15}).id] = ns
    export_parquet(c.folders, tmp_path / "parquet")
    table = pq.read_table(tmp_path / "parquet")
    assert tuple(table.column_names) == COLUMNS
    assert sorted(table.column("id").to_pylist()) == sorted(ids)
    assert set(table.column("shard").to_pylist()) == {"s0", "s1"}
    checked = verify_folders(list(c.folders.values()))
    assert sorted(checked) == sorted(c.folders.values()) and all(v["ok"] for v in checked.values())
    done = reembed(c, "alt", lambda: HashingEmbedder(dim=16))
    assert done == {"s0": 5, "s1": 5}
    emb = HashingEmbedder(dim=16)
    for mid, ns in ids.items():
        m = c.get(mid, namespace=ns)
        assert m is not None and m.version == 2
        vec = emb.embed([m.content])[0]
        assert c.search(vec, namespace=ns, space="alt", k=1, strategy="exact")[0].id == mid
    c.close()


# ----------------------------------------------------------------------------------- bad input
def test_bad_input_is_refused_naming_the_value_before_anything_is_written(tmp_path: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("not a store")
    with pytest.raises(ValueError, match=f"shard 's1': folder '{file}' is a file"):
        Cluster({"s0": tmp_path / "s0", "s1": file})
    with pytest.raises(ValueError, match="shard name must be"):
        Cluster({"bad/name": tmp_path / "s0"})
    with pytest.raises(TypeError, match="shards must be a non-empty dict"):
        Cluster([tmp_path / "s0"])  # type: ignore[arg-type]
    c = Cluster({"s0": tmp_path / "s0"})
    c.add("kept", namespace="a")
    with pytest.raises(TypeError, match="namespace must be a str, got int 42"):
        c.add("x", namespace=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"records\[1\]: namespace must be a str, got NoneType None"):
        c.add_many([{"content": "ok", "namespace": "a"}, {"content": "no namespace"}])
    with pytest.raises(ValueError, match="unknown shard 'nope'"):
        c.move_namespace("a", to="nope")
    with pytest.raises(engramdb.InvalidMemory):
        c.add("", namespace="a")  # the store's own check, from inside the actor, as itself
    assert [m.content for m in c.list("a")] == ["kept"]  # nothing else was written
    c.close()

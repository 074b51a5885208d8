"""Issue 25, the adversary's pass over the capture, spool, export and service fixes: 14 more ways
a memory was lost, leaked or made the store refuse to open. Each test is the attack, reduced; each
failed before its fix."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb import InvalidMemory, StoreError


def envelope(body: str) -> str:
    return json.dumps({"format": 1, "crc32": zlib.crc32(body.encode()), "records": body})


def _capture_same_id(store: str, i: int, start: Any, out: Any) -> None:
    start.wait()
    try:
        engramdb.capture(store, [{"id": "same-id", "content": f"version {i}", "namespace": "n"}])
        out.put((i, "acknowledged"))
    except StoreError:
        out.put((i, "refused"))


def test_one_id_captured_with_different_texts_at_once_is_acknowledged_once(tmp_path: Path) -> None:
    """Two processes could both pass the check of the waiting records: both acknowledged, and the
    writer then kept one and dropped the other in silence."""
    store = tmp_path / "s"
    engramdb.open(store).close()
    writer = engramdb.open(store)  # holds the lock: the captures spool
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_capture_same_id, args=(str(store), i, start, out)) for i in range(6)]
    for p in procs:
        p.start()
    time.sleep(0.5)
    start.set()
    for p in procs:
        p.join(60)
    results = [out.get() for _ in procs]
    acknowledged = [i for i, what in results if what == "acknowledged"]
    assert len(acknowledged) == 1
    writer.admin.ingest_spool()
    assert writer.get("same-id").content == f"version {acknowledged[0]}"  # type: ignore[union-attr]
    writer.close()


def test_a_readers_rows_taken_in_after_a_purge_and_a_restart_never_name_it(tmp_path: Path) -> None:
    store = tmp_path / "s"
    with engramdb.open(store) as db:
        secret = db.add("my bank pin is 4321 secret", namespace="u").id
        db.add("the weather is nice today", namespace="u")
    reader = engramdb.open(store, read_only=True, access_log="spool")
    assert any(h.id == secret for h in reader.search("bank pin secret", namespace="u", k=2))
    with engramdb.open(store) as writer:
        writer.purge([secret])
    reader.close()  # spools its rows, naming the purged memory
    subprocess.run([sys.executable, "-c", f"import engramdb; engramdb.open({str(store)!r}).close()"], check=True)
    for f in store.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes() and b"bank pin" not in f.read_bytes(), f


def test_the_same_record_captured_again_is_the_copy_already_there_on_either_path(tmp_path: Path) -> None:
    store = tmp_path / "s"
    rec = {"id": "r1", "content": "captured once", "namespace": "n"}
    assert engramdb.capture(store, [rec])["stored"] == 1
    assert engramdb.capture(store, [rec])["stored"] == 1  # the lock free: before, "already exists"
    with pytest.raises(StoreError, match="already exists"):
        engramdb.capture(store, [{**rec, "content": "another text"}])


@pytest.mark.parametrize("taken", ["damaged", "rejected", "taking"])
def test_a_set_aside_name_taken_by_a_folder_never_stops_a_writer(tmp_path: Path, taken: str) -> None:
    store = tmp_path / "s"
    with engramdb.open(store) as db:
        db.add("kept", namespace="n")
    spool = store / "spool"
    spool.mkdir()
    if taken == "damaged":
        (spool / "a.json").write_text("not a spool file")
    elif taken == "rejected":
        (spool / "a.json").write_text(envelope(json.dumps([{"id": "q", "content": 5, "namespace": "n"}])))
    else:
        (spool / "a.access").write_text(envelope(json.dumps(
            [{"kind": "search", "query_id": "q", "at": "2024-01-01T00:00:00+00:00", "namespace": "n"}])))
    (spool / f"a.{taken}").mkdir()
    with engramdb.open(store) as db:  # was a raw IsADirectoryError, at every open
        assert len(db) == 1
    assert (spool / f"a.{taken}").is_dir()


def test_the_spool_follows_no_link(tmp_path: Path) -> None:
    store = tmp_path / "s"
    engramdb.open(store).close()
    (store / "spool").mkdir()
    outside = tmp_path / "outside.json"
    outside.write_text(envelope(json.dumps([{"id": "via-link", "content": "from outside", "namespace": "n"}])))
    (store / "spool" / "x.json").symlink_to(outside)
    with engramdb.open(store) as db:
        assert db.get("via-link") is None
    other = tmp_path / "t"
    engramdb.open(other).close()
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text('{"name": "my-app"}')
    (project / "data.json").write_text(envelope(json.dumps([{"id": "y", "content": "z", "namespace": "n"}])))
    (other / "spool").symlink_to(project)
    engramdb.open(other).close()
    assert sorted(p.name for p in project.iterdir()) == ["data.json", "package.json"]
    from engramdb.storage import spool

    with pytest.raises(StoreError, match="symbolic link"):  # nothing is written through it either
        spool.put(other, [{"id": "k", "content": "x", "namespace": "n"}])


@pytest.mark.parametrize("body", [
    json.dumps([{"kind": "search", "query_id": "q1", "at": "2024-01-01T00:00:00+00:00", "namespace": "n",
                 "rank": 2**70}]),
    json.dumps([{"kind": "search", "query_id": "q1", "at": "2024-01-01T00:00:00+00:00", "namespace": "n",
                 "score": 2**80}]),
    '[{"kind": "search", "query_id": "q\\ud800", "at": "2024-01-01T00:00:00+00:00", "namespace": "n"}]'],
    ids=["rank", "score", "surrogate"])
def test_access_rows_the_log_refuses_are_set_aside_not_replayed_for_ever(tmp_path: Path, body: str) -> None:
    store = tmp_path / "s"
    with engramdb.open(store) as db:
        db.add("a memory", namespace="n")
    (store / "spool").mkdir()
    (store / "spool" / "00000000000000000001-1-aaaaaaaa.access").write_text(envelope(body))
    for _ in range(2):
        engramdb.open(store).close()  # was a raw OverflowError / ArrowInvalid / UnicodeEncodeError each time
    assert [p.suffix for p in (store / "spool").iterdir()] == [".damaged"]


def test_a_whole_capture_stamped_in_the_future_is_taken_in(tmp_path: Path) -> None:
    store = tmp_path / "s"
    engramdb.open(store).close()
    tmp = store / "spool" / "01700000000000000000-4242-deadbeef.json.tmp"
    tmp.parent.mkdir()
    tmp.write_text(envelope(json.dumps([{"id": "died-before-rename", "content": "whole", "namespace": "n"}])))
    os.utime(tmp, (time.time() + 3600,) * 2)  # the clock was stepped back after its writer died
    with engramdb.open(store) as db:
        assert db.get("died-before-rename") is not None
    assert list((store / "spool").iterdir()) == []


def test_a_vector_too_long_for_float32_is_refused_naming_the_space(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    db.add("a normal memory", namespace="n")
    from engramdb.spaces.schema import SpaceError

    with pytest.raises(SpaceError, match="too long for float32"):
        db.add("huge", namespace="n", vectors={db.schema.main: np.full(db.schema[db.schema.main].dim, 3e38,
                                                                        np.float32)})
    assert db.search("normal", namespace="n", strategy="dense_only", k=1)[0].memory.content == "a normal memory"
    db.close()


def test_a_full_disk_error_names_the_file(tmp_path: Path) -> None:
    store = tmp_path / "s"
    engramdb.open(store).close()
    code = f"""
import resource, signal, engramdb
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
db = engramdb.open({str(store)!r})
resource.setrlimit(resource.RLIMIT_FSIZE, (200, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    db.add_many([{{"content": "x" * 5000, "namespace": "n"}}])
except OSError as exc:
    print("NAMED" if exc.filename else "BARE", exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "NAMED" in out.stdout and str(store) in out.stdout, out.stdout + out.stderr


def _hook(event: str, store: Path, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engramdb", "hook", event, "--path", str(store), "--namespace", "ns"],
                          input=json.dumps(payload), capture_output=True, text=True, check=False)


def test_a_hook_pointed_at_a_folder_that_is_not_a_store_leaves_it_untouched_and_says_so(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text("print('hi')\n")
    out = _hook("Stop", project, {"session_id": "s1", "cwd": str(project), "hook_event_name": "Stop",
                                  "last_assistant_message": "an important reply"})
    assert out.returncode == 0 and "NOT kept" in out.stderr
    assert [p.name for p in project.iterdir()] == ["main.py"]


def test_a_hook_keeps_a_reply_whose_session_id_is_very_long(tmp_path: Path) -> None:
    store = tmp_path / "s"
    out = _hook("Stop", store, {"session_id": "s" * 300, "cwd": str(tmp_path), "hook_event_name": "Stop",
                                "last_assistant_message": "the reply that must be remembered"})
    assert out.returncode == 0, out.stderr
    with engramdb.open(store) as db:
        kept = [m for m in db.list("ns") if "must be remembered" in m.content]
    assert len(kept) == 1 and kept[0].session_id is not None and len(kept[0].session_id) == 256


def test_capture_names_the_record_of_any_iterable_that_is_not_a_dict(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"records\[1\] must be a dict"):
        engramdb.capture(tmp_path / "s", (r for r in [{"content": "ok", "namespace": "n"}, 5]))
    assert not (tmp_path / "s").exists()


def test_the_example_service_answers_a_lone_surrogate_with_422(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "service"))
    try:
        import app as service
        from fastapi.testclient import TestClient
    finally:
        sys.path.pop(0)
    with TestClient(service.create_app(tmp_path / "svc"), raise_server_exceptions=False) as client:
        for body in (b'{"messages":[{"role":"user","content":"hi \\ud800 there"}]}',
                     b'{"session_id":"s\\udc00","messages":[{"role":"user","content":"hi"}]}'):
            got = client.post("/users/alice/messages", content=body, headers={"content-type": "application/json"})
            assert got.status_code == 422, got.text


def test_an_import_of_a_file_cut_short_stores_nothing(tmp_path: Path) -> None:
    db = engramdb.open()
    db.add_many([{"content": f"m{i}", "namespace": "n"} for i in range(40)])
    db.admin.export(tmp_path / "x.jsonl")
    lines = (tmp_path / "x.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "x.jsonl").write_bytes(b"".join(lines[:20]))
    other = engramdb.open()
    with pytest.raises(InvalidMemory, match="cut short"):
        other.admin.import_(tmp_path / "x.jsonl")
    assert len(other) == 0

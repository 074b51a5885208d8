"""Export and import (S7, issue 25 items 8, 9, 14): lossless for what a store holds of its memories
(every version, valid and system time, forgotten state, metadata, typed edges with their history),
byte-stable through a store of the same schema, re-embedded for another, and checked: a bad line
is refused naming the file, the line (or row) and the field, and nothing is stored."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta, timezone
from pathlib import Path

import engramdb
import numpy as np
import pyarrow as pa
import pytest
from engramdb import InvalidMemory, StoreError
from engramdb.spaces import minilm

FORMATS = [".jsonl", ".arrow"]
T0 = datetime(2021, 3, 4, 5, 6, 7, 890123, tzinfo=timezone.utc)

try:
    minilm.model_dir()
    _NO_MINILM = ""
except ImportError as exc:  # the weights package is an optional install
    _NO_MINILM = str(exc)


def _history_store(db: engramdb.Store) -> dict[str, str]:
    """A store with what a round trip can lose: versions, supersede, links with every field, an
    unlink (edge history), a forgotten memory, metadata, valid time, another namespace."""
    lisbon = db.add("I live in Lisbon", namespace="u", valid_from=T0, metadata={"k": [1, {"x": "é"}]},
                    provenance={"src": "chat"}, role="user", memory_type="fact", session_id="s1")
    porto = db.add("I moved to Porto last spring", namespace="u", session_id="s1", confidence=0.7)
    coffee = db.add("Coffee is good", namespace="u")
    db.add("another user's note", namespace="v")
    db.update(coffee.id, content="Coffee is great, espresso especially")
    db.link(lisbon.id, coffee.id, "RELATED_TO", confidence=0.8, reason="both about mornings",
            valid_from=T0, valid_until=T0 + timedelta(days=30))
    db.link(porto.id, coffee.id, "CAUSED_BY")
    db.unlink(porto.id, coffee.id, "CAUSED_BY")
    db.supersede(lisbon.id, porto.id)
    db.forget(coffee.id)
    return {"lisbon": lisbon.id, "porto": porto.id, "coffee": coffee.id}


def _everything(db: engramdb.Store, ids: dict[str, str]) -> tuple[object, ...]:
    """All a user can read back of these memories: every version and the live edges both ways."""
    return tuple((db.history(mid), sorted(db.edges(mid, direction="both", include_forgotten=True),
                                          key=lambda e: (e.src, e.dst, e.type)))
                 for mid in ids.values())


# ------------------------------------------------------------------------------ lossless
@pytest.mark.parametrize("suffix", FORMATS)
def test_a_round_trip_keeps_versions_edges_validity_forgotten_and_metadata(tmp_path: Path, suffix: str) -> None:
    db = engramdb.open(tmp_path / "a")
    ids = _history_store(db)
    assert db.admin.export(tmp_path / f"all{suffix}") == 4
    other = engramdb.open(tmp_path / "b")
    got = other.admin.import_(tmp_path / f"all{suffix}")
    assert sorted(got) == sorted([*ids.values(), db.list("v")[0].id])
    assert got.versions == 8  # 2 + 2 + 3 versions and the other namespace's 1
    assert got.edges == 4  # RELATED_TO, CAUSED_BY and its removal, SUPERSEDES
    assert _everything(other, ids) == _everything(db, ids)
    coffee = other.get(ids["coffee"], include_forgotten=True)
    assert coffee is not None and coffee.forgotten_at is not None and other.get(ids["coffee"]) is None
    lisbon = other.history(ids["lisbon"])[-1]
    assert (lisbon.valid_from, lisbon.superseded_by, lisbon.metadata, lisbon.provenance) == (
        T0, ids["porto"], {"k": [1, {"x": "é"}]}, {"src": "chat"})
    assert lisbon.valid_until is not None
    edge = other.edges(ids["lisbon"], type="RELATED_TO", include_forgotten=True)[0]
    assert (edge.confidence, edge.reason, edge.valid_from, edge.valid_until) == (
        0.8, "both about mornings", T0, T0 + timedelta(days=30))
    assert [e.type for e in other.edges(ids["porto"], direction="out")] == ["SUPERSEDES"]  # CAUSED_BY stays removed
    # system time comes along: the store answers for a moment before the supersede as the first did
    before = other.history(ids["porto"])[-1].learned_at - timedelta(microseconds=1)  # type: ignore[operator]
    was = [h.id for h in other.search("where do I live", namespace="u", k=5, as_of=before)]
    assert was == [h.id for h in db.search("where do I live", namespace="u", k=5, as_of=before)]
    other.close()
    again = engramdb.open(tmp_path / "b")  # and it is durable
    assert _everything(again, ids) == _everything(db, ids)
    again.close()
    db.close()


@pytest.mark.parametrize("suffix", FORMATS)
def test_export_import_export_is_byte_stable_for_the_same_schema(tmp_path: Path, suffix: str) -> None:
    db = engramdb.open(tmp_path / "a")
    _history_store(db)
    db.admin.checkpoint()  # rows in a segment file and in the WAL
    db.add("written after the checkpoint", namespace="u")
    first, second = tmp_path / f"1{suffix}", tmp_path / f"2{suffix}"
    db.admin.export(first)
    other = engramdb.open(tmp_path / "b")
    other.admin.import_(first)
    other.admin.export(second)
    assert second.read_bytes() == first.read_bytes()
    other.close()
    with engramdb.open(tmp_path / "b") as reopened:  # the same bytes from the store's files
        reopened.admin.export(second)
    assert second.read_bytes() == first.read_bytes()
    db.close()


def test_an_arrow_export_of_one_namespace_holds_its_edges_and_schema(tmp_path: Path) -> None:
    db = engramdb.open()
    ids = _history_store(db)
    assert db.admin.export(tmp_path / "u.arrow", namespace="u") == 3
    table = pa.ipc.open_file(str(tmp_path / "u.arrow")).read_all()
    assert table.num_rows == 7 and set(table.column("namespace").to_pylist()) == {"u"}
    head = json.loads(table.schema.metadata[b"engramdb.export"])
    assert head["schema"] == db.schema.to_dict()
    assert {(e["src"], e["type"], e["removed_at"] is None) for e in head["edges"]} == {
        (ids["lisbon"], "RELATED_TO", True), (ids["porto"], "CAUSED_BY", True), (ids["porto"], "CAUSED_BY", False),
        (ids["porto"], "SUPERSEDES", True)}


def test_a_jsonl_line_is_the_current_version_with_its_history_and_edges(tmp_path: Path) -> None:
    db = engramdb.open()
    ids = _history_store(db)
    db.admin.export(tmp_path / "all.jsonl")
    lines = {r["id"]: r for r in map(json.loads, (tmp_path / "all.jsonl").read_text().splitlines()) if "id" in r}
    coffee = lines[ids["coffee"]]
    assert coffee["version"] == 3 and coffee["forgotten_at"] is not None
    assert [h["version"] for h in coffee["history"]] == [1, 2] and coffee["history"][0]["content"] == "Coffee is good"
    assert "edges" not in coffee  # none leaves it
    assert [e["type"] for e in lines[ids["porto"]]["edges"]] == ["CAUSED_BY", "CAUSED_BY", "SUPERSEDES"]


# ------------------------------------------------------------------------------ vectors and schemas
def _stored_dense(db: engramdb.Store, tmp: Path) -> dict[str, np.ndarray]:
    """Each memory's stored dense vector, read back from an Arrow export (the segment layout)."""
    db.admin.export(tmp / "vectors.arrow")
    table = pa.ipc.open_file(str(tmp / "vectors.arrow")).read_all()
    dense = table.column("v.dense").combine_chunks().flatten().to_numpy().reshape(table.num_rows, -1)
    return dict(zip(table.column("id").to_pylist(), dense))


TEXTS = ["My sister Maya runs a sourdough stall at the market", "I adopted a grey cat named Pixel",
         "We moved to Lisbon last spring", "My favourite food is spicy ramen",
         "I work as a nurse on night shifts", "The car broke down on the highway"]


@pytest.mark.skipif(bool(_NO_MINILM), reason=_NO_MINILM or "weights present")
@pytest.mark.parametrize("suffix", FORMATS)
def test_an_export_into_another_profile_is_embedded_again(tmp_path: Path, suffix: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    src = engramdb.open()
    for t in TEXTS:
        src.add(t, namespace="u")
    src.admin.export(tmp_path / f"x{suffix}")
    db = engramdb.open(profile="minilm")
    db.add("unrelated note about the weather", namespace="u")
    with caplog.at_level(logging.WARNING, logger="engramdb"):
        got = db.admin.import_(tmp_path / f"x{suffix}")
    assert {"dense", "hdc"} <= set(got.reembedded)
    if suffix == ".arrow":  # the spaces both profiles share keep the file's vectors; the others are named
        assert set(got.reembedded) == {"dense", "hdc"} and "minilm-l6-v2" in got.reembedded["dense"]
        assert "embedded again" in caplog.text and "dense" in caplog.text
    own = db.embedders["dense"].embed(TEXTS)
    stored = _stored_dense(db, tmp_path)
    by_text = {m.content: m.id for m in db.list("u", limit=100)}
    for t, vec in zip(TEXTS, np.asarray(own)):
        assert float(np.dot(stored[by_text[t]], vec)) == pytest.approx(1.0, abs=1e-5)
    hits = db.search("I have a pet kitten", namespace="u", k=3, space="dense")
    assert hits[0].memory.content == "I adopted a grey cat named Pixel"


def test_an_arrow_file_of_other_dimensions_is_embedded_again_not_a_reshape_error(tmp_path: Path) -> None:
    from engramdb.spaces.schema import Schema, Space

    small = Schema([Space("dense", "dense", 8, "cosine")])
    src = engramdb.open(schema=small, embedders={})
    src.add("eight dimensions", namespace="n", vectors={"dense": np.eye(8, dtype=np.float32)[1]})
    src.admin.export(tmp_path / "small.arrow")
    db = engramdb.open()
    got = db.admin.import_(tmp_path / "small.arrow")
    assert set(got.reembedded) == {"dense", "lexical", "hdc", "tokens"}
    assert "8-d" in got.reembedded["dense"] and "no 'v.lexical' column" in got.reembedded["lexical"]
    assert db.search("eight dimensions", namespace="n", k=1)[0].id == got[0]
    # a store that cannot embed a space it would have to fill refuses the file, naming the space
    back = engramdb.open(schema=small, embedders={})
    db.admin.export(tmp_path / "big.arrow")
    with pytest.raises(InvalidMemory, match=r"big.arrow: space\(s\) \['dense'\] must be embedded again .*384-d"):
        back.admin.import_(tmp_path / "big.arrow")
    assert back.history(got[0]) == []


# ------------------------------------------------------------------------------ checked
def _good_line(tmp: Path) -> dict[str, object]:
    db = engramdb.open()
    db.add("a good record", namespace="n", id="good1")
    db.admin.export(tmp / "good.jsonl")
    rec: dict[str, object] = json.loads((tmp / "good.jsonl").read_text().splitlines()[1])  # after the header
    return rec


BAD_LINES = {
    "extra key": ({"colour": "red"}, r"unknown field\(s\) \['colour'\]"),
    "missing id": ({"id": None}, "id is missing"),
    "bad timestamp": ({"valid_from": "yesterday"}, "valid_from 'yesterday' is not an ISO time"),
    "naive timestamp": ({"learned_at": "2020-01-01T00:00:00"}, "learned_at is a naive datetime"),
    "bad version": ({"version": "x"}, "version must be an integer >= 1, got 'x'"),
    "huge version": ({"version": 2**70}, "version must be at most"),
    "bad metadata": ({"metadata": "str"}, "metadata must be a dict"),
    "bad history": ({"history": [{"id": "other", "namespace": "n", "content": "x"}]},
                    r"history\[0\]: id 'other' is not the line's id"),
    "history out of order": ({"history": [{"id": "x1", "namespace": "n", "content": "x", "version": 5}]},
                             "version 1 of 'x1' comes after version 5"),
    "edge to nowhere": ({"edges": [{"src": "x1", "dst": "nowhere", "type": "RELATED_TO", "namespace": "n",
                                    "created_at": T0.isoformat()}]},
                        "dst 'nowhere' is not a memory of the file"),
    "bad edge type": ({"edges": [{"src": "x1", "dst": "good1", "type": "related", "namespace": "n",
                                  "created_at": T0.isoformat()}]},
                      r"line 2 edges\[0\]: edge type must be UPPER_SNAKE_CASE"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_a_bad_line_is_refused_naming_file_line_and_field_and_nothing_is_stored(tmp_path: Path, case: str) -> None:
    change, message = BAD_LINES[case]
    rec = _good_line(tmp_path)
    bad = {**rec, "id": "x1", **change}
    if bad.get("id") is None:
        del bad["id"]
    (tmp_path / "in.jsonl").write_text(json.dumps(rec) + "\n" + json.dumps(bad) + "\n")
    db = engramdb.open()
    with pytest.raises(InvalidMemory, match="in.jsonl line 2"):
        db.admin.import_(tmp_path / "in.jsonl")
    with pytest.raises(InvalidMemory, match=message):
        db.admin.import_(tmp_path / "in.jsonl")
    assert db.history("good1") == [] and db.stats()["memories"] == 0  # all or nothing


@pytest.mark.parametrize("text", ["[1, 2]", '"a string"', "{not json", "[" * 100_000 + "]" * 100_000])
def test_a_line_that_is_not_a_record_is_named(tmp_path: Path, text: str) -> None:
    (tmp_path / "in.jsonl").write_text(text + "\n")
    with pytest.raises(InvalidMemory, match=r"in.jsonl line 1: not (an exported record|JSON)"):
        engramdb.open().import_(tmp_path / "in.jsonl")


def test_a_line_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_bytes(b'\n\n{"id": "\xff"}\n')
    with pytest.raises(InvalidMemory, match="in.jsonl line 3: not UTF-8"):
        engramdb.open().import_(tmp_path / "in.jsonl")


def test_an_id_the_store_holds_refuses_the_whole_file(tmp_path: Path) -> None:
    rec = _good_line(tmp_path)
    (tmp_path / "in.jsonl").write_text(json.dumps({**rec, "id": "fresh"}) + "\n" + json.dumps(rec) + "\n")
    db = engramdb.open()
    db.add("already here", namespace="n", id="good1")
    with pytest.raises(StoreError, match="in.jsonl line 2: id 'good1' already exists"):
        db.admin.import_(tmp_path / "in.jsonl")
    assert db.history("fresh") == [] and [m.content for m in db.history("good1")] == ["already here"]


def test_a_bad_arrow_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "junk.arrow").write_bytes(b"not an arrow file at all")
    db = engramdb.open()
    with pytest.raises(InvalidMemory, match="junk.arrow: not a readable Arrow export"):
        db.admin.import_(tmp_path / "junk.arrow")
    with pa.ipc.new_file(str(tmp_path / "other.arrow"), pa.schema([("id", pa.string())])) as w:
        w.write_table(pa.table({"id": ["a"]}))
    with pytest.raises(InvalidMemory, match="other.arrow: column 'namespace' is missing"):
        db.admin.import_(tmp_path / "other.arrow")
    src = engramdb.open()
    src.add("a record", namespace="n", id="r0")
    src.add("another", namespace="n", id="r1", valid_from=T0)
    src.admin.export(tmp_path / "ok.arrow")
    table = pa.ipc.open_file(str(tmp_path / "ok.arrow")).read_all()
    i = table.schema.get_field_index("metadata")
    broken = table.set_column(i, table.schema.field(i), pa.array(["{}", "[1]"]))
    with pa.ipc.new_file(str(tmp_path / "meta.arrow"), broken.schema) as w:
        w.write_table(broken)
    with pytest.raises(InvalidMemory, match="meta.arrow row 1: metadata or provenance is not a JSON object"):
        db.admin.import_(tmp_path / "meta.arrow")
    assert db.stats()["memories"] == 0


def test_a_jsonl_export_cut_short_is_refused_and_a_failed_one_keeps_the_last(tmp_path: Path) -> None:
    """Found by the adversary: a re-export that failed part-way had already cut the previous file
    in half, and a file cut at a line end imported without complaint (1,501 of 3,000)."""
    db = engramdb.open()
    db.add_many([{"content": f"memory {i}", "namespace": "n"} for i in range(300)])
    out = tmp_path / "all.jsonl"
    db.admin.export(out)
    whole = out.read_bytes()
    lines = whole.splitlines(keepends=True)
    assert json.loads(lines[0]) == {"engramdb_export": {"format": json.loads(lines[0])["engramdb_export"]["format"]}}
    assert json.loads(lines[-1]) == {"engramdb_export_end": {"memories": 300}}
    out.write_bytes(b"".join(lines[:151]))  # cut at a line end
    with pytest.raises(InvalidMemory, match="cut short"):
        engramdb.open().import_(out)
    out.write_bytes(b"".join(lines[:151] + lines[-1:]))  # the last line kept, memories gone
    with pytest.raises(InvalidMemory, match="says 300 memories, the file holds 150"):
        engramdb.open().import_(out)
    out.write_bytes(whole)
    blocker = tmp_path / "all.jsonl.tmp"
    blocker.mkdir()  # the temporary name taken: the export fails before it touches the file
    with pytest.raises(ValueError, match="cannot write export file"):
        db.admin.export(out)
    assert out.read_bytes() == whole

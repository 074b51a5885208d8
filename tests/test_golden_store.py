"""Golden store folders: what each format_version wrote (tools/make_golden_store.py) still opens,
reads and searches the same, read-only in place and writable from a copy.

store-v1: memories only (engramdb 0.1). store-v2: the same history plus edges, some in an edges
file and some (a link, an unlink) still in the WAL."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import engramdb
import numpy as np
import pyarrow as pa
import pytest
from engramdb import FormatError
from engramdb.storage.columns import FORMAT_VERSION
from store_helpers import golden_schema, golden_tokens, int8_tokens, toy_embedders, toy_schema

GOLDEN = Path(__file__).parent / "golden" / "store-v1"
GOLDEN_V2 = Path(__file__).parent / "golden" / "store-v2"
GOLDEN_V3 = Path(__file__).parent / "golden" / "store-v3"


def check_v1(db: engramdb.Store) -> None:
    g1 = db.get("g1", include_forgotten=True)
    assert g1 is not None and g1.forgotten_at is not None and g1.version == 2 and db.get("g1") is None
    assert g1.valid_from == datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc) and g1.role == "user"
    g2 = db.get("g2")
    assert g2 is not None and g2.superseded_by == "g4" and g2.valid_until == datetime(2024, 6, 1, tzinfo=timezone.utc)
    g3 = db.get("g3")
    assert g3 is not None and g3.content == "Bob likes green tea" and g3.metadata == {"lang": "en"}
    v = np.eye(8, dtype=np.float32)
    assert [h.id for h in db.search(v[3], namespace="alice", k=5)] == ["g4"]  # g1 forgotten, g2 superseded
    assert db.search(v[4], namespace="bob", k=1)[0].id == "g3"
    then = db.search(v[1], namespace="alice", k=1, as_of=datetime(2024, 5, 15, tzinfo=timezone.utc))
    assert then[0].id == "g2"


def test_golden_v1_opens_read_only_in_place() -> None:
    db = engramdb.open(GOLDEN, schema=toy_schema(), embedders=toy_embedders(), read_only=True)  # type: ignore[arg-type]
    check_v1(db)
    db.close()
    assert sorted(p.name for p in GOLDEN.iterdir()) == [
        "manifest.json", "seg-000001.arrow", "seg-000002.arrow", "wal-000003.log"
    ], "opening read-only must not touch the folder"


def test_golden_v1_takes_writes_from_a_copy(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "s")
    db = engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    check_v1(db)
    db.add("Carol joined", namespace="carol", vectors={"dense": np.eye(8, dtype=np.float32)[5]})
    db.close()
    again = engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    check_v1(again)
    assert len(again) == 4
    again.close()


def test_a_future_format_is_refused_with_the_reason(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "s")
    manifest = tmp_path / "s" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"format_version": 1', '"format_version": 99'))
    with pytest.raises(FormatError, match="newer engramdb \\(format_version 99\\)"):
        engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]


def check_v2(db: engramdb.Store) -> None:
    check_v1(db)
    both = {(e.src, e.dst, e.type, e.confidence) for e in db.edges("g2", direction="in", include_forgotten=True)}
    assert both == {("g4", "g2", "SUPERSEDES", 1.0), ("g1", "g2", "CAUSED_BY", 0.75)}
    assert [e.type for e in db.edges("g2", direction="in")] == ["SUPERSEDES"]  # g1 is forgotten
    assert db.edges("g4") == [e for e in db.edges("g2", direction="in") if e.src == "g4"]
    assert db.edges("g1", direction="in", include_forgotten=True) == []  # RELATES_TO was unlinked
    assert db.stats()["edges"] == 2


def test_golden_v2_opens_read_only_in_place() -> None:
    db = engramdb.open(GOLDEN_V2, schema=toy_schema(), embedders=toy_embedders(), read_only=True)  # type: ignore[arg-type]
    check_v2(db)
    db.close()
    assert sorted(p.name for p in GOLDEN_V2.iterdir()) == [
        "edges-000005.arrow", "manifest.json", "seg-000001.arrow", "seg-000003.arrow", "wal-000006.log"
    ]


def test_golden_v2_survives_checkpoint_compact_and_purge(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN_V2, tmp_path / "s")
    with engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders()) as db:  # type: ignore[arg-type]
        check_v2(db)
        db.admin.compact()
        check_v2(db)
    with engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders()) as db:  # type: ignore[arg-type]
        check_v2(db)
        db.purge("g1")
        assert db.stats()["edges"] == 1
    files = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert [f for f in files if f.startswith("edges-")] and not any(f.startswith("wal-000006") for f in files)
    for p in (tmp_path / "s").rglob("*"):  # the purged memory's content and its edges' reasons are in no file
        if not p.is_file():
            continue
        data = p.read_bytes()  # (the access log and derived files included)
        assert b"Alice moved to Lisbon" not in data and b"CAUSED_BY" not in data


def test_a_v1_store_is_upgraded_when_opened_for_writing(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN, tmp_path / "s")
    with engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders()) as db:  # type: ignore[arg-type]
        assert json.loads((tmp_path / "s" / "manifest.json").read_text())["format_version"] == FORMAT_VERSION
        db.link("g4", "g2", "FOLLOWS")
    with engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders()) as db:  # type: ignore[arg-type]
        check_v1(db)
        assert [e.type for e in db.edges("g4")] == ["FOLLOWS"]


GOLDEN_BM25 = Path(__file__).parent / "golden" / "bm25-v1"
GOLDEN_BM25_V2 = Path(__file__).parent / "golden" / "bm25-v2"
BM25_QUERIES = [("alice", "bakery sourdough"), ("alice", "cat Biscuit"), ("bob", "sourdough tea")]


def _bm25_answers(path: Path, queries: list[tuple[str, str]], strategy: str = "bm25") -> list[list[tuple[str, float]]]:
    with engramdb.open(path, read_only=True) as db:
        return [[(h.id, round(h.score, 5)) for h in db.search(q, namespace=ns, k=5, strategy=strategy)]
                for ns, q in queries]


def _without_index_files(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    for f in (dest / "index").glob("*"):
        if f.name.startswith(("bm25-", "passages-")):
            f.unlink()
    return dest


def test_golden_bm25_v1_is_rebuilt_and_ranks_like_a_rebuild(tmp_path: Path) -> None:
    """tests/golden/bm25-v1: a BM25 file of format 1 (before passages) is named as outdated and
    rebuilt from the segments, never adopted; the answers are the same as a rebuild's."""
    with engramdb.open(GOLDEN_BM25, read_only=True) as db:
        db.search("bakery", namespace="alice", strategy="bm25")
        assert db.stats()["index_files"] == {"bm25-lexical": "format 1"}
    saved = _bm25_answers(GOLDEN_BM25, BM25_QUERIES)
    assert saved == _bm25_answers(_without_index_files(GOLDEN_BM25, tmp_path / "s"), BM25_QUERIES)
    assert [h[0] for h in saved[0]][:2] == ["alice-2", "alice-1"]  # both bakery turns, the sourdough one first
    assert {h[0] for h in saved[2]} == {"bob-0", "bob-1"}  # namespace bob only


def test_golden_bm25_v2_with_passages_is_adopted_and_ranks_like_a_rebuild(tmp_path: Path) -> None:
    """tests/golden/bm25-v2 (tools/make_golden_bm25.py): the BM25 file of format 2 and the passage
    vectors (format 1) are read, not rebuilt, and answer exactly as indexes rebuilt from the
    segments do; the long memory is found by its passage and says where it is."""
    queries = [*BM25_QUERIES, ("alice", "oven kitchen")]
    with engramdb.open(GOLDEN_BM25_V2, read_only=True) as db:
        hit = db.search("Who bought the old oven?", namespace="alice", k=1)[0]
        assert db.stats()["index_files"] == {"bm25-lexical": "adopted", "passages-dense": "adopted"}
        assert hit.id == "alice-4" and hit.passage is not None
        assert "old oven" in hit.memory.content[hit.passage[0]:hit.passage[1]]
    saved = [*_bm25_answers(GOLDEN_BM25_V2, queries), *_bm25_answers(GOLDEN_BM25_V2, queries, "hybrid")]
    copy = _without_index_files(GOLDEN_BM25_V2, tmp_path / "s")
    assert saved == [*_bm25_answers(copy, queries), *_bm25_answers(copy, queries, "hybrid")]
    assert saved[3][0][0] == "alice-4"


def test_golden_v3_opens_read_only_in_place_with_every_checksum() -> None:
    """store-v3 (format 3): the same history; every file listed with its size and XXH3, the manifest
    with a checksum of itself, the folder marked as a store."""
    before = {p.name: p.read_bytes() for p in GOLDEN_V3.iterdir()}
    db = engramdb.open(GOLDEN_V3, schema=toy_schema(), embedders=toy_embedders(), read_only=True)  # type: ignore[arg-type]
    check_v2(db)
    db.close()
    assert {p.name: p.read_bytes() for p in GOLDEN_V3.iterdir()} == before
    manifest = json.loads(before["manifest.json"])
    assert manifest["format_version"] == 3 and len(manifest["checksum"]) == 16
    assert all(len(e["xxh3"]) == 16 and e["bytes"] == len(before[e["file"]])
               for e in manifest["segments"] + manifest["edges"])
    assert "engramdb.store" in before


def test_a_v2_store_gets_checksums_when_opened_for_writing(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN_V2, tmp_path / "s")
    with engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders()) as db:  # type: ignore[arg-type]
        manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
        assert manifest["format_version"] == FORMAT_VERSION and all("xxh3" in e for e in manifest["segments"] + manifest["edges"])
        check_v2(db)
    (tmp_path / "s" / "seg-000001.arrow").write_bytes(b"x" + (tmp_path / "s" / "seg-000001.arrow").read_bytes()[1:])
    with pytest.raises(engramdb.CorruptFile, match="seg-000001.arrow is damaged: its XXH3 checksum"):
        engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders(), read_only=True)  # type: ignore[arg-type]


GOLDEN_V4 = Path(__file__).parent / "golden" / "store-v4"


def test_golden_v4_opens_read_only_in_place_and_its_files_describe_themselves() -> None:
    """store-v4 (format 4): the same history; every file says what it is, where it goes and what
    it replaces (storage/describe.py), the marker holds the spaces, the previous manifest is kept."""
    before = {p.name: p.read_bytes() for p in GOLDEN_V4.iterdir()}
    with engramdb.open(GOLDEN_V4, schema=toy_schema(), embedders=toy_embedders(), read_only=True) as db:  # type: ignore[arg-type]
        check_v2(db)
    assert {p.name: p.read_bytes() for p in GOLDEN_V4.iterdir()} == before
    assert json.loads(before["manifest.json"])["format_version"] == 4 and "manifest.prev.json" in before
    assert "spaces" in json.loads(before["engramdb.store"])
    report = engramdb.repair(GOLDEN_V4, dry_run=True)
    assert report["ok"] and not report["needed"]


@pytest.mark.parametrize("damage", ["lost", "flipped"])
def test_golden_v4_without_its_manifest_is_rebuilt_to_the_same_store(tmp_path: Path, damage: str) -> None:
    shutil.copytree(GOLDEN_V4, tmp_path / "s")
    manifest = tmp_path / "s" / "manifest.json"
    if damage == "lost":
        manifest.unlink()
    else:
        manifest.write_bytes(manifest.read_bytes().replace(b'"rows": 3', b'"rows": 4', 1))
    planned = engramdb.repair(tmp_path / "s", dry_run=True)
    rebuilt = json.loads((GOLDEN_V4 / "manifest.json").read_text())
    assert planned["segments"] == [e["file"] for e in rebuilt["segments"]] and planned["wal"] == rebuilt["wal"]
    assert planned["edges"] == [e["file"] for e in rebuilt["edges"]] and planned["blockers"] == []
    with pytest.warns(engramdb.RepairWarning):
        db = engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    check_v2(db)
    db.close()


def test_golden_v3_without_its_manifest_is_refused_untouched(tmp_path: Path) -> None:
    """Format 3 files do not describe themselves: their order cannot be rebuilt, so the repair
    stops and names them (restore the manifest from a backup); nothing is changed."""
    shutil.copytree(GOLDEN_V3, tmp_path / "s")
    (tmp_path / "s" / "manifest.json").unlink()
    before = {p.name: p.read_bytes() for p in (tmp_path / "s").iterdir()}
    with pytest.raises(engramdb.StoreError, match="seg-000001.arrow, seg-000003.arrow.*written before files described"):
        engramdb.open(tmp_path / "s", schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    assert {p.name: p.read_bytes() for p in (tmp_path / "s").iterdir() if p.name != "LOCK"} == before


def test_a_v2_store_upgraded_then_crashed_is_repaired_from_the_previous_manifest(tmp_path: Path) -> None:
    """An older store's files do not describe themselves, but the manifest generation before the
    upgrade is kept (manifest.prev.json): when it lists every file, and they are intact, a lost
    manifest is rebuilt from it."""
    import subprocess
    import sys

    folder = tmp_path / "s"
    shutil.copytree(GOLDEN_V2, folder)
    code = (f"import sys, os; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
            "import engramdb\nfrom store_helpers import golden_schema, golden_tokens, toy_embedders, toy_schema\n"
            f"engramdb.open({str(folder)!r}, schema=toy_schema(), embedders=toy_embedders())\n"
            "os._exit(0)  # upgraded (a manifest written, the previous one kept), then gone without a close\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert (folder / "manifest.prev.json").read_bytes() == (GOLDEN_V2 / "manifest.json").read_bytes()
    (folder / "manifest.json").unlink()
    with pytest.warns(engramdb.RepairWarning):
        db = engramdb.open(folder, schema=toy_schema(), embedders=toy_embedders())  # type: ignore[arg-type]
    check_v2(db)
    db.close()


GOLDEN_V5 = Path(__file__).parent / "golden" / "store-v5"


def _tokens_by_id(db: engramdb.Store, tmp: Path, space: str = "toks") -> dict[str, np.ndarray]:
    """Each current memory's stored tokens (float32), read back from an Arrow export."""
    from engramdb.storage.vectors import column_name, from_arrow

    db.admin.export(tmp / "all.arrow")
    table = pa.ipc.open_file(str(tmp / "all.arrow")).read_all()
    sp = db.schema[space]
    toks = from_arrow(sp, table.column(column_name(sp)))
    return {mid: toks.row(i) for i, mid in enumerate(table.column("id").to_pylist())}


def test_golden_v5_keeps_tokens_as_int8_codes(tmp_path: Path) -> None:
    """store-v5 (format 5): the same history, and multivector tokens stored as int8 codes with a
    float32 scale each (about a quarter of format 4's float32 bytes); they read back as float32."""
    before = {p.name: p.read_bytes() for p in GOLDEN_V5.iterdir()}
    with engramdb.open(GOLDEN_V5, schema=golden_schema(), embedders=toy_embedders(), read_only=True) as db:  # type: ignore[arg-type]
        check_v2(db)
        got = _tokens_by_id(db, tmp_path)
    assert {p.name: p.read_bytes() for p in GOLDEN_V5.iterdir()} == before
    assert json.loads(before["manifest.json"])["format_version"] == 5
    seg = pa.ipc.open_file(str(GOLDEN_V5 / "seg-000001.arrow")).schema
    assert seg.field("v.toks").type == pa.list_(pa.struct([("scale", pa.float32()), ("q", pa.list_(pa.int8(), 4))]))
    want = int8_tokens(golden_tokens(4).tokens)  # g3's update carries memory 4's tokens
    np.testing.assert_array_equal(got["g3"], want)
    np.testing.assert_allclose(got["g3"], golden_tokens(4).tokens, atol=4 / 254)  # within half a step


def test_a_format_4_store_with_float32_tokens_joins_format_5_writes(tmp_path: Path) -> None:
    """bm25-v2 (format 4, the default profile: float32 tokens) opened for writing: new memories'
    tokens are int8 codes, a checkpoint and a compaction join old and new segments into one file of
    the new type, and every memory's tokens read back as stored (old ones now quantised)."""
    shutil.copytree(GOLDEN_BM25_V2, tmp_path / "s")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with engramdb.open(tmp_path / "s", read_only=True) as old:
        before = _tokens_by_id(old, tmp_path / "a", "tokens")
        answers = [[h.id for h in old.search(q, namespace=ns, k=5, log=False)] for ns, q in BM25_QUERIES]
    with engramdb.open(tmp_path / "s") as db:
        db.add("the tokens are stored in half precision now", namespace="n", id="new1")
        db.admin.checkpoint()
        db.admin.compact()
        after = _tokens_by_id(db, tmp_path / "b", "tokens")
        assert [[h.id for h in db.search(q, namespace=ns, k=5, log=False)] for ns, q in BM25_QUERIES] == answers
    files = list((tmp_path / "s").glob("seg-*.arrow"))
    assert len(files) == 1 and pa.types.is_struct(pa.ipc.open_file(str(files[0])).schema.field("v.tokens").type.value_type)
    assert set(after) == set(before) | {"new1"}
    for mid, toks in before.items():
        np.testing.assert_array_equal(after[mid], int8_tokens(toks))


GOLDEN_V6 = Path(__file__).parent / "golden" / "store-v6"


def test_golden_v6_opens_read_only_in_place_and_every_file_names_its_store() -> None:
    """store-v6 (format 6): the same history; the manifest holds the store's id and generation, and
    every file names them: each segment and edges file in its description, the WAL in its header."""
    from engramdb.storage.describe import schema_description
    from engramdb.storage.wal import HEADER_MAX, read_header

    before = {p.name: p.read_bytes() for p in GOLDEN_V6.iterdir()}
    with engramdb.open(GOLDEN_V6, schema=golden_schema(), embedders=toy_embedders(), read_only=True) as db:  # type: ignore[arg-type]
        check_v2(db)
    assert {p.name: p.read_bytes() for p in GOLDEN_V6.iterdir()} == before
    m = json.loads(before["manifest.json"])
    assert m["format_version"] == 6 and len(m["store_id"]) == 32 and m["generation"] >= 1
    assert json.loads(before["engramdb.store"])["store_id"] == m["store_id"]
    for e in m["segments"] + m["edges"]:
        desc = schema_description(before[e["file"]][:1 << 16])
        assert desc is not None and desc["store"] == m["store_id"] and 1 <= desc["generation"] <= m["generation"]
    identity, _ = read_header(before[m["wal"]][:HEADER_MAX], GOLDEN_V6 / m["wal"])
    assert identity == {"store": m["store_id"], "seq": int(m["wal"][4:10]), "generation": identity["generation"]}
    assert engramdb.verify(GOLDEN_V6)["ok"]


def test_a_v5_store_opened_for_writing_gets_an_id_and_its_old_log_still_replays(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN_V5, tmp_path / "s")
    with engramdb.open(tmp_path / "s", schema=golden_schema(), embedders=toy_embedders()) as db:  # type: ignore[arg-type]
        check_v2(db)  # the format-5 WAL (a header without an identity) replayed
        marker = json.loads((tmp_path / "s" / "engramdb.store").read_text())
        m = json.loads((tmp_path / "s" / "manifest.json").read_text())
        assert m["format_version"] == 6 and m["store_id"] == marker["store_id"]
        db.admin.checkpoint()  # a new WAL: it names the store
        wal = json.loads((tmp_path / "s" / "manifest.json").read_text())["wal"]
        assert (tmp_path / "s" / wal).read_bytes()[:8] == b"EGWAL002"
    with engramdb.open(tmp_path / "s", schema=golden_schema(), embedders=toy_embedders(), read_only=True) as db:  # type: ignore[arg-type]
        check_v2(db)

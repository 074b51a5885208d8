"""Repair (storage/repair.py): a lost or damaged manifest is rebuilt from the store's own
self-describing files, by `open()` itself when nothing would be lost (with a RepairWarning) and by
`engramdb.repair` / `engramdb repair`; when rebuilding would lose or guess, nothing is changed.
Golden folders: tests/test_golden_store.py."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb.cli import main as cli
from store_helpers import toy_embedders, toy_schema

TUNING = engramdb.Tuning(checkpoint_rows=40)
LATER = datetime(2100, 1, 1, tzinfo=timezone.utc)


def open_store(path: Path, **kw: Any) -> engramdb.Store:
    return engramdb.open(path, schema=toy_schema(), embedders=toy_embedders(), tuning=TUNING, **kw)  # type: ignore[arg-type]


def build(path: Path) -> engramdb.Store:
    """Every kind of file and rewrite: checkpoints, big batches, edges in files and in the WAL,
    versions, forget, compaction, purge, archive and unarchive, and rows left in the WAL."""
    db = open_store(path)
    for b in range(4):
        db.add_many([{"content": f"turn {b}-{j} about cats and tea", "namespace": "a" if j % 3 else "b",
                      "id": f"m{b}-{j}"} for j in range(30)])
    db.link("m0-1", "m0-2", "CAUSED_BY", confidence=0.9)
    db.update("m0-4", content="turn 0-4 edited")
    db.forget("m1-1")
    db.admin.compact()
    db.add_many([{"content": f"big {j}", "namespace": "a", "id": f"big{j}"} for j in range(60)])  # straight to a file
    db.purge(["m2-2", "m2-5"])
    db.lifecycle.archive(LATER, namespace="b")
    db.lifecycle.unarchive(["m0-3"])
    db.link("m3-1", "m3-2", "RELATED_TO", confidence=0.7)
    db.add("still in the WAL", namespace="a", id="wal1")
    return db


def state(db: engramdb.Store) -> Any:
    ids = [f"m{b}-{j}" for b in range(4) for j in range(30)] + [f"big{j}" for j in range(60)] + ["wal1"]
    out: list[Any] = []
    for mid in ids:
        m = db.get(mid, include_forgotten=True)
        out.append(None if m is None else (m.id, m.content, m.version, m.namespace, m.learned_at, m.forgotten_at,
                                           db.lifecycle.is_archived(mid)))
    out.append(sorted((e.src, e.dst, e.type, e.confidence) for mid in ("m0-1", "m3-1")
                      for e in db.edges(mid, include_forgotten=True)))
    out.append(len(db))
    out.append([[h.id for h in db.search(q, namespace=ns, k=5, strategy="exact")]
                for q, ns in (("cats and tea", "a"), ("turn 0-4 edited", "a"), ("cats", "b"))])
    return out


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Any]:
    path = tmp_path / "s"
    db = build(path)
    expected = state(db)
    db.close()
    return path, expected


def names(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.iterdir() if p.is_file() and p.name != "LOCK"}


def test_a_lost_manifest_is_rebuilt_by_open_with_a_warning(built: tuple[Path, Any]) -> None:
    path, expected = built
    (path / "manifest.json").unlink()
    with pytest.warns(engramdb.RepairWarning, match="manifest.json is missing; the manifest was rebuilt"):
        db = open_store(path)
    assert state(db) == expected
    db.add("after the repair", namespace="a", id="after")
    db.close()
    assert engramdb.verify(path)["ok"]
    with open_store(path, read_only=True) as again:
        assert state(again)[:-3] == expected[:-3] and again.get("after") is not None


def test_a_damaged_manifest_is_set_aside_and_rebuilt(built: tuple[Path, Any]) -> None:
    path, expected = built
    raw = bytearray((path / "manifest.json").read_bytes())
    raw[len(raw) // 2] ^= 0x04
    (path / "manifest.json").write_bytes(bytes(raw))
    with pytest.warns(engramdb.RepairWarning, match="damaged"):
        db = open_store(path)
    assert state(db) == expected
    db.close()
    assert (path / "manifest.json.damaged").read_bytes() == bytes(raw)  # kept, never deleted


def test_a_read_only_open_of_a_lost_manifest_refuses_and_changes_nothing(built: tuple[Path, Any]) -> None:
    path, _ = built
    (path / "manifest.json").unlink()
    before = names(path)
    with pytest.raises(engramdb.StoreError, match="manifest.json is missing.*engramdb repair"):
        open_store(path, read_only=True)
    assert names(path) == before


def test_repair_of_an_intact_store_changes_nothing(built: tuple[Path, Any]) -> None:
    path, _ = built
    before = names(path)
    done = engramdb.repair(path)
    assert done["ok"] and not done["needed"] and names(path) == before


def test_the_cli_repairs_and_reports(built: tuple[Path, Any], capsys: pytest.CaptureFixture[str]) -> None:
    path, expected = built
    (path / "manifest.json").unlink()
    assert cli(["repair", "--path", str(path), "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["needed"] and planned["blockers"] == [] and "written" not in planned
    assert not (path / "manifest.json").exists()  # a dry run writes nothing
    assert cli(["repair", "--path", str(path), "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["written"] == "manifest.json" and done["wal"].startswith("wal-")
    with warnings.catch_warnings():
        warnings.simplefilter("error", engramdb.RepairWarning)  # repaired already: no second repair
        with open_store(path) as db:
            assert state(db) == expected


def flip_body(path: Path) -> None:
    """Flip a byte in the middle of a file (inside its record batch, past the description)."""
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    path.write_bytes(bytes(raw))


def test_a_damaged_file_blocks_the_repair_until_the_loss_is_accepted(built: tuple[Path, Any]) -> None:
    path, expected = built
    listed = json.loads((path / "manifest.json").read_text())
    victim = next(e["file"] for e in listed["segments"] if e["rows"] == 60)  # the big batch's own file
    (path / "manifest.json").unlink()
    flip_body(path / victim)
    before = names(path)
    with pytest.raises(engramdb.StoreError, match=f"{victim} is damaged.*Nothing was changed"):
        open_store(path)
    assert names(path) == before
    assert cli(["repair", "--path", str(path)]) == 1  # refuses, says why on stderr
    assert names(path) == before
    done = engramdb.repair(path, accept_loss=True)
    assert not done["ok"] and done["damaged"] == [victim] and done["written"] == "manifest.json"
    assert (path / (victim + ".damaged")).exists() and not (path / victim).exists()  # set aside, not deleted
    with open_store(path) as db:
        got = state(db)
        assert db.get("big0") is None and db.get("wal1") is not None  # only the damaged file's rows are gone
        assert got[: 4 * 30] == expected[: 4 * 30]


def test_a_rewrite_whose_companion_is_missing_is_not_taken(built: tuple[Path, Any]) -> None:
    """Archived segments need their archive file: without it they are an unfinished rewrite, and
    since the files they replaced are gone, the repair stops instead of serving empty content."""
    path, _ = built
    listed = json.loads((path / "manifest.json").read_text())
    archive = next(e["file"] for e in listed["archives"])
    (path / "manifest.json").unlink()
    (path / archive).rename(path.parent / archive)  # as if it were lost
    with pytest.raises(engramdb.StoreError, match="unfinished rewrite"):
        engramdb.repair(path)
    (path.parent / archive).rename(path / archive)
    with pytest.warns(engramdb.RepairWarning):
        open_store(path).close()


def test_a_store_without_a_segment_takes_its_spaces_from_the_marker(tmp_path: Path) -> None:
    path = tmp_path / "s"
    code = (f"import sys, os; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
            "import engramdb\nfrom store_helpers import toy_embedders, toy_schema\n"
            f"db = engramdb.open({str(path)!r}, schema=toy_schema(), embedders=toy_embedders())\n"
            "db.add('only in the WAL', namespace='a', id='x')\n"
            "os._exit(0)  # no close: the row stays in the WAL, no segment file is ever written\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert not list(path.glob("seg-*"))
    (path / "manifest.json").unlink()
    with pytest.warns(engramdb.RepairWarning):
        again = open_store(path)
    m = again.get("x")
    assert m is not None and m.content == "only in the WAL"
    assert again.stats()["spaces"] == open_store(tmp_path / "fresh").stats()["spaces"]
    again.close()


FUZZ = """
import json, shutil, sys
from pathlib import Path
import pyarrow as pa
import engramdb
src, work, positions = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
victim = sys.argv[4]
original = pa.ipc.open_file(str(src / victim)).read_all()
out = []
for pos in positions:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    raw = bytearray((work / victim).read_bytes())
    raw[pos] ^= 0x20
    (work / victim).write_bytes(bytes(raw))
    try:
        got = engramdb.repair(work, dry_run=True)
        said = got["files"][victim]
        if said == "ok":  # passed as sound: then what a reader gets must be exactly the original
            read = pa.ipc.open_file(str(work / victim)).read_all()
            same = read.equals(original) and read.schema.equals(original.schema, check_metadata=True)
            said = "ok, inert" if same else "ok, ALTERED"
        out.append([pos, said])
    except Exception as exc:  # a raw error is a finding too: reported, the test fails on it
        out.append([pos, "RAISED " + type(exc).__name__ + ": " + str(exc)])
print(json.dumps(out))
"""


def test_every_flipped_byte_of_a_described_file_is_caught_by_the_repair(built: tuple[Path, Any], tmp_path: Path) -> None:
    """A repair reads files whose manifest is gone, so it reads them bare: one byte flipped at
    ~130 positions of a segment (the schema message with its description, the body, the footer),
    each surveyed in a child process (a crash would show as its death): every flip is named as
    damage, or is inert (padding, the end-of-stream marker: what a reader gets is exactly the
    original table, metadata included)."""
    path, _ = built
    listed = json.loads((path / "manifest.json").read_text())
    victim = next(e["file"] for e in listed["segments"] if e["rows"] == 60)
    (path / "manifest.json").unlink()
    raw = (path / victim).read_bytes()
    footer = int.from_bytes(raw[-10:-6], "little")
    eos = range(len(raw) - 10 - footer - 8, len(raw) - 10 - footer)
    rng = np.random.default_rng(0)
    positions = sorted({*rng.integers(0, len(raw), 100).tolist(), *range(16), *range(len(raw) - 10, len(raw)),
                        eos.start})
    done = subprocess.run([sys.executable, "-c", FUZZ, str(path), str(tmp_path / "work"), json.dumps(positions), victim],
                          check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    results = {int(p): r for p, r in json.loads(done.stdout)}
    assert sorted(results) == positions
    altered = [(p, r) for p, r in results.items() if r == "ok, ALTERED"]
    raised = [(p, r) for p, r in results.items() if r.startswith("RAISED")]
    assert not altered and not raised, (altered[:5], raised[:5])
    assert results[eos.start] == "ok, inert"  # the end-of-stream marker: no reader follows it
    inert = [p for p, r in results.items() if r == "ok, inert"]
    assert len(inert) <= 10, inert  # padding only: nearly every byte is covered


def test_a_file_gone_missing_stops_the_repair(built: tuple[Path, Any]) -> None:
    """A file that is simply gone cannot speak for itself; the previous manifest generation still
    names it, so the repair stops instead of rebuilding a store without its rows."""
    path, _ = built
    listed = json.loads((path / "manifest.json").read_text())
    victim = next(e["file"] for e in listed["segments"] if e["rows"] == 60)
    (path / "manifest.json").unlink()
    (path / victim).rename(path.parent / victim)  # as if a copy of the folder had missed it
    before = names(path)
    with pytest.raises(engramdb.StoreError, match=f"{victim}, listed by the previous manifest.*is gone"):
        open_store(path)
    assert names(path) == before


def _crash_leftover(path: Path, name: str, data: bytes) -> None:
    """What a crash leaves as a writer makes a file: its name journaled first (for the next
    manifest's generation), then the bytes it got to write; and the manifest lost afterwards."""
    generation = json.loads((path / "manifest.json").read_text())["generation"]
    with open(path / "journal.log", "a", encoding="utf-8") as f:
        f.write(f"{name.removesuffix('.tmp')} {generation + 1}\n")
    (path / name).write_bytes(data)
    (path / "manifest.json").unlink()


@pytest.mark.parametrize("torn", [b"", b"EGW", b"EGWAL002\x00\x01"])
def test_a_log_a_crash_cut_short_as_it_was_made_is_not_taken_as_the_live_one(built: tuple[Path, Any],
                                                                            torn: bytes) -> None:
    """A checkpoint makes its new log (journaled) and a crash comes before its header is whole; the
    manifest is lost too. The rebuilt store keeps the log that holds the writes, opens, and the
    next open removes the empty one (it was the store's own: journaled)."""
    path, expected = built
    _crash_leftover(path, "wal-000999.log", torn)
    with pytest.warns(engramdb.RepairWarning):
        db = open_store(path)
    assert state(db) == expected
    db.close()
    assert not (path / "wal-000999.log").exists() and engramdb.verify(path)["ok"]


def test_a_half_written_file_is_removed_after_a_repair_and_a_stray_one_left(built: tuple[Path, Any]) -> None:
    """A merge or a checkpoint writes `seg-N.arrow.tmp` (journaled as seg-N.arrow) and a crash comes
    before the rename; the manifest is lost too. The repair leaves it journaled, so the next open
    removes it; a file of that shape nobody journaled is left alone."""
    path, expected = built
    (path / "seg-000998.arrow.tmp").write_bytes(b"a user's file")
    _crash_leftover(path, "seg-000999.arrow.tmp", b"ARROW1\x00\x00half")
    with pytest.warns(engramdb.RepairWarning):
        db = open_store(path)
    assert state(db) == expected
    db.close()
    with open_store(path) as again:
        assert state(again) == expected
    assert not (path / "seg-000999.arrow.tmp").exists()
    assert (path / "seg-000998.arrow.tmp").read_bytes() == b"a user's file"


def test_the_cli_repair_that_accepts_a_loss_exits_0_and_says_what_was_lost(built: tuple[Path, Any],
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = built
    listed = json.loads((path / "manifest.json").read_text())
    victim = next(e["file"] for e in listed["segments"] if e["rows"] == 60)
    (path / "manifest.json").unlink()
    flip_body(path / victim)
    assert cli(["repair", "--path", str(path), "--dry-run"]) == 1  # it would lose data: said, and not done
    assert "would lose data" in capsys.readouterr().out and not (path / "manifest.json").exists()
    assert cli(["repair", "--path", str(path), "--accept-loss"]) == 0  # done as asked: the store opens again
    out = capsys.readouterr().out
    assert f"lost (--accept-loss): {victim} is damaged" in out and "would lose" not in out
    with open_store(path) as db:
        assert db.get("wal1") is not None

"""The View's column accessors (storage's seam): what a row holds, read by location across
segments (committed files and the WAL's), agreeing with the memory stored there."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb import Tuning
from engramdb.storage import Engine
from engramdb.storage.view import View
from store_helpers import ToyDense, toy_embedders, toy_schema


def three_segments(folder: Path) -> None:
    db = engramdb.open(folder, schema=toy_schema(), embedders=toy_embedders())
    when = datetime(2024, 5, 1, tzinfo=timezone.utc)
    for part in range(3):  # three segment files (closing checkpoints the last)
        db.add_many([{"content": f"part {part} row {i}", "namespace": "a" if i % 3 else "b",
                      "session_id": f"s{part}" if i % 2 else None, "seq": i if i % 2 else None,
                      "valid_from": when, "confidence": 0.5 if i == 4 else None} for i in range(7)])
        if part < 2:
            db.admin.checkpoint()
    db.forget(db.list(namespace="a", limit=1)[0].id)
    db.close()


@pytest.fixture
def view(tmp_path: Path) -> View:
    three_segments(tmp_path / "mem")
    engine = Engine(tmp_path / "mem", schema=None, read_only=True, tuning=Tuning())
    return engine.view


def every_loc(view: View) -> list[tuple[int, int]]:
    locs = [loc for _, loc in view.current()]
    assert len({si for si, _ in locs}) == 3, "rows in three segments"
    return locs[::-1][::2] + locs[::2]  # out of key order, across segments, one twice


def test_accessors_agree_with_the_stored_memories(view: View) -> None:
    locs = every_loc(view)
    mems = [view.memory_at(*loc) for loc in locs]
    assert view.ids_at(locs) == [m.id for m in mems] == [view.id_at(loc) for loc in locs]
    assert view.namespaces_at(locs) == [m.namespace for m in mems] == [view.namespace_at(loc) for loc in locs]
    assert [view.turn_at(loc) for loc in locs] == [(m.session_id, -1 if m.seq is None else m.seq) for m in mems]
    assert view.values_at("content", locs) == [m.content for m in mems]
    assert [1.0 if c is None else c for c in view.values_at("confidence", locs)] == [m.confidence for m in mems]
    assert 0.5 in view.values_at("confidence", locs)
    micros = [int(m.learned_at.timestamp() * 1_000_000) for m in mems]  # type: ignore[union-attr]
    assert view.column_at("learned_at", locs).tolist() == micros
    assert view.column_at("forgotten", locs).tolist() == [m.forgotten_at is not None for m in mems]
    assert view.column_at("forgotten", locs).any()
    assert view.column_at("seq", locs).tolist() == [-1 if m.seq is None else m.seq for m in mems]
    got = np.asarray(view.vectors_at("dense", locs))
    np.testing.assert_allclose(got, ToyDense(8).embed([m.content for m in mems]), rtol=1e-6)
    assert view.ids_at([]) == [] and view.column_at("valid_from", []).shape == (0,)
    with pytest.raises(ValueError, match="column must be one of"):
        view.column_at("content", locs)
    with pytest.raises(ValueError, match="no stored column"):
        view.values_at("nonsense", locs)


def test_a_dense_spaces_rows_in_segment_order_are_read_into_place(view: View) -> None:
    """Locations in segment order (each segment's a run of places, read without a scatter) and
    out of it (scattered) give the same rows as one at a time."""
    ordered = sorted({loc for _, loc in view.current()})
    for locs in (ordered, ordered[::-1], ordered[:3] + ordered[-2:]):
        got = view.vectors_at("dense", locs)
        assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.flags.c_contiguous
        one_by_one = [np.asarray(view.vectors_at("dense", [loc]))[0] for loc in locs]
        np.testing.assert_array_equal(got, np.stack(one_by_one))


def test_per_segment_masks_and_arrays(view: View) -> None:
    for si in range(len(view.segments)):
        n = view.segment_rows(si)
        rows = [(si, r) for r in range(n)]
        spaces = view.namespaces_at(rows)
        mask = view.namespace_mask(si, "a")
        assert mask is not None and mask.tolist() == [ns == "a" for ns in spaces]
        assert view.namespace_mask(si, "nowhere") is None
        sessions = [view.turn_at(loc)[0] for loc in rows]
        for name in {s for s in sessions if s is not None}:
            got = view.session_mask(si, name)
            assert got is not None and got.tolist() == [s == name for s in sessions]
        assert view.session_mask(si, "no such session") is None
        assert view.row_array(si, "learned_at").tolist() == view.column_at("learned_at", rows).tolist()
        assert len(view.vectors(si, "dense")) == n
    assert len(view.committed_segments) == view.committed == 3  # closing checkpointed the WAL


def test_session_keys_group_turns_by_session_across_segments(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "mem", schema=toy_schema(), embedders=toy_embedders())
    for part in range(3):  # sessions "long" and "mid" span segment files, "p<n>" lives in one
        db.add_many([{"content": f"part {part} row {i}", "namespace": "a",
                      "session_id": ["long", f"p{part}", "mid" if part else None][i % 3]} for i in range(6)])
        if part < 2:
            db.admin.checkpoint()
    db.close()
    view = Engine(tmp_path / "mem", schema=None, read_only=True, tuning=Tuning()).view
    locs = [loc for _, loc in view.current()]
    assert len({si for si, _ in locs}) == 3
    mems = [view.memory_at(*loc) for loc in locs]
    got = view.session_keys_at(view.keys(locs)).tolist()
    for m, key in zip(mems, got):
        assert (key == 0) == (m.session_id is None)
    for a, ka in zip(mems, got):  # equal keys exactly for equal sessions, in any segment
        for b, kb in zip(mems, got):
            if a.session_id is not None and b.session_id is not None:
                assert (ka == kb) == (a.session_id == b.session_id)
    assert view.session_keys_at(np.empty(0, np.int64)).tolist() == []


def test_locations_remembered_by_a_snapshot_stay_right_past_its_bound(view: View) -> None:
    from engramdb.storage.view import LOCS_KEPT

    locs = [loc for _, loc in view.current()]
    ids = view.ids_at(locs)
    assert [view.loc_of(i) for i in ids] == locs
    for n in range(LOCS_KEPT + 10):  # unknown ids fill the memory past its bound: it is cleared, not wrong
        assert view.loc_of(f"no-such-id-{n}") is None
    assert [view.loc_of(i) for i in ids] == locs == [view.loc_of(i) for i in ids]


def test_a_few_rows_of_a_token_space_read_alone_are_the_decoded_segments_rows(tmp_path: Path) -> None:
    """`vectors_at` of a multivector space: a few rows of a segment not decoded yet are decoded alone
    (not the whole segment, kept); the same tokens and offsets, bit for bit, as the rows taken from
    the whole segment decoded, in any order, a row twice, across segments."""
    db = engramdb.open(tmp_path / "mem")
    for part in range(2):
        db.add_many([{"content": f"part {part} turn {i}: " + " ".join(f"w{(i * 7 + k) % 50}" for k in range(i % 9)),
                      "namespace": "a"} for i in range(40)])
        db.admin.checkpoint()
    db.close()
    view = Engine(tmp_path / "mem", schema=None, read_only=True, tuning=Tuning()).view
    locs = [loc for _, loc in view.current()]
    few = [locs[3], locs[50], locs[3], locs[1], locs[79], locs[40]]  # 4 of 40 rows a segment: read alone
    alone = view.vectors_at("tokens", few)
    whole = [view.vectors(si, "tokens") for si in range(len(view.segments))]  # decoded and kept
    again = view.vectors_at("tokens", few)
    for got in (alone, again):
        assert got.offsets.tolist() == again.offsets.tolist()
        np.testing.assert_array_equal(got.tokens, again.tokens)
    for k, (si, row) in enumerate(few):
        np.testing.assert_array_equal(alone.row(k), whole[si].row(row))
    assert sum(len(alone.row(k)) for k in range(len(few))) > 0


def test_no_rows_read_is_an_empty_batch_of_each_spaces_kind(view: View) -> None:
    """`vectors_at(space, [])`: a batch of no rows of the space's kind, width and dtypes, as a take
    of no rows of a decoded segment gives."""
    from engramdb.spaces.batches import take
    from engramdb.spaces.protocol import SparseBatch, TokenBatch

    for sp in view.schema:
        got, want = view.vectors_at(sp.name, []), take(view.vectors(0, sp.name), [])
        assert type(got) is type(want) and len(got) == 0
        if isinstance(got, TokenBatch) and isinstance(want, TokenBatch):
            assert got.tokens.shape == want.tokens.shape and got.offsets.tolist() == want.offsets.tolist() == [0]
        elif isinstance(got, SparseBatch) and isinstance(want, SparseBatch):
            assert got.indptr.tolist() == want.indptr.tolist() == [0]
            assert (got.indices.dtype, got.weights.dtype) == (want.indices.dtype, want.weights.dtype)
        else:
            assert (got.shape, got.dtype) == (want.shape, want.dtype)

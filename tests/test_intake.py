"""The columnar intake accepts, refuses and stores exactly what the per-record path does."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pytest
from engramdb.ingest.intake import build_intake
from engramdb.model import InvalidMemory, Memory, validate_memory
from engramdb.storage.columns import memories_to_table
from hypothesis import given, settings
from hypothesis import strategies as st

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
PLUS2 = timezone(timedelta(hours=2))


def per_record(records: list[dict[str, Any]]) -> pa.Table:
    """The reference: a Memory per record through validate_memory, then memories_to_table."""
    out = []
    for i, rec in enumerate(records):
        for name in ("id", "namespace", "content"):  # required: the error names them
            if rec.get(name) is None:
                raise InvalidMemory(f"records[{i}]: {name} is required (a non-empty string), got None")
        rec = {k: v for k, v in rec.items() if v is not None and k != "vectors"}
        rec.update(learned_at=NOW, version=1)
        try:
            out.append(validate_memory(Memory(**rec)))
        except (TypeError, InvalidMemory) as exc:
            raise InvalidMemory(f"records[{i}]: {exc}") from None
    return memories_to_table(out)


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Valid values 19 times in 20, so whole batches are often accepted and both branches are run."""
    return st.integers(0, 19).flatmap(lambda r: bad if r == 0 else good)


_day = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1))
times = mostly(
    st.one_of(st.none(), _day.map(lambda d: d.replace(tzinfo=timezone.utc)), _day.map(lambda d: d.replace(tzinfo=PLUS2))),
    st.one_of(_day, st.just("2020-01-01")),  # naive datetimes and strings are refused
)


# ends drawn after every start and after NOW are valid; the refused orders come from `times`
late = st.datetimes(min_value=datetime(2031, 1, 1), max_value=datetime(2040, 1, 1)).map(
    lambda d: d.replace(tzinfo=timezone.utc))
ends = mostly(st.one_of(st.none(), late), times)


def short_text(hi: int) -> st.SearchStrategy[Any]:
    good = st.one_of(st.none(), st.text(min_size=1, max_size=hi))
    return mostly(good, st.one_of(st.just(""), st.text(min_size=hi + 1, max_size=hi + 3), st.integers(0, 3)))


names = mostly(st.one_of(st.none(), st.sampled_from(["m1", "m2", "a.b:c", "X-9/+@"])),
               st.one_of(st.sampled_from(["", " x", "bad id", "z" * 130]), st.integers(0, 2)))
REQUIRED = {
    "id": names,
    "content": mostly(st.text(min_size=1, max_size=12).filter(lambda t: t.strip() != ""),
                      st.one_of(st.sampled_from(["", " \t", "\x1c"]), st.integers())),
    "namespace": mostly(st.sampled_from(["ns", "other"]), st.sampled_from(["", "bad ns", None, 5])),
}
OPTIONAL = {
    "session_id": short_text(256),
    "seq": mostly(st.one_of(st.none(), st.integers(0, 5)), st.one_of(st.integers(-2, -1), st.booleans())),
    "source": short_text(100),
    "role": short_text(100),
    "memory_type": short_text(100),
    "confidence": mostly(st.one_of(st.none(), st.floats(0, 1), st.integers(0, 1)),
                         st.one_of(st.floats(allow_nan=True).filter(lambda x: not 0 <= x <= 1), st.booleans())),
    "metadata": mostly(st.sampled_from([None, {}, {"a": 1}, {"k": {"n": [1, 2]}}]),
                       st.sampled_from([{"x": float("nan")}, "s"])),
    "provenance": mostly(st.sampled_from([None, {}, {"from": "chat"}]), st.just(3)),
    "valid_from": times,
    "valid_until": ends,
    "expired_at": ends,
    "forgotten_at": times,
    "supersedes": names,
    "superseded_by": names,
}
record = st.fixed_dictionaries(REQUIRED, optional=OPTIONAL)
# every record with every field (None where unset, as callers build batches): the intake's column path
full_record = st.fixed_dictionaries({**REQUIRED, **OPTIONAL})


@settings(max_examples=400, deadline=None)
@given(st.lists(record, min_size=1, max_size=5))
def test_intake_matches_per_record_validation(records: list[dict[str, Any]]) -> None:
    _matches_per_record(records)


@settings(max_examples=300, deadline=None)
@given(st.lists(full_record, min_size=1, max_size=6), st.sampled_from(["list", "generator"]))
def test_intake_of_records_sharing_one_key_set_matches_per_record_validation(records: list[dict[str, Any]],
                                                                             given_as: str) -> None:
    _matches_per_record(records, given_as)


def test_a_batch_of_one_key_set_refuses_as_the_record_by_record_path_does() -> None:
    recs = [{"content": "ok", "namespace": "ns", "role": r} for r in ("user", "user", "x" * 101, "user")]
    with pytest.raises(InvalidMemory, match=r"records\[2\]: role"):
        build_intake(recs, NOW)
    recs = [{"content": "ok", "namespace": "ns", "colour": "red"}] * 3
    with pytest.raises(InvalidMemory, match=r"records\[0\] has unknown field\(s\) \['colour'\]"):
        build_intake(recs, NOW)
    recs = [{"content": c, "namespace": "ns"} for c in ("ok", "bad \ud800 half", "x" * 50)]
    with pytest.raises(InvalidMemory, match=r"records\[1\]: content holds a character UTF-8 cannot encode"):
        build_intake(recs, NOW)
    with pytest.raises(InvalidMemory, match=r"records\[1\]: content is 50 bytes of UTF-8; the limit is 40"):
        build_intake(recs[::2] * 2, NOW, max_content_bytes=40)


def _matches_per_record(records: list[dict[str, Any]], given_as: str = "list") -> None:
    for i, rec in enumerate(records):  # generated ids would differ between the two paths
        if rec["id"] is None:
            rec["id"] = f"gen{i}"
    try:
        want = per_record(records)
    except InvalidMemory as exc:
        with pytest.raises(InvalidMemory) as got:
            build_intake(records if given_as == "list" else (r for r in records), NOW)
        assert str(got.value) == str(exc)
        return
    got_table = build_intake(records if given_as == "list" else (r for r in records), NOW).table
    assert got_table.equals(want), (got_table.to_pylist(), want.to_pylist())


def test_generated_ids_are_unique_hex() -> None:
    batch = build_intake([{"content": "a", "namespace": "n"} for _ in range(1000)], NOW)
    assert len(set(batch.ids)) == 1000
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in batch.ids)


def test_unknown_field_and_non_mapping_are_named() -> None:
    with pytest.raises(InvalidMemory, match=r"records\[1\] has unknown field\(s\) \['colour'\]"):
        build_intake([{"content": "a", "namespace": "n"}, {"content": "b", "namespace": "n", "colour": 1}], NOW)
    with pytest.raises(InvalidMemory, match=r"records\[0\] must be a dict or Memory, got str"):
        build_intake(["text"], NOW)  # type: ignore[list-item]


def test_memory_objects_and_vectors_pass_through() -> None:
    m = Memory(id="x1", namespace="n", content="c", confidence=0.5)
    batch = build_intake([m, {"content": "d", "namespace": "n", "vectors": {"dense": [1.0]}}], NOW)
    assert batch.ids[0] == "x1" and batch.table.column("confidence").to_pylist() == [0.5, 1.0]
    assert batch.vectors == [{}, {"dense": [1.0]}]
    assert batch.table.column("version").to_pylist() == [1, 1]

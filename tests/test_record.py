"""S1/S2: the memory record's validation and its Arrow round trip."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from engramdb.model import InvalidMemory, Memory, validate_memory
from engramdb.storage.columns import FORMAT_VERSION, MEMORY_SCHEMA, memories_to_table, table_to_memories
from hypothesis import given, settings
from hypothesis import strategies as st

T0 = datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)


def mem(**kw: object) -> Memory:
    base: dict[str, object] = {"id": "m1", "namespace": "alice", "content": "Alice moved to Lisbon."}
    base.update(kw)
    return Memory(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"content": ""}, "content must be a non-empty string"),
        ({"content": "   "}, "content must be a non-empty string"),
        ({"id": ""}, "id must be"),
        ({"id": "has space"}, "id must be"),
        ({"namespace": None}, "namespace must be"),
        ({"memory_type": ""}, "memory_type must be a string of 1-100"),
        ({"memory_type": "x" * 101}, "memory_type must be a string of 1-100"),
        ({"confidence": 1.5}, r"confidence must be a number in \[0, 1\], got 1.5"),
        ({"confidence": float("nan")}, "confidence must be"),
        ({"confidence": True}, "confidence must be"),
        ({"seq": -1}, "seq must be an integer >= 0, got -1"),
        ({"version": 0}, "version must be an integer >= 1"),
        ({"metadata": {"x": {1, 2}}}, "metadata must be JSON-serialisable"),
        ({"metadata": []}, "metadata must be a dict"),
        ({"valid_from": datetime(2024, 1, 1)}, "valid_from is a naive datetime"),
        ({"learned_at": "2024-01-01"}, "learned_at must be a timezone-aware datetime, got str"),
        ({"valid_from": T0, "valid_until": T0 - timedelta(days=1)}, "valid_until .* is before valid_from"),
        ({"supersedes": "no spaces allowed"}, "supersedes must be"),
    ],
)
def test_bad_fields_are_named(changes: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidMemory, match=match):
        validate_memory(mem(**changes))


def test_timestamps_normalise_to_utc() -> None:
    plus2 = timezone(timedelta(hours=2))
    m = validate_memory(mem(valid_from=datetime(2024, 5, 1, 14, 30, tzinfo=plus2)))
    assert m.valid_from == T0 and m.valid_from.tzinfo == timezone.utc


def test_bitemporal_predicates() -> None:
    m = validate_memory(mem(valid_from=T0, valid_until=T0 + timedelta(days=10), learned_at=T0 + timedelta(days=1)))
    assert m.valid_at(T0) and not m.valid_at(T0 - timedelta(seconds=1)) and not m.valid_at(T0 + timedelta(days=10))
    assert not m.known_at(T0) and m.known_at(T0 + timedelta(days=1))
    assert not m.is_current()  # it has an end in valid time


def test_schema_carries_the_format_version() -> None:
    assert MEMORY_SCHEMA.metadata[b"engramdb.format_version"] == str(FORMAT_VERSION).encode()


text = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != "")
ident = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,20}", fullmatch=True)
times = st.one_of(
    st.none(), st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(timezone.utc))
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=80, deadline=None)
@given(
    ms=st.lists(
        st.builds(
            Memory,
            id=ident,
            namespace=ident,
            content=text,
            session_id=st.none() | st.text(min_size=1, max_size=10),
            seq=st.none() | st.integers(0, 2**40),
            source=st.sampled_from(["turn", "hook", "fact", "custom-source"]),
            role=st.none() | st.sampled_from(["user", "assistant", "tool"]),
            memory_type=st.none() | st.text(min_size=1, max_size=30),
            confidence=st.floats(0, 1),
            metadata=st.dictionaries(st.text(max_size=6), json_values, max_size=3),
            version=st.integers(1, 1000),
            valid_from=times,
            learned_at=times,
            forgotten_at=times,
        ),
        max_size=8,
    )
)
def test_arrow_round_trip_is_exact(ms: list[Memory]) -> None:
    good = []
    for m in ms:
        try:
            good.append(validate_memory(m))
        except InvalidMemory:
            continue
    table = memories_to_table(good)
    assert table.schema.equals(MEMORY_SCHEMA, check_metadata=True)
    assert table_to_memories(table) == good

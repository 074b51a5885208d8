"""The ingest write path under attack (issue 28's intake, analysis and check changes).

Each test was written against a defect found by breaking add_many on purpose (scripts in the
adversary's notes); each failed before its fix.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb import InvalidMemory
from engramdb.spaces.analyzer import normalize, tokenize
from engramdb.spaces.protocol import TokenBatch
from engramdb.storage.vectors import quantize_tokens


@pytest.fixture
def db() -> Iterator[engramdb.Store]:
    store = engramdb.open()
    store.add_many([{"content": "already stored before the attack", "namespace": "n", "id": "kept0"}])
    yield store
    store.close()


def _batch(n: int = 5) -> list[dict[str, Any]]:
    return [{"content": f"memory number {i} about the garden", "namespace": "n"} for i in range(n)]


def _untouched(db: engramdb.Store) -> None:
    """Nothing of a refused batch was stored; what was there before still is."""
    assert db.stats()["memories"] == 1
    got = db.get("kept0")
    assert got is not None and got.content == "already stored before the attack"


# ------------------------------------------------------------------ token quantisation
def test_subnormal_token_values_keep_their_sign_and_stay_within_127() -> None:
    # a token whose largest value is subnormal has a scale (max/127) that float32 rounds coarsely:
    # x / scale came out at 128.7 for 5.59e-42, rint gave 129, and int8 wrapped it to -127 (the
    # clip the old formula had was dropped as a no-op)
    bits = np.arange(1, 0x00800000, 997, dtype=np.uint32)
    v = bits.view(np.float32)
    x = np.stack([v, -v, v / 2, np.zeros_like(v)], axis=1)
    q, scale = quantize_tokens(x)
    live = scale > 0
    assert live.sum() > 1000  # most of these subnormal tokens keep a scale (the case under test)
    assert int(np.abs(q.astype(np.int16)).max()) <= 127
    assert (q[live, 0] > 0).all() and (q[live, 1] < 0).all()  # the sign as given, never wrapped
    assert (q[live, 0] == -q[live, 1]).all()
    assert (q[~live] == 0).all()


# ------------------------------------------------------------------ the vectors field
@pytest.mark.parametrize("at", [0, 2, 4])
@pytest.mark.parametrize("value", [5, np.zeros(384, np.float32), "dense", [1, 2], 1.5])
def test_vectors_that_are_not_a_mapping_are_refused_naming_the_record(db: engramdb.Store, at: int,
                                                                        value: Any) -> None:
    # an int raised a raw "'int' object is not iterable", an array "The truth value of an array
    # ... is ambiguous", a str was read as the spaces 'd', 'e', 'n', 's'
    recs = _batch()
    recs[at]["vectors"] = value
    with pytest.raises(InvalidMemory, match=rf"records\[{at}\]: vectors must be a dict"):
        db.add_many(recs)
    _untouched(db)


@pytest.mark.parametrize("at", [0, 2, 4])
@pytest.mark.parametrize("others_given", [True, False])
@pytest.mark.parametrize("bad", ["nan", "shape", "dtype", "tokens"])
def test_a_bad_caller_vector_is_named_by_its_record(db: engramdb.Store, at: int, others_given: bool,
                                                    bad: str) -> None:
    # the vectors were checked one record at a time as a batch of one ('row 0' of it) or by their
    # row in a stacked batch, never naming the record: record 4's NaN read as the first record's
    recs = _batch()
    if others_given:
        for r in recs:
            r["vectors"] = {"dense": np.full(384, 0.05, np.float32)}
    space = "tokens" if bad == "tokens" else "dense"
    value: Any = {"nan": np.full(384, np.nan, np.float32), "shape": np.zeros(7, np.float32),
                  "dtype": np.array(["x"] * 384),
                  "tokens": TokenBatch(np.full((2, 128), np.inf, np.float32), np.array([0, 2]))}[bad]
    recs[at]["vectors"] = {space: value}
    with pytest.raises(ValueError, match=rf"^records\[{at}\]: vectors for space '{space}'"):
        db.add_many(recs)
    _untouched(db)


# ------------------------------------------------------------------ confidence
@pytest.mark.parametrize("at", [0, 4])
def test_a_confidence_too_large_for_a_float_is_refused_naming_the_field(db: engramdb.Store, at: int) -> None:
    # 10**400 raised a raw OverflowError (int too large to convert to float) from math.isfinite,
    # in add_many and in update
    recs = _batch()
    recs[at]["confidence"] = 10**400
    with pytest.raises(InvalidMemory, match=rf"^records\[{at}\]: confidence must"):
        db.add_many(recs)
    _untouched(db)
    for big in (10**400, -(10**400)):
        with pytest.raises(InvalidMemory, match=r"confidence must be a number in \[0, 1\]"):
            db.update("kept0", confidence=big)
        _untouched(db)


# ------------------------------------------------------------------ analysis of hostile text
def _longest_mark_run(text: str) -> int:
    run = best = 0
    for c in text:
        run = run + 1 if unicodedata.combining(c) else 0
        best = max(best, run)
    return best


def test_a_long_run_of_combining_marks_is_analysed_in_runs_of_30() -> None:
    # NFKC sorts a run of combining marks by insertion, quadratic in its length: one memory of 64 KB
    # of alternating marks held the writer 3 s, 1 MiB of them (the content limit) tens of minutes.
    # The analyzer now cuts such a run every 30 marks (Unicode's stream-safe format) before NFKC,
    # so what it hands NFKC, and so what comes out, never holds a longer run.
    hostile = "e" + "\u0301\u0316" * 2000 + " word " + "\u0f73" * 100  # U+0F73: a starter that decomposes to two marks
    assert _longest_mark_run(unicodedata.normalize("NFKC", hostile)) > 1000  # the unguarded cost
    out = normalize(hostile)
    assert _longest_mark_run(out) <= 30
    assert "word" in tokenize(hostile)
    # batch and one-text analysis agree on it, and it is stored and found like any memory
    db = engramdb.open()
    try:
        db.add_many([{"content": hostile, "namespace": "n", "id": "zalgo"},
                     {"content": "another memory about words", "namespace": "n"}])
        assert "zalgo" in [h.id for h in db.search("word", namespace="n", k=2)]
    finally:
        db.close()


@pytest.mark.parametrize("text", ["Café naïve résumé", "e\u0301" + "\u0316\u0301" * 14 + "\u0316", "ǅemal Ⅻ ﬁne ½ ｆｕｌｌ",
                                  "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd", "x" * 2000 + "\u00e9" + "\u0301" * 30,
                                  "\u1100\u1161\u11a8 \U0001F600 it\u2019s"])
def test_text_without_a_run_over_30_marks_is_normalised_exactly_as_before(text: str) -> None:
    assert normalize(text) == unicodedata.normalize("NFKC", text).translate(
        {0x2019: "'", 0x2018: "'", 0x02BC: "'"}).lower()


# ------------------------------------------------------------------ the batch itself
@pytest.mark.parametrize("records", [{"content": "one record, not a batch", "namespace": "n"}, 5, "content",
                                     b"content", None])
def test_a_batch_that_is_not_an_iterable_of_records_is_refused_by_what_it_is(db: engramdb.Store,
                                                                               records: Any) -> None:
    # a lone dict was iterated as its keys ('records[0] must be a dict or Memory, got str': the
    # caller passed a dict); an int or None raised a raw "'int' object is not iterable"
    with pytest.raises(TypeError, match=rf"records must be an iterable of records .*got {type(records).__name__}"):
        db.add_many(records)
    _untouched(db)


def test_unknown_keys_of_mixed_types_are_named(db: engramdb.Store) -> None:
    # sorting {1, 'colour'} to name them raised a raw "'<' not supported between 'str' and 'int'"
    recs: list[dict[Any, Any]] = _batch()
    recs[3] = {**recs[3], 1: "x", "colour": "red"}
    with pytest.raises(InvalidMemory, match=r"records\[3\] has unknown field\(s\) \['colour', 1\]"):
        db.add_many(recs)
    _untouched(db)


@pytest.mark.parametrize("field", ["confidence", "seq", "session_id", "role", "namespace", "content", "id",
                                   "valid_from", "supersedes", "memory_type", "source"])
@pytest.mark.parametrize("at", [0, 3])
def test_an_integer_too_long_to_print_is_refused_naming_record_and_field(db: engramdb.Store, field: str,
                                                                         at: int) -> None:
    # every field's check names a bad value by its repr, and Python refuses to write out an int of
    # more than 4,300 digits: a raw ValueError ('Exceeds the limit for integer string conversion')
    # that named neither the record nor the field
    recs = _batch()
    recs[at][field] = 10**5000
    with pytest.raises(InvalidMemory, match=rf"^records\[{at}\]: {field} must not be an integer of 16,610 bits"):
        db.add_many(recs)
    _untouched(db)


@pytest.mark.parametrize("field", ["confidence", "seq", "session_id", "role", "content", "memory_type", "source"])
def test_update_with_an_integer_too_long_to_print_names_the_field(db: engramdb.Store, field: str) -> None:
    # the same raw ValueError from the field checks' own messages, on update
    with pytest.raises(InvalidMemory, match=rf"^{field} must .*got an integer of 16,610 bits"):
        db.update("kept0", **{field: 10**5000})
    _untouched(db)


def test_an_id_repeated_inside_one_batch_is_named_as_a_repeat_not_as_stored() -> None:
    """Nothing of a refused batch is stored, so its repeated id does not 'already exist': the error
    names both records; an id the store holds is still 'already exists', naming its record."""
    db = engramdb.open(None)
    db.add("kept", namespace="n", id="old")
    with pytest.raises(engramdb.StoreError, match=r"records\[2\]: id 'a' repeats records\[0\]'s in this batch"):
        db.add_many([{"id": "a", "content": "x", "namespace": "n"}, {"id": "b", "content": "y", "namespace": "n"},
                     {"id": "a", "content": "z", "namespace": "n"}])
    with pytest.raises(engramdb.StoreError, match=r"records\[1\]: id 'old' already exists; use update"):
        db.add_many([{"id": "c", "content": "x", "namespace": "n"}, {"id": "old", "content": "y", "namespace": "n"}])
    assert [m.id for m in db.list(namespace="n")] == ["old"]


@pytest.mark.parametrize("messages, got", [(5, "int"), ({"role": "user", "content": "hi"}, "one dict"),
                                           ("hello", "str"), (None, "NoneType")])
def test_add_messages_refuses_what_is_not_a_list_of_messages(messages: Any, got: str) -> None:
    db = engramdb.open(None)
    with pytest.raises(engramdb.InvalidMemory, match=f"messages must be a list of dicts with role and content, got {got}"):
        db.add_messages(messages, namespace="n")
    assert not db.list(namespace="n")


def test_an_edge_confidence_past_a_floats_range_is_refused_by_name() -> None:
    db = engramdb.open(None)
    a, b = db.add("p", namespace="n").id, db.add("q", namespace="n").id
    with pytest.raises(engramdb.InvalidMemory, match="edge confidence must be a number in \\[0, 1\\], got an integer of"):
        db.link(a, b, "SUPPORTS", confidence=10**400)
    with pytest.raises(engramdb.InvalidMemory, match="edge confidence must be a number in \\[0, 1\\], got 2"):
        db.link(a, b, "SUPPORTS", confidence=2)
    assert not db.edges(a)


@pytest.mark.parametrize("metadata, where", [({1: "x"}, "metadata key 1"), ({"a": {2.5: 1}}, "metadata\\['a'\\] key 2.5"),
                                             ({None: 1}, "metadata key None"), ({True: 1}, "metadata key True")])
def test_a_metadata_key_that_is_not_a_string_is_refused_not_stored_as_one(metadata: Any, where: str) -> None:
    """JSON stores an object's keys as strings: `{1: "x"}` would come back as `{"1": "x"}`, not what
    was added; it is refused by its path, nothing stored."""
    db = engramdb.open(None)
    with pytest.raises(InvalidMemory, match=f"{where} must be a string"):
        db.add("t", namespace="n", metadata=metadata)
    assert not db.list(namespace="n")
    kept = db.add("t", namespace="n", metadata={"k": [1, {"b": 2}]})
    assert db.get(kept.id).metadata == {"k": [1, {"b": 2}]}  # type: ignore[union-attr]

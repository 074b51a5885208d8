"""engramdb.cluster's routing (SPEC X1): rendezvous hashing of namespaces over shard names. No Ray
cluster is started here: routing is plain arithmetic over names."""

from __future__ import annotations

import subprocess
import sys

import pytest
from engramdb.cluster import Router, weight
from hypothesis import given, settings
from hypothesis import strategies as st

NAMESPACES = st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=60, unique=True)
SHARD_NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), min_size=1, max_size=8, unique=True)


@settings(max_examples=60, deadline=None)
@given(shards=SHARD_NAMES, new=st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), namespaces=NAMESPACES)
def test_adding_a_shard_moves_only_namespaces_that_go_to_it(shards: list[str], new: str,
                                                            namespaces: list[str]) -> None:
    if new in shards:
        return
    before, after = Router(shards), Router([*shards, new])
    for ns in namespaces:
        if after.route(ns) != before.route(ns):
            assert after.route(ns) == new


@settings(max_examples=60, deadline=None)
@given(shards=SHARD_NAMES.filter(lambda s: len(s) >= 2), namespaces=NAMESPACES, data=st.data())
def test_removing_a_shard_moves_only_its_namespaces(shards: list[str], namespaces: list[str],
                                                    data: st.DataObject) -> None:
    gone = data.draw(st.sampled_from(shards))
    before, after = Router(shards), Router([s for s in shards if s != gone])
    for ns in namespaces:
        if before.route(ns) != gone:
            assert after.route(ns) == before.route(ns)


def test_routes_spread_and_do_not_depend_on_the_order_shards_are_named() -> None:
    names = [f"user-{i}" for i in range(2000)]
    a, b = Router(["s0", "s1", "s2", "s3"]), Router(["s3", "s1", "s0", "s2"])
    assert [a.route(n) for n in names] == [b.route(n) for n in names]
    counts = {s: sum(a.route(n) == s for n in names) for s in a.shards}
    assert all(400 <= c <= 600 for c in counts.values()), counts


def test_weights_are_the_same_in_every_process() -> None:
    """Python's str hash is salted per process; the routing's is not (a second process, another seed)."""
    code = "from engramdb.cluster import weight; print(weight('s0', 'alice'), weight('s1', 'alice'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "12345", "PATH": ""}).stdout.split()
    assert [int(w) for w in other] == [weight("s0", "alice"), weight("s1", "alice")]


def test_pins_place_a_namespace_on_a_named_shard() -> None:
    r = Router(["s0", "s1"])
    other = "s1" if r.route("alice") == "s0" else "s0"
    r.pin("alice", other)
    assert r.route("alice") == other and r.hashed("alice") != other


def test_bad_names_are_refused_naming_the_value() -> None:
    r = Router(["s0", "s1"])
    with pytest.raises(TypeError, match="namespace must be a str, got int 42"):
        r.route(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="namespace must not be empty"):
        r.route("")
    with pytest.raises(ValueError, match="unknown shard 'nope'"):
        r.pin("alice", "nope")
    with pytest.raises(ValueError, match="shard name must be .* got 'a/b'"):
        Router(["a/b"])
    with pytest.raises(ValueError, match="at least one shard"):
        Router([])

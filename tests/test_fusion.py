"""H3 weighted RRF, C2 routing rules and C3 recency factors (pure functions)."""

from __future__ import annotations

import pytest
from engramdb.retrieval.fusion import RRF_K, rrf
from engramdb.retrieval.recency import DAY_US, HOUR_US, recency_factor
from engramdb.retrieval.routing import enhancer_mode, route
from hypothesis import given, settings
from hypothesis import strategies as st

lists = st.dictionaries(st.sampled_from(["vector", "bm25", "graph"]),
                        st.lists(st.integers(0, 30), unique=True, max_size=12), min_size=1)
# The property tests below have no per-example deadline, as every other one here: hypothesis's
# default (200 ms, against 0-14 ms an example here) fails a test ("Unreliable test timings") whose
# process a loaded machine stalls that long once.


def as_ranked(d: dict[str, list[int]]) -> dict[str, list[tuple[int, float]]]:
    return {m: [(key, 1.0 / (i + 1)) for i, key in enumerate(keys)] for m, keys in d.items()}


def test_formula_and_explanations() -> None:
    out = rrf({"vector": [("a", 0.9), ("b", 0.8)], "bm25": [("b", 7.0)]}, {"vector": 1.0, "bm25": 0.8})
    assert [f.key for f in out] == ["b", "a"]
    assert out[0].score == pytest.approx(1 / (RRF_K + 2) + 0.8 / (RRF_K + 1))
    assert out[0].methods == {"vector": (2, 0.8), "bm25": (1, 7.0)}
    assert out[1].methods == {"vector": (1, 0.9)}


@settings(deadline=None)
@given(lists, st.data())
def test_monotone_in_ranks(d: dict[str, list[int]], data: st.DataObject) -> None:
    method = data.draw(st.sampled_from(sorted(d)))
    keys = d[method]
    if len(keys) < 2:
        return
    i = data.draw(st.integers(1, len(keys) - 1))
    better = {**d, method: keys[: i - 1] + [keys[i]] + [keys[i - 1]] + keys[i + 1 :]}  # keys[i] moves up one
    w = {"vector": 1.0, "bm25": 0.8, "graph": 0.6}
    before = {f.key: f.score for f in rrf(as_ranked(d), w)}
    after = {f.key: f.score for f in rrf(as_ranked(better), w)}
    assert after[keys[i]] >= before[keys[i]]
    assert after[keys[i - 1]] <= before[keys[i - 1]]


@settings(deadline=None)
@given(lists)
def test_weights_are_respected_and_a_missing_method_degrades_gracefully(d: dict[str, list[int]]) -> None:
    ranked = as_ranked(d)
    w = {"vector": 1.0, "bm25": 0.8, "graph": 0.6}
    full = rrf(ranked, w)
    for m in d:
        without = rrf({x: r for x, r in ranked.items() if x != m}, w)
        zero = rrf(ranked, {**w, m: 0.0})  # weight 0 is the same ranking as dropping the method
        assert [f.key for f in zero if f.score > 0] == [f.key for f in without]
        # doubling one method's weight adds exactly its contribution again
        double = {f.key: f.score for f in rrf(ranked, {**w, m: 2 * w[m]})}
        for f in full:
            extra = w[m] / (RRF_K + f.methods[m][0]) if m in f.methods else 0.0
            assert double[f.key] == pytest.approx(f.score + extra)
    assert sorted(f.key for f in full) == sorted({k for keys in d.values() for k in keys})


def test_bad_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="weight of method 'bm25'"):
        rrf({"bm25": [("a", 1.0)]}, {"bm25": -1.0})
    with pytest.raises(ValueError, match="rrf k"):
        rrf({"bm25": [("a", 1.0)]}, {}, k=-1)


def test_routing_rules() -> None:
    base = {"vector": 1.0, "bm25": 0.8, "graph": 0.6}
    assert route("what did we eat", base).rules == []
    r = route('where is "parse_config" defined?', base)
    assert r.weights["bm25"] == pytest.approx(1.2) and any("lexical" in x for x in r.rules)
    r = route("Why did the build fail?", base)
    assert r.weights["graph"] == pytest.approx(0.9) and any("causal" in x for x in r.rules)
    r = route("when did we meet Caroline in Boston", base)
    assert r.weights["bm25"] == pytest.approx(1.0) and any("entities" in x for x in r.rules)
    assert base == {"vector": 1.0, "bm25": 0.8, "graph": 0.6}  # a copy is routed
    assert enhancer_mode(0.9, 0.8, 0.4) == "rerank"
    assert enhancer_mode(0.3, 0.8, 0.4) == "add"
    assert enhancer_mode(None, 0.8, 0.4) == "add"
    assert enhancer_mode(0.6, 0.8, 0.4) == "add-half"


def test_recency_table() -> None:
    assert recency_factor(0) == 1.3 and recency_factor(-5) == 1.3
    assert recency_factor(2 * HOUR_US) == 1.2
    assert recency_factor(3 * DAY_US) == 1.1
    assert recency_factor(20 * DAY_US) == 1.0
    assert recency_factor(60 * DAY_US) == 0.9
    assert recency_factor(400 * DAY_US) == 0.8


@settings(deadline=None)
@given(lists, st.integers(1, 40))
def test_array_fusion_equals_the_list_fusion(d: dict[str, list[int]], top: int) -> None:
    import numpy as np
    from engramdb.retrieval.fusion import rrf_arrays

    ranked = as_ranked(d)
    w = {"vector": 1.0, "bm25": 0.8, "graph": 0.6}
    want = rrf(ranked, w)[:top]
    arrays = {m: (np.array([x for x, _ in r], np.int64), np.array([s for _, s in r])) for m, r in ranked.items()}
    got = rrf_arrays(arrays, w, top=top)
    assert [f.key for f in got] == [f.key for f in want]
    for a, b in zip(got, want):
        assert a.score == pytest.approx(b.score) and set(a.methods) == set(b.methods)
        for m, (rank, score) in b.methods.items():
            assert a.methods[m][0] == rank and a.methods[m][1] == pytest.approx(score)


def test_match_strength_scales_the_main_space_between_its_thresholds() -> None:
    from engramdb.retrieval.routing import match_strength

    assert match_strength(0.9, 0.8, 0.4) == 1.0
    assert match_strength(0.2, 0.8, 0.4) == 0.0
    assert match_strength(0.6, 0.8, 0.4) == pytest.approx(0.5)
    assert match_strength(None, 0.8, 0.4) == 0.0  # the space returned nothing
    assert match_strength(0.5, 0.4, 0.4) == 1.0  # degenerate thresholds: no scaling


@settings(deadline=None)
@given(lists, st.integers(1, 6), st.lists(st.sampled_from([0.0, 0.3, 0.6, 1.0, 1.5]), min_size=3, max_size=3))
def test_exact_depth_keeps_the_top_keys_exact(d: dict[str, list[int]], top: int, ws: list[float]) -> None:
    from engramdb.retrieval.fusion import exact_depth

    w = dict(zip(["vector", "bm25", "graph"], ws))
    ranked = as_ranked(d)
    depth = exact_depth([w[m] for m in ranked], top)
    full = [f.key for f in rrf(ranked, w) if f.score > 0][:top]
    cut = [f.key for f in rrf({m: r[:depth] for m, r in ranked.items()}, w) if f.score > 0][:top]
    assert cut == full

"""The navigator (K1) and the handoff (K6) through `Store.context`, and their pure logic: a memory only an
edge reaches joins the context and says why, the edge and step budgets are hard bounds counted in the
stats, the dual variables rise while a budget keeps cutting and fall once it is relaxed, and the token
budget stays a hard bound with the walk on."""

from __future__ import annotations

import engramdb
import pytest
from engramdb.context.handoff import Duals, Spend, shrunk, utility
from engramdb.context.navigator import NEXT_TURN, Link, navigate, subgraph
from engramdb.context.tokens import counter
from hypothesis import given, settings
from hypothesis import strategies as st

QUERY = "grant proposal deadline"


def grant_store(spokes: int = 0) -> engramdb.Store:
    """Eight notes that match the query best, a ninth (`seed`) linked to a memory that shares no word
    with the query (`target`) and to `spokes` more like it, and sixty unrelated notes."""
    db = engramdb.open(None)
    db.add_many([
        *({"id": f"s{i}", "content": f"Grant proposal deadline note {i}: the grant proposal deadline is close, "
                                     f"proposal draft {i}.", "namespace": "n"} for i in range(8)),
        {"id": "seed", "content": "The grant proposal deadline moved to Friday.", "namespace": "n"},
        {"id": "target", "content": "The funding office wants a signed budget sheet.", "namespace": "n"},
        *({"id": f"p{i}", "content": f"Paperwork item {i}: a signed form for the funding office.",
           "namespace": "n"} for i in range(spokes)),
        *({"id": f"w{i}", "content": f"Bird watching trip {i} by the lake.", "namespace": "n"} for i in range(60)),
    ])
    db.link("seed", "target", "REQUIRES")
    for i in range(spokes):
        db.link("seed", f"p{i}", "REQUIRES")
    return db


# the latency budget is set far out of reach: its dual would shrink the walk's budgets on a slow machine
CALM = 60_000.0


def test_a_memory_only_an_edge_reaches_joins_the_context_and_says_why() -> None:
    db = grant_store()
    hits = db.search(QUERY, namespace="n", k=50)
    assert "target" not in {h.id for h in hits if h.score > 0}  # no word of the query, and too far for the search
    ctx = db.context(QUERY, namespace="n", max_tokens=1000)
    item = next(i for i in ctx.items if i.id == "target")
    assert item.section == "related" and item.why.startswith("navigator: via REQUIRES from seed")
    assert item.provenance["snippet"].startswith("The funding office")
    assert item.text == "- The funding office wants a signed budget sheet." and item.badge == ""  # undated: no date
    assert ctx.stats["stages"]["navigator"]["hops"] >= 1
    off = db.context(QUERY, namespace="n", max_tokens=1000, navigate=False)
    assert "target" not in {i.id for i in off.items} and "navigator" not in off.stats["stages"]


def test_the_edge_and_step_budgets_are_hard_bounds_counted_in_the_stats() -> None:
    db = grant_store(spokes=30)
    ctx = db.context(QUERY, namespace="n", max_tokens=2000, edge_budget=6, step_budget=3, latency_ms=CALM)
    sub, walk = ctx.stats["stages"]["subgraph"], ctx.stats["stages"]["navigator"]
    assert sub["edges"] == 6 and sub["budget"] == 6 and sub["wanted"] > 6  # the seed alone has 31 links
    assert walk["steps"] == 3 and walk["budget"] == 3 and walk["stopped"] == "budget" and walk["wanted"] > 3
    assert sum(1 for i in ctx.items if i.why.startswith("navigator")) <= 3
    wide = db.context(QUERY, namespace="n", max_tokens=2000, edge_budget=500, step_budget=50, latency_ms=CALM)
    sub, walk = wide.stats["stages"]["subgraph"], wide.stats["stages"]["navigator"]
    assert 31 <= sub["edges"] == sub["wanted"] <= 500 and walk["stopped"] != "budget" and walk["steps"] >= 31
    with pytest.raises(ValueError, match="step_budget must be an int >= 0"):
        db.context(QUERY, namespace="n", step_budget=-1)


def test_the_duals_rise_under_a_tight_budget_and_fall_when_it_is_relaxed() -> None:
    db = grant_store(spokes=30)
    tight = [db.context(QUERY, namespace="n", max_tokens=2000, step_budget=2, edge_budget=4, latency_ms=CALM).stats
             for _ in range(6)]
    assert tight[0]["prices"]["steps"] == tight[0]["prices"]["edges"] == 0.0
    assert tight[0]["duals"]["steps"] > 0 and tight[0]["duals"]["edges"] > 0  # both cut: both prices rise
    assert all(t["duals"]["steps"] > 0 and t["duals"]["edges"] > 0 for t in tight)  # and stay priced
    assert tight[1]["prices"] == tight[0]["duals"]  # a call runs at the prices the last one left
    relaxed = [db.context(QUERY, namespace="n", max_tokens=2000, step_budget=200, edge_budget=2000,
                          latency_ms=CALM).stats for _ in range(12)]
    for kind in ("steps", "edges"):
        after = [s["duals"][kind] for s in relaxed]
        assert after == sorted(after, reverse=True) and after[0] < tight[-1]["duals"][kind] and after[-1] == 0.0


def test_the_token_budget_stays_a_hard_bound_with_the_walk_on() -> None:
    db = grant_store(spokes=30)
    count, _ = counter(None)
    for budget in (60, 120, 300, 800):
        ctx = db.context(QUERY, namespace="n", max_tokens=budget)
        assert count(ctx.text) <= budget and ctx.stats["tokens"] == count(ctx.text)
        u = ctx.stats["utility"]
        expected = u["reward"] - sum(ctx.stats["prices"][k] * c for k, c in u["costs"].items())
        assert u["value"] == pytest.approx(expected, abs=1e-3)
        assert set(ctx.stats["stages"]) == {"subgraph", "navigator", "curator"}


def test_the_subgraph_reads_the_best_seed_first_within_its_budget() -> None:
    links = {"a": [Link("x", "CAUSED_BY", 0.9), Link("y", NEXT_TURN)], "b": [Link("z", "CAUSED_BY", 1.0)],
             "x": [Link("x2", "CAUSED_BY", 1.0)]}
    g = subgraph({"a": 0.9, "b": 0.3}, lambda i: links.get(i, []), 3)
    assert g.edges == 3 and set(g.links) >= {"a"} and "b" not in g.links  # a's two, then x's (promise 0.405)
    assert g.wanted > 3
    whole = subgraph({"a": 0.9, "b": 0.3}, lambda i: links.get(i, []), 100)
    assert whole.edges == 4 and whole.wanted == 4
    priced = subgraph({"a": 0.9, "b": 0.3}, lambda i: links.get(i, []), 100, price=16.0)
    assert "b" not in priced.links and "a" in priced.links  # b's links could pass on too little


def test_the_walk_stops_at_the_threshold_or_the_step_budget_and_scores_each_hop() -> None:
    links = {"a": [Link("x", "CAUSED_BY", 1.0), Link("y", "MENTIONS", 0.2)], "x": [Link("x2", "CAUSED_BY", 0.5)]}
    g = subgraph({"a": 0.8}, lambda i: links.get(i, []), 100)
    rel = {"x": 0.1, "y": 0.9, "x2": 0.0}
    walk = navigate({"a": 0.8}, g, 10, relevance=lambda ids: {i: rel[i] for i in ids})
    # x2 would pass on 0.4 x 0.5 x 0.5 = 0.1 (+ a little for its one link): under the 0.2 bar
    assert [h.id for h in walk.hops] == ["y", "x"] and walk.stopped == "threshold"
    y, x = walk.hops
    assert y.expected == pytest.approx(0.8 * 0.2 * 0.5) and y.relevance == 0.9 and y.match == 0.9
    assert x.expected == pytest.approx(0.4) and x.via == "CAUSED_BY" and x.parent == "a"
    short = navigate({"a": 0.8}, g, 1, relevance=lambda ids: {i: rel[i] for i in ids})
    assert len(short.hops) == 1 and short.stopped == "budget" and short.wanted == 2
    rated = navigate({"a": 0.8}, g, 10, relevance=lambda ids: {i: rel[i] for i in ids},
                     importance=lambda ids: {i: 1.0 if i == "x" else 0.5 for i in ids})
    assert next(h for h in rated.hops if h.id == "x").score > x.score  # a memory used often wins ties


def test_the_handoff_prices_move_by_subgradient_steps() -> None:
    duals = Duals(rate=0.5, cap=2.0)
    assert duals.update({"steps": Spend(3, 9, 3)})["steps"] == 0.5  # wanted 3x: the step is clipped at 1
    assert duals.update({"steps": Spend(3, 4.5, 3)})["steps"] == 0.75
    assert duals.update({"steps": Spend(1, 1, 4)})["steps"] == pytest.approx(0.375)
    for _ in range(10):
        duals.update({"steps": Spend(0, 0, 4), "latency": Spend(90, 90, 30)})
    assert duals.prices()["steps"] == 0.0 and duals.prices()["latency"] == 2.0  # floor 0, cap 2
    assert shrunk(12, 0.0) == 12 and shrunk(12, 2.0) == 4 and shrunk(1, 16.0) == 1 and shrunk(0, 1.0) == 0
    u = utility(2.0, {"tokens": Spend(500, 800, 1000)}, {"tokens": 1.5})
    assert u == {"reward": 2.0, "costs": {"tokens": 0.5}, "value": 1.25}
    with pytest.raises(ValueError, match="budget kind"):
        duals.update({"money": Spend(1, 1, 1)})


def _walk_written_out(seeds: dict[str, float], graph: object, step_budget: int, rel: dict[str, float],
                      bar: float) -> tuple[list[str], str, int]:
    """The walk of the module docstring as first written: every reachable link becomes a hop on the
    heap, however low it scores (the navigator now leaves out those under the bar)."""
    import heapq
    import math

    from engramdb.context.navigator import HUB_DEGREE, W_DEGREE, W_IMPORTANCE, Hop

    taken, hops, heap, order = set(seeds), [], [], 0

    def offer(parent: str, seed: str, base: float, d: int, links: list[Link]) -> None:
        nonlocal order
        for ln in links:
            if ln.other in taken or ln.other not in rel:
                continue
            expected = base * ln.confidence * ln.share
            deg = graph.degree.get(ln.other, 1)  # type: ignore[attr-defined]
            score = max(rel[ln.other], expected) + W_IMPORTANCE * 0.0 + W_DEGREE * min(
                1.0, math.log1p(deg) / math.log1p(HUB_DEGREE))
            order += 1
            hop = Hop(ln.other, parent, seed, ln.kind, d, round(expected, 4), round(rel[ln.other], 4), 0.5, deg,
                      round(score, 4))
            heapq.heappush(heap, (-score, order, hop))

    for sid, s in sorted(seeds.items(), key=lambda x: -x[1]):
        offer(sid, sid, s, 1, graph.links.get(sid, []))  # type: ignore[attr-defined]
    stopped, wanted = "exhausted", 0
    while heap:
        neg, _, hop = heap[0]
        if hop.id in taken:
            heapq.heappop(heap)
            continue
        if -neg < bar:
            stopped = "threshold"
            break
        if len(hops) >= step_budget:
            stopped = "budget"
            wanted = len({h.id for _, _, h in heap if h.id not in taken and h.score >= bar})
            break
        heapq.heappop(heap)
        hops.append(hop)
        taken.add(hop.id)
        if hop.depth < 2:
            offer(hop.id, hop.seed, max(hop.relevance, hop.expected), hop.depth + 1,
                  graph.links.get(hop.id, []))  # type: ignore[attr-defined]
    return [h.id for h in hops], stopped, len(hops) + wanted


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_walk_is_the_walk_written_out(data: st.DataObject) -> None:
    """Leaving out the hops that score under the bar changes no hop, no stop reason and no count of
    hops wanted (random graphs, relevances on a coarse grid so that scores tie and sit on the bar)."""
    from engramdb.context.navigator import DEPTH, THRESHOLD

    assert DEPTH == 2  # the reference walks two links deep
    nodes = [f"m{i}" for i in range(data.draw(st.integers(3, 12)))]
    grid = st.sampled_from([0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 0.9, 1.0])
    links = {n: [Link(o, data.draw(st.sampled_from([NEXT_TURN, "CAUSED_BY", "MENTIONS"])), data.draw(grid))
                 for o in data.draw(st.lists(st.sampled_from(nodes), max_size=4, unique=True)) if o != n]
             for n in nodes}
    seeds = {n: data.draw(grid) for n in data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=3,
                                                            unique=True))}
    rel = {n: data.draw(grid) for n in nodes}
    budget = data.draw(st.integers(0, 6))
    g = subgraph(seeds, lambda i: links.get(i, []), 100)
    walk = navigate(seeds, g, budget, relevance=lambda ids: {i: rel[i] for i in ids})
    assert ([h.id for h in walk.hops], walk.stopped, walk.wanted) == \
        _walk_written_out(seeds, g, budget, rel, THRESHOLD)

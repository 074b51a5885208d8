"""The navigator (K1): from the search's hits, walk the memory graph to what the search did not rank.

Two stages, the first two of the handoff (context/handoff.py):
1. `subgraph`: the links around the seeds (typed edges and the turns next to a memory in its
   session), read node by node, the most promising first, at most `depth` links from a seed,
   until `edge_budget` links are read (a hard bound). A node's promise is its score (a seed's hit
   score) or the score its best link passes on; with an edge price (the budget's dual), a node
   is read only when what it could pass on is worth the links it costs.
2. `navigate`: a best-first walk from the seeds over that subgraph, one hop a step, within
   `step_budget` steps (a hard bound); it stops when the best waiting hop scores under
   `threshold` plus the step price, or the budget is spent.

A hop's scores, on the search's one [0, 1] scale (retrieval/scales.py):
- expected: what the navigator predicts before reading the hop, its parent's score x the link's
  confidence x the share a link passes on (the search's own shares: 0.5 an edge, 0.7 a turn,
  a turn's share times how much it says against its parent, its idf mass over the parent's at
  most 1, as the search weighs a neighbouring turn: a filler turn carries little);
- relevance: the hop's own match to the query (the caller's `relevance`, e.g. the store's BM25
  share and main-space similarity);
- score = max(relevance, expected) + W_IMPORTANCE x (importance - 0.5) + W_DEGREE x hub, where
  importance is its ELO's chance against an unrated memory (0.5 unrated, E2) and hub =
  log(1 + degree) / log(1 + HUB_DEGREE) at most 1, its degree in the subgraph read: a hop
  never outranks its parent on the link alone (the same rule as the search's expansion), a
  memory used often and one that leads on win ties.
The gap between expected and relevance is the surprise the curiosity queue keeps (K7).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..retrieval.scored import GRAPH_SHARE, NEIGHBOUR_SHARE

THRESHOLD = 0.2  # "about 0.2 is a weak match" (docs/guides/search.md, Scores): a weaker hop is not worth a step
DEPTH = 2  # links from a seed (the search's graph method walks 2 too)
W_IMPORTANCE = 0.1
W_DEGREE = 0.05
HUB_DEGREE = 16
NEXT_TURN, PREVIOUS_TURN = "NEXT_TURN", "PREVIOUS_TURN"  # the kind of a link between neighbouring turns


@dataclass(frozen=True)
class Link:
    """One link from a memory: the memory at its other end, its kind (an edge type, or NEXT_TURN /
    PREVIOUS_TURN for the neighbouring turns of a session) and its confidence."""

    other: str
    kind: str
    confidence: float = 1.0

    @property
    def share(self) -> float:
        """Of its parent's score, what this link passes on at full confidence."""
        return NEIGHBOUR_SHARE if self.kind in (NEXT_TURN, PREVIOUS_TURN) else GRAPH_SHARE


@dataclass(frozen=True)
class Subgraph:
    """The links read around the seeds: `links` per node read, `edges` read (<= the budget),
    `wanted`: the links it would have read without the budget (an estimate: the nodes left
    waiting x the mean links of a node read), `degree`: each node's links seen."""

    links: dict[str, list[Link]]
    edges: int
    wanted: int
    degree: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Hop:
    """A memory the walk reached: from `parent` (a seed or an earlier hop) over a link of kind
    `via`, `depth` links from `seed`; its expected score, relevance, importance, degree and score
    (see the module docstring)."""

    id: str
    parent: str
    seed: str
    via: str
    depth: int
    expected: float
    relevance: float
    importance: float
    degree: int
    score: float

    @property
    def match(self) -> float:
        """Its match on the search's scale, the larger of its relevance and its expected score: what
        a curator weighs it at beside the hits (importance and degree order the walk, they are no
        part of a hit's score)."""
        return max(self.relevance, self.expected)


@dataclass(frozen=True)
class Walk:
    """What the navigator did: the hops taken in order, the steps spent (<= the budget), the hops
    it scored, why it stopped ("threshold", "budget" or "exhausted") and the steps it wanted (the
    steps spent plus the waiting hops still over the bar when the budget stopped it)."""

    hops: list[Hop]
    steps: int
    scored: int
    stopped: str
    wanted: int


def subgraph(seeds: Mapping[str, float], links_of: Callable[[str], Sequence[Link]], edge_budget: int, *,
             depth: int = DEPTH, price: float = 0.0, threshold: float = THRESHOLD) -> Subgraph:
    """The links around `seeds` (id -> score) within `edge_budget` links (see the module docstring).
    `price` (>= 0) is the edge budget's dual: a node is read only when the most its links could pass
    on (its promise x the larger share) clears `threshold` by price x its expected links / budget
    (a price of 0 reads every node it can)."""
    links: dict[str, list[Link]] = {}
    degree: dict[str, int] = {}
    edges = cut = 0
    per_node = 2.0  # the links a node is expected to have (two neighbouring turns), updated as nodes are read
    heap = [(-s, 0, i, sid) for i, (sid, s) in enumerate(sorted(seeds.items(), key=lambda x: -x[1]))]
    heapq.heapify(heap)
    best = dict(seeds)
    order = len(heap)

    def worth(promise: float) -> bool:
        return price <= 0 or promise * NEIGHBOUR_SHARE - price * per_node / max(edge_budget, 1) >= threshold

    while heap:
        neg, d, _, node = heapq.heappop(heap)
        if node in links or -neg < best.get(node, 0.0) or not worth(-neg):
            continue  # read already, a stale entry (reached again with a better promise), or not worth it
        if edges >= edge_budget:
            heapq.heappush(heap, (neg, d, 0, node))
            break
        found = sorted(links_of(node), key=lambda ln: -ln.confidence)
        took = found[: edge_budget - edges]
        edges += len(took)
        cut = len(found) - len(took)
        links[node] = took
        per_node += (len(found) - per_node) / (len(links) + 1)
        for ln in took:
            degree[node] = degree.get(node, 0) + 1
            degree[ln.other] = degree.get(ln.other, 0) + 1
            passed = -neg * ln.confidence * ln.share
            if d + 1 < depth and passed > best.get(ln.other, 0.0) and ln.other not in seeds:
                best[ln.other] = passed
                order += 1
                heapq.heappush(heap, (-passed, d + 1, order, ln.other))
        if cut:
            break
    # what the budget left: the links cut from the last node and the nodes still worth reading
    waiting = len({node for neg, _, _, node in heap if node not in links and -neg >= best.get(node, 0.0)
                   and worth(-neg)}) if (cut or edges >= edge_budget) else 0
    return Subgraph(links, edges, edges + cut + round(waiting * per_node), degree)


def navigate(seeds: Mapping[str, float], graph: Subgraph, step_budget: int, *,
             relevance: Callable[[list[str]], Mapping[str, float]],
             importance: Callable[[list[str]], Mapping[str, float]] | None = None,
             mass: Callable[[list[str]], Mapping[str, float]] | None = None, threshold: float = THRESHOLD,
             price: float = 0.0, raise_bar: float = 0.0, depth: int = DEPTH) -> Walk:
    """The best-first walk from `seeds` (id -> score) over `graph` within `step_budget` hops (see the
    module docstring). `relevance(ids)`, `importance(ids)` (ELO chance, 0.5 unrated) and `mass(ids)`
    (how much a memory says, for a turn's share) score the hops, in one batch; `price` (>= 0, the
    step budget's dual) raises the bar a hop must reach by price / budget, and `raise_bar` by
    itself (the caller's other prices, e.g. of the tokens a hop would take)."""
    bar = threshold + max(0.0, price) / max(step_budget, 1) + max(0.0, raise_bar)
    # every node the walk could reach: the other ends of the links read (the seeds are not hops)
    reach = [n for n in dict.fromkeys(ln.other for ls in graph.links.values() for ln in ls) if n not in seeds]
    rel = dict(relevance(reach)) if reach else {}
    imp = dict(importance(reach)) if importance is not None and reach else {}
    said = dict(mass([*seeds, *reach])) if mass is not None and reach else {}
    hops: list[Hop] = []
    taken: set[str] = set(seeds)
    heap: list[tuple[float, int, Hop]] = []
    order = 0
    under: set[str] = set()  # hops left out for scoring under the bar (the walk stops at one not taken)

    def offer(parent: str, seed: str, base: float, d: int, links: Iterable[Link]) -> None:
        nonlocal order
        for ln in links:
            if ln.other in taken or ln.other not in rel:
                continue
            share = ln.share
            if ln.kind in (NEXT_TURN, PREVIOUS_TURN) and said:
                share *= min(1.0, said.get(ln.other, 0.0) / said[parent]) if said.get(parent, 0.0) > 0 else 0.0
            expected = base * ln.confidence * share
            r = float(rel[ln.other])
            i = float(imp.get(ln.other, 0.5))
            deg = graph.degree.get(ln.other, 1)
            hub = min(1.0, math.log1p(deg) / math.log1p(HUB_DEGREE))
            score = max(r, expected) + W_IMPORTANCE * (i - 0.5) + W_DEGREE * hub
            if score < bar and round(score, 4) < bar:  # never taken nor wanted: no Hop made for it
                under.add(ln.other)
                continue
            order += 1
            hop = Hop(ln.other, parent, seed, ln.kind, d, round(expected, 4), round(r, 4), round(i, 4), deg,
                      round(score, 4))
            heapq.heappush(heap, (-score, order, hop))

    for sid, s in sorted(seeds.items(), key=lambda x: -x[1]):
        offer(sid, sid, s, 1, graph.links.get(sid, ()))
    stopped = "exhausted"
    wanted = 0
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
        if hop.depth < depth:
            offer(hop.id, hop.seed, max(hop.relevance, hop.expected), hop.depth + 1, graph.links.get(hop.id, ()))
    if stopped == "exhausted" and not under <= taken:  # what the walk would have met at the top of its heap
        stopped = "threshold"
    return Walk(hops, len(hops), len(rel), stopped, len(hops) + wanted)


__all__ = ["DEPTH", "NEXT_TURN", "PREVIOUS_TURN", "THRESHOLD", "Hop", "Link", "Subgraph", "Walk", "navigate",
           "subgraph"]

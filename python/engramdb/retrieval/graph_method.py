"""The graph method (H2): memories up to two hops from seed hits over live typed edges."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from .query_context import QueryContext, Ranked

HOP_DECAY = 0.5  # a 2-hop neighbour scores half the product of its edges' confidences
HYPOTHESIS = "dream"  # an edge whose reason starts so is a hypothesis (C9): walked only when asked
GRAPH_SEEDS = 5  # best fused hits the graph (and the conversation neighbours) expand from


def graph_found(ctx: QueryContext, seeds: list[tuple[int, int]], n: int) -> Ranked:
    """Memories up to 2 hops from the seeds over live typed edges valid at the query's time,
    scored by the product of edge confidences (x HOP_DECAY for the second hop), best first; the
    dream's hypotheses (reason "dream...") only when the search asks for them."""
    view = ctx.view
    if view.edge_rows == 0:  # a store without edges: nothing to walk
        return []
    t = ctx.t
    when = None if t is None else datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=t)
    seed_ids = set(view.ids_at(seeds))
    best: dict[str, float] = {}
    frontier = {mid: 1.0 for mid in seed_ids}
    for hop in range(2):
        nxt: dict[str, float] = {}
        for mid, s in frontier.items():
            for e in view.outgoing(mid) + view.incoming(mid):
                if when is not None and not e.valid_at(when):
                    continue
                if not ctx.plan.hypotheses and (e.reason or "").startswith(HYPOTHESIS):
                    continue
                other = e.dst if e.src == mid else e.src
                if other == mid:
                    continue  # a seed that is also a neighbour of another seed keeps the vote
                v = s * e.confidence * (HOP_DECAY if hop == 1 else 1.0)
                if v > best.get(other, 0.0):
                    best[other] = v
                    nxt[other] = max(nxt.get(other, 0.0), s * e.confidence)
        frontier = nxt
    out = []
    for mid, score in best.items():
        loc = view.loc_of(mid)
        if loc is None:
            continue
        if bool(ctx.rows_ok(loc[0], np.array([loc[1]]))[0]):
            out.append((loc, score))
    out.sort(key=lambda x: (-x[1], x[0]))
    return out[:n]

"""The conversation-neighbour method: the turns next to a seed hit in its session."""

from __future__ import annotations

import numpy as np

from ..storage.view import Loc
from .context import QueryContext, Ranked


def neighbours_found(ctx: QueryContext, seeds: list[Loc], n: int) -> Ranked:
    """The turns just after and just before each seed in its session (same session_id, seq +- 1),
    in seed order, the reply first: an answer often sits in the turn after the one that matched
    the question's words. Scored 1 / seed rank."""
    view = ctx.view
    turns = ctx.indexes.turns.get(view, ctx.namespace)
    out: Ranked = []
    seen: set[Loc] = set()  # a seed next to another seed gets the vote too
    for rank, (si, row) in enumerate(seeds, start=1):
        sess, names, seq = view.segments[si].turns()
        if sess[row] < 0 or seq[row] < 0:
            continue
        for step in (1, -1):
            loc = turns.get((names[int(sess[row])], int(seq[row]) + step))
            if loc is None or loc in seen:
                continue
            if bool(ctx.rows_ok(loc[0], np.array([loc[1]]))[0]):
                seen.add(loc)
                out.append((loc, 1.0 / rank))
    return out[:n]

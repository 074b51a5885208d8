"""The conversation-neighbour method: the turns next to a seed hit in its session."""

from __future__ import annotations

import numpy as np

from ..storage.view import Loc
from .query_context import QueryContext, Ranked


def neighbour_pairs(ctx: QueryContext, seeds: list[Loc]) -> list[tuple[int, Loc]]:
    """(seed index, location) of the turns just after and just before each seed in its session
    (same session_id, seq +- 1) that the query may see, in seed order, the reply first."""
    view = ctx.view
    turns = ctx.indexes.turns.get(view, ctx.namespace)
    out: list[tuple[int, Loc]] = []
    for i, (si, row) in enumerate(seeds):
        session, seq = view.turn_at((si, row))
        if session is None or seq < 0:
            continue
        for step in (1, -1):
            loc = turns.get((session, seq + step))
            if loc is not None and bool(ctx.rows_ok(loc[0], np.array([loc[1]]))[0]):
                out.append((i, loc))
    return out


def neighbours_found(ctx: QueryContext, seeds: list[Loc], n: int) -> Ranked:
    """The neighbouring turns of the seeds (`neighbour_pairs`): an answer often sits in the turn
    after the one that matched the question's words. Scored 1 / seed rank; a turn next to two
    seeds counts for the first."""
    out: Ranked = []
    seen: set[Loc] = set()  # a seed next to another seed gets the vote too
    for i, loc in neighbour_pairs(ctx, seeds):
        if loc not in seen:
            seen.add(loc)
            out.append((loc, 1.0 / (i + 1)))
    return out[:n]

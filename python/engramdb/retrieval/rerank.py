"""Exact scores of a shortlist: any space over given (segment, row) locations, MaxSim gathered
into one kernel call. What enhancer spaces in rerank mode and the pipeline's last stage run."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..spaces.protocol import TokenBatch
from ..spaces.schema import Space
from ..storage.view import Loc
from .context import QueryContext, Ranked
from .dense import scan


def scan_locations(ctx: QueryContext, sp: Space, qv: Any, locs: list[Loc], n: int) -> Ranked:
    """Exact scores of one space for given locations only, n best first."""
    if sp.kind == "multivector" and locs:
        return maxsim_locations(ctx, qv, sp, locs, n)
    view = ctx.view
    by_seg: dict[int, list[int]] = {}
    for si, row in locs:
        by_seg.setdefault(si, []).append(row)
    found: Ranked = []
    for si, rows in by_seg.items():
        seg = view.segments[si]
        mask = np.zeros(len(seg), bool)
        mask[rows] = True
        found += [((si, r), s) for r, s in scan(sp, qv, seg.vectors(view.schema, sp.name), mask, n)]
    found.sort(key=lambda x: (-x[1], x[0]))
    return found[:n]


def maxsim_locations(ctx: QueryContext, qv: Any, sp: Space, locs: list[Loc], n: int) -> Ranked:
    """MaxSim of a shortlist spread over segments in one kernel call: the rows' token vectors
    are gathered into one ragged batch (a call per segment cost more than the scoring)."""
    assert isinstance(qv, TokenBatch)
    if qv.tokens.shape[0] == 0:
        return []
    view = ctx.view
    parts = []
    for si, row in locs:
        tb = view.segments[si].vectors(view.schema, sp.name)
        assert isinstance(tb, TokenBatch)
        parts.append(tb.tokens[int(tb.offsets[row]) : int(tb.offsets[row + 1])])
    offsets = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    tokens = np.ascontiguousarray(np.concatenate(parts), np.float32)
    raw, bad = _core.maxsim(np.ascontiguousarray(qv.tokens, np.float32), tokens, offsets, None, 1)
    if bad >= 0:
        raise ValueError(f"token vectors of {locs[bad]} contain NaN or inf")
    scores = raw / qv.tokens.shape[0]
    order = np.lexsort((np.arange(len(locs)), -scores))[:n]
    return [(locs[i], float(scores[i])) for i in order.tolist()]

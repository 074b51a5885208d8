"""Exact scores of a shortlist: any space over given (segment, row) locations, MaxSim gathered
into one kernel call. What enhancer spaces in rerank mode and the pipeline's last stage run.

MaxSim takes, for each query token, its best match among the memory's tokens: a longer memory
has more tokens to match, so it would score higher for being long. A memory of more than
`TOKEN_WINDOW` tokens is therefore scored as its best window of that many (windows overlapping
by a quarter), as the other methods score a long memory by its best passage (C7): every memory
competes on the same length of evidence."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kernels
from ..spaces.passages import OVERLAP, WORDS
from ..spaces.protocol import TokenBatch
from ..spaces.schema import Space
from ..storage.view import Loc
from .dense_method import scan
from .query_context import QueryContext, Ranked

# analysed terms per window: a passage's WORDS words less their stop words (about half of English text)
TOKEN_WINDOW = WORDS // 2
TOKEN_STRIDE = TOKEN_WINDOW - OVERLAP // 2


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
        mask = np.zeros(view.segment_rows(si), bool)
        mask[rows] = True
        found += [((si, r), s) for r, s in scan(sp, qv, view.vectors(si, sp.name), mask, n)]
    found.sort(key=lambda x: (-x[1], x[0]))
    return found[:n]


def maxsim_locations(ctx: QueryContext, qv: Any, sp: Space, locs: list[Loc], n: int) -> Ranked:
    """MaxSim of a shortlist spread over segments in one kernel call: the rows' token vectors
    are gathered into one ragged batch (a call per segment cost more than the scoring)."""
    assert isinstance(qv, TokenBatch)
    if qv.tokens.shape[0] == 0:
        return []
    view = ctx.view
    parts, owner = [], []
    for i, (si, row) in enumerate(locs):
        tb = view.vectors(si, sp.name)
        assert isinstance(tb, TokenBatch)
        a, b = int(tb.offsets[row]), int(tb.offsets[row + 1])
        starts = range(a, max(a + 1, b - TOKEN_WINDOW + TOKEN_STRIDE), TOKEN_STRIDE) if b - a > TOKEN_WINDOW else (a,)
        for w in starts:  # the windows of a long memory (see the module docstring)
            parts.append(tb.tokens[w : min(b, w + TOKEN_WINDOW) if b - a > TOKEN_WINDOW else b])
            owner.append(i)
    offsets = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    tokens = np.ascontiguousarray(np.concatenate(parts), np.float32)
    try:
        raw = kernels.maxsim(qv.tokens, tokens, offsets, threads=1)
    except kernels.NonFiniteRow as e:
        raise ValueError(f"token vectors of {locs[owner[e.row]]} contain NaN or inf") from None
    scores = np.full(len(locs), -np.inf)
    np.maximum.at(scores, np.array(owner, np.int64), raw / qv.tokens.shape[0])
    order = np.lexsort((np.arange(len(locs)), -scores))[:n]
    return [(locs[i], float(scores[i])) for i in order.tolist()]

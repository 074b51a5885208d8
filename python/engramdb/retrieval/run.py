"""One fused search between its stages (retrieval/strategies.py, retrieval/scored.py): the
query, its vectors and terms, the weights, what each method found and the fused list."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..spaces.schema import Space
from ..storage.view import Loc
from .fusion import Fused
from .lexical_method import Terms
from .query_context import Found, QueryContext


@dataclass
class Run:
    """One fused search between its stages: what the methods found, the weights, the fused list."""

    ctx: QueryContext
    query: str
    main: Space
    qv: Any  # the main space's query vector (None for bm25)
    terms: Terms | None  # the query's lexical terms (None without a lexical space)
    enh: dict[str, Any]  # enhancer space -> the query's vector in it
    w: dict[str, float]  # RRF weights, as the stages adjust them
    # the caller gave `qv` (query_vector=): not the embedding of `query`, so not made of its words
    vector_given: bool = False
    got: dict[str, Found] = field(default_factory=dict)
    ranked: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # the pipeline's key arrays
    fused: list[Fused[Loc]] = field(default_factory=list)
    scored: Any = None  # the hybrid's calibrated candidates (retrieval/scored.py)
    # a fused result's explain detail when its stage left it out (the hybrid makes it for the hits
    # only: 100 candidates' dicts cost a fifth of a small namespace's search)
    detail_of: Callable[[Loc], dict[str, Any]] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    stage_ms: dict[str, float] = field(default_factory=dict)
    _clock: float = field(default_factory=time.perf_counter)

    @property
    def k(self) -> int:
        return self.ctx.plan.k

    @property
    def st(self) -> dict[str, int]:
        return dict(self.ctx.plan.stages)

    def release(self) -> None:
        """Drop what the stages made once the hits are out. The hybrid's scorer refers back to its
        Run, so without this each search left a cycle of ~150 objects (its 100 Fused among them)
        for the garbage collector to find, whose full collections were a small namespace's p95."""
        self.scored = None
        self.detail_of = None
        self.fused = []
        self.got.clear()
        self.ranked.clear()

    def lap(self, name: str) -> None:
        """Record the milliseconds since the last lap as one pipeline stage's time."""
        now = time.perf_counter()
        self.stage_ms[name] = round((now - self._clock) * 1e3, 3)
        self._clock = now


Stage = Callable[[Run], None]

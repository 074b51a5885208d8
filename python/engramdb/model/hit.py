"""Search results: each hit, and the statistics of the search that found them.

Statistics travel with the result (as usearch's `Matches` carry theirs): two searches running
side by side each get their own, and nothing store-wide records "the last search".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .memory import Memory


@dataclass(frozen=True)
class Hit:
    """One search result: the memory, its score in the searched space, and why (if asked).

    `score`: the memory's OWN match to the query, in [0, 1]. `via`: None for a memory found by its
    own match; for one the search added because of another hit (the hybrid search's neighbouring
    turn of a hit, or a memory an edge away from one) whose share of that hit placed it above its
    own match, the id of that hit: it is context of `via`, its `score` says how little it matches
    by itself, and it is ranked by the share (never above the hit it came with).
    `elo`, `tier`: the memory's importance learned from use (E2-E6): annotation only, the order is
    by relevance unless the search set `elo_weight`.
    `passage`: for a memory longer than one passage (about 200 words, C7), the (start, end)
    character offsets in `memory.content` of the passage that matched best, so a context can
    quote it (`hit.memory.content[start:end]`); None when the memory is one passage.
    """

    id: str
    score: float
    memory: Memory
    explain: dict[str, Any] | None = None
    archived: bool = False  # content is in an archive file (memory.content is empty): `unarchive` it
    passage: tuple[int, int] | None = None
    elo: float | None = None  # the memory's ELO importance now (E6; the initial 1400, mid-MEDIUM, until rated)
    tier: str | None = None  # HIGH, MEDIUM, LOW or VERY_LOW (from `elo`)
    explored: bool = False  # placed by `explore=` (Thompson sampling), not by relevance
    via: str | None = None  # the hit this one is context of (see above); None: found by its own match

    def with_importance(self, elo: float, tier: str) -> Hit:
        """This hit with `elo` and `tier` set: a plain field copy, ~10x cheaper than
        `dataclasses.replace` (every search annotates each of its hits)."""
        new = object.__new__(Hit)
        fields_ = new.__dict__
        fields_.update(self.__dict__)
        fields_["elo"], fields_["tier"] = elo, tier
        return new


@dataclass(frozen=True)
class SearchStats:
    """What one search did.

    `strategy`: the strategy that ran ("exact", "tree", "hnsw", "bm25", "hybrid", ...).
    `generation`: the store snapshot it read (a write makes the next one).
    `index`: what the dense index did, when one answered: for a tree, the vectors scored
    (`e_computations` = `centroids` + `memories`), `leaves` probed and `hot_rows` scanned
    directly; for HNSW, candidates `fetched` and how many `passed_filters`. Empty for exact scans.
    `stages`: candidates per pipeline stage; `stage_ms`: milliseconds per pipeline stage.
    `failed`: methods that raised and were skipped (name -> error). `cached`: the same search
    on the same snapshot was answered a moment ago and its hits are reused (K5).
    """

    strategy: str
    generation: int
    namespace: str
    index: dict[str, Any] = field(default_factory=dict)
    stages: dict[str, int] = field(default_factory=dict)
    stage_ms: dict[str, float] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False  # answered from the store's cache of repeated searches (K5)


class Hits(list[Hit]):
    """The hits of one search, best first (a list), with that search's `stats`."""

    stats: SearchStats
    query_id: str | None  # the access log's id of this search (pass it to `Store.feedback`); None: not logged

    def __init__(self, hits: list[Hit], stats: SearchStats, query_id: str | None = None) -> None:
        super().__init__(hits)
        self.stats = stats
        self.query_id = query_id

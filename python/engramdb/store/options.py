"""How a store is opened: the settings `engramdb.open` checks and `Store` is built from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..ingest.dedup import Policy, check_policy
from ..model.tuning import Tuning
from ..spaces.protocol import Embedder
from ..spaces.schema import Schema


@dataclass(frozen=True)
class Options:
    """How a store is opened: every argument of `engramdb.open` but the path (checked here)."""

    schema: Schema | None = None
    embedders: Mapping[str, Embedder] | None = None
    read_only: bool = False
    salvage: bool = False
    dedup: Policy = "off"
    dedup_threshold: float = 0.90
    profile: str | None = None
    index: str = "tree"
    tuning: Tuning = field(default_factory=Tuning)
    access_log: bool | Literal["spool"] = True
    contradictions: str = "off"

    def __post_init__(self) -> None:
        check_policy(self.dedup)
        if isinstance(self.dedup_threshold, bool) or not isinstance(self.dedup_threshold, (int, float)) \
                or not 0 < self.dedup_threshold <= 1:
            raise ValueError(f"dedup_threshold must be in (0, 1], got {self.dedup_threshold!r}")
        if self.profile is not None and self.schema is not None:
            raise ValueError("pass schema= or profile=, not both")
        if self.contradictions not in ("off", "detect", "supersede"):
            raise ValueError(f"contradictions must be 'off', 'detect' or 'supersede', got {self.contradictions!r}")
        if self.access_log not in (True, False, "spool"):
            raise ValueError(f"access_log must be True, False or 'spool', got {self.access_log!r}")
        if not isinstance(self.tuning, Tuning):
            raise TypeError(f"tuning must be an engramdb.Tuning, got {type(self.tuning).__name__}")

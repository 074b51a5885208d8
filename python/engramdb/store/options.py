"""How a store is opened: the settings `engramdb.open` checks and `Store` is built from.

Every argument is checked here, before the store's folder is touched: a bad one raises naming
itself and its value, and leaves no LOCK, manifest or WAL behind."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..index.registry import INDEX_KINDS
from ..ingest.dedup import Policy, check_policy
from ..model.tuning import Tuning
from ..spaces.profiles import PROFILES
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
        for name in ("read_only", "salvage"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.salvage and not self.read_only:
            raise ValueError("salvage=True needs read_only=True: a damaged store is read, never written")
        if self.index not in INDEX_KINDS:
            raise ValueError(f"index must be {', '.join(map(repr, INDEX_KINDS[:-1]))} or {INDEX_KINDS[-1]!r}, "
                             f"got {self.index!r}")
        if self.profile is not None and self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {list(PROFILES)}, got {self.profile!r}")
        if self.schema is not None and not isinstance(self.schema, Schema):
            raise TypeError(f"schema must be an engramdb Schema, got {type(self.schema).__name__}")
        if self.embedders is not None:
            if not isinstance(self.embedders, Mapping):
                raise TypeError(f"embedders must be a dict of space name -> embedder, got "
                                f"{type(self.embedders).__name__}")
            for name, emb in self.embedders.items():
                if not isinstance(name, str) or not callable(getattr(emb, "embed", None)):
                    raise TypeError(f"embedders[{name!r}] must be an embedder (an object with .embed(texts)), "
                                    f"got {type(emb).__name__}")
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

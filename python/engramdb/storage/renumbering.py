"""Where a purge (storage/rewrites.py) moved each row: what lets the derived indexes that are costly
to rebuild (BM25 analyses every text again; the passage vectors, with a model embedder, embed every
long memory again) follow the rows instead of starting over (index/registry.py `Indexes.drop`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class Renumbering:
    """What a purge did to the keys: `kept[key]` for every key of `old_epoch` (in order) says
    whether its row stayed; the rows kept are numbered on from 0, in the same order, in `new_epoch`."""

    removed: int  # versions removed (0: nothing was, and the keys are as they were)
    old_epoch: int
    new_epoch: int
    kept: np.ndarray
    # False when an index carried over could differ from one made from the segments: an archived
    # memory's text has left the segments, not its passages (made before it was archived)
    carries: bool = True

    @cached_property
    def key_of(self) -> np.ndarray:
        """Each old key's new key, where its row was kept (made once for every index that follows)."""
        out: np.ndarray = np.cumsum(self.kept, dtype=np.int64) - 1
        return out

    def follows(self, epoch: int, covered: int) -> bool:
        """Whether an index of row epoch `epoch` over the first `covered` keys can follow the rows."""
        return self.carries and epoch == self.old_epoch and covered <= len(self.kept)

    def covered_after(self, covered: int) -> int:
        """How many of the first `covered` old keys were kept: what such an index covers after."""
        return int(self.kept[:covered].sum())


__all__ = ["Renumbering"]

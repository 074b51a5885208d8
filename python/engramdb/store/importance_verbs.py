"""`db.importance`: what a store learned about which memories matter (E1-E7): each memory's ELO
rating and tier (they move with every `feedback`), the log of every change, the lifecycle tiers,
and the lite pack of a namespace by importance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..context.result import Context
from ..context.tokens import Counter
from ..importance import batch
from ..importance.elo import RELEVANCE_THRESHOLD
from ..importance.ratings import Importance
from ..lifecycle.tier_state import TierState
from ..model import checks

if TYPE_CHECKING:
    from .facade import Store


class ImportanceVerbs:
    """Importance learned from use (`db.importance`); `db.importance(id)` is `db.importance.of(id)`."""

    def __init__(self, db: Store) -> None:
        self._db = db

    def of(self, id: str) -> Importance:
        """A memory's ELO now (decayed), tier, update and use counts and C5 importance."""
        return self._db._usage.importance(id)

    __call__ = of

    def log(self, id: str | None = None) -> list[dict[str, Any]]:
        """Every ELO change the batch updates made (of one memory), oldest first, with its inputs."""
        if id is not None:
            checks.name("id", id)
        rows: list[dict[str, Any]] = self._db._usage.updates(id).to_pylist()
        return rows

    def refresh(self, *, relevance_threshold: float = RELEVANCE_THRESHOLD) -> batch.UpdateReport:
        """Apply the access log to the ELO ratings from where the last update stopped (E5): each
        search with feedback updates the memories it showed (used: won, shown only: lost), R-gated
        below `relevance_threshold`. Idempotent; every change is logged (`log`). Not needed for
        feedback (it settles at once, at the default threshold): it takes in what readers spooled
        and what contexts injected without feedback since, and saves the ratings."""
        return self._db._usage.update(relevance_threshold)

    def tiers(self) -> TierState:
        """The lifecycle tiers and the recent consolidation runs (loaded once)."""
        return self._db.lifecycle._consolidation.tiers()

    def pack(self, namespace: str, *, max_tokens: int = 2000, tokenizer: str | Counter | None = None) -> Context:
        """The lite pack of a namespace (E8): its memories by ELO, highest first (then newest first), HIGH in full,
        MEDIUM as a summary (the leading sentences), LOW as a pointer (its id and first words),
        VERY_LOW left out, while they fit `max_tokens`; a memory whose valid time has ended (superseded)
        is left out, as a context leaves it out, and `namespace` must be a namespace's name (a
        TypeError or ValueError names it). `.items` is the manifest (id, elo and tier
        in the provenance, the form in `why`); `.stats` has the tokens saved against the same
        memories in full."""
        return self._db._context.pack(namespace, max_tokens=max_tokens, tokenizer=tokenizer)


__all__ = ["ImportanceVerbs"]

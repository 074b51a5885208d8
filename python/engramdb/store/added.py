"""What `Store.add_many` (and `add_messages`) return: the ids stored, with the write's reports."""

from __future__ import annotations

from ..ingest.dedup import DedupEvent
from ..lifecycle.contradictions import Proposal


class Added(list[str]):
    """What `add_many` returns: the ids stored, in order (a duplicate's id is the memory it
    duplicates), with the reports of the write: `dedup` (S8: each record found to repeat a
    memory, and what was done) and `contradictions` (H5, with `contradictions=`: what the new
    memories contradict)."""

    dedup: list[DedupEvent]
    contradictions: list[Proposal]

    def __init__(self, ids: list[str], dedup: list[DedupEvent] | None = None,
                 contradictions: list[Proposal] | None = None) -> None:
        super().__init__(ids)
        self.dedup = dedup or []
        self.contradictions = contradictions or []


__all__ = ["Added"]

"""What `Store.context` returns: the prompt-ready block, its items with their provenance, its stats."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ContextItem:
    """One memory (or note) in a context: where it sits, why, what it cost and where it came from."""

    id: str | None  # the memory's id (None for a note the assembler wrote, such as the divergence alert)
    section: str  # "divergence", "topics", "related", "recent" or "badges"
    text: str  # the line as it appears in `Context.text` ("- user: I live in Paris.")
    score: float
    tokens: int
    why: str
    provenance: dict[str, Any] = field(default_factory=dict)  # K3: source, uri, extracted_at, extractor, snippet,
    # verified, corroboration, trust
    badge: str = ""  # when it was said or holds, as the block shows it: the date line it sits under and its
    # own mark ("2024-03-20, s4", "2024-03-20 (superseded 2024-06-01)"; "" for a note or an undated fact)


@dataclass(frozen=True)
class Context:
    """A context block: `text` (never more than the budget's tokens, counted by `stats["tokenizer"]`),
    `items` in the order they appear, and `stats` (tokens, budget, per-stage milliseconds, the
    handoff's stages, duals and utility: see `Store.context`)."""

    text: str
    items: list[ContextItem]
    stats: dict[str, Any]

    def __str__(self) -> str:
        return self.text


__all__ = ["Context", "ContextItem"]

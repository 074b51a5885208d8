"""Rule-based routing (C2): what a query asks for, and how the methods are weighted for it.

Rules, each visible in `explain`:
- quoted keywords ("exact phrase") or code-like tokens (snake_case, CamelCase, dotted.names,
  calls(), paths): lexical matching matters, BM25 and lexical spaces weigh x1.5;
- named entities (capitalised words not at the start of the sentence): BM25 x1.25;
- causal questions (why, cause, because, led to, result of): the graph weighs x1.5, since
  cause/effect lives in typed edges more than in similar wording.
The strong/weak rule on the main space's best score decides what enhancer spaces may do: above
the space's `high` threshold they only rerank the candidates already found; below `low` they
also add candidates; in between they add candidates at half weight. The same score sets the main
space's own say (`match_strength`): its RRF weight runs from 0 at `low` (the space found nothing
like the query, its ranking is noise) to full at `high`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..spaces.schema import match_strength

__all__ = ["Route", "enhancer_mode", "match_strength", "route"]

_QUOTED = re.compile(r"\"([^\"]{2,})\"|'([^']{2,})'")
_CODE = re.compile(r"\b\w+_\w+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b|\b\w+\.\w+\b|\b\w+\(\)|/\w+/")
_ENTITY = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")
_CAUSAL = re.compile(r"\b(why|cause[sd]?|because|led to|lead to|result(?:ed)? (?:of|in)|due to|reason)\b", re.IGNORECASE)


@dataclass
class Route:
    """Weights per method after the rules, and which rules fired (for explain)."""

    weights: dict[str, float]
    rules: list[str] = field(default_factory=list)


def route(query: str, base: dict[str, float]) -> Route:
    """Apply the intent rules to `base` weights (a copy is returned)."""
    w = dict(base)
    rules = []
    if _QUOTED.search(query) or _CODE.search(query):
        rules.append("lexical: quoted or code-like tokens")
        for m in ("bm25", "lexical"):
            if m in w:
                w[m] *= 1.5
    if _ENTITY.search(query.strip()):
        rules.append("entities: capitalised names")
        if "bm25" in w:
            w["bm25"] *= 1.25
    if _CAUSAL.search(query):
        rules.append("causal: why / cause")
        if "graph" in w:
            w["graph"] *= 1.5
    return Route(w, rules)


def enhancer_mode(best_main: float | None, strong: float, weak: float) -> str:
    """"rerank" (strong main match), "add" (weak or none) or "add-half" (in between)."""
    if best_main is None or best_main < weak:
        return "add"
    if best_main > strong:
        return "rerank"
    return "add-half"

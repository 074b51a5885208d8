"""C6's sections and their budgets, and how a memory reads in a context.

Priorities, with their shares of a 1,150-token base that scale with the budget: divergence alert
200, topic matches 400, related memories 300, recent context 200, temporal badges 50. What a
section leaves unused flows to the next. 3% of the budget is kept back for headings and line
breaks (see context/curator.py for what a 10% margin cost); the rendered text is then
counted whole and trimmed from the last item if it is still over.
"""

from __future__ import annotations

from datetime import datetime

from ..model.memory import Memory

SECTIONS = ("divergence", "topics", "related", "recent", "badges")
BASE = {"divergence": 200, "topics": 400, "related": 300, "recent": 200, "badges": 50}
MARGIN = 0.03
HEADINGS = {"divergence": "## Note", "topics": "## On {label}", "related": "## Related memories",
            "recent": "## Earlier in this session", "badges": "## Time"}


def budgets(max_tokens: int) -> dict[str, int]:
    """Each section's own budget for a context of `max_tokens` (before what flows down)."""
    usable = int(max_tokens * (1 - MARGIN))
    total = sum(BASE.values())
    return {s: int(usable * BASE[s] / total) for s in SECTIONS}


def _day(t: datetime | None) -> str:
    return t.date().isoformat() if t is not None else "?"


def badge(m: Memory, as_of: datetime | None) -> str:
    """The validity of a fact: "(valid 2024-03-20 - present)", "(valid ... - 2024-06-01, superseded)"."""
    start = m.valid_from or m.learned_at
    if m.valid_until is None:
        return f"(valid {_day(start)} - present)"
    ended = "superseded" if m.superseded_by else "ended"
    return f"(valid {_day(start)} - {_day(m.valid_until)}, {ended})"


def line(m: Memory, text: str, as_of: datetime | None) -> str:
    """A memory as one context line: its text (or the passage that matched) and its badge."""
    return f"- {' '.join(text.split())} {badge(m, as_of)}"


__all__ = ["BASE", "HEADINGS", "SECTIONS", "badge", "budgets", "line"]

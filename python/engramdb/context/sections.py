"""C6's sections and their budgets, and how a memory reads in a context.

Priorities, with their shares of a 1,150-token base that scale with the budget: divergence alert
200, topic matches 400, related memories 300, recent context 200, temporal badges 50. A section
takes its share only as far as it can fill it: the divergence note what it is, the recent context
the session's latest turns it has, the badges their one line; the topic matches and related
memories (curated together, the topic matches within their share plus what the note left) take
the rest, and what they leave flows down to the recent context and the badges. Headings are
counted exactly and each line pays its line break; 1% of the budget is kept back (a tokenizer need
not count a text as the sum of its lines), then the rendered text is counted whole and trimmed
from the last item if it is still over. Reserving every section's share whatever it could fill
left a quarter of a 1,000-token budget unused without a session (bench/RESULTS.md).

Every fact carries its validity badge. Within a section, facts that share a badge (a session's
turns, a day's notes) follow one line holding it, instead of each repeating it: a badge is about
12 cl100k tokens, a fifth of a LoCoMo turn's line (bench/RESULTS.md). A badge only one line
carries stays at the end of that line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime

from ..model.memory import Memory
from .model import ContextItem

SECTIONS = ("divergence", "topics", "related", "recent", "badges")
BASE = {"divergence": 200, "topics": 400, "related": 300, "recent": 200, "badges": 50}
MARGIN = 0.01
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


def body(text: str) -> str:
    """A memory's text (or the passage that matched) as a context line, without its badge."""
    return f"- {' '.join(text.split())}"


def line(m: Memory, text: str, as_of: datetime | None) -> str:
    """A memory as one context line: its text (or the passage that matched) and its badge."""
    return f"{body(text)} {badge(m, as_of)}"


def render(items: list[ContextItem], labels: Mapping[str, str]) -> tuple[str, list[ContextItem]]:
    """The block: sections in order, each under its heading (`labels` fills "{label}"); in a
    section, the lines that share a badge follow one line holding it, placed where the first of
    them would be. Returns the text and the items in the order they appear, each item's `text` the
    line as rendered."""
    parts: list[str] = []
    out: list[ContextItem] = []
    for s in SECTIONS:
        mine = [i for i in items if i.section == s]
        if not mine:
            continue
        parts.append(HEADINGS[s].format(label=labels.get(s, "")))
        shared = {b for b in (i.badge for i in mine) if b and sum(1 for j in mine if j.badge == b) > 1}
        done: set[str] = set()
        for i in mine:
            if i.badge in done:
                continue
            if i.badge in shared:
                done.add(i.badge)
                parts.append(i.badge)
                for j in mine:
                    if j.badge == i.badge:
                        bare = j.text[: -len(j.badge) - 1] if j.text.endswith(" " + j.badge) else j.text
                        parts.append(bare)
                        out.append(dataclasses.replace(j, text=bare))
            else:
                parts.append(i.text)
                out.append(i)
    return "\n".join(parts), out


def fit(items: list[ContextItem], labels: Mapping[str, str], count: Callable[[str], int],
        max_tokens: int) -> tuple[str, list[ContextItem]]:
    """`render` under a hard bound: the last items (the last chosen, of the last section) dropped
    while the whole is over `max_tokens` by `count`."""
    while True:
        text, shown = render(items, labels)
        if count(text) <= max_tokens or not items:
            return text, shown
        items = items[:-1]


__all__ = ["BASE", "HEADINGS", "SECTIONS", "badge", "body", "budgets", "fit", "line", "render"]

"""C6's sections and their budgets, and the block's layout.

Priorities, with their shares of a 1,150-token base that scale with the budget: divergence alert
200, topic matches 400, related memories 300, recent context 200, the time note 50. A section
takes its share only as far as it can fill it: the divergence note what it is, the recent context
the session's latest turns it has, the time note its one line (and only when it says something:
an `as_of` was asked, or a fact shown no longer holds); the topic matches and related memories
(curated together, the topic matches within their share plus what the note left) take the rest,
and what they leave flows down to the recent context and the note. Headings are counted exactly
and each line pays its line break; 1% of the budget is kept back (a tokenizer need not count a
text as the sum of its lines), then the rendered text is counted whole and the last chosen items
dropped while it is still over. Reserving every section's share whatever it could fill left a
quarter of a 1,000-token budget unused without a session (bench/RESULTS.md).

Within a section, memories without a group come first (in the order chosen), then the groups
(a session's turns, a day's facts: context/lines.py) from the earliest, each under its one line,
its memories in the order they were said (seq, then time). A reader follows a conversation in
order; the date is said once a group instead of once a line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from .lines import Group
from .result import ContextItem

SECTIONS = ("divergence", "topics", "related", "recent", "badges")
BASE = {"divergence": 200, "topics": 400, "related": 300, "recent": 200, "badges": 50}
MARGIN = 0.01
HEADINGS = {"divergence": "## Note", "topics": "## On {label}", "related": "## Related memories",
            "recent": "## Earlier in this session", "badges": "## Time"}
_EPOCH = datetime.min
_NO_GROUP = Group("")


def budgets(max_tokens: int) -> dict[str, int]:
    """Each section's own budget for a context of `max_tokens` (before what flows down)."""
    usable = int(max_tokens * (1 - MARGIN))
    total = sum(BASE.values())
    return {s: int(usable * BASE[s] / total) for s in SECTIONS}


@dataclass(frozen=True)
class Placed:
    """An item with where it goes in its section: its group and its place in it (`order`: its seq
    in its session (-1 without one), when it was said, its id: a turn added to a session later,
    a backfill, still reads where it was said)."""

    item: ContextItem
    group: Group = _NO_GROUP
    order: tuple[int, datetime, str] = (-1, _EPOCH, "")


def render(placed: list[Placed], labels: Mapping[str, str]) -> tuple[str, list[ContextItem]]:
    """The block: sections in order, each under its heading (`labels` fills "{label}"), laid out
    as the module docstring says. Returns the text and the items in the order they appear, each
    with `badge` set to the line it sits under (and its own mark)."""
    parts: list[str] = []
    out: list[ContextItem] = []
    for s in SECTIONS:
        mine = [p for p in placed if p.item.section == s]
        if not mine:
            continue
        parts.append(HEADINGS[s].format(label=labels.get(s, "")))
        loose = [p for p in mine if not p.group.key]
        groups: dict[str, tuple[Group, list[Placed]]] = {}
        for p in mine:
            if p.group.key:
                g, members = groups.get(p.group.key, (p.group, []))
                groups[p.group.key] = (g.joined(p.group), [*members, p])
        for p in loose:
            parts.append(p.item.text)
            out.append(p.item)
        for g, members in sorted(groups.values(), key=lambda gm: (gm[0].first or _EPOCH, gm[0].key)):
            head = g.header()
            parts.append(head)
            for p in sorted(members, key=lambda p: p.order):
                parts.append(p.item.text)
                badge = " ".join(b for b in (head.rstrip(":"), p.item.badge) if b)
                out.append(dataclasses.replace(p.item, badge=badge))
    return "\n".join(parts), out


def fit(placed: list[Placed], labels: Mapping[str, str], count: Callable[[str], int],
        max_tokens: int) -> tuple[str, list[ContextItem]]:
    """`render` under a hard bound: the last items of `placed` (the last chosen) dropped while the
    whole is over `max_tokens` by `count`."""
    while True:
        text, shown = render(placed, labels)
        if count(text) <= max_tokens or not placed:
            return text, shown
        placed = placed[:-1]


__all__ = ["BASE", "HEADINGS", "SECTIONS", "Placed", "budgets", "fit", "render"]

"""What a memory says and when it was told (issue 25): read from its versions, so the engine's own
rewrites (a compression's summary, a supersede's link, a forget's record, a merged copy's count)
never pass for something the user said.

- A memory's own text is its newest content, except that a content a compression wrote (the
  version that set a new `compressed` mark and changed the text) leaves the text as it was.
- It was told when the version that set its own text was learned: its first version, or the
  latest update that changed the text. A rewrite that keeps the text (every engine rewrite does)
  leaves that time as it was.

The automatic verbs compare memories by these: the dream's copies by their own texts, a
contradiction's older and newer statement by when each was told.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..model.memory import Memory


def _walk(versions: Sequence[Memory]) -> tuple[str, datetime | None]:
    text, told = "", None
    before: Memory | None = None
    for v in versions:
        if before is None or v.content != before.content:
            mark = v.metadata.get("compressed")
            if before is None or not mark or mark == before.metadata.get("compressed"):
                text, told = v.content, v.learned_at
        before = v
    return text, told


def own_text(versions: Sequence[Memory]) -> str:
    """A memory's own text from its versions (oldest first; see the module docstring)."""
    return _walk(versions)[0]


def told_at(versions: Sequence[Memory]) -> datetime | None:
    """When a memory's own text was told (the version that set it was learned), from its versions
    (oldest first); None for no versions."""
    return _walk(versions)[1]


__all__ = ["own_text", "told_at"]

"""Stop 50b adversary: a question naming a date, asked of a store that holds no memory yet, raises.

Stop 50 made every fused search that names a period ("yesterday", "last week", "in 2023") look for
memories said then (`_said_then`), reading every segment's `valid_from` with `np.concatenate`; a
store with no segment at all (a new store, an agent's first prompt) has nothing to concatenate, so
`search()` and `context()` raise `ValueError: need at least one array to concatenate` instead of
answering with nothing, as they did before stop 50 (and as a question without a date still does).
Public API only.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import engramdb
import pytest

NOW = datetime(2024, 6, 14, 12, tzinfo=timezone.utc)
QUESTIONS = ["What did I do yesterday?", "What did we decide last week?", "What happened in June 2023?"]


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("strategy", ["hybrid", "bm25", "rrf"])
def test_a_dated_question_on_an_empty_store_finds_nothing(question: str, strategy: str) -> None:
    db = engramdb.open()
    assert list(db.search("what did I do", namespace="u", strategy=strategy, now=NOW)) == []  # no date: fine
    assert list(db.search(question, namespace="u", strategy=strategy, now=NOW)) == []
    db.close()


def test_context_of_a_dated_question_on_a_new_store_is_empty(tmp_path: Path) -> None:
    with engramdb.open(tmp_path / "memory") as db:
        ctx = db.context("What did I do yesterday?", namespace="u", now=NOW)
        assert ctx.text == "" or "yesterday" not in ctx.text

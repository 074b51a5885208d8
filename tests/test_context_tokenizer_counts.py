"""A caller's tokenizer (C6: `context(tokenizer=callable)`) is trusted for a count, never for its
type: a context holds its budget only with counts that are numbers >= 0. A tokenizer returning a
negative count made every line look free (the curator took 112 lines for a 2,000-token budget
and reported -5 tokens), NaN gave an empty context without a word, and a string or None failed
deep inside the layout with a raw TypeError. Each is now an error naming the tokenizer and the
value, and counts that are numbers (int, float, numpy) work as before."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb import Tuning


@pytest.fixture
def db(tmp_path: Path) -> Any:
    store = engramdb.open(tmp_path / "s", tuning=Tuning(background=False))
    store.add_many([{"content": f"note {i}: the apples in the orchard by the river, row {i}", "namespace": "n",
                     "session_id": "s1" if i % 2 else None} for i in range(60)])
    yield store
    store.close()


@pytest.mark.parametrize(("count", "error", "shown"), [
    (lambda text: -5, ValueError, "-5"),
    (lambda text: float("nan"), ValueError, "nan"),
    (lambda text: math.inf, ValueError, "inf"),
    (lambda text: "5", TypeError, "'5'"),
    (lambda text: None, TypeError, "None"),
    (lambda text: True, TypeError, "True"),
])
def test_a_tokenizer_count_that_is_no_count_is_refused(db: Any, count: Callable[[str], Any], error: type,
                                                        shown: str) -> None:
    before = [m.id for m in db.list("n", limit=1000)]
    with pytest.raises(error, match="tokenizer") as got:
        db.context("apples by the river", namespace="n", session_id="s1", max_tokens=2000, tokenizer=count)
    assert shown in str(got.value)
    assert [m.id for m in db.list("n", limit=1000)] == before


@pytest.mark.parametrize("count", [lambda text: len(text) / 4, lambda text: np.int64(len(text) // 4),
                                   lambda text: len(text.split())])
def test_counts_that_are_numbers_keep_the_budget(db: Any, count: Callable[[str], Any]) -> None:
    ctx = db.context("apples by the river", namespace="n", session_id="s1", max_tokens=120, tokenizer=count)
    assert ctx.items
    assert 0 < ctx.stats["tokens"] <= 120
    assert count(ctx.text) <= 120

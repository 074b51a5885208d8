"""The agent loop's round (`add`, then `context`) does its per-memory work once (issue 26, stop 39):
the search weighs the neighbouring turns of its seeds by their idf mass read in one lookup of the
index, not one a turn, and sorts only its best candidates; a context with its tokenizer loaded
does not look the package up again.
Each test failed on the code before its change; the outputs are the same (bench/RESULTS.md "The
loop, stop 39": 60 contexts and searches on the 100,000-memory store compared)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pytest
from engramdb.context import tokens
from engramdb.index.bm25 import Bm25Index

TOPIC = "violin concerto rehearsal"


def _sessions(db: engramdb.Store) -> None:
    """Sessions whose middle turn matches TOPIC, between turns that do not: every seed of a search
    for TOPIC has a turn before and after it."""
    for s in range(8):
        db.add_messages([
            {"role": "user", "content": f"Morning plans number {s}: coffee, then the bus downtown."},
            {"role": "assistant", "content": f"The violin concerto rehearsal {s} starts at noon in hall {s}."},
            {"role": "user", "content": f"Great, I will bring the sheet music and a snack for break {s}."},
        ], namespace="n", session_id=f"s{s}")


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bm25Index.idf, counting its calls (the terms asked at each)."""
    calls: list[int] = []
    real = Bm25Index.idf

    def idf(self: Bm25Index, terms: Any) -> Any:
        calls.append(len(terms))
        return real(self, terms)

    monkeypatch.setattr(Bm25Index, "idf", idf)
    return calls


def test_a_search_reads_its_neighbouring_turns_idf_in_one_lookup(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: one idf lookup per seed and per neighbouring turn (5 seeds, 10 turns: 15 lookups, each
    a pass over every chunk of the index), besides the scale's and the scoring's."""
    # no cache of repeated searches: the second search runs as the first did
    with engramdb.open(tmp_path / "s", tuning=engramdb.Tuning(background=False, search_cache=0)) as db:
        _sessions(db)
        want = [(h.id, h.score, h.via) for h in db.search(TOPIC, namespace="n", k=10, log=False)]
        calls = _counting(monkeypatch)
        hits = db.search(TOPIC, namespace="n", k=10, log=False)
        monkeypatch.undo()
        assert [(h.id, h.score, h.via) for h in hits] == want
        # the neighbours came in by their share of a seed's score (each names the seed)
        assert sum(1 for h in hits if h.via is not None) >= 2
        # the lexical scale's, the recall's and the expansion's scoring, and the turns' mass: one each
        assert len(calls) <= 4, calls


@pytest.mark.skipif(importlib.util.find_spec("bpe_openai") is None, reason="needs bpe-openai")
def test_a_context_with_its_tokenizer_loaded_does_not_look_the_package_up_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: every context searched the import path for bpe-openai (`find_spec`, ~0.15 ms a call at
    the loop bench's sys.path) to check a tokenizer already loaded."""
    with engramdb.open(tmp_path / "s", tuning=engramdb.Tuning(background=False)) as db:
        _sessions(db)
        first = db.context(TOPIC, namespace="n", max_tokens=500, log=False)
        assert first.stats["tokenizer"] == "cl100k_base"
        looked: list[str] = []
        real = importlib.util.find_spec

        def find_spec(name: str, *args: Any) -> Any:
            looked.append(name)
            return real(name, *args)

        monkeypatch.setattr(tokens.importlib.util, "find_spec", find_spec)
        again = db.context(TOPIC, namespace="n", max_tokens=500, log=False)
        with pytest.raises(ValueError, match="tokenizer must be"):  # a bad name is still refused first
            db.context(TOPIC, namespace="n", max_tokens=500, tokenizer="gpt-9", log=False)
        monkeypatch.undo()
        assert "bpe_openai" not in looked
        assert again.text == first.text and again.stats["tokenizer"] == "cl100k_base"


def test_a_search_sorts_only_its_best_candidates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: every candidate (BM25's 1,000 and the index's 100 at 100,000 memories) sorted by four
    keys twice a search (~0.27 ms each) for the 5 seeds and the 100 best. The order is the same:
    the n best are among those scoring at least the n-th best score, and only they are sorted."""
    words = ["garden", "tomato", "harvest", "compost", "seedling", "trellis", "mulch", "basil"]
    with engramdb.open(tmp_path / "s", tuning=engramdb.Tuning(background=False, search_cache=0)) as db:
        db.add_many([{"content": f"Note {i}: the {words[i % 8]} and the {words[(i * 3 + 1) % 8]} "
                                 f"of plot {i} need {'more' if i % 2 else 'less'} water in week {i % 13}.",
                      "namespace": "n"} for i in range(800)])
        want = [(h.id, h.score) for h in db.search("tomato harvest compost", namespace="n", k=20, log=False)]
        sizes: list[int] = []
        real = np.lexsort

        def lexsort(keys: Any, *args: Any, **kwargs: Any) -> Any:
            sizes.append(len(keys[0]))
            return real(keys, *args, **kwargs)

        monkeypatch.setattr(np, "lexsort", lexsort)
        hits = db.search("tomato harvest compost", namespace="n", k=20, log=False)
        monkeypatch.undo()
        assert [(h.id, h.score) for h in hits] == want
        assert hits.stats.stages["candidates"] >= 300
        assert sizes and max(sizes) < 200, sizes  # the 100 best (and ties), never every candidate

"""Stop 50 newcomer pass: a "static" store reopened with another distilled table mixes two spaces.

The distilled table depends on the machine (bench/distill_static.py counts token frequencies over the
docstrings, /usr/share/doc and man pages found there: this machine wrote sha256 c3d861000df499a2 where
bench/RESULTS.md's run wrote dc4c50ee9bbcc56d). engramdb.spaces.static_embedding says "The version is a
hash of embeddings.npz, so vectors of two different distillations are never mixed in one space", but a
store made with one table opens with another (ENGRAMDB_STATIC_EMBEDDING, or a re-distilled
~/.cache/engramdb/static-minilm-l6-v2-256) without an error or a warning, embeds new memories and
queries with it, and compares them with the vectors the first table made.
Public API only: engramdb.open, the documented ENGRAMDB_STATIC_EMBEDDING variable and the distiller's
folder format (vocab.txt, embeddings.npz with rows / scales / weights, config.json).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import engramdb
import pytest
from static_tables import make_folder


def test_a_static_store_does_not_silently_take_another_table(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "store")
    monkeypatch.setenv("ENGRAMDB_STATIC_EMBEDDING", str(make_folder(tmp_path / "table-a", seed=1, dim=256)))
    with engramdb.open(path, profile="static") as db:
        db.add("I adopted a puppy last week", namespace="u")
    monkeypatch.setenv("ENGRAMDB_STATIC_EMBEDDING", str(make_folder(tmp_path / "table-b", seed=2, dim=256)))
    refused = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            db = engramdb.open(path)
        except ValueError as e:           # a refusal naming the table (SpaceError) is one acceptable answer
            refused = e
        else:
            db.close()
    said = [str(w.message) for w in caught if "static" in str(w.message) or "table" in str(w.message)]
    assert refused is not None or said, "a store made with table A opened with table B without a word"

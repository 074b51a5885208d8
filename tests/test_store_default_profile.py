"""The default profile end to end: engramdb.open() with the built-in embedders in all four spaces."""

from __future__ import annotations

from pathlib import Path

import engramdb
import numpy as np

TURNS = [
    "Caroline went to the LGBTQ support group yesterday.",
    "Melanie painted a sunrise over the lake last week.",
    "Caroline is researching adoption agencies.",
    "Melanie's kids love the pottery class.",
    "They talked about camping in the mountains in June.",
]


def test_every_space_finds_the_matching_turn(tmp_path: Path) -> None:
    db = engramdb.open(tmp_path / "mem")
    ids = db.add_many([{"content": t, "namespace": "conv1", "session_id": "s1", "seq": i} for i, t in enumerate(TURNS)])
    db.add("Melanie painted a sunrise over the lake last week.", namespace="conv2")  # another tenant
    assert db.schema.main == "dense" and [s.name for s in db.schema] == ["dense", "lexical", "hdc", "tokens"]
    for space in ("dense", "lexical", "hdc", "tokens"):
        hits = db.search("who painted the sunrise over the lake?", namespace="conv1", k=3, space=space)
        assert hits[0].id == ids[1], space
        assert all(h.memory.namespace == "conv1" for h in hits)
    db.close()
    again = engramdb.open(tmp_path / "mem")
    assert again.search("adoption agencies", namespace="conv1", k=1, space="lexical")[0].id == ids[2]
    again.close()


def test_hdc_codes_projected_in_the_store_equal_the_embedders_own() -> None:
    db = engramdb.open()
    m = db.add(TURNS[3], namespace="n")
    seg = db._segments[-1]
    stored = np.asarray(seg.vectors(db.schema, "hdc"))[0]
    np.testing.assert_array_equal(stored, db.embedders["hdc"].embed([m.content])[0])


def test_long_batches_embed_in_chunks_with_the_same_result(monkeypatch: object) -> None:
    from engramdb.store import store as store_mod

    monkeypatch.setattr(store_mod, "PROGRESS_MIN", 10)  # type: ignore[attr-defined]
    monkeypatch.setattr(store_mod, "EMBED_CHUNK", 7)  # type: ignore[attr-defined]
    texts = [f"turn {i} about topic {i % 5}" for i in range(30)]
    db = engramdb.open(dedup="off")
    db.add_many([{"content": t, "namespace": "n"} for t in texts])
    seg = db._segments[-1]
    np.testing.assert_array_equal(np.asarray(seg.vectors(db.schema, "dense")), db.embedders["dense"].embed(texts))
    tok = seg.vectors(db.schema, "tokens")
    ref = db.embedders["tokens"].embed(texts)
    np.testing.assert_array_equal(tok.offsets, ref.offsets)  # type: ignore[union-attr]
    np.testing.assert_array_equal(tok.tokens, ref.tokens)  # type: ignore[union-attr]

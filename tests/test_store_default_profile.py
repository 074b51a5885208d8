"""The default profile end to end: engramdb.open() with the built-in embedders in all four spaces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import engramdb
import numpy as np
import pyarrow as pa
from engramdb import Tuning
from engramdb.ingest.embedding import vectors_for
from engramdb.storage.vectors import column_name, from_arrow
from store_helpers import int8_tokens

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


def stored_vectors(db: engramdb.Store, tmp: Path, space: str) -> Any:
    """A space's vectors as the store holds them, read back from an Arrow export (the segment
    layout: one column per space)."""
    db.admin.export(tmp / "all.arrow")
    table = pa.ipc.open_file(str(tmp / "all.arrow")).read_all()
    return from_arrow(db.schema[space], table.column(column_name(db.schema[space])))


def test_hdc_codes_projected_in_the_store_equal_the_embedders_own(tmp_path: Path) -> None:
    db = engramdb.open()
    m = db.add(TURNS[3], namespace="n")
    stored = np.asarray(stored_vectors(db, tmp_path, "hdc"))[0]
    np.testing.assert_array_equal(stored, db.embedders["hdc"].embed([m.content])[0])


def test_long_batches_embed_in_chunks_with_the_same_result(tmp_path: Path) -> None:
    texts = [f"turn {i} about topic {i % 5}" for i in range(30)]
    chunked = Tuning(progress_min=10, embed_chunk=7)  # 30 texts: embedded as 7 + 7 + 7 + 7 + 2
    db = engramdb.open(dedup="off", tuning=chunked)
    db.add_many([{"content": t, "namespace": "n"} for t in texts])
    dense = stored_vectors(db, tmp_path, "dense")
    np.testing.assert_array_equal(np.asarray(dense), db.embedders["dense"].embed(texts))
    tok = stored_vectors(db, tmp_path, "tokens")
    ref = db.embedders["tokens"].embed(texts)
    np.testing.assert_array_equal(tok.offsets, ref.offsets)
    np.testing.assert_array_equal(tok.tokens, int8_tokens(ref.tokens))  # stored as int8 codes with a scale
    # the ingest seam: chunked and whole batches give the same vectors in every space
    whole = vectors_for(db.schema, db.embedders, texts, [{}] * len(texts), Tuning())
    parts = vectors_for(db.schema, db.embedders, texts, [{}] * len(texts), chunked)
    np.testing.assert_array_equal(np.asarray(whole["hdc"]), np.asarray(parts["hdc"]))
    np.testing.assert_array_equal(np.asarray(whole["dense"]), np.asarray(parts["dense"]))

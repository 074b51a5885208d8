"""The static embedding distilled from MiniLM (issue 28): pooling against a float64 reference, shapes,
empty and unicode texts, clear errors for a missing or inconsistent folder, and the "static" profile
through engramdb.open. Uses a small synthetic folder in the distiller's format, so neither the
MiniLM weights nor a distilled table are needed."""

from __future__ import annotations

from pathlib import Path

import engramdb
import numpy as np
import pytest
from engramdb.spaces.profiles import earlier_schemas
from engramdb.spaces.protocol import Embedder
from engramdb.spaces.schema import SpaceError
from engramdb.spaces.static_embedding import ENV_VAR, StaticEmbedder, StaticEmbeddingMissing
from engramdb.spaces.wordpiece import WordPieceTokenizer
from static_tables import DIM, VOCAB, make_folder


def reference(d: Path, texts: list[str]) -> np.ndarray:
    """float64: the weighted mean of each text's dequantised token rows, L2-normalised."""
    with np.load(d / "embeddings.npz") as z:
        rows = z["rows"].astype(np.float64) * z["scales"].astype(np.float64)[:, None]
        w = z["weights"].astype(np.float64)
    tok = WordPieceTokenizer(d / "vocab.txt", max_length=1 << 30)
    out = np.zeros((len(texts), rows.shape[1]))
    for i, t in enumerate(texts):
        ids = tok.encode(t)[1:-1]
        if ids:
            v = (w[ids, None] * rows[ids]).sum(axis=0) / w[ids].sum()
            out[i] = v / np.linalg.norm(v)
    return out


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return make_folder(tmp_path / "static")


def test_pooling_matches_float64_reference(folder: Path) -> None:
    e = StaticEmbedder(folder)
    texts = ["I adopted a puppy last week!", "the dog", "The stock market fell.", "dog dog dog cat",
             "Café naïve 東京", "unknown words zzz qqq", "the " * 5000 + "puppy"]  # the last: > one block
    got = e.embed(texts)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (len(texts), DIM)
    np.testing.assert_allclose(got, reference(folder, texts), atol=2e-6)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)


def test_order_and_batch_independence(folder: Path) -> None:
    e = StaticEmbedder(folder)
    texts = ["the dog", "a cat", "puppy week"]
    alone = np.vstack([e.embed([t]) for t in texts])
    np.testing.assert_array_equal(e.embed(texts), alone)
    np.testing.assert_array_equal(e.embed(texts[::-1]), alone[::-1])


def test_empty_and_blank_texts_are_zero_rows(folder: Path) -> None:
    e = StaticEmbedder(folder)
    got = e.embed(["", "   \n\t", "dog"])
    assert got.shape == (3, DIM)
    assert not got[:2].any() and np.linalg.norm(got[2]) == pytest.approx(1.0, abs=1e-6)
    assert e.embed([]).shape == (0, DIM)


def test_unicode_and_unknown_pieces(folder: Path) -> None:
    e = StaticEmbedder(folder)
    # Accents fold (café -> caf ##e), CJK characters are words of their own, emoji and unknown
    # scripts become [UNK]: every text still gets a unit row, equal to the reference.
    texts = ["café", "CAFE", "東京", "🙂", "Привет", "\x00\ufeff"]
    got = e.embed(texts)
    np.testing.assert_allclose(got, reference(folder, texts), atol=2e-6)
    np.testing.assert_array_equal(got[0], got[1])
    assert np.linalg.norm(got[3]) == pytest.approx(1.0, abs=1e-6)  # [UNK]'s row
    assert not got[5].any()  # only characters the normaliser drops


def test_protocol_identity(folder: Path) -> None:
    e = StaticEmbedder(folder)
    assert isinstance(e, Embedder)
    assert (e.kind, e.dim, e.name) == ("dense", DIM, "static-minilm-l6-v2")
    assert e.version.startswith("sha256-")
    other = StaticEmbedder(make_folder(folder.parent / "other", seed=8))
    assert other.version != e.version  # a different table is never mixed into the same space
    with pytest.raises(TypeError, match="not one str"):
        e.embed("dog")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        e.embed(["dog", 3])  # type: ignore[list-item]


def test_missing_folder_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(StaticEmbeddingMissing, match="nowhere.*no such folder.*distill_static.py") as ei:
        StaticEmbedder(missing)
    assert str(missing) in str(ei.value)
    assert isinstance(ei.value, FileNotFoundError)


@pytest.mark.parametrize("name", ["embeddings.npz", "vocab.txt"])
def test_missing_file_names_the_path(folder: Path, name: str) -> None:
    (folder / name).unlink()
    with pytest.raises(StaticEmbeddingMissing, match=f"{name} is missing") as ei:
        StaticEmbedder(folder)
    assert str(folder) in str(ei.value)


def test_corrupt_or_inconsistent_files(folder: Path) -> None:
    (folder / "embeddings.npz").write_bytes(b"not a zip")
    with pytest.raises(StaticEmbeddingMissing, match="unreadable"):
        StaticEmbedder(folder)
    make_folder(folder)
    (folder / "vocab.txt").write_text("\n".join(VOCAB[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{len(VOCAB) - 1} tokens but embeddings.npz has {len(VOCAB)} rows"):
        StaticEmbedder(folder)
    np.savez(folder / "embeddings.npz", rows=np.zeros((3, 4), np.float32), scales=np.ones(3), weights=np.ones(3))
    with pytest.raises(ValueError, match="int8 rows"):
        StaticEmbedder(folder)


def _records(ns: str) -> list[dict[str, str]]:
    texts = ["I adopted a puppy last week", "The stock market fell", "the cat", "a dog"]
    return [{"content": t, "namespace": ns} for t in texts]


def test_static_profile_through_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(make_folder(tmp_path / "static256", dim=256)))
    path = str(tmp_path / "store")
    with engramdb.open(path, profile="static") as db:
        db.add_many(_records("u"))
        hits = db.search("puppy week", namespace="u", k=2)
        assert hits[0].memory.content == "I adopted a puppy last week"
    with engramdb.open(path) as db:  # the stored schema names the embedder: no profile needed
        assert db.search("puppy week", namespace="u", k=1)[0].memory.content == "I adopted a puppy last week"
        db.add_many(_records("v"))
        assert len(db.search("stock market", namespace="v", k=4)) >= 1


def test_static_profile_without_its_folder_names_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "not-distilled"
    monkeypatch.setenv(ENV_VAR, str(missing))
    with pytest.raises(StaticEmbeddingMissing) as ei:
        engramdb.open(str(tmp_path / "store"), profile="static")
    assert str(missing) in str(ei.value)


def test_static_profile_refuses_a_table_of_another_width(folder: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(folder))  # 16 dimensions; the profile's space has 256
    with pytest.raises(ValueError, match=f"{folder}.*16 dimensions.*256"):
        engramdb.open(str(tmp_path / "store"), profile="static")


def test_a_static_store_names_its_table_and_refuses_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A distillation depends on the machine's corpus: the dense space names the table's version,
    and a store made with one table never embeds with another (through a profile or without)."""
    first = make_folder(tmp_path / "first", seed=1, dim=256)
    monkeypatch.setenv(ENV_VAR, str(first))
    version = StaticEmbedder(first).version
    path = str(tmp_path / "store")
    with engramdb.open(path, profile="static") as db:
        db.add_many(_records("u"))
        assert db.schema["dense"].embedder == f"static-minilm-l6-v2-v{version}"
    with engramdb.open(path, profile="static") as db:  # the same table: opens, with or without the profile
        assert db.search("puppy week", namespace="u", k=1)[0].memory.content == "I adopted a puppy last week"
    monkeypatch.setenv(ENV_VAR, str(make_folder(tmp_path / "second", seed=2, dim=256)))
    with pytest.raises(SpaceError, match=f"{version}.*second.*the table the store was made with"):
        engramdb.open(path)
    with pytest.raises(SpaceError, match=f"another schema: dense.embedder '[^']*{version}', given"):
        engramdb.open(path, profile="static")
    monkeypatch.setenv(ENV_VAR, str(first))
    with engramdb.open(path) as db:  # refused without harm: nothing was written
        assert len(db.search("puppy week", namespace="u", k=4)) >= 1


def test_a_static_store_made_before_the_table_was_named_still_opens(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(make_folder(tmp_path / "t", dim=256)))
    old = earlier_schemas("static")[0]  # the static profile's schema before it named the version
    assert old["dense"].embedder == "static-minilm-l6-v2"
    path = str(tmp_path / "store")
    with engramdb.open(path, schema=old) as db:
        db.add_many(_records("u"))
    for kw in ({}, {"profile": "static"}):
        with engramdb.open(path, **kw) as db:
            assert db.schema["dense"].embedder == "static-minilm-l6-v2"
            assert db.search("puppy week", namespace="u", k=1)[0].memory.content == "I adopted a puppy last week"

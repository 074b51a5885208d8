"""Distilled static tables for tests: the folder format bench/distill_static.py writes (vocab.txt,
embeddings.npz with int8 rows, float32 scales and weights, config.json), with seeded random rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

WORDS = ["the", "dog", "cat", "i", "adopted", "a", "puppy", "last", "week", "stock", "market", "fell",
         "caf", "##e", "na", "##ive", "東", "京", "!", ".", "un", "##known"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
DIM = 16


def make_folder(d: Path, seed: int = 7, dim: int = DIM) -> Path:
    """A table folder at `d` (made if missing, its files written over if not): `seed` picks the rows."""
    rng = np.random.default_rng(seed)
    d.mkdir(parents=True, exist_ok=True)
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    rows = rng.integers(-127, 128, size=(len(VOCAB), dim)).astype(np.int8)
    scales = rng.uniform(0.001, 0.01, size=len(VOCAB)).astype(np.float32)
    weights = rng.uniform(0.05, 1.0, size=len(VOCAB)).astype(np.float32)
    np.savez(d / "embeddings.npz", rows=rows, scales=scales, weights=weights)
    (d / "config.json").write_text(json.dumps({"dims": dim}), encoding="utf-8")
    return d

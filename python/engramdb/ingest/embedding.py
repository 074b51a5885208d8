"""Every space's vectors for a batch of new memories: the caller's where given, else embedded.

Long batches are embedded in chunks with a progress bar on an interactive terminal; a space whose
embedder projects another space's vectors (binary HDC codes of the dense space) reuses the fresh
vectors of that space instead of running its model again. The batch is tokenised once for all the
spaces that analyse text the same way (`analysis_scope`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..model.errors import InvalidMemory
from ..model.tuning import Tuning
from ..spaces.analyzer import analysis_scope
from ..spaces.batches import concat, take
from ..spaces.protocol import Embedder, Embedding
from ..spaces.schema import Schema, Space, SpaceError


def vectors_for(schema: Schema, embedders: Mapping[str, Embedder], contents: Sequence[str],
                given: Sequence[Mapping[str, Any]], tuning: Tuning) -> dict[str, Embedding]:
    """Every space's vectors for the batch: the caller's where given, else embedded."""
    with analysis_scope():  # the hashing, lexical and token spaces share one tokenisation
        return _vectors_for(schema, embedders, contents, given, tuning)


def _vectors_for(schema: Schema, embedders: Mapping[str, Embedder], contents: Sequence[str],
                 given: Sequence[Mapping[str, Any]], tuning: Tuning) -> dict[str, Embedding]:
    out: dict[str, Embedding] = {}
    for sp in schema:
        have = [g.get(sp.name) for g in given]
        if all(h is not None for h in have):
            width = sp.dim if sp.kind == "dense" else sp.dim // 8
            arrays = [np.asarray(h) for h in have]
            if sp.kind in ("dense", "binary") and all(a.shape in ((width,), (1, width)) for a in arrays):
                try:
                    out[sp.name] = sp.check(np.stack([a.reshape(width) for a in arrays]), len(have))
                except SpaceError:
                    for i, a in enumerate(arrays):  # refused: name the record, as the row by row check does
                        _given(sp, a, i)
                    raise
                continue  # one stacked array, checked once; odd shapes go row by row below
            out[sp.name] = concat([_given(sp, h, i) for i, h in enumerate(have)])
            continue
        emb = embedders.get(sp.name)
        if emb is None:
            raise SpaceError(f"no vector given for space {sp.name!r} and no embedder for it")
        if all(h is None for h in have):  # the common case: one batched embed, no reshuffling
            base = _derived_from(emb, embedders, out)
            if base:
                made = emb.project(out[base])  # type: ignore[attr-defined]
            else:
                made = embed_in_chunks(emb, list(contents), sp.name, tuning)
            out[sp.name] = sp.check(made, len(contents))
            continue
        todo = [i for i, h in enumerate(have) if h is None]
        made = sp.check(emb.embed([contents[i] for i in todo]), len(todo))
        parts_by_row: list[Embedding | None] = [None] * len(contents)
        for j, i in enumerate(todo):
            parts_by_row[i] = take(made, [j])
        for i, h in enumerate(have):
            if h is not None:
                parts_by_row[i] = _given(sp, h, i)
        out[sp.name] = concat([p for p in parts_by_row if p is not None])
    # every space's batch went through its Space.check above (the caller's vectors part by part):
    # checking them all again (schema.check_all) re-read every token and vector for nothing
    return out


def _given(sp: Space, value: Any, i: int) -> Embedding:
    """Record i's own vector for `sp`, checked; refused naming the record (Space.check alone says
    'row 0' of a batch of one)."""
    try:
        return sp.check(value, 1)
    except SpaceError as exc:
        raise SpaceError(f"records[{i}]: {exc}") from None


def check_vector_names(schema: Schema, given: Sequence[Mapping[str, Any]], where: str = "records") -> None:
    """Refuse vectors for spaces the schema lacks (a typo would otherwise be embedded over)."""
    known = set(schema.spaces)
    for i, g in enumerate(given):
        unknown = set(g) - known
        if unknown:
            label = f"{where}[{i}]: " if where else ""
            raise InvalidMemory(f"{label}vectors has unknown space(s) {sorted(unknown)}; this store's spaces are "
                                f"{list(schema.spaces)}")


def embed_in_chunks(emb: Embedder, texts: list[str], space: str, tuning: Tuning) -> Embedding:
    """Embed a long batch in chunks with a progress bar on an interactive terminal (tqdm)."""
    if len(texts) < tuning.progress_min:
        return emb.embed(texts)
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return emb.embed(texts)
    parts = []
    step = tuning.embed_chunk
    with tqdm(total=len(texts), desc=f"embedding {space}", unit="memory", disable=not sys.stderr.isatty()) as bar:
        for a in range(0, len(texts), step):
            chunk = texts[a : a + step]
            parts.append(emb.embed(chunk))
            bar.update(len(chunk))
    return concat(parts)


def _derived_from(emb: Embedder, embedders: Mapping[str, Embedder], done: Mapping[str, Embedding]) -> str | None:
    """The space whose fresh vectors `emb` can project instead of embedding the text again.

    An embedder derived from another (binary HDC codes are sign projections of a dense space)
    exposes `base` and `project`; when that base fills a space already embedded in this batch,
    projecting saves a second pass of the base model.
    """
    base = getattr(emb, "base", None)
    if base is None or not hasattr(emb, "project"):
        return None
    for name, other in embedders.items():
        if other is base and name in done:
            return name
    return None

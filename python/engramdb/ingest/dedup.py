"""Deduplication on write (S8): exact copies and near-duplicates in the main semantic space.

A new memory is a duplicate when an earlier one *in the same namespace* (stored and current, or
earlier in the same batch) has cosine similarity above the threshold (default 0.90) in the
schema's main dense space, and both say "no" the same way: two texts whose negations differ
("I like cats" / "I don't like cats") are never duplicates, whatever an embedder made of them. It
is an exact duplicate when the content is also identical.

The policy decides what happens. "off" (the default) stores everything: in a conversation log a
repeated turn is an event. For facts, "skip" stores nothing for a duplicate and returns the
earlier memory's id in its place, "merge" does the same and records the duplicate on the earlier
memory (a new version whose metadata counts the merged copies). A record that names its own id is
always stored (action "kept"): an id the caller chose must be found by `get` forever. Every
decision is reported: what `Store.add_many` returns lists them (`.dedup`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .. import kernels
from ..spaces.analyzer import negation, tokenize
from ..spaces.protocol import Embedding
from ..storage.segment import NEVER
from ..storage.view import View
from .intake import Intake

Policy = Literal["off", "skip", "merge"]
POLICIES = ("off", "skip", "merge")


def negations(text: str) -> frozenset[str]:
    """The negating words of a text (contractions such as "don't" count as "not")."""
    return frozenset(n for token in tokenize(text) if (n := negation(token)) is not None)


@dataclass(frozen=True)
class DedupEvent:
    """One duplicate found on write."""

    index: int  # position of the record in its add_many batch
    duplicate_of: str  # id of the memory it duplicates
    kind: Literal["exact", "near"]
    similarity: float
    action: Literal["skipped", "merged", "kept"]  # kept: the record named its own id, so it is stored


def within_batch(vectors: np.ndarray, namespaces: list[str], threshold: float) -> dict[int, tuple[int, float]]:
    """For each record, the first earlier record of the batch it duplicates: {j: (i, cosine)}."""
    out: dict[int, tuple[int, float]] = {}
    n = len(namespaces)
    if n < 2:
        return out
    v = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-30)
    by_ns: dict[str, list[int]] = {}
    for i, ns in enumerate(namespaces):
        by_ns.setdefault(ns, []).append(i)
    for rows in by_ns.values():
        if len(rows) < 2:
            continue
        r = np.asarray(rows)
        sims = kernels.scores(v[r], v[r], "dot")
        for b in range(1, len(rows)):
            earlier = sims[b, :b]
            hit = np.flatnonzero(earlier > threshold)
            if hit.size:
                a = int(hit[0])
                out[rows[b]] = (rows[a], float(earlier[a]))
    return out


def check_policy(policy: str) -> Policy:
    """Validate a policy name."""
    if policy not in POLICIES:
        raise ValueError(f"dedup policy must be one of {list(POLICIES)}, got {policy!r}")
    return policy  # type: ignore[return-value]


def find_duplicates(view: View, batch: Intake, vectors: Mapping[str, Embedding], threshold: float,
                    action: Literal["skipped", "merged"]) -> list[DedupEvent]:
    """Duplicates of each new memory among the current memories of its namespace in the view,
    then within the batch; one event per duplicate record, in batch order."""
    schema = view.schema
    main = schema[schema.main]
    q = np.asarray(vectors[main.name], dtype=np.float32)
    events: dict[int, DedupEvent] = {}
    by_ns: dict[str, list[int]] = {}
    for i, ns in enumerate(batch.namespaces):
        by_ns.setdefault(ns, []).append(i)
    for ns, rows in by_ns.items():
        best: dict[int, tuple[float, int, int]] = {}
        for si in range(len(view.segments)):
            mask = view.namespace_mask(si, ns)
            if mask is None:
                continue
            mask &= (view.row_array(si, "sys_end") == NEVER) & ~view.row_array(si, "forgotten")
            if not mask.any():
                continue
            idx, sc = kernels.topk(q[rows], np.asarray(view.vectors(si, main.name)), 1, "cosine", mask=mask, threads=1)
            for j, r in enumerate(rows):
                if idx.shape[1] and sc[j, 0] > threshold and sc[j, 0] > best.get(r, (-2.0, 0, 0))[0]:
                    best[r] = (float(sc[j, 0]), si, int(idx[j, 0]))
        for r, (sim, si, row) in best.items():
            old = view.memory_at(si, row)
            if negations(old.content) != negations(batch.contents[r]):
                continue  # one says no where the other does not: a different statement
            kind = "exact" if old.content == batch.contents[r] else "near"
            events[r] = DedupEvent(r, old.id, kind, sim, action)  # type: ignore[arg-type]
    inside = within_batch(q, batch.namespaces, threshold)
    for j, (i, sim) in inside.items():
        if j in events or negations(batch.contents[i]) != negations(batch.contents[j]):
            continue
        first = events[i].duplicate_of if i in events else batch.ids[i]
        kind = "exact" if batch.contents[i] == batch.contents[j] else "near"
        events[j] = DedupEvent(j, first, kind, sim, action)  # type: ignore[arg-type]
    return [e if not batch.named[e.index] else DedupEvent(e.index, e.duplicate_of, e.kind, e.similarity, "kept")
            for e in (events[k] for k in sorted(events))]

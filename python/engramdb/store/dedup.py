"""Deduplication on write (S8): exact copies and near-duplicates in the main semantic space.

A new memory is a duplicate when an earlier one *in the same namespace* (stored and current, or
earlier in the same batch) has cosine similarity above the threshold (default 0.90) in the
schema's main dense space; it is an exact duplicate when the content is also identical. The
policy decides what happens: "off" stores everything, "skip" stores nothing for a duplicate and
returns the earlier memory's id in its place, "merge" does the same and records the duplicate on
the earlier memory (a new version whose metadata counts the merged copies). Every decision is
reported: `Store.last_dedup` lists them for the last write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .. import kernels

Policy = Literal["off", "skip", "merge"]
POLICIES = ("off", "skip", "merge")


@dataclass(frozen=True)
class DedupEvent:
    """One duplicate found on write."""

    index: int  # position of the record in its add_many batch
    duplicate_of: str  # id of the memory it duplicates
    kind: Literal["exact", "near"]
    similarity: float
    action: Literal["skipped", "merged"]


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

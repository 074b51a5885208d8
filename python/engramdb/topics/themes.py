"""Themes (H8): dense clusters of what memories say, with how well each holds together.

DBSCAN (`kernels.dbscan_cosine`: scikit-learn's labels, without it) over the memories' main-space
unit vectors with cosine distance, eps 0.15 and at least 3 memories a cluster; a theme's confidence is the mean cosine of its members to their
centroid, and only themes at confidence >= 0.6 are kept. Each theme gets its silhouette (the
mean silhouette of its members over every clustered memory, cosine distance; 0 when there is a
single cluster) and a label from the labeler (built-in: the distinctive terms of topics).

Small talk (`smalltalk.SmallTalk`) is set aside first, as topics do (issue 29): chat's "Thanks!",
"Wow, that's awesome!" are each other's near duplicates, and DBSCAN chained them into one theme
of 65-158 turns in LoCoMo's conversations; it is in no theme.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..kernels import dbscan_cosine, silhouette_cosine

EPS, MIN_MEMBERS, MIN_CONFIDENCE = 0.15, 3, 0.6


@dataclass(frozen=True)
class Theme:
    """One theme of a namespace."""

    label: str
    members: tuple[str, ...]
    silhouette: float
    confidence: float


def theme_groups(vectors: np.ndarray, aside: np.ndarray | None = None) -> tuple[list[tuple[list[int], float, float]],
                                                                                  float | None]:
    """(member indices, silhouette, confidence) of each theme, biggest first, and the silhouette
    over every clustered memory (None with fewer than two clusters). The rows `aside` (a bool per
    row: small talk) are clustered with none and are in no theme."""
    if aside is not None and aside.any():
        keep = np.flatnonzero(~np.asarray(aside, bool))
        inner, overall = theme_groups(np.asarray(vectors)[keep])
        return [([int(keep[i]) for i in m], sil, conf) for m, sil, conf in inner], overall
    x = np.asarray(vectors, np.float64)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    u = np.divide(x, n, out=np.zeros_like(x), where=n > 0)
    if len(u) < MIN_MEMBERS:
        return [], None
    labels = dbscan_cosine(u, EPS, MIN_MEMBERS)
    clustered = labels >= 0
    kinds = np.unique(labels[clustered])
    sil = np.zeros(len(u))
    overall = None
    if len(kinds) >= 2:
        sil[clustered] = silhouette_cosine(u[clustered], labels[clustered])
        overall = float(sil[clustered].mean())
    out = []
    for k in kinds.tolist():
        members = np.flatnonzero(labels == k)
        centroid = u[members].mean(axis=0)
        cn = float(np.linalg.norm(centroid))
        confidence = float((u[members] @ centroid).mean() / cn) if cn > 0 else 0.0
        if confidence >= MIN_CONFIDENCE:
            out.append((members.tolist(), float(sil[members].mean()), confidence))
    return sorted(out, key=lambda t: (-len(t[0]), t[0][0])), overall


def divergence(query: np.ndarray, recent: np.ndarray, low: float) -> tuple[bool, float, int]:
    """(far, best cosine, index of the nearest) of a query against a session's recent memories:
    far when even the nearest is below the space's `low` threshold (C6's divergence alert)."""
    if len(recent) == 0:
        return False, 0.0, -1
    q = np.asarray(query, np.float64).reshape(-1)
    r = np.asarray(recent, np.float64)
    sims = (r @ q) / np.maximum(np.linalg.norm(r, axis=1) * max(float(np.linalg.norm(q)), 1e-12), 1e-12)
    i = int(np.argmax(sims))
    return bool(sims[i] < low), float(sims[i]), i


def labelled(groups: Sequence[tuple[list[int], float, float]], ids: Sequence[str], labels: Sequence[str]) -> list[Theme]:
    return [Theme(label, tuple(ids[i] for i in members), round(sil, 4), round(conf, 4))
            for (members, sil, conf), label in zip(groups, labels)]


__all__ = ["Theme", "divergence", "labelled", "theme_groups"]

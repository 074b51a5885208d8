"""Themes (H8): dense groups of what memories say, each holding together and apart from the rest.

Three steps, with the same settings for every namespace and profile:

1. DBSCAN over the memories' main-space unit vectors, cosine distance, at least 3 memories a
   cluster (scikit-learn's labels, as `kernels.dbscan_cosine`), at a scale (eps) of SCALES.
2. Each member must stand apart: its silhouette (b - a) / max(a, b), a its mean cosine distance
   to the rest of its theme, b the least mean distance to another theme, is at least 0.5: it is
   at least twice as near its own theme as any other (Kaufman and Rousseeuw's "reasonable
   structure"). Round by round, each theme lets go of its worst member while that member is under
   0.5; a theme left with fewer than 3 members, or under confidence 0.6 (the mean cosine of its
   members to their centroid), is dissolved (one a round, the worst: two neighbouring fragments
   of one subject would each dissolve for the other). Members let go are in no theme and count
   for none.
3. The scale is the densest of SCALES, SPEC's eps 0.15 first, at which at least two themes stand
   apart (a silhouette compares a theme with another); where none has two, the densest with one.

Why not SPEC's eps 0.15 alone (issue 29): it finds near-paraphrases only, which chat turns rarely
are: no theme in any LoCoMo conversation in the default profile, themes in 3 of 10 with MiniLM.
A wider eps alone chains groups through the turns between them (MiniLM, every conversation: mean
silhouettes 0.30-0.63 at 0.25, 0.23-0.43 at 0.30). With steps 2 and 3 every conversation has
themes with MiniLM, and where 0.15 already found themes (notes, document chunks) it is kept: the
themes lost there are fragments of one subject that did not stand apart from each other
(bench/RESULTS.md, "Themes (H8)").

A theme's silhouette is the mean of its members'. When one theme is left, b is the mean distance
to the memories DBSCAN put in no cluster (the rest of the namespace); when there is no rest either,
the silhouette is 0 and the theme is kept as DBSCAN found it. Each theme gets a label from the
labeler (built-in: the distinctive terms of topics).

Small talk (`smalltalk.SmallTalk`) is set aside first, as topics do (issue 29): chat's "Thanks!",
"Wow, that's awesome!" are each other's near duplicates, and DBSCAN chained them into one theme
of 65-158 turns in LoCoMo's conversations; it is in no theme.

Cost: one pass of n x n cosines in row blocks, as `kernels.dbscan_cosine` makes, keeping the pairs
within the widest scale, so each scale's DBSCAN is a pass over those pairs. Step 2 works from each
theme's summed vectors (a member's mean distance to a group is 1 - its cosine to the group's mean
vector), so it needs no distance matrix: per round, the clustered rows times the changed sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SCALES = (0.15, 0.20, 0.25, 0.30)  # DBSCAN's eps, cosine distance: SPEC's 0.15 first
MIN_MEMBERS, MIN_CONFIDENCE, MIN_SILHOUETTE = 3, 0.6, 0.5
BLOCK = 1024  # rows of cosines held at once


@dataclass(frozen=True)
class Theme:
    """One theme of a namespace."""

    label: str
    members: tuple[str, ...]
    silhouette: float
    confidence: float


def _apart(u: np.ndarray, labels: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Step 2 on DBSCAN's `labels`: (each kept theme's rows, each row's silhouette (0 outside a
    theme), each kept theme's confidence)."""
    rows = np.flatnonzero(labels >= 0)
    sil = np.zeros(len(u))
    if not len(rows):
        return [], sil, np.zeros(0)
    _, code = np.unique(labels[rows], return_inverse=True)
    k = int(code.max()) + 1
    x = u[rows]
    sums = np.zeros((k, u.shape[1]))
    np.add.at(sums, code, x)
    size = np.bincount(code, minlength=k).astype(np.float64)
    rest = u[labels < 0].sum(axis=0)  # DBSCAN's noise: what a lone theme is apart from
    n_rest = len(u) - len(rows)
    dots = x @ sums.T  # each clustered row's cosine to every theme's summed vectors
    alive = np.ones(len(rows), bool)
    live = np.ones(k, bool)
    at = np.arange(len(rows))
    while True:
        loose = live & ((size < MIN_MEMBERS) | (np.linalg.norm(sums, axis=1) < MIN_CONFIDENCE * size))
        if loose.any():  # too small or too spread: dissolved, its members in no theme
            live &= ~loose
            alive &= live[code]
        several, lone = live.sum() >= 2, live.sum() == 1 and n_rest > 0
        s = np.zeros(len(rows))  # a theme alone in the namespace: nothing to be apart from, 0
        if several or lone:
            a = (size[code] - dots[at, code]) / np.maximum(size[code] - 1, 1)  # u.u = 1: itself out
            if several:
                other = np.where(live, 1.0 - dots / np.maximum(size, 1), np.inf)
                other[at, code] = np.inf
                b = other.min(axis=1)
            else:
                b = 1.0 - (x @ rest) / n_rest
            a, b = np.maximum(a, 0.0), np.maximum(b, 0.0)
            s = np.divide(b - a, np.maximum(a, b), out=np.zeros_like(a), where=np.maximum(a, b) > 0)
        low = np.flatnonzero(alive & (s < MIN_SILHOUETTE)) if several or lone else np.zeros(0, np.int64)
        if not len(low):
            break
        order = low[np.lexsort((low, s[low], code[low]))]  # by theme, then worst first, then row
        worst = order[np.r_[True, code[order][1:] != code[order][:-1]]]  # each theme's worst
        ends = size[code[worst]] <= MIN_MEMBERS  # letting go of these dissolves their theme:
        if ends.sum() > 1:  # one a round, the worst, as neighbouring fragments of one subject
            last = worst[ends][np.lexsort((worst[ends], s[worst[ends]]))[0]]  # each fail for the other
            worst = np.r_[worst[~ends], last]
        alive[worst] = False
        np.subtract.at(sums, code[worst], x[worst])
        np.subtract.at(size, code[worst], 1.0)
        touched = np.unique(code[worst])
        dots[:, touched] = x @ sums[touched].T
    kept = [rows[alive & (code == c)] for c in np.flatnonzero(live)]
    sil[rows[alive]] = s[alive]
    conf = np.array([np.linalg.norm(sums[c]) / size[c] for c in np.flatnonzero(live)])
    return kept, sil, conf


def _pairs(u: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, cosine distance) of every pair of distinct rows within `eps`, computed as
    `kernels.dbscan_cosine` does (1 - the dot of unit rows, clipped to [0, 2], in row blocks)."""
    rows, cols, dist = [], [], []
    for start in range(0, len(u), BLOCK):
        d = u[start:start + BLOCK] @ u.T
        np.subtract(1.0, d, out=d)
        np.clip(d, 0.0, 2.0, out=d)
        r, c = np.nonzero(d <= eps)
        keep = r + start != c
        rows.append((r[keep] + start).astype(np.int64))
        cols.append(c[keep].astype(np.int64))
        dist.append(d[r[keep], c[keep]])
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(dist)


def _dbscan(n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """DBSCAN labels (-1 for noise) from the pairs of distinct rows within eps: scikit-learn's
    labels (as `kernels.dbscan_cosine`): core rows have MIN_MEMBERS neighbours counting
    themselves, clusters are the core rows linked through core rows, numbered by their first row,
    and a border row joins the first cluster of its core neighbours. Several eps cost one pass of
    cosines this way (`_pairs` at the widest), not one each."""
    core = np.bincount(rows, minlength=n) + 1 >= MIN_MEMBERS
    linked = core[rows] & core[cols]
    a, b = rows[linked], cols[linked]
    root = np.arange(n)
    while True:  # each core row takes the least row it reaches: hook to the least neighbour, then jump
        hooked = root.copy()
        np.minimum.at(hooked, a, root[b])
        hooked = hooked[hooked]
        if np.array_equal(hooked, root):
            break
        root = hooked
    labels = np.full(n, -1, np.int64)
    firsts = np.unique(root[core])
    labels[core] = np.searchsorted(firsts, root[core])
    border = ~core[rows] & core[cols]
    first = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(first, rows[border], labels[cols[border]])
    taken = ~core & (first < np.iinfo(np.int64).max)
    labels[taken] = first[taken]
    return labels


def theme_groups(vectors: np.ndarray, aside: np.ndarray | None = None) -> tuple[list[tuple[list[int], float, float]],
                                                                                  float | None]:
    """(member indices, silhouette, confidence) of each theme, biggest first, and the mean
    silhouette of every member of a theme (None without a theme). The rows `aside` (a bool per
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
    rows, cols, dist = _pairs(u, SCALES[-1])
    found: tuple[list[np.ndarray], np.ndarray, np.ndarray] | None = None
    for eps in SCALES:  # the densest scale with two themes; else the densest with one
        near = dist <= eps
        got = _apart(u, _dbscan(len(u), rows[near], cols[near]))
        if found is None and got[0] or len(got[0]) >= 2:
            found = got
        if len(got[0]) >= 2:
            break
    if found is None:
        return [], None
    kept, sil, conf = found
    out = [(members.tolist(), float(sil[members].mean()), float(c)) for members, c in zip(kept, conf)]
    return sorted(out, key=lambda t: (-len(t[0]), t[0][0])), float(sil[np.concatenate(kept)].mean())


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
